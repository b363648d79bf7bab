"""IRSA roles for what the operator add-on installs or uses: the ALB controller, KEDA, the Mountpoint S3 CSI driver and
the JumpStart gated-model download role."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from constructs import Construct

from ...facts import operator as facts
from ...facts import rules
from ...facts.operator import GATED_MODEL_MANAGED_POLICY, GATED_MODEL_SERVICE_ACCOUNT_PREFIX
from ..irsa import ServiceAccountRef, ServiceAccountRole, oidc_issuer_from_arn
from ..lazy import lazy
from ._common import _acknowledge, _check_role_arn, _nag_iam4, _nag_iam5, _raise_if
from .execution_role import sagemaker_principal

ALB_CONTROLLER_SERVICE_ACCOUNT = ServiceAccountRef(*facts.ALB_CONTROLLER_SERVICE_ACCOUNT)
KEDA_SERVICE_ACCOUNT = ServiceAccountRef(*facts.KEDA_SERVICE_ACCOUNT)
S3_CSI_SERVICE_ACCOUNT = ServiceAccountRef(*facts.S3_CSI_SERVICE_ACCOUNT)

_ALB_POLICY_FILE = Path(__file__).with_name("alb_controller_policy.json")


def _load_alb_controller_policy() -> dict[str, Any]:
    """The upstream AWS Load Balancer Controller policy (v2.13 ``docs/install/iam_policy.json``), with the ``aws``
    partition replaced by the stack's partition."""
    document = json.loads(_ALB_POLICY_FILE.read_text())
    text = json.dumps(document).replace('"arn:aws:', f'"arn:{Aws.PARTITION}:')
    return json.loads(text)


#: cdk-nag IAM5 findings of the upstream ALB controller policy (resource and partition as cdk-nag renders them).
_ALB_POLICY_ACKS: Mapping[str, str] = {
    _nag_iam5("*"):
        "Upstream AWS Load Balancer Controller policy v2.13, kept verbatim. On Resource * it allows Describe*/Get* "
        "reads; and, without any condition: ec2:AuthorizeSecurityGroupIngress and ec2:RevokeSecurityGroupIngress on "
        "every security group of the account (any group may be opened to any source, or have its rules removed), "
        "ec2:CreateSecurityGroup, elasticloadbalancing:CreateListener/DeleteListener/CreateRule/DeleteRule/"
        "ModifyListener/ModifyRule/SetWebAcl/AddListenerCertificates/RemoveListenerCertificates on every load "
        "balancer of the account, WAF/WAFv2 Associate/DisassociateWebACL and Shield Create/DeleteProtection on any "
        "resource. Only the second Authorize/Revoke statement, DeleteSecurityGroup and the load balancer and target "
        "group modifications are conditioned on the elbv2.k8s.aws/cluster tag. The controller needs these to manage "
        "load balancers and security groups whose ARNs do not exist before it creates them; whoever controls the "
        "controller's service account gets all of it.",
    _nag_iam5("arn:<AWS::Partition>:ec2:*:*:security-group/*"):
        "Upstream ALB controller policy: CreateTags/DeleteTags on security groups, conditioned on the "
        "elbv2.k8s.aws/cluster request/resource tag.",
    _nag_iam5("arn:<AWS::Partition>:elasticloadbalancing:*:*:targetgroup/*/*"):
        "Upstream ALB controller policy: tagging and target registration on target groups the controller creates "
        "(names generated at run time; tagging is tag-conditioned).",
    _nag_iam5("arn:<AWS::Partition>:elasticloadbalancing:*:*:loadbalancer/net/*/*"):
        "Upstream ALB controller policy: tagging NLBs the controller creates, conditioned on elbv2.k8s.aws/cluster.",
    _nag_iam5("arn:<AWS::Partition>:elasticloadbalancing:*:*:loadbalancer/app/*/*"):
        "Upstream ALB controller policy: tagging ALBs the controller creates, conditioned on elbv2.k8s.aws/cluster.",
    _nag_iam5("arn:<AWS::Partition>:elasticloadbalancing:*:*:listener/net/*/*/*"):
        "Upstream ALB controller policy: tagging listeners of load balancers the controller creates.",
    _nag_iam5("arn:<AWS::Partition>:elasticloadbalancing:*:*:listener/app/*/*/*"):
        "Upstream ALB controller policy: tagging listeners of load balancers the controller creates.",
    _nag_iam5("arn:<AWS::Partition>:elasticloadbalancing:*:*:listener-rule/net/*/*/*"):
        "Upstream ALB controller policy: tagging listener rules of load balancers the controller creates.",
    _nag_iam5("arn:<AWS::Partition>:elasticloadbalancing:*:*:listener-rule/app/*/*/*"):
        "Upstream ALB controller policy: tagging listener rules of load balancers the controller creates.",
}

