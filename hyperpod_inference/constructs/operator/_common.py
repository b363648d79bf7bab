"""What the operator's constructs share: cdk-nag acknowledgments with their reasons, and prop checks that report every
problem at once."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

from ...facts import rules
from ..lazy import is_unresolved


def _acknowledge(scope: IConstruct, findings: Mapping[str, str]) -> None:
    """Acknowledge cdk-nag findings (exact, granular IDs) on ``scope``, each with its reason."""
    Validations.of(scope).acknowledge(*[Acknowledgment(id=rule, reason=reason) for rule, reason in findings.items()])


def _nag_iam4(policy_name: str) -> str:
    return f"AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy_name}]"


def _nag_iam5(resource: str) -> str:
    return f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]"


def _nag_value(value: str, pseudo_parameter: str) -> str:
    """How cdk-nag writes a value in a finding ID: literal, or ``<AWS::Region>`` for the pseudo-parameter token."""
    return f"<{pseudo_parameter}>" if is_unresolved(value) else value


def _raise_if(errors: list[str], what: str) -> None:
    if errors:
        raise ValueError(f"{what}: " + "; ".join(errors))


def _check_role_arn(field: str, value: str | None, errors: list[str], *, required: bool = True) -> None:
    if value is None:
        if required:
            errors.append(f"{field}: required")
        return
    problem = None if is_unresolved(value) else rules.role_arn_problem(value)
    if problem:
        errors.append(f"{field}: {problem} (got {value!r})")


def _check_cluster_name(cluster_name: str, errors: list[str]) -> None:
    if not is_unresolved(cluster_name) and (problem := rules.eks_cluster_name_problem(cluster_name or "")):
        errors.append(f"cluster_name: {problem} (got {cluster_name!r})")
