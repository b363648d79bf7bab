"""The AWS side of the HyperPod inference operator: execution role, TLS bucket, dependency IRSA roles and EKS add-ons.

Each construct takes plain props and can be used on its own:

- :class:`OperatorExecutionRole` -- the role the operator runs as (``SageMakerHyperPodInference...``), trusted by
  SageMaker and by the operator's one service account, with the AWS managed policy
  ``AmazonSageMakerHyperPodInferenceAccess``. Features add their own statements through their ``grant_*`` methods.
- :class:`TlsBucket` -- the bucket the operator writes TLS certificates to (created as
  ``hyperpod-tls-<scope>-<account>-<region>``, or imported; outside ``hyperpod-tls*`` under a per-stack folder).
- :class:`OperatorDependencyRoles` -- IRSA roles for the ALB controller, KEDA, the Mountpoint S3 CSI driver and the
  JumpStart gated-model download role.
- :class:`OperatorAddon` -- the ``amazon-sagemaker-hyperpod-inference`` EKS add-on and its ``configurationValues``.
- :class:`DependencyAddons` -- the EKS add-ons the operator add-on needs installed first.

Security checks (cdk-nag AwsSolutions) are acknowledged here, at the narrowest construct, each with its reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from aws_cdk import Acknowledgment, Aws, Duration, RemovalPolicy, Stack, Token, Validations
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from ..facts import naming, rules
from ..facts import operator as facts
from ..facts.operator import (
    ADDON_SERVICE_ACCOUNT,
    CHART_SERVICE_ACCOUNT,
    DEPENDENCY_ADDON_VERSIONS,
    EXECUTION_ROLE_NAME_PREFIX,
    GATED_MODEL_MANAGED_POLICY,
    GATED_MODEL_SERVICE_ACCOUNT_PREFIX,
    OPERATOR_ADDON_NAME,
    OPERATOR_ADDON_VERSIONS,
    OPERATOR_MANAGED_POLICY,
    OPERATOR_NAMESPACE,
    TLS_BUCKET_PREFIX,
)
from ..facts.production import merge_patch
from .irsa import ServiceAccountRef, ServiceAccountRole, irsa_principal, oidc_issuer_from_arn
from .lazy import lazy

__all__ = [
    "ADDON_SERVICE_ACCOUNT",
    "ALB_CONTROLLER_SERVICE_ACCOUNT",
    "CHART_SERVICE_ACCOUNT",
    "DEPENDENCY_ADDON_VERSIONS",
    "EXECUTION_ROLE_NAME_PREFIX",
    "GATED_MODEL_SERVICE_ACCOUNT_PREFIX",
    "KEDA_SERVICE_ACCOUNT",
    "OPERATOR_ADDON_NAME",
    "OPERATOR_ADDON_VERSIONS",
    "OPERATOR_NAMESPACE",
    "S3_CSI_SERVICE_ACCOUNT",
    "TLS_BUCKET_PREFIX",
    "DependencyAddons",
    "OperatorAddon",
    "OperatorDependencyRoles",
    "OperatorExecutionRole",
    "TlsBucket",
    "default_execution_role_name",
]

# The facts about the operator (names it fixes, managed policies, add-on versions: FACTS.md sections 6 and 7) live in
# facts/operator.py; the rules that check props in facts/rules.py, shared with the config.

_OPERATOR_OBJECT_TAG = facts.OPERATOR_OBJECT_TAG
ALB_CONTROLLER_SERVICE_ACCOUNT = ServiceAccountRef(*facts.ALB_CONTROLLER_SERVICE_ACCOUNT)
KEDA_SERVICE_ACCOUNT = ServiceAccountRef(*facts.KEDA_SERVICE_ACCOUNT)
S3_CSI_SERVICE_ACCOUNT = ServiceAccountRef(*facts.S3_CSI_SERVICE_ACCOUNT)

_S3_ACCESS_LOGS_USE_BUCKET_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"
_ALB_POLICY_FILE = Path(__file__).with_name("alb_controller_policy.json")


def _acknowledge(scope: IConstruct, findings: Mapping[str, str]) -> None:
    """Acknowledge cdk-nag findings (exact, granular IDs) on ``scope``, each with its reason."""
    Validations.of(scope).acknowledge(*[Acknowledgment(id=rule, reason=reason) for rule, reason in findings.items()])


def _nag_iam4(policy_name: str) -> str:
    return f"AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy_name}]"


def _nag_iam5(resource: str) -> str:
    return f"AwsSolutions::AwsSolutions-IAM5[Resource::{resource}]"


def _nag_value(value: str, pseudo_parameter: str) -> str:
    """How cdk-nag writes a value in a finding ID: literal, or ``<AWS::Region>`` for the pseudo-parameter token."""
    return f"<{pseudo_parameter}>" if Token.is_unresolved(value) else value


def _raise_if(errors: list[str], what: str) -> None:
    if errors:
        raise ValueError(f"{what}: " + "; ".join(errors))


def _check_role_arn(field: str, value: str | None, errors: list[str], *, required: bool = True) -> None:
    if value is None:
        if required:
            errors.append(f"{field}: required")
        return
    problem = None if Token.is_unresolved(value) else rules.role_arn_problem(value)
    if problem:
        errors.append(f"{field}: {problem} (got {value!r})")


# --- 1. execution role ----------------------------------------------------------------------------------------------

def default_execution_role_name(stack: Stack) -> str:
    """``SageMakerHyperPodInference-<stack name>-<region>``, at most 64 characters.

    Longer names keep their head and end in an 8-hex digest of the full name. With an environment-agnostic stack the
    Region is a deploy-time value: the stack-name part is then shortened so that any Region still fits.
    """
    region = stack.region
    return naming.execution_role_name(stack.stack_name, Aws.REGION if Token.is_unresolved(region) else region)


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
                "add-on setup guide requires it. Its statements are resource- or condition-scoped "
                "(hyperpod-tls* buckets, CreatedBy=HyperPodInference tags, aws:ResourceAccount).",
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
        if Token.is_unresolved(role_name):
            return
        problem = rules.execution_role_name_problem(role_name, EXECUTION_ROLE_NAME_PREFIX)
        _raise_if([f"{problem} (got {role_name!r})"] if problem else [], "role_name")


# --- 2. TLS bucket --------------------------------------------------------------------------------------------------

class TlsBucket(Construct):
    """The S3 bucket the operator writes TLS certificates to.

    ``bucket_name=None`` creates ``hyperpod-tls-<scope>-<account>-<region>`` (``<scope>``: ``name_scope``, default
    the stack's name, so two stacks never collide): TLS-only, Block Public Access, SSE-S3, versioned,
    bucket-owner-enforced, retained on stack deletion, with server access logs in a separate retained bucket. Its name
    lies under the managed policy's ``hyperpod-tls*`` statements, so the execution role needs nothing more.

    A name imports an existing bucket; it is never re-policied. If the name does not start with ``hyperpod-tls``
    (or is not known at synth time), the managed policy does not cover it: the operator's certificates for this stack
    then go under ``<bucket>/hyperpod-inference/<scope>/`` (:func:`naming.tls_certificate_prefix`; ``s3_uri`` carries
    it, so every custom resource's ``tlsCertificateOutputS3Uri`` does), and :meth:`grant_operator_access` gives the
    execution role the managed policy's S3 statements on that prefix only, never on the rest of the bucket.

    ``bucket`` takes a bucket object instead (e.g. one of your own stack); it is not re-policied either, and its name
    decides the same way.

    Attributes: ``bucket`` (s3.IBucket), ``bucket_name``, ``object_prefix`` (the key prefix, no trailing ``/``, for a
    bucket the managed policy does not cover; else None), ``s3_uri`` (``s3://<bucket>`` or
    ``s3://<bucket>/<object_prefix>/``), ``managed_policy_covers``, ``created`` and ``access_log_bucket`` (created
    buckets only, else None).
    """

    def __init__(self, scope: Construct, construct_id: str, *, bucket_name: str | None = None,
                 bucket: s3.IBucket | None = None, name_scope: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self.access_log_bucket: s3.Bucket | None = None
        if bucket is not None:
            if bucket_name is not None:
                _raise_if(["give bucket or bucket_name, not both"], "TlsBucket")
            # The caller's bucket: never re-policied here; its name decides whether the managed policy covers it.
            self.bucket = bucket
            self.bucket_name = bucket.bucket_name
            self.created = False
            self.managed_policy_covers = (not Token.is_unresolved(self.bucket_name)
                                          and self.bucket_name.startswith(TLS_BUCKET_PREFIX))
        elif bucket_name is None:
            stack = Stack.of(self)
            # Deliver access logs through a bucket policy on the log bucket, not the LogDeliveryWrite ACL, so both
            # buckets can keep ACLs disabled (BucketOwnerEnforced). Scoped to this construct's subtree.
            self.node.set_context(_S3_ACCESS_LOGS_USE_BUCKET_POLICY, True)
            self.access_log_bucket = s3.Bucket(
                self,
                "AccessLogs",
                enforce_ssl=True,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                encryption=s3.BucketEncryption.S3_MANAGED,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                versioned=True,  # log records are evidence: an overwrite or delete keeps the previous version
                lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365),
                                                  noncurrent_version_expiration=Duration.days(365))],
                removal_policy=RemovalPolicy.RETAIN,
            )
            physical_name = naming.tls_bucket_name(name_scope or stack.stack_name, stack.account, stack.region)
            self.bucket: s3.IBucket = s3.Bucket(
                self,
                "Bucket",
                bucket_name=physical_name,
                enforce_ssl=True,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                encryption=s3.BucketEncryption.S3_MANAGED,
                object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
                versioned=True,
                removal_policy=RemovalPolicy.RETAIN,
                server_access_logs_bucket=self.access_log_bucket,
                server_access_logs_prefix="tls-bucket/",
            )
            # The TLS-only bucket policies stay with their retained buckets.
            for bucket in (self.access_log_bucket, self.bucket):
                bucket.policy.apply_removal_policy(RemovalPolicy.RETAIN)
            self.created = True
            # The physical name itself (not a Ref), so manifests get the real name at synth time.
            self.bucket_name: str = physical_name
            # Built from the prefix above, so covered even while account/region are tokens.
            self.managed_policy_covers = True
        else:
            self._validate_bucket_name(bucket_name)
            self.bucket = s3.Bucket.from_bucket_name(self, "Bucket", bucket_name)
            self.bucket_name = bucket_name
            self.created = False
            # A deploy-time name cannot be checked: grant explicitly (harmless if the policy also covers it).
            self.managed_policy_covers = (not Token.is_unresolved(bucket_name)
                                          and bucket_name.startswith(TLS_BUCKET_PREFIX))
        # A bucket the managed policy does not cover is shared with whatever else its owner keeps there: this stack's
        # certificates get their own folder, and the grant names only that folder.
        self.object_prefix: str | None = (
            None if self.managed_policy_covers
            else naming.tls_certificate_prefix(name_scope or Stack.of(self).stack_name))
        self.s3_uri = (f"s3://{self.bucket_name}" if self.object_prefix is None
                       else f"s3://{self.bucket_name}/{self.object_prefix}/")

    def grant_operator_access(self, grantee: iam.IGrantable) -> iam.Grant:
        """Give the operator's execution role what the managed policy gives for ``hyperpod-tls*`` buckets, on this
        stack's folder of this bucket (``object_prefix``). A no-op (``iam.Grant.drop``) when the managed policy
        already covers the bucket.

        Mirrors the managed policy (v4), scoped to ``<bucket>/<object_prefix>/*``: DeleteObject; GetObject on objects
        tagged ``CreatedBy=HyperPodInference``; PutObject/PutObjectTagging only with that tag in the request. Every
        statement keeps the policy's ``aws:ResourceAccount = ${aws:PrincipalAccount}`` condition.

        DeleteObject is scoped by the folder, not by the tag: S3 does not evaluate ``s3:ExistingObjectTag`` for
        DeleteObject ("When granting permissions for the PUT Object and DELETE Object operations, this condition key
        is not supported", Amazon S3 User Guide, *Tagging and access control policies*), so a tag condition there
        would deny every delete. The folder holds only what the operator wrote for this stack.

        ListBucket stays on the bucket, as in the managed policy, without an ``s3:prefix`` condition: the operator's
        list calls (if any) are not documented, and nothing shows that they pass a prefix; a prefix condition would
        deny a list without one. ListBucket reveals key names, not objects.
        """
        if self.managed_policy_covers:
            return iam.Grant.drop(grantee, f"{self.bucket_name} is covered by {OPERATOR_MANAGED_POLICY}")
        same_account = {"aws:ResourceAccount": "${aws:PrincipalAccount}"}
        tag_key, tag_value = _OPERATOR_OBJECT_TAG
        objects = [self.bucket.arn_for_objects(f"{self.object_prefix}/*")]
        grant = iam.Grant.add_to_principal(
            grantee=grantee, actions=["s3:DeleteObject"], resource_arns=objects,
            conditions={"StringEquals": dict(same_account)},
        )
        for actions, condition in (
            (["s3:GetObject"], {f"s3:ExistingObjectTag/{tag_key}": tag_value}),
            (["s3:PutObject", "s3:PutObjectTagging"], {f"s3:RequestObjectTag/{tag_key}": tag_value}),
        ):
            grant = grant.combine(iam.Grant.add_to_principal(
                grantee=grantee, actions=actions, resource_arns=objects,
                conditions={"StringEquals": {**same_account, **condition}},
            ))
        grant = grant.combine(iam.Grant.add_to_principal(
            grantee=grantee, actions=["s3:ListBucket"], resource_arns=[self.bucket.bucket_arn],
            conditions={"StringEquals": dict(same_account)},
        ))
        self._acknowledge_object_wildcard(grantee)
        return grant

    def _acknowledge_object_wildcard(self, grantee: iam.IGrantable) -> None:
        principal = grantee.grant_principal
        if not isinstance(principal, Construct) or Token.is_unresolved(self.bucket_name):
            return
        policy = principal.node.try_find_child("DefaultPolicy") or principal
        partition = _nag_value(Stack.of(self).partition, "AWS::Partition")
        _acknowledge(policy, {
            _nag_iam5(f"arn:{partition}:s3:::{self.bucket_name}/{self.object_prefix}/*"):
                f"The operator writes, reads and deletes TLS certificate objects under generated keys in this stack's "
                f"folder {self.object_prefix}/ of this one bucket, nowhere else in it; reads and writes are limited to "
                "objects tagged CreatedBy=HyperPodInference, as in the managed policy for hyperpod-tls* buckets.",
        })

    @staticmethod
    def _validate_bucket_name(bucket_name: str) -> None:
        if Token.is_unresolved(bucket_name):
            return
        errors = []
        if bucket_name.startswith("s3://"):
            errors.append("give the bucket name, not an s3:// URI")
        elif problem := rules.bucket_name_problem(bucket_name):
            errors.append(f"{problem} (got {bucket_name!r})")
        _raise_if(errors, "bucket_name")


# --- 3. IRSA roles for the operator's dependencies -----------------------------------------------------------------

def _load_alb_controller_policy() -> dict[str, Any]:
    """The upstream AWS Load Balancer Controller policy (v2.13 ``docs/install/iam_policy.json``), with the ``aws``
    partition replaced by the stack's partition."""
    document = json.loads(_ALB_POLICY_FILE.read_text())
    text = json.dumps(document).replace('"arn:aws:', f'"arn:{Aws.PARTITION}:')
    return json.loads(text)


#: cdk-nag IAM5 findings of the upstream ALB controller policy (resource and partition as cdk-nag renders them).
_ALB_POLICY_ACKS: Mapping[str, str] = {
    _nag_iam5("*"):
        "Upstream AWS Load Balancer Controller policy v2.13, kept verbatim: Describe*/Get* and WAF/Shield/ACM lookups "
        "have no resource-level permissions; mutating ELB and security-group actions are conditioned on the "
        "elbv2.k8s.aws/cluster tag; CreateSecurityGroup/CreateListener/CreateRule/Authorize/Revoke act on resources "
        "whose ARNs are not known before the controller creates them.",
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


# --- 4. the operator add-on -----------------------------------------------------------------------------------------

class OperatorAddon(Construct):
    """The ``amazon-sagemaker-hyperpod-inference`` EKS add-on.

    ``configurationValues`` carries exactly: ``executionRoleArn``, ``tlsCertificateS3Bucket`` (a bucket name, as
    the add-on documents it; never the per-stack folder of a bucket outside ``hyperpod-tls*``, which every custom
    resource of the stack names in its own ``tlsCertificateOutputS3Uri``),
    ``hyperpodClusterArn`` (omitted when None), ``enableCustomServiceAccounts``,
    ``jumpstartGatedModelDownloadRoleArn``, ``alb`` (enabled, service account created with ``alb_role_arn``) and
    ``keda`` (enabled, IRSA with ``keda_role_arn``). Role ARNs may be deploy-time tokens; they resolve inside a JSON
    string (``Fn::Join``).

    Create the dependency add-ons first, and a TLS bucket created in the same stack (its name reaches the add-on as a
    literal, so there is no implicit dependency): ``addon.node.add_dependency(dependency_addons, tls_bucket)``.

    :param version: operator version; picks the add-on version from ``OPERATOR_ADDON_VERSIONS``
    :param addon_version: pin another add-on version (``vX.Y.Z-eksbuild.N``)
    :param preserve_on_delete: keep the operator on the cluster when the stack (or this add-on) is deleted
    :param configuration_overrides: an RFC 7386 merge patch applied last to ``configurationValues`` (for keys of
        newer add-on versions the library does not set)
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster_name: str,
                 version: Literal["v3.2", "v3.3"], execution_role_arn: str, tls_bucket_name: str,
                 hyperpod_cluster_arn: str | None, enable_custom_service_accounts: bool,
                 jumpstart_gated_model_download_role_arn: str, alb_role_arn: str, keda_role_arn: str,
                 addon_version: str | None = None, preserve_on_delete: bool = False,
                 configuration_overrides: Mapping[str, Any] | None = None) -> None:
        super().__init__(scope, construct_id)
        errors: list[str] = []
        if version not in OPERATOR_ADDON_VERSIONS:
            errors.append(f"version: must be one of {', '.join(OPERATOR_ADDON_VERSIONS)} (got {version!r})")
        if addon_version is not None and (problem := rules.addon_version_problem(addon_version)):
            errors.append(f"addon_version: {problem} (got {addon_version!r})")
        _check_cluster_name(cluster_name, errors)
        _raise_if(errors, "OperatorAddon")
        configuration = self.configuration(
            execution_role_arn=execution_role_arn,
            tls_bucket_name=tls_bucket_name,
            hyperpod_cluster_arn=hyperpod_cluster_arn,
            enable_custom_service_accounts=enable_custom_service_accounts,
            jumpstart_gated_model_download_role_arn=jumpstart_gated_model_download_role_arn,
            alb_role_arn=alb_role_arn,
            keda_role_arn=keda_role_arn,
        )
        if configuration_overrides:
            # operator.addonConfigurationOverrides: an RFC 7386 merge patch, applied last (the config refuses it on
            # the keys set above)
            configuration = merge_patch(configuration, dict(configuration_overrides))
        self.addon_version = addon_version or OPERATOR_ADDON_VERSIONS[version]
        self.addon = eks.CfnAddon(
            self,
            "Resource",
            addon_name=OPERATOR_ADDON_NAME,
            cluster_name=cluster_name,
            addon_version=self.addon_version,
            resolve_conflicts="OVERWRITE",
            preserve_on_delete=preserve_on_delete,
            configuration_values=Stack.of(self).to_json_string(configuration),
        )

    @staticmethod
    def configuration(*, execution_role_arn: str, tls_bucket_name: str, hyperpod_cluster_arn: str | None,
                      enable_custom_service_accounts: bool, jumpstart_gated_model_download_role_arn: str,
                      alb_role_arn: str, keda_role_arn: str) -> dict[str, Any]:
        """The add-on's ``configurationValues`` as a dict (keys as in the AWS setup guide)."""
        errors: list[str] = []
        _check_role_arn("execution_role_arn", execution_role_arn, errors)
        if (execution_role_arn and not Token.is_unresolved(execution_role_arn)
                and rules.role_arn_problem(execution_role_arn) is None):
            name = rules.role_name_from_arn(execution_role_arn)
            if problem := rules.execution_role_name_problem(name, EXECUTION_ROLE_NAME_PREFIX):
                errors.append(f"execution_role_arn: {problem} (got {name!r})")
        _check_role_arn("jumpstart_gated_model_download_role_arn", jumpstart_gated_model_download_role_arn, errors)
        _check_role_arn("alb_role_arn", alb_role_arn, errors)
        _check_role_arn("keda_role_arn", keda_role_arn, errors)
        if not tls_bucket_name:
            errors.append("tls_bucket_name: required")
        elif not Token.is_unresolved(tls_bucket_name) and (problem := rules.bucket_name_problem(tls_bucket_name)):
            errors.append(f"tls_bucket_name: a bucket name without s3://: {problem} (got {tls_bucket_name!r})")
        if (hyperpod_cluster_arn is not None and not Token.is_unresolved(hyperpod_cluster_arn)
                and (problem := rules.hyperpod_cluster_arn_problem(hyperpod_cluster_arn))):
            errors.append(f"hyperpod_cluster_arn: {problem} (got {hyperpod_cluster_arn!r})")
        if not isinstance(enable_custom_service_accounts, bool) and not Token.is_unresolved(
                enable_custom_service_accounts):
            errors.append("enable_custom_service_accounts: must be true or false")
        _raise_if(errors, "OperatorAddon configuration")

        values: dict[str, Any] = {
            "executionRoleArn": execution_role_arn,
            "tlsCertificateS3Bucket": tls_bucket_name,
        }
        if hyperpod_cluster_arn is not None:
            values["hyperpodClusterArn"] = hyperpod_cluster_arn
        values["enableCustomServiceAccounts"] = enable_custom_service_accounts
        values["jumpstartGatedModelDownloadRoleArn"] = jumpstart_gated_model_download_role_arn
        values["alb"] = {"enabled": True, "serviceAccount": {"create": True, "roleArn": alb_role_arn}}
        values["keda"] = {"enabled": True, "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda_role_arn}}}}
        return values


def _check_cluster_name(cluster_name: str, errors: list[str]) -> None:
    if not Token.is_unresolved(cluster_name) and (problem := rules.eks_cluster_name_problem(cluster_name or "")):
        errors.append(f"cluster_name: {problem} (got {cluster_name!r})")


# --- 5. dependency add-ons ------------------------------------------------------------------------------------------

class DependencyAddons(Construct):
    """The EKS add-ons the operator add-on needs: Mountpoint for S3 CSI (with its IRSA role), FSx for Lustre CSI,
    metrics-server and cert-manager.

    Versions default to the minimums of the setup guide (``DEPENDENCY_ADDON_VERSIONS``); ``addon_versions`` pins any of
    them. The add-ons are kept on the cluster when the stack is deleted (``preserveOnDelete``): other workloads on a
    shared cluster may use them, and removing cert-manager or a CSI driver under running pods breaks those pods.

    The FSx CSI driver gets no role: static provisioning of existing file systems (the only FSx use here) needs no AWS
    API calls from the driver.

    Attributes: ``addons`` (list of CfnAddon, table order) and ``by_name`` (add-on name -> CfnAddon).
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster_name: str, s3_csi_role_arn: str,
                 addon_versions: Mapping[str, str] | None = None) -> None:
        super().__init__(scope, construct_id)
        errors: list[str] = []
        _check_cluster_name(cluster_name, errors)
        _check_role_arn("s3_csi_role_arn", s3_csi_role_arn, errors)
        for name, pinned in (addon_versions or {}).items():
            if name not in DEPENDENCY_ADDON_VERSIONS:
                errors.append(f"addon_versions.{name}: not one of {', '.join(DEPENDENCY_ADDON_VERSIONS)}")
            elif problem := rules.addon_version_problem(pinned):
                errors.append(f"addon_versions.{name}: {problem} (got {pinned!r})")
        _raise_if(errors, "DependencyAddons")
        versions = {**DEPENDENCY_ADDON_VERSIONS, **(addon_versions or {})}
        self.by_name: dict[str, eks.CfnAddon] = {}
        for name, version in versions.items():
            self.by_name[name] = eks.CfnAddon(
                self,
                "".join(part.capitalize() for part in name.split("-")),
                addon_name=name,
                cluster_name=cluster_name,
                addon_version=version,
                resolve_conflicts="OVERWRITE",
                preserve_on_delete=True,
                service_account_role_arn=s3_csi_role_arn if name == "aws-mountpoint-s3-csi-driver" else None,
            )
        self.addons: list[eks.CfnAddon] = list(self.by_name.values())