class OperatorDependencyRoles(Construct):
    """IRSA roles for what the operator add-on installs or uses, each trusted by exactly its service account(s).

    - ``alb_role``: ``hyperpod-inference-system:aws-load-balancer-controller``, upstream ALB controller policy v2.13.
    - ``keda_role``: ``hyperpod-inference-system:keda-operator``, created with no permissions: what the endpoints'
      autoscaling triggers read is granted by ``constructs.autoscaling.KedaTriggerAccess``.
    - ``s3_csi_role``: ``kube-system:s3-csi-driver-sa``, created with no permissions: features grant it exactly the
      buckets/prefixes their volumes mount.
    - ``jumpstart_gated_role``: SageMaker plus the per-endpoint service accounts ``hyperpod-inference-service-account*``
      the operator creates in ``namespaces_for_gated`` (a callable is read at synth); AWS managed
      ``AmazonSageMakerHyperPodGatedModelAccess``.

    Any ``*_role_arn`` imports that role instead of creating it (``jumpstart_gated_role_arn`` likewise).
    ``defer_gated_role`` creates the gated-model role only when :meth:`add_gated_model_role` is called;
    ``gated_role_name`` gives it a physical name (default: generated).
    ``sagemaker_source_account`` (default True) makes the gated role's SageMaker trust require ``aws:SourceAccount``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, oidc_provider_arn: str,
                 namespaces_for_gated: Sequence[str] | Callable[[], Sequence[str]],
                 alb_role_arn: str | None = None,
                 keda_role_arn: str | None = None, s3_csi_role_arn: str | None = None,
                 jumpstart_gated_role_arn: str | None = None, sagemaker_source_account: bool = True,
                 defer_gated_role: bool = False, gated_role_name: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self._gated_role_name = gated_role_name
        self._sagemaker_source_account = sagemaker_source_account
        self._oidc_provider_arn = oidc_provider_arn
        self._namespaces_for_gated = namespaces_for_gated
        errors: list[str] = []
        for field, arn in (("alb_role_arn", alb_role_arn), ("keda_role_arn", keda_role_arn),
                           ("s3_csi_role_arn", s3_csi_role_arn),
                           ("jumpstart_gated_role_arn", jumpstart_gated_role_arn)):
            _check_role_arn(field, arn, errors, required=False)
        if jumpstart_gated_role_arn is None and not callable(namespaces_for_gated):
            if not namespaces_for_gated:
                errors.append("namespaces_for_gated: name at least one namespace (or give jumpstart_gated_role_arn)")
            for i, ns in enumerate(namespaces_for_gated):
                if problem := rules.dns_label_problem(ns):
                    errors.append(f"namespaces_for_gated[{i}]: {problem} (got {ns!r})")
        _raise_if(errors, "OperatorDependencyRoles")

        self.alb_role: iam.IRole = (
            iam.Role.from_role_arn(self, "AlbControllerRole", alb_role_arn) if alb_role_arn
            else self._alb_controller_role(oidc_provider_arn))
        self.keda_role: iam.IRole = (
            iam.Role.from_role_arn(self, "KedaRole", keda_role_arn) if keda_role_arn
            else self._keda_role(oidc_provider_arn))
        self.s3_csi_role: iam.IRole = (
            iam.Role.from_role_arn(self, "S3CsiRole", s3_csi_role_arn) if s3_csi_role_arn
            else ServiceAccountRole(self, "S3CsiRole", oidc_provider_arn=oidc_provider_arn,
                                    service_account=S3_CSI_SERVICE_ACCOUNT,
                                    description="Mountpoint for Amazon S3 CSI driver (kube-system:s3-csi-driver-sa); "
                                                "bucket access is granted per feature"))
        self.jumpstart_gated_role: iam.IRole | None = None
        if jumpstart_gated_role_arn:
            self.jumpstart_gated_role = iam.Role.from_role_arn(self, "JumpStartGatedModelRole",
                                                               jumpstart_gated_role_arn)
        elif not defer_gated_role:
            self.add_gated_model_role()

    def add_gated_model_role(self) -> iam.IRole:
        """The JumpStart gated-model role, created on first call (``defer_gated_role``: only once a JumpStart endpoint
        needs it)."""
        if self.jumpstart_gated_role is None:
            self.jumpstart_gated_role = self._gated_model_role(self._oidc_provider_arn, self._namespaces_for_gated)
        return self.jumpstart_gated_role

    def _alb_controller_role(self, oidc_provider_arn: str) -> iam.Role:
        role = ServiceAccountRole(self, "AlbControllerRole", oidc_provider_arn=oidc_provider_arn,
                                  service_account=ALB_CONTROLLER_SERVICE_ACCOUNT,
                                  description="AWS Load Balancer Controller installed by the HyperPod inference add-on")
        policy = iam.Policy(self, "AlbControllerPolicy",
                            document=iam.PolicyDocument.from_json(_load_alb_controller_policy()), roles=[role])
        _acknowledge(policy, _ALB_POLICY_ACKS)
        return role

    def _keda_role(self, oidc_provider_arn: str) -> iam.Role:
        role = ServiceAccountRole(self, "KedaRole", oidc_provider_arn=oidc_provider_arn,
                                  service_account=KEDA_SERVICE_ACCOUNT,
                                  description="KEDA operator installed by the HyperPod inference add-on")
        # What KEDA may read follows the endpoints' triggers: constructs/autoscaling.py (KedaTriggerAccess).
        return role

    def _gated_model_role(self, oidc_provider_arn: str,
                          namespaces: Sequence[str] | Callable[[], Sequence[str]]) -> iam.Role:
        issuer = oidc_issuer_from_arn(oidc_provider_arn)

        def subjects() -> str | list[str]:
            names = namespaces() if callable(namespaces) else namespaces
            subs = [f"system:serviceaccount:{ns}:{GATED_MODEL_SERVICE_ACCOUNT_PREFIX}*" for ns in names]
            return subs[0] if len(subs) == 1 else subs

        # StringLike on sub only: the operator creates one service account per JumpStart endpoint whose name starts
        # with hyperpod-inference-service-account, so the exact names are not known in advance. The namespace part
        # stays literal (AWS's own template uses "*" there); aud stays StringEquals.
        pods = iam.FederatedPrincipal(
            oidc_provider_arn,
            conditions={
                "StringEquals": {f"{issuer}:aud": "sts.amazonaws.com"},
                "StringLike": {f"{issuer}:sub": lazy(subjects) if callable(namespaces) else subjects()},
            },
            assume_role_action="sts:AssumeRoleWithWebIdentity",
        )
        role = iam.Role(
            self,
            "JumpStartGatedModelRole",
            assumed_by=iam.CompositePrincipal(
                sagemaker_principal(self, source_account=self._sagemaker_source_account), pods),
            description="Downloads gated JumpStart models for HyperPod inference endpoints",
            role_name=self._gated_role_name,
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(GATED_MODEL_MANAGED_POLICY)],
        )
        _acknowledge(role, {
            _nag_iam4(GATED_MODEL_MANAGED_POLICY):
                "AWS publishes AmazonSageMakerHyperPodGatedModelAccess for the HyperPod inference gated-model "
                "download role; AWS's add-on IAM template attaches it.",
        })
        return role
