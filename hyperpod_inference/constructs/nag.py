"""cdk-nag 3 acknowledgments shared by the constructs: exact finding IDs, each with a reason."""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import Construct


def render_resolved(value: Any) -> str:
    """A resolved CloudFormation value as one string, the way cdk-nag prints it in finding IDs and the way the review
    manifests show deploy-time values: ``<LogicalId.Attr>`` for ``Fn::GetAtt``, ``<LogicalId>`` for ``Ref``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
        if fn == "Ref":
            return f"<{arg}>"
        if fn == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>" if isinstance(arg, list) else f"<{arg}>"
        if fn == "Fn::Join":
            sep, parts = arg
            return sep.join(render_resolved(p) for p in parts)
    return str(value)


def acknowledge_resource_wildcard(grantee: iam.IGrantable, resource: str, reason: str) -> None:
    """Acknowledge ``AwsSolutions-IAM5`` for one wildcard resource on the grantee's own policies (not elsewhere)."""
    principal = grantee.grant_principal
    if not Construct.is_construct(principal):
        return
    rendered = render_resolved(Stack.of(principal).resolve(resource))
    Validations.of(principal).acknowledge(
        Acknowledgment(id=f"AwsSolutions::AwsSolutions-IAM5[Resource::{rendered}]", reason=reason))
