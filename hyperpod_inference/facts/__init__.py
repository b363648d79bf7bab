"""Facts about the operator, AWS and Kubernetes, and the rule functions that check values against them.

Standard library only (no CDK, cdk8s or pydantic; ``tests/test_architecture.py`` enforces it): the config models and
the constructs both call these, so a rule has one home and the two can never disagree. Each module holds one kind of
fact:

- ``rules``: patterns, limits and rule functions (``bucket_name_problem(name) -> str | None`` and the like);
- ``operator``: the operator releases and the names the operator fixes;
- ``versions``: versions that compare as versions;
- ``runtimes``: the runtime presets and the Deep Learning Containers registry snapshot;
- ``naming``: one naming function for every physical name the library chooses.
"""
