"""Facts about the operator, AWS and Kubernetes, and the rule functions that check values against them.

Standard library only (no CDK, cdk8s or pydantic): the config models and the constructs both call these, so a rule
has one home and the two can never disagree. Each module holds one kind of fact.
"""
