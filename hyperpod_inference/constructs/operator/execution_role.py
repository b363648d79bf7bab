"""The HyperPod inference operator's execution role (``SageMakerHyperPodInference...``)."""

from __future__ import annotations

from typing import Literal

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from ...facts import naming, rules
from ...facts.operator import (
    ADDON_SERVICE_ACCOUNT,
    CHART_SERVICE_ACCOUNT,
    EXECUTION_ROLE_NAME_PREFIX,
    OPERATOR_MANAGED_POLICY,
    OPERATOR_NAMESPACE,
)
from ..irsa import ServiceAccountRef, irsa_principal, oidc_issuer_from_arn
from ..lazy import is_unresolved, literal_stack_name
from ._common import _acknowledge, _nag_iam4, _raise_if


def default_execution_role_name(stack: Stack) -> str:
    """``SageMakerHyperPodInference-<stack name>-<region>``, at most 64 characters.

    Longer names keep their head and end in an 8-hex digest of the full name. With an environment-agnostic stack the
    Region is a deploy-time value: the stack-name part is then shortened so that any Region still fits.
    """
    region = stack.region
    return naming.execution_role_name(literal_stack_name(stack), Aws.REGION if is_unresolved(region) else region)


def sagemaker_principal(scope: Construct, *, source_account: bool = True) -> iam.ServicePrincipal:
    """``sagemaker.amazonaws.com``, by default only on behalf of this stack's account (``aws:SourceAccount``, the
    confused-deputy guard AWS documents for SageMaker; that SageMaker sets it when HyperPod assumes these roles is
    inferred, not documented, hence the switch)."""
    conditions = {"StringEquals": {"aws:SourceAccount": Stack.of(scope).account}} if source_account else None
    return iam.ServicePrincipal("sagemaker.amazonaws.com", conditions=conditions)


class OperatorExecutionRole(iam.Role):
    """The HyperPod inference operator's execution role.

    Trusted by ``sagemaker.amazonaws.com`` (``sts:AssumeRole``) and by the operator's service account through the
    cluster's OIDC provider (``sts:AssumeRoleWithWebIdentity``, ``StringEquals`` on ``aud`` and ``sub``). Carries the AWS
    managed policy ``AmazonSageMakerHyperPodInferenceAccess`` and nothing else: features add their statements through
    their own ``grant_*`` methods.

    :param oidc_provider_arn: the EKS cluster's IAM OIDC provider ARN (literal; the issuer is parsed from it)
    :param install_mode: ``addon`` trusts ``hyperpod-inference-controller-manager``; ``chart`` trusts
        ``hyperpod-inference-operator-controller-manager``; ``existing`` (operator installed outside this stack, method
        unknown) trusts exactly those two service accounts of ``hyperpod-inference-system``.
    :param role_name: physical name; must start with ``SageMakerHyperPodInference`` (the add-on refuses other names and
        the managed policy only lets the operator pass roles with that prefix). Default:
        :func:`default_execution_role_name`.
    :param sagemaker_source_account: the SageMaker trust requires ``aws:SourceAccount`` = the stack's account.
        Default True; False drops the condition (see :func:`sagemaker_principal`).
    """

    def __init__(self, scope: Construct, construct_id: str, *, oidc_provider_arn: str,
                 install_mode: Literal["addon", "chart", "existing"], role_name: str | None = None,
                 sagemaker_source_account: bool = True) -> None:
        service_accounts = self.service_accounts_for(install_mode)
        if role_name is not None:
            self._validate_role_name(role_name)
        else:
            role_name = default_execution_role_name(Stack.of(scope))
        if len(service_accounts) == 1:
            federated = irsa_principal(oidc_provider_arn, service_accounts[0])
        else:
            issuer = oidc_issuer_from_arn(oidc_provider_arn)
            federated = iam.FederatedPrincipal(
                oidc_provider_arn,
                conditions={"StringEquals": {
                    f"{issuer}:aud": "sts.amazonaws.com",
                    f"{issuer}:sub": [sa.subject for sa in service_accounts],
                }},
                assume_role_action="sts:AssumeRoleWithWebIdentity",
            )
        super().__init__(
            scope,
            construct_id,
            role_name=role_name,
            description=f"SageMaker HyperPod inference operator execution role ({install_mode})",
            assumed_by=iam.CompositePrincipal(
                sagemaker_principal(scope, source_account=sagemaker_source_account), federated),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(OPERATOR_MANAGED_POLICY)],
        )
        self.install_mode = install_mode
        self.service_accounts: tuple[ServiceAccountRef, ...] = service_accounts
        _acknowledge(self, {
            _nag_iam4(OPERATOR_MANAGED_POLICY):
                "AWS publishes and maintains AmazonSageMakerHyperPodInferenceAccess for exactly this role; the "
                "add-on setup guide requires it. Most of its statements are resource- or condition-scoped "
                "(hyperpod-tls* buckets, CreatedBy=HyperPodInference tags, aws:ResourceAccount), but not all: its "
                "ECR statements have no condition, so the role may call ecr:GetAuthorizationToken and pull "
                "(ecr:BatchGetImage, ecr:GetDownloadUrlForLayer) any image of any ECR repository in any account "
                "and Region whose repository policy lets this account in, its own account's included.",
        })

    @staticmethod
    def service_accounts_for(install_mode: str) -> tuple[ServiceAccountRef, ...]:
        """The operator service account(s) an install mode runs as."""
        if install_mode == "addon":
            names: tuple[str, ...] = (ADDON_SERVICE_ACCOUNT,)
        elif install_mode == "chart":
            names = (CHART_SERVICE_ACCOUNT,)
        elif install_mode == "existing":
            names = (ADDON_SERVICE_ACCOUNT, CHART_SERVICE_ACCOUNT)
        else:
            raise ValueError(f"install_mode: must be one of addon, chart, existing (got {install_mode!r})")
        return tuple(ServiceAccountRef(OPERATOR_NAMESPACE, n) for n in names)

    @staticmethod
    def _validate_role_name(role_name: str) -> None:
        if is_unresolved(role_name):
            return
        problem = rules.execution_role_name_problem(role_name, EXECUTION_ROLE_NAME_PREFIX)
        _raise_if([f"{problem} (got {role_name!r})"] if problem else [], "role_name")
