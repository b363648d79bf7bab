"""The AWS side of a plan: IRSA roles and their grants, the capture bucket and keys, the domain, the post-deploy
check, each as the plan names it. What the Kubernetes side needs of it comes back as :class:`AwsValues` (ARNs, URIs,
IDs in small frozen values), never as constructs.

``AwsSide`` is a helper of ``HyperPodInference``, not a construct of its own: its resources are children of that
construct (or of the scope an endpoint is placed in), so their logical IDs stay ``DataCapture``, ``Domain``,
``<Ns><Owner>ReaderRole``... wherever the helper lives.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_route53 as route53
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..constructs.analytics import CaptureAnalytics
from ..constructs.data_capture import DataCaptureStorage
from ..constructs.domain import CustomDomain
from ..constructs.endpoint_verification import EndpointVerification
from ..constructs.irsa import ServiceAccountRef, ServiceAccountRole
from ..constructs.lazy import is_unresolved
from ..constructs.model_access import grant_model_read, grant_secret_read
from ..facts import naming
from ..plan.capture import CapturePlan
from ..plan.context import PlanContext
from ..plan.domain import DomainPlan
from ..plan.endpoints import EndpointPlan, ModelRead, RolePlan
from ..plan.shared import SharedPlan
from . import outputs
from .delivery import ManifestUnit
from .operator_install import OperatorInstall
from .review import with_placeholders


@dataclass(frozen=True)
class CaptureValues:
    """Where an endpoint's capture goes: the bucket's S3 URI (with the prefix) and the key that encrypts it."""

    s3_uri: str
    kms_key_id: str | None


@dataclass(frozen=True)
class DomainValues:
    """What an endpoint's domain name needs: the certificate, the zone its records go to, and where the operator
    writes the certificate it fetches."""

    certificate_arn: str
    hosted_zone_id: str | None
    tls_output_s3_uri: str


@dataclass(frozen=True)
class AwsValues:
    """What one endpoint's Kubernetes side needs of its AWS side (strings may be deploy-time tokens with kubectl
    delivery; role ARNs are literal with files delivery): None where the plan needs none."""

    token_role_arn: str | None = None
    reader_role_arn: str | None = None
    capture: CaptureValues | None = None
    domain: DomainValues | None = None


@dataclass(frozen=True)
class AwsEndpoint:
    """One endpoint's AWS side: the values for its manifests, and the roles made for it (None when it needs
    none). ``new_token_sync``: this endpoint is the first of its token sync, whose objects are to be delivered."""

    values: AwsValues
    model_reader_role: iam.IRole | None
    token_reader_role: iam.IRole | None
    new_token_sync: bool


class AwsSide:
    """The AWS resources of one ``HyperPodInference`` (``owner``) that its endpoints need, made on first use.

    Attributes: ``capture`` (DataCaptureStorage, once an endpoint captures), ``capture_analytics``, ``domain``
    (CustomDomain, once an endpoint has a domain name)."""

    def __init__(self, owner: Construct, *, context: PlanContext, capture_plan: CapturePlan | None,
                 domain_plan: DomainPlan | None, oidc_provider_arn: str, operator: OperatorInstall,
                 capture_bucket: s3.IBucket | None = None, capture_key: kms.IKey | None = None,
                 hosted_zone: route53.IHostedZone | None = None, certificate: acm.ICertificate | None = None) -> None:
        self.owner = owner
        self.context = context
        self.capture_plan, self.domain_plan = capture_plan, domain_plan
        self.oidc_provider_arn = oidc_provider_arn
        self.operator = operator
        self.stack = cdk.Stack.of(owner)
        self.partition = context.partition if not is_unresolved(context.region) else cdk.Aws.PARTITION
        self._capture_props = (capture_bucket, capture_key)
        self._domain_props = (hosted_zone, certificate)
        self.capture: DataCaptureStorage | None = None
        self.capture_analytics: CaptureAnalytics | None = None
        self.domain: CustomDomain | None = None
        #: token sync unit -> its reader role (its grants come from the shared plan: grant_shared)
        self._token_roles: dict[str, iam.IRole] = {}
        self._durations: dict[int, cdk.Duration] = {}

    # ---------------------------------------------------------------------------------------------- endpoints
    def realize(self, plan: EndpointPlan, scope: Construct, home: Construct) -> AwsEndpoint:
        """The AWS side of ``plan``: its roles in ``scope`` (a token sync's in ``home``, its stack's home, on first
        use), their grants (a token sync's: :meth:`grant_shared`), the operator's grants, capture and domain."""
        self.operator.endpoint_added(plan.gated_model_role)
        token_role = reader_role = None
        token_role_arn = reader_role_arn = None
        new_sync = False
        if plan.token_sync is not None:
            sync = plan.token_sync
            token_role = self._token_roles.get(sync.unit)
            new_sync = token_role is None
            if token_role is None:
                token_role = self._token_roles[sync.unit] = self.service_account_role(home, sync.role)
            token_role_arn = self.manifest_role_arn(token_role)
        if plan.reader is not None:
            reader_role = self.service_account_role(scope, plan.reader.role)
            self.grant_read(reader_role, plan.reader.grant)
            reader_role_arn = self.manifest_role_arn(reader_role)
        if plan.s3_csi_read is not None and self.operator.s3_csi_role is not None:
            self.grant_read(self.operator.s3_csi_role, plan.s3_csi_read)
        capture = domain = None
        if plan.captures:
            storage = self.capture_for(alb_logs=plan.alb_logs)
            capture = CaptureValues(storage.s3_uri, storage.kms_key_id)
        if plan.endpoint.domain_name:
            custom = self.domain_for(plan.endpoint.domain_name)
            domain = DomainValues(custom.certificate_arn, custom.hosted_zone_id, self.operator.tls_bucket.s3_uri)
        return AwsEndpoint(AwsValues(token_role_arn, reader_role_arn, capture, domain), reader_role, token_role,
                           new_sync)

    def grant_shared(self, shared: SharedPlan) -> None:
        """Once every endpoint is added: each token sync's role (made with the sync's first endpoint) reads its
        secret with every key an endpoint of the sync names."""
        for shared_sync in shared.token_syncs:
            role = self._token_roles[shared_sync.sync.unit]
            for grant in shared_sync.grants:
                grant_secret_read(role, secret_arn=grant.secret_arn, kms_key_arn=grant.kms_key_arn)

    def service_account_role(self, scope: Construct, role: RolePlan) -> ServiceAccountRole:
        return ServiceAccountRole(scope, role.construct_id, oidc_provider_arn=self.oidc_provider_arn,
                                  role_name=role.role_name,
                                  service_account=ServiceAccountRef(role.namespace, role.service_account),
                                  description=role.description)

    @staticmethod
    def grant_read(role: iam.IRole, read: ModelRead) -> None:
        grant_model_read(role, bucket=read.bucket, prefix=read.prefix, kms_key_arn=read.kms_key_arn)

    def manifest_role_arn(self, role: iam.IRole) -> str:
        """A role's ARN as a manifest carries it: the literal ARN of a named role with files delivery (the GitOps
        manifests are applied without CloudFormation), the deploy-time ARN otherwise."""
        if not self.context.files or role.node.default_child is None:
            return role.role_arn
        name = role.node.default_child.role_name
        if not isinstance(name, str) or is_unresolved(name):
            return role.role_arn
        return naming.role_arn(self.partition, self.context.account, name)

    def verify(self, scope: Construct, plan: EndpointPlan, unit: ManifestUnit) -> EndpointVerification | None:
        """The post-deploy check. It runs again whenever the endpoint's custom resource changes (a new commit,
        replica count, ...): its review form (deploy-time values as placeholders, never tokens) is hashed into the
        check's properties. It verifies at the SageMaker level (DescribeEndpoint InService, one invoke); it does not
        read the operator's rollout status of the custom resource."""
        v = plan.verify
        if v is None:
            return None
        review = json.dumps(with_placeholders(self.stack, unit.objects()), sort_keys=True, separators=(",", ":"))
        check = EndpointVerification(
            scope, v.construct_id, endpoint_name=v.endpoint_name, payload=v.payload,
            content_type=v.content_type, fail_deployment=v.fail_deployment, show_response=v.show_response,
            timeout=self._minutes(v.timeout_minutes), nonce=hashlib.sha256(review.encode()).hexdigest()[:16])
        if unit.resource is not None:
            check.node.add_dependency(unit.resource)
        return check

    def _minutes(self, minutes: int) -> cdk.Duration:
        """One Duration object per value (the verification construct reads each once)."""
        known = self._durations.get(minutes)
        if known is None:
            known = self._durations[minutes] = cdk.Duration.minutes(minutes)
        return known

    # ------------------------------------------------------------------------------------ capture and domain
    def capture_for(self, *, alb_logs: bool) -> DataCaptureStorage:
        """The capture bucket and keys the plan names, created with the first capturing endpoint (tier 2 turns on ALB
        logs)."""
        cap = self.capture_plan
        assert cap is not None, "the config rules require the capture section for an endpoint that captures"
        if self.capture is not None:
            if alb_logs:
                self.capture.enable_alb_logs()
            return self.capture
        bucket, key = self._capture_props
        capture = self.capture = DataCaptureStorage(
            self.owner, cap.construct_id, bucket_name=cap.bucket_name, bucket_account=cap.bucket_account,
            bucket_default_kms=cap.bucket_default_kms, prefix=cap.prefix, retention_days=cap.retention_days,
            kms=cap.kms, alb_logs=alb_logs, bucket=bucket, key=key, physical_name_prefix=cap.name_base)
        capture.grant_capture_write(self.operator.execution_role)
        if self.operator.s3_csi_role is not None:
            capture.grant_capture_write(self.operator.s3_csi_role, multipart=True)
        analytics = cap.analytics
        if analytics is not None:
            self.capture_analytics = CaptureAnalytics(
                self.owner, analytics.construct_id, capture=capture, name_base=cap.name_base,
                bytes_scanned_cutoff_mb=analytics.bytes_scanned_cutoff_mb,
                results_retention_days=analytics.results_retention_days)
        csi = self.operator.s3_csi_role
        outputs.capture_outputs(self.owner, capture, self.capture_analytics, region=self.context.region,
                                key_principals=lambda: [self.operator.execution_role.role_arn,
                                                        *([csi.role_arn] if csi is not None else [])])
        return capture

    def domain_for(self, domain_name: str) -> CustomDomain:
        """The custom domain (zone and certificate), created with the first endpoint that has a domain name; later
        names join its certificate and DNS grants."""
        d = self.domain_plan
        assert d is not None, "the config rules require the domain section for an endpoint with a domainName"
        if self.domain is not None:
            self.domain.add_domain_name(domain_name)
            return self.domain
        zone, certificate = self._domain_props
        role = self.operator.execution_role
        domain = self.domain = CustomDomain(
            self.owner, d.construct_id, zone_name=d.zone_name, domain_names=[domain_name], hosted_zone_id=d.hosted_zone_id,
            certificate_arn=d.certificate_arn, wildcard=d.wildcard, zone=zone, certificate=certificate)
        domain.grant_dns_management(role)
        domain.grant_certificate_read(role)
        self.operator.tls_bucket.grant_operator_access(role)
        outputs.domain_outputs(self.owner, domain, d.zone_name)
        return domain
