"""Size limits: a manifest the kubectl provider cannot carry, or a template CloudFormation refuses, fails at synth
with the part that is too big named, and how to get under the limit; so does a physical name the service would
refuse (too long, a character it does not take, or a deploy-time value whose length synth cannot know)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import jsii
from constructs import IConstruct, IValidation

from ..constructs.lazy import is_unresolved
from ..constructs.nag import render_resolved
from ..facts.naming import PHYSICAL_NAME_RULES
from .homes import Homes, way_out

# Size limits checked at synth (a manifest that the kubectl provider cannot carry fails late and badly).
MAX_MANIFEST_BYTES = 256 * 1024
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_RESOURCES = 500
MAX_OUTPUTS = 200  # CloudFormation's limit of Outputs per template


#: What a template over a limit is told, by default.
SPLIT_ADVICE = ("split the endpoints: stackLayout: perNamespace (a nested stack per namespace), endpoint stackGroup, "
                "or several config files; docs/fleets.md")


def template_counts(stack: cdk.Stack) -> dict[cdk.Stack, tuple[int, int]]:
    """(resources, outputs) of ``stack`` and of every stack nested in it, each counting only its own template.

    One ``find_all`` per stack (each a single call into the CDK runtime; objects made inside the runtime have no
    stable Python identity, so counts are subtracted, not objects matched): a stack's own count is its subtree's
    minus that of every stack nested directly in it (found by construct path). A construct's kind is read from its
    class's MRO: ``isinstance`` against ``CfnResource`` walks the ABC subclass tree of every loaded Cfn class once
    for each new class met, which cost more than the rest of the count."""
    def count(members: list[IConstruct]) -> list[int]:
        classes = [type(c).__mro__ for c in members]
        return [sum(cdk.CfnResource in m for m in classes), sum(cdk.CfnOutput in m for m in classes)]

    everything = stack.node.find_all()
    stacks = [stack, *(c for c in everything if cdk.Stack in type(c).__mro__ and c is not stack)]
    totals = [count(everything), *(count(s.node.find_all()) for s in stacks[1:])]
    paths = [s.node.path + "/" for s in stacks]
    own = [list(t) for t in totals]
    for k in range(1, len(stacks)):
        parents = [p for p in range(len(stacks)) if p != k and paths[k].startswith(paths[p])]
        parent = max(parents, key=lambda p: len(paths[p]))  # the nearest enclosing stack
        own[parent][0] -= totals[k][0]
        own[parent][1] -= totals[k][1]
    return {s: (o[0], o[1]) for s, o in zip(stacks, own, strict=True) if o != [0, 0]}


def stack_limit_problems(stack: cdk.Stack, *, where: str = "stack", way_out: str = SPLIT_ADVICE,
                         counts: dict[cdk.Stack, tuple[int, int]] | None = None) -> list[str]:
    """CloudFormation's per-template limits of resources and outputs, for ``stack`` itself (not its nested stacks);
    ``where`` names the stack in the message, ``way_out`` says how to get under the limit; ``counts``: from
    :func:`template_counts`, when several stacks of one tree are checked."""
    problems = []
    resources, outputs = (counts if counts is not None else template_counts(stack)).get(stack, (0, 0))
    if resources > MAX_RESOURCES:
        problems.append(f"{where} has {resources} resources; CloudFormation allows {MAX_RESOURCES} ({way_out})")
    if outputs > MAX_OUTPUTS:
        problems.append(f"{where} has {outputs} outputs; CloudFormation allows {MAX_OUTPUTS} ({way_out})")
    return problems


def template_size_problems(assembly_dir: str, labels: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """After synth: every template of the assembly must stay under CloudFormation's 1 MB limit (when deployed from
    S3, as the CLI does for large templates). ``labels``: template file name -> (what it holds, the way out), e.g.
    from ``HyperPodInference.template_labels()``."""
    import pathlib

    labels = labels or {}
    problems = []
    for path in sorted(pathlib.Path(assembly_dir).glob("*.template.json")):
        size = path.stat().st_size
        if size > MAX_TEMPLATE_BYTES:
            where, way_out = labels.get(path.name, ("", SPLIT_ADVICE))
            problems.append(f"template {path.name}{f' ({where})' if where else ''} is {size} bytes; CloudFormation "
                            f"allows {MAX_TEMPLATE_BYTES} ({way_out})")
    return problems


#: The L1 classes whose physical name the library may set, by (module, class name) (no import of each service's
#: module): -> (CloudFormation type, property, the L1's attribute).
_NAMED_L1: dict[tuple[str, str], tuple[str, str, str]] = {
    ("aws_cdk.aws_s3", "CfnBucket"): ("AWS::S3::Bucket", "BucketName", "bucket_name"),
    ("aws_cdk.aws_iam", "CfnRole"): ("AWS::IAM::Role", "RoleName", "role_name"),
    ("aws_cdk.aws_kms", "CfnAlias"): ("AWS::KMS::Alias", "AliasName", "alias_name"),
    ("aws_cdk.aws_cloudwatch", "CfnDashboard"): ("AWS::CloudWatch::Dashboard", "DashboardName", "dashboard_name"),
    ("aws_cdk.aws_cloudwatch", "CfnAlarm"): ("AWS::CloudWatch::Alarm", "AlarmName", "alarm_name"),
    ("aws_cdk.aws_cloudwatch", "CfnCompositeAlarm"): ("AWS::CloudWatch::CompositeAlarm", "AlarmName", "alarm_name"),
    ("aws_cdk.aws_logs", "CfnLogGroup"): ("AWS::Logs::LogGroup", "LogGroupName", "log_group_name"),
    ("aws_cdk.aws_lambda", "CfnFunction"): ("AWS::Lambda::Function", "FunctionName", "function_name"),
    ("aws_cdk.aws_sns", "CfnTopic"): ("AWS::SNS::Topic", "TopicName", "topic_name"),
    ("aws_cdk.aws_stepfunctions", "CfnStateMachine"): ("AWS::StepFunctions::StateMachine", "StateMachineName",
                                                       "state_machine_name"),
    ("aws_cdk.aws_athena", "CfnWorkGroup"): ("AWS::Athena::WorkGroup", "Name", "name"),
    ("aws_cdk.aws_athena", "CfnPreparedStatement"): ("AWS::Athena::PreparedStatement", "StatementName",
                                                     "statement_name"),
    ("aws_cdk.aws_glue", "CfnDatabase"): ("AWS::Glue::Database", "DatabaseInput.Name", "database_input"),
    ("aws_cdk.aws_aps", "CfnRuleGroupsNamespace"): ("AWS::APS::RuleGroupsNamespace", "Name", "name"),
}
#: What a CDK token's text becomes once made DNS-safe (``${Token[TOKEN.184]}`` -> ``token-token-184``): a name
#: holding it was built from a deploy-time value's placeholder, not from the value.
_TOKEN_TEXT = re.compile(r"token[^a-z0-9]+token[^a-z0-9]+\d+", re.I)
#: How to get a name the library makes within the rules, by CloudFormation type (the default: the names' source).
_NAME_WAY_OUT = {
    "AWS::S3::Bucket": "a shorter stack name or construct id, or an existing bucket (operator.tlsBucketName, "
                       "capture.bucketName)",
    "AWS::KMS::Alias": "a shorter stack name or construct id, or an existing key (capture.kms)",
}
_DEFAULT_WAY_OUT = ("a shorter stack name or construct id (names carry them; inside a NestedStack, the top-level "
                    "stack's name and the nested stacks' ids)")


def physical_name_problems(root: IConstruct) -> list[str]:
    """Every physical name a resource under ``root`` is given that its service would refuse, or that holds a
    deploy-time value (its length cannot be checked, and CloudFormation's nested stack names run to 128 characters),
    each with the resource's path and the way out."""
    problems = []
    for node in root.node.find_all():
        known = next((_NAMED_L1[k] for cls in type(node).__mro__
                      if (k := (cls.__module__, cls.__name__)) in _NAMED_L1), None)
        if known is None:
            continue
        rtype, prop, attr = known
        value = getattr(node, attr, None)
        if value is not None and not isinstance(value, str):
            value = getattr(value, "name", None)  # a struct property (Glue's DatabaseInput)
        if value is None:
            continue  # CloudFormation names it
        if is_unresolved(value):
            value = cdk.Stack.of(node).resolve(value)  # an L2 without a name gives a token resolving to nothing
            if value is None:
                continue
        if not isinstance(value, str):
            problem = (f"the name {render_resolved(value)} holds a value known only at deploy, so its length and "
                       "characters cannot be checked")
        elif _TOKEN_TEXT.search(value):
            problem = f"the name {value!r} was made from a deploy-time value's placeholder text"
        else:
            problem = PHYSICAL_NAME_RULES[(rtype, prop)].problem(value)
        if problem:  # the resource's path only for a problem: reading it is two calls into the CDK runtime
            problems.append(f"{node.node.path} ({rtype} {prop}): {problem}; "
                            f"{_NAME_WAY_OUT.get(rtype, _DEFAULT_WAY_OUT)}")
    return problems


@jsii.implements(IValidation)
class SizeLimits:
    """Synth-time limits of one ``HyperPodInference``: a manifest the kubectl provider cannot carry, a stack
    CloudFormation refuses, an object another construct delivers too, or (files delivery) a deploy-time value left
    in a manifest fails here, with the part named."""

    def __init__(self, stack: cdk.Stack, homes: Homes, *, files: bool, manifest_problems: Callable[[], list[str]],
                 shared_problems: Callable[[], list[str]],
                 documents: Callable[[], dict[str, list[dict[str, Any]]]], names: IConstruct | None = None) -> None:
        self.stack, self.homes, self.files, self.names = stack, homes, files, names
        self.manifest_problems, self.shared_problems, self.documents = manifest_problems, shared_problems, documents

    def validate(self) -> list[str]:
        counts = template_counts(self.stack)
        problems = self.manifest_problems() + stack_limit_problems(self.stack, counts=counts)
        problems += self.shared_problems()
        if self.names is not None:
            problems += physical_name_problems(self.names)
        for (ns, group), nested in self.homes.nested_stacks.items():
            problems += stack_limit_problems(nested, where=self.homes.stack_label(nested),
                                             way_out=way_out(ns, group), counts=counts)
        if self.files:
            # GitOps applies these files as they are: a deploy-time value would reach the cluster as a placeholder.
            for name, objs in self.documents().items():
                left = sorted(set(re.findall(r"<[A-Za-z0-9]+(?:\.[A-Za-z0-9.]+)?>", json.dumps(objs))))
                if left:
                    problems.append(f"manifest '{name}' holds deploy-time value(s) {', '.join(left)}; with "
                                    "manifests.delivery: files every value must be known at synth")
        return problems
