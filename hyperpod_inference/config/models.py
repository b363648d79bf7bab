"""Typed, validated models of the config file (``apiVersion: hyperpod-inference/v1``).

YAML keys are camelCase (the operator's vocabulary); Python attributes are snake_case. Unknown keys are errors.
Field-level rules (patterns, ranges, enums) sit on the fields; rules that span fields sit in one validator per model
and report every problem with its own path, so a config with five mistakes shows five lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..facts import analytics as analytics_facts
from ..facts import instances as instance_table
from ..facts import operator as operator_facts
from ..facts import production as prod_facts
from ..facts import rules
from ..facts import safety as safety_rules
from ..facts.runtimes import PRESETS, dlc_registry_problem
from . import safety
from .observability import EndpointAlarms, Observability
from .production import (
    SCHEMA_DOCS,
    AdditionalConfig,
    AutoScalingSpec,
    CrdPaths,
    EnvValue,
    ImageCache,
    IntelligentRoutingSpec,
    JsmRoleArn,
    JumpStartModelVersion,
    KvCacheSpec,
    LoadBalancerSpec,
    Metrics,
    MigProfile,
    NoCrd,
    NodeAffinity,
    PdSpec,
    Probes,
    PrometheusTrigger,
    Quantity,
    RequestLimits,
    ResourceName,
    Tag,
    crd,
    resource_problems,
    trigger_locations,
)

Loc = tuple[str | int, ...]


class Strict(BaseModel):
    """camelCase keys, unknown keys rejected, immutable once validated."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", frozen=True, populate_by_name=False,
                              regex_engine="python-re", **SCHEMA_DOCS)


def _err(loc: Loc, message: str, value: Any = None) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError("config", message), loc=loc, input=value)


def _raise_all(model: type[BaseModel], errors: list[InitErrorDetails]) -> None:
    if errors:
        raise ValidationError.from_exception_data(model.__name__, errors)


def _rule(check: Callable[[str], str | None]) -> AfterValidator:
    """A field validator from a rule function of ``facts.rules``: the config and the constructs run the same check."""

    def validate(value: str) -> str:
        problem = check(value)
        if problem:
            raise PydanticCustomError("rule", "{problem}", {"problem": problem})
        return value

    return AfterValidator(validate)


def _literal_prefix(prefix: Any) -> Any:
    problem = safety_rules.s3_prefix_problem(prefix) if isinstance(prefix, str) else None
    if problem:
        raise PydanticCustomError("prefix", problem)
    return prefix


def _safe_host_path(path: str | None) -> str | None:
    problem = None if path is None else safety_rules.host_path_problem(path)
    if problem:
        raise PydanticCustomError("host_path", problem)
    return path


DnsLabel = Annotated[str, StringConstraints(pattern=rules.DNS1123_LABEL, max_length=63)]
DnsSubdomain = Annotated[str, StringConstraints(pattern=rules.DNS1123_SUBDOMAIN, max_length=253)]
DomainName = Annotated[str, StringConstraints(pattern=rules.DOMAIN_NAME, max_length=253), _rule(rules.domain_name_problem)]
AbsolutePath = Annotated[str, StringConstraints(pattern=rules.ABSOLUTE_PATH, min_length=1, max_length=rules.HOST_PATH_MAX)]
BucketName = Annotated[str, StringConstraints(pattern=rules.S3_BUCKET_NAME, min_length=3, max_length=63),
                      _rule(rules.bucket_name_problem)]
RoleArn = Annotated[str, StringConstraints(pattern=rules.IAM_ROLE_ARN)]
ContentType = Annotated[str, StringConstraints(pattern=rules.CONTENT_TYPE, min_length=1, max_length=256)]


# ---------------------------------------------------------------------------------------------------------------- env
class Env(Strict):
    """Where the stack deploys. Both are literal so physical names and manifests are known at synth time."""

    crd_paths: ClassVar[CrdPaths] = {
        "account": NoCrd("AWS side, not the custom resource"),
        "region": NoCrd("AWS side, not the custom resource"),
    }
    account: Annotated[str, StringConstraints(pattern=rules.ACCOUNT)]
    """The 12-digit AWS account ID."""
    region: Annotated[str, StringConstraints(pattern=rules.REGION)]
    """The AWS region, e.g. us-west-2."""


class Cluster(Strict):
    """The existing HyperPod EKS cluster the stack installs into. The app (which imports the cluster) needs every
    field; ``HyperPodInference`` given a cluster object needs only ``hyperpodClusterArn`` (and ``oidcProviderArn``
    unless the object carries a literal one)."""

    crd_paths: ClassVar[CrdPaths] = {
        "eks_cluster_name": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC provider "
                                  "by it"),
        "kubectl_role_arn": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC provider "
                                  "by it"),
        "oidc_provider_arn": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC provider"
                                   " by it"),
        "vpc_id": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC provider by it"),
        "kubectl_subnet_ids": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC "
                                    "provider by it"),
        "kubectl_security_group_id": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC "
                                           "provider by it"),
        "hyperpod_cluster_arn": NoCrd("the operator add-on's hyperpodClusterArn value"),
    }
    eks_cluster_name: Annotated[str, StringConstraints(pattern=rules.EKS_CLUSTER_NAME)] | None = None
    """The EKS cluster of the HyperPod cluster."""
    hyperpod_cluster_arn: Annotated[str, StringConstraints(pattern=rules.HYPERPOD_CLUSTER_ARN)]
    """The HyperPod cluster's ARN (the operator needs it for data capture)."""
    kubectl_role_arn: RoleArn | None = None
    """A role mapped to cluster-admin that the kubectl provider assumes (EKS access entry or aws-auth)."""
    oidc_provider_arn: Annotated[str, StringConstraints(pattern=rules.OIDC_PROVIDER_ARN)] | None = None
    """The cluster's IAM OIDC provider; IRSA trust conditions are parsed from it."""
    vpc_id: Annotated[str, StringConstraints(pattern=rules.VPC_ID)] | None = None
    """The cluster's VPC."""
    kubectl_subnet_ids: list[Annotated[str, StringConstraints(pattern=rules.SUBNET_ID)]] = Field(default_factory=list)
    """Private API endpoint only: subnets the kubectl handler runs in."""
    kubectl_security_group_id: Annotated[str, StringConstraints(pattern=rules.SECURITY_GROUP_ID)] | None = None
    """Private API endpoint only: the security group of the kubectl handler (needs kubectlSubnetIds)."""

    @model_validator(mode="after")
    def _private_endpoint(self) -> Cluster:
        if self.kubectl_security_group_id and not self.kubectl_subnet_ids:
            _raise_all(type(self), [_err(("kubectlSecurityGroupId",),
                                         "only used with kubectlSubnetIds (private API endpoint)")])
        return self


# ----------------------------------------------------------------------------------------------------------- operator
class Operator(Strict):
    """How the HyperPod inference operator is installed (add-on, cdk8s chart, or already there)."""

    crd_paths: ClassVar[CrdPaths] = {
        "install": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom resource "
                         "field"),
        "version": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom resource "
                         "field"),
        "dependencies": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                              "resource field"),
        "tls_bucket_name": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                                 "resource field"),
        "crd_source": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                            "resource field"),
        "addon_version": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                               "resource field"),
        "alb_controller_role_arn": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a "
                                         "custom resource field"),
        "keda_role_arn": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                               "resource field"),
        "s3_csi_driver_role_arn": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a "
                                        "custom resource field"),
        "execution_role_arn": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom"
                                    " resource field"),
        "sagemaker_source_account": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a "
                                          "custom resource field"),
        "addon_configuration_overrides": NoCrd("operator installation (add-on configurationValues, chart or IAM), "
                                               "not a custom resource field"),
    }
    install: Literal["addon", "chart", "existing"] = "addon"
    """addon (the EKS add-on), chart (the operator's Helm chart as a cdk8s chart), or existing (installs nothing; needs
    executionRoleArn)."""
    version: Literal[operator_facts.OPERATOR_VERSIONS] = operator_facts.DEFAULT_OPERATOR_VERSION  # type: ignore[valid-type]
    """The operator version whose CRD fields the config may use (fields the version lacks are refused)."""
    dependencies: Literal["create", "existing"] = "create"
    """create the S3 / FSx CSI drivers, metrics-server and cert-manager add-ons, or use existing ones."""
    tls_bucket_name: BucketName | None = None
    """Import this TLS certificate bucket; null creates hyperpod-tls-<stack>-<account>-<region> (retained). A name
    outside hyperpod-tls* gets this stack's folder, hyperpod-inference/<stack>/, and the operator's grant only there."""
    crd_source: str | None = None
    """install: chart only: a folder holding the operator's CRD YAML files."""
    addon_version: Annotated[str, StringConstraints(pattern=rules.EKS_ADDON_VERSION)] | None = None
    """install: addon only: pin the add-on version (vX.Y.Z-eksbuild.N); default from the version table."""
    alb_controller_role_arn: RoleArn | None = None
    """Use this IRSA role for the ALB controller instead of creating one."""
    keda_role_arn: RoleArn | None = None
    """Use this IRSA role for KEDA instead of creating one."""
    s3_csi_driver_role_arn: RoleArn | None = None
    """Use this IRSA role for the S3 CSI driver instead of creating one."""
    execution_role_arn: RoleArn | None = None  # install: existing: the operator's role (feature policies attach to it)
    """install: existing only: the operator's execution role (feature policies attach to it)."""
    # sagemaker.amazonaws.com trusts require aws:SourceAccount = env.account (false drops the condition)
    sagemaker_source_account: bool = True
    """The sagemaker.amazonaws.com trusts require aws:SourceAccount = env.account; false drops the condition."""
    addon_configuration_overrides: dict[str, Any] | None = Field(
        default=None, description="install: addon only: an RFC 7386 merge patch applied last to the add-on's "
                                  "configurationValues (refused on the keys the library sets).")

    @model_validator(mode="after")
    def _install_rules(self) -> Operator:
        errors = []
        if self.install == "existing" and not self.execution_role_arn:
            errors.append(_err(("executionRoleArn",), "required with install: existing (the features grant it access)"))
        if self.execution_role_arn and self.install != "existing":
            errors.append(_err(("executionRoleArn",), "only used with install: existing; the stack creates the role "
                               "for addon and chart", self.execution_role_arn))
        role_problem = self.execution_role_arn and rules.execution_role_name_problem(
            rules.role_name_from_arn(self.execution_role_arn), operator_facts.EXECUTION_ROLE_NAME_PREFIX)
        if role_problem:
            errors.append(_err(("executionRoleArn",), role_problem, self.execution_role_arn))
        if self.install == "chart" and not self.crd_source:
            errors.append(_err(("crdSource",), "required with install: chart (a folder holding the operator's CRD YAML files)"))
        if self.crd_source and self.install != "chart":
            errors.append(_err(("crdSource",), "only used with install: chart", self.crd_source))
        if self.install == "existing" and self.dependencies == "create":
            errors.append(_err(("dependencies",), "install: existing installs nothing; set dependencies: existing",
                               self.dependencies))
        if self.addon_version and self.install != "addon":
            errors.append(_err(("addonVersion",), "only used with install: addon", self.addon_version))
        if self.addon_configuration_overrides is not None:
            if self.install != "addon":
                errors.append(_err(("addonConfigurationOverrides",), "only used with install: addon"))
            for path, key in prod_facts.addon_override_conflicts(self.addon_configuration_overrides):
                errors.append(_err(("addonConfigurationOverrides", *path),
                                   f"set by the library; use {key}"))
        _raise_all(type(self), errors)
        return self


class Manifests(Strict):
    """kubectl: the stack applies the charts through the cluster's kubectl provider. files: written for GitOps only."""

    crd_paths: ClassVar[CrdPaths] = {
        "delivery": NoCrd("how the stack delivers the manifests"),
    }
    delivery: Literal["kubectl", "files"] = "kubectl"
    """kubectl: the stack applies the objects through the cluster's kubectl provider; files: written for GitOps only
    (every value must be known at synth)."""


# ------------------------------------------------------------------------------------------------------------ capture
def _bool_or_object(schema: dict[str, Any]) -> None:
    """JSON Schema of a field that takes ``true`` / ``false`` as a shorthand of its object."""
    ref = schema.pop("$ref", None)
    if ref is not None:
        schema["anyOf"] = [{"type": "boolean"}, {"$ref": ref}]


class CaptureAnalyticsSettings(Strict):
    """``capture.analytics``: Glue tables, an Athena workgroup and ready queries over the captured data."""

    crd_paths: ClassVar[CrdPaths] = {
        "enabled": NoCrd("AWS side, not the custom resource (Glue tables and an Athena workgroup)"),
        "bytes_scanned_cutoff_mb": NoCrd("AWS side, not the custom resource (the workgroup's per-query limit)"),
        "results_retention_days": NoCrd("AWS side, not the custom resource (a lifecycle rule on the results prefix)"),
    }

    enabled: bool = True
    """Create the Glue database and tables, the Athena workgroup and the named queries."""
    bytes_scanned_cutoff_mb: Annotated[int, Field(ge=analytics_facts.MIN_BYTES_SCANNED_CUTOFF_MB,
                                                  alias="bytesScannedCutoffMB")] = 1000
    """The workgroup's limit of data scanned per query, in MB (at least 10)."""
    results_retention_days: Annotated[int, Field(ge=1, le=36500)] = 30
    """Days until query results under the capture bucket's results prefix expire (a bucket the stack creates)."""


class Capture(Strict):
    """The capture bucket and key shared by every endpoint's data capture."""

    crd_paths: ClassVar[CrdPaths] = {
        "bucket_name": NoCrd("not verbatim: the library derives spec.dataCapture.s3Uri from it"),
        "bucket_account": NoCrd("AWS side, not the custom resource (import check)"),
        "bucket_encryption": NoCrd("AWS side, not the custom resource (import check)"),
        "prefix": NoCrd("not verbatim: the library derives spec.dataCapture.s3Uri from it"),
        "retention_days": NoCrd("AWS side, not the custom resource (bucket lifecycle)"),
        "kms": NoCrd("not verbatim: the library derives spec.dataCapture.sagemakerEndpoint.kmsKeyId, "
                     "spec.dataCapture.modelPod.kmsKeyId from it"),
        "analytics": NoCrd("AWS side, not the custom resource (Glue tables and an Athena workgroup)"),
    }
    bucket_name: BucketName | None = None
    """Import this bucket; null creates <stack>-capture-<account>-<region> (SSE-S3, versioned, access-logged,
    retained)."""
    bucket_account: Annotated[str, StringConstraints(pattern=rules.ACCOUNT)] | None = None
    """An imported bucket's account (must be the cluster's account)."""
    bucket_encryption: Literal["SSE-S3", "SSE-KMS"] | None = None
    """An imported bucket's default encryption (SSE-KMS refuses ALB access logs)."""
    prefix: Annotated[str, StringConstraints(pattern=rules.CAPTURE_PREFIX, max_length=rules.CAPTURE_PREFIX_MAX)] = "data-capture"
    """The key prefix every tier writes under."""
    retention_days: Annotated[int, Field(ge=1, le=36500)] = 365
    """Lifecycle: current and noncurrent versions expire after this many days (created bucket)."""
    kms: str = "create"
    """create (a rotating customer-managed key, retained), none, or an existing key ARN; encrypts tiers 1 and 3."""
    analytics: CaptureAnalyticsSettings = Field(default_factory=CaptureAnalyticsSettings,
                                                json_schema_extra=_bool_or_object)
    """``true`` (default) | ``false`` | the settings; a boolean becomes the settings with ``enabled`` set."""

    _literal_prefix = field_validator("prefix", mode="before")(_literal_prefix)

    @field_validator("analytics", mode="before")
    @classmethod
    def _analytics_shorthand(cls, v: Any) -> Any:
        return {"enabled": v} if isinstance(v, bool) else v

    @field_validator("kms")
    @classmethod
    def _kms(cls, v: str) -> str:
        if v in ("create", "none") or rules.kms_key_arn_problem(v) is None:
            return v
        raise PydanticCustomError("kms", "must be create, none, or a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)")

    @model_validator(mode="after")
    def _import_rules(self) -> Capture:
        errors = []
        if self.bucket_name is None and self.bucket_account:
            errors.append(_err(("bucketAccount",), "only used with an imported bucketName"))
        if self.bucket_name is None and self.bucket_encryption:
            errors.append(_err(("bucketEncryption",), "only used with an imported bucketName (a created bucket is SSE-S3)"))
        results = analytics_facts.RESULTS_PREFIX
        if self.analytics.enabled and (self.prefix == results or self.prefix.startswith(f"{results}/")):
            errors.append(_err(("prefix",), f"{results}/ holds the query results of capture.analytics; choose another "
                               "prefix or set analytics: false", self.prefix))
        _raise_all(type(self), errors)
        return self


class Domain(Strict):
    """The DNS zone and certificate for endpoint domain names."""

    crd_paths: ClassVar[CrdPaths] = {
        "zone_name": NoCrd("AWS side, not the custom resource (the zone)"),
        "hosted_zone_id": NoCrd("not verbatim: the library derives spec.dnsConfig.hostedZoneId from it"),
        "certificate_arn": NoCrd("not verbatim: the library derives spec.tlsConfig.customCertificateConfig.acmArn "
                                 "from it"),
        "wildcard": NoCrd("AWS side, not the custom resource (the issued certificate's names)"),
    }
    zone_name: DomainName
    """The Route 53 zone every endpoint domainName lies in."""
    hosted_zone_id: Annotated[str, StringConstraints(pattern=rules.HOSTED_ZONE_ID)] | None = None
    """Import this hosted zone; absent creates a public zone named zoneName."""
    certificate_arn: Annotated[str, StringConstraints(pattern=rules.ACM_ARN_CRD)] | None = None
    """Import this ACM certificate (same region); absent issues one validated through the zone."""
    wildcard: bool | None = None
    """Issued certificate only: cover *.zoneName instead of each endpoint's name."""


# ------------------------------------------------------------------------------------------------------------- models
class KubernetesSecretRef(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "name": NoCrd("not verbatim: the library derives "
                      "spec.modelSourceConfig.huggingFaceModel.tokenSecretRef.name from it"),
        "key": NoCrd("not verbatim: the library derives spec.modelSourceConfig.huggingFaceModel.tokenSecretRef.key "
                     "from it"),
    }
    name: DnsSubdomain
    """The Secret in the endpoint's namespace."""
    key: Annotated[str, StringConstraints(pattern=rules.SECRET_KEY, max_length=253)] = "token"
    """The key holding the token."""


class HfToken(Strict):
    """Exactly one: an existing Kubernetes Secret in the endpoint's namespace, or a Secrets Manager secret synced in."""

    crd_paths: ClassVar[CrdPaths] = {
        "secrets_manager_arn": NoCrd("synced into a Secret by an ExternalSecret; the resource gets tokenSecretRef"),
        "kms_key_arn": NoCrd("AWS side, not the custom resource (the token reader role's kms:Decrypt)"),
        "json_property": NoCrd("the ExternalSecret's remoteRef.property"),
        "kubernetes_secret": NoCrd("not verbatim: the library derives "
                                   "spec.modelSourceConfig.huggingFaceModel.tokenSecretRef from it"),
    }
    secrets_manager_arn: Annotated[str, StringConstraints(pattern=rules.SECRETS_MANAGER_ARN)] | None = None
    """A Secrets Manager secret synced into the namespace by External Secrets Operator."""
    kms_key_arn: Annotated[str, StringConstraints(pattern=rules.KMS_KEY_ARN)] | None = None  # the secret's CMK, if any
    """The secret's customer-managed key, if any (the reader role gets kms:Decrypt)."""
    json_property: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = None  # key in a JSON secret
    """The key inside a JSON secret that holds the token."""
    kubernetes_secret: KubernetesSecretRef | None = None
    """An existing Kubernetes Secret in the endpoint's namespace."""

    @model_validator(mode="after")
    def _one(self) -> HfToken:
        given = [n for n, v in (("secretsManagerArn", self.secrets_manager_arn),
                                ("kubernetesSecret", self.kubernetes_secret)) if v is not None]
        if len(given) != 1:
            raise PydanticCustomError("token", "give exactly one of secretsManagerArn, kubernetesSecret (got {n})",
                                      {"n": ", ".join(given) or "none"})
        if self.kubernetes_secret is not None and (self.kms_key_arn or self.json_property):
            raise PydanticCustomError("token", "kmsKeyArn and jsonProperty go with secretsManagerArn")
        return self


def _at(path: str) -> dict[str, Any]:
    return {"json_schema_extra": {"x-crd-path": path}}


class HuggingFaceSource(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "token": NoCrd("not verbatim: the library derives spec.modelSourceConfig.huggingFaceModel.tokenSecretRef "
                       "from it"),
    }
    model_id: Annotated[str, StringConstraints(pattern=rules.HF_MODEL_ID)] = Field(
        **_at("spec.modelSourceConfig.huggingFaceModel.modelId"))
    """The Hub model ID, e.g. Qwen/Qwen2.5-7B-Instruct."""
    commit_sha: Annotated[str, StringConstraints(pattern=rules.HF_COMMIT_SHA)] | None = Field(
        default=None, alias="commitSHA", **_at("spec.modelSourceConfig.huggingFaceModel.commitSHA"))
    """The 40-character commit to pin (quote it); omitted = follow main (warned)."""
    token: HfToken | None = None
    """The token for a gated or private model, kept out of every template and manifest."""
    prefetch: bool = Field(True, **_at("spec.modelSourceConfig.prefetchEnabled"))
    """Let the operator download the weights before the worker starts."""


class S3Source(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "kms_key_arn": NoCrd("AWS side, not the custom resource (the model reader's kms:Decrypt)"),
    }
    bucket: BucketName = Field(**_at("spec.modelSourceConfig.s3Storage.bucketName"))
    """The bucket holding the weights."""
    prefix: Annotated[str, StringConstraints(pattern=rules.S3_PREFIX, max_length=1024)] = Field(
        "", **_at("spec.modelSourceConfig.modelLocation"))
    """The folder of the weights in the bucket."""
    region: Annotated[str, StringConstraints(pattern=rules.REGION)] | None = Field(
        None, **_at("spec.modelSourceConfig.s3Storage.region"))
    """The bucket's region; default the stack's."""
    kms_key_arn: Annotated[str, StringConstraints(pattern=rules.KMS_KEY_ARN)] | None = None
    """The bucket's customer-managed key, if any (the reader gets kms:Decrypt)."""
    prefetch: bool | None = crd("spec.modelSourceConfig.prefetchEnabled")
    """Let the operator copy the weights before the worker starts."""

    _literal_prefix = field_validator("prefix", mode="before")(_literal_prefix)

    @property
    def folder_prefix(self) -> str:
        """The prefix as a folder (ends in ``/``; empty = the whole bucket): what IAM grants and the agent lists.
        ``modelLocation`` keeps :attr:`prefix` as written."""
        return safety_rules.s3_folder_prefix(self.prefix)


class FsxSource(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "node_path": NoCrd("the NVMe agent's source folder (weightCache.mode: daemonset)"),
    }
    file_system_id: Annotated[str, StringConstraints(pattern=rules.FSX_ID)] = Field(
        **_at("spec.modelSourceConfig.fsxStorage.fileSystemId"))
    """The FSx for Lustre file system (fs-...)."""
    path: AbsolutePath = Field("/", **_at("spec.modelSourceConfig.modelLocation"))
    """The folder of the weights on the file system."""
    node_path: AbsolutePath | None = None  # where the file system is mounted on the nodes (daemonset cache source)
    """Where the file system is mounted on the nodes (daemonset cache source)."""
    prefetch: bool | None = crd("spec.modelSourceConfig.prefetchEnabled")
    """Let the operator copy the weights before the worker starts."""

    _safe_node_path = field_validator("node_path")(_safe_host_path)


class JumpStartSource(Strict):
    model_id: Annotated[str, StringConstraints(pattern=prod_facts.JSM_MODEL_ID, max_length=63)] = Field(
        **_at("spec.model.modelId"))
    """The JumpStart model ID."""
    accept_eula: bool = Field(False, **_at("spec.model.acceptEula"))
    """Accept the model's end-user licence."""
    model_hub_name: Annotated[str, StringConstraints(pattern=prod_facts.JSM_MODEL_ID, max_length=63)] | None = Field(
        None, **_at("spec.model.modelHubName"))
    """A private model hub to take the model from."""
    model_version: JumpStartModelVersion | None = crd(
        "spec.model.modelVersion", description="A version such as 1.0.0 (stricter than the CRD, whose pattern leaves "
                                               "the dots unescaped).")
    additional_configs: Annotated[list[AdditionalConfig], Field(max_length=prod_facts.ADDITIONAL_CONFIGS_MAX)] | None = \
        crd("spec.model.additionalConfigs")
    """Extra name/value settings passed to JumpStart."""
    gated_model_download_role: JsmRoleArn | None = crd("spec.model.gatedModelDownloadRole")
    """The role that downloads a gated model."""


class ModelSource(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "huggingface": NoCrd("not verbatim: the library derives spec.modelSourceConfig.huggingFaceModel from it"),
        "s3": NoCrd("not verbatim: the library derives spec.modelSourceConfig.s3Storage from it"),
        "fsx": NoCrd("not verbatim: the library derives spec.modelSourceConfig.fsxStorage from it"),
        "jumpstart": NoCrd("not verbatim: the library derives spec.model from it"),
    }
    huggingface: HuggingFaceSource | None = None
    """Weights from the Hugging Face Hub."""
    s3: S3Source | None = None
    """Weights from an S3 prefix."""
    fsx: FsxSource | None = None
    """Weights from FSx for Lustre."""
    jumpstart: JumpStartSource | None = None
    """A SageMaker JumpStart model (kind: JumpStartModel)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSource:
        given = [n for n in ("huggingface", "s3", "fsx", "jumpstart") if getattr(self, n) is not None]
        if len(given) != 1:
            raise PydanticCustomError("source", "give exactly one model source of huggingface, s3, fsx, jumpstart (got {n})",
                                      {"n": ", ".join(given) or "none"})
        return self

    @property
    def kind(self) -> str:
        return next(n for n in ("huggingface", "s3", "fsx", "jumpstart") if getattr(self, n) is not None)


class WeightCache(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "mode": NoCrd("not verbatim: the library derives spec.modelCacheConfig.weightsCache from it"),
        "host_path": NoCrd("not verbatim: the library derives spec.modelCacheConfig.weightsCache.hostPath from it"),
        "volume_name": NoCrd("not verbatim: the library derives spec.worker.modelVolumeMount.name from it"),
        "agent_image": NoCrd("the NVMe agent DaemonSet and init container image"),
        "min_free_percent": NoCrd("the NVMe agent's eviction threshold"),
        "share_across_namespaces": NoCrd("the NVMe agent's cache layout"),
        "lease_sidecar": NoCrd("not verbatim: the library makes the NVMe agent's init container in "
                               "spec.kubernetes.initContainers a native sidecar"),
    }
    mode: Literal["off", "operator", "daemonset"] = "off"
    """off; operator (the operator's weights cache, v3.3); daemonset (the NVMe agent warms every GPU node, an init
    container falls back to the source)."""
    host_path: AbsolutePath = "/opt/dlami/nvme"
    """The node's NVMe mount the cache lives under."""
    volume_name: DnsLabel = "nvme-model"
    """The name of the model volume in the worker pod."""
    agent_image: Annotated[str, StringConstraints(min_length=1, max_length=512)] | None = None
    """daemonset: the image that runs the NVMe agent; default the endpoint's model server image (already on the
    node; the agent needs its Python with botocore or huggingface_hub)."""
    min_free_percent: Annotated[int, Field(ge=0, le=90)] = 10
    """daemonset: evict least-recently-used models to keep this share of the disk free."""
    share_across_namespaces: bool = Field(
        default=False, description="daemonset: one cache root for every namespace instead of "
                                   "<hostPath>/<namespace>/ (warned: the namespaces' pods then mount each other's models)")
    lease_sidecar: bool = True
    """daemonset: the agent's init container is a native sidecar (restartPolicy Always and a startup probe;
    Kubernetes 1.29+) that keeps the pod's lease on its model for the pod's whole life. false: a plain init
    container, whose lease lasts 600 s after the pod starts; the warm DaemonSet's lease keeps the model then. Turn it
    off where restartPolicy does not reach the pod: Kubernetes refuses the startup probe of a plain init container."""

    _safe_host_path = field_validator("host_path")(_safe_host_path)

    @field_validator("volume_name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v in rules.RESERVED_VOLUME_NAMES:
            raise PydanticCustomError("reserved", "'{v}' is reserved by the operator (reserved: {r})",
                                      {"v": v, "r": ", ".join(sorted(rules.RESERVED_VOLUME_NAMES))})
        return v


# ------------------------------------------------------------------------------------------------------- data capture
class ContentTypeHeader(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "csv_content_types": NoCrd("not verbatim: the library derives captureContentTypeHeader.csvContentTypes from"
                                   " it"),
        "json_content_types": NoCrd("not verbatim: the library derives captureContentTypeHeader.jsonContentTypes "
                                    "from it"),
    }
    csv_content_types: Annotated[list[ContentType], Field(min_length=1, max_length=rules.CONTENT_TYPES_MAX)] | None = None
    """Content types captured as CSV."""
    json_content_types: Annotated[list[ContentType], Field(min_length=1, max_length=rules.CONTENT_TYPES_MAX)] | None = None
    """Content types captured as JSON."""

    @field_validator("csv_content_types", "json_content_types")
    @classmethod
    def _unique(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and len(set(v)) != len(v):
            raise PydanticCustomError("unique", "content types must be unique (the CRD lists them as a set)")
        return v


CaptureModes = Annotated[list[Literal["Input", "Output"]], Field(min_length=1, max_length=2)]
Sampling = Annotated[int, Field(ge=rules.SAMPLING_RANGE[0], le=rules.SAMPLING_RANGE[1])]


def _unique_modes(v: list[str]) -> list[str]:
    if len(set(v)) != len(v):
        raise PydanticCustomError("unique", "capture modes must be unique")
    return v


class SagemakerEndpointCapture(Strict):
    """Tier 1: at the SageMaker endpoint (Model Monitor compatible). Needs sagemakerEndpointName."""

    crd_paths: ClassVar[CrdPaths] = {
        "enabled": NoCrd("not verbatim: the library derives spec.dataCapture.sagemakerEndpoint.enabled from it"),
        "initial_sampling_percentage": NoCrd("not verbatim: the library derives "
                                             "spec.dataCapture.sagemakerEndpoint.initialSamplingPercentage from it"),
        "capture_modes": NoCrd("not verbatim: the library derives "
                               "spec.dataCapture.sagemakerEndpoint.captureOptions[].captureMode from it"),
        "capture_content_type_header": NoCrd("not verbatim: the library derives "
                                             "spec.dataCapture.sagemakerEndpoint.captureContentTypeHeader from it"),
    }
    enabled: bool = True
    """Turn the tier on."""
    initial_sampling_percentage: Sampling | None = None
    """Share of requests captured (0-100)."""
    capture_modes: CaptureModes = Field(default_factory=lambda: ["Input", "Output"])
    """Input, Output or both."""
    capture_content_type_header: ContentTypeHeader | None = None
    """Which content types are captured as CSV or JSON."""

    @field_validator("capture_modes")
    @classmethod
    def _modes(cls, v: list[str]) -> list[str]:
        return _unique_modes(v)


class LoadBalancerCapture(Strict):
    """Tier 2: ALB access logs (S3 default encryption only)."""

    crd_paths: ClassVar[CrdPaths] = {
        "enabled": NoCrd("not verbatim: the library derives spec.dataCapture.loadBalancer.enabled from it"),
    }
    enabled: bool = True
    """Turn ALB access logs on."""


class ModelPodCapture(Strict):
    """Tier 3: in the model pod: full payloads with sampling, buffering and a payload cap."""

    crd_paths: ClassVar[CrdPaths] = {
        "enabled": NoCrd("not verbatim: the library derives spec.dataCapture.modelPod.enabled from it"),
        "initial_sampling_percentage": NoCrd("not verbatim: the library derives "
                                             "spec.dataCapture.modelPod.initialSamplingPercentage from it"),
        "capture_modes": NoCrd("not verbatim: the library derives "
                               "spec.dataCapture.modelPod.captureOptions[].captureMode from it"),
        "capture_content_type_header": NoCrd("not verbatim: the library derives "
                                             "spec.dataCapture.modelPod.captureContentTypeHeader from it"),
        "batch_size": NoCrd("not verbatim: the library derives spec.dataCapture.modelPod.bufferConfig.batchSize "
                            "from it"),
        "flush_interval_seconds": NoCrd("not verbatim: the library derives "
                                        "spec.dataCapture.modelPod.bufferConfig.flushIntervalSeconds from it"),
        "max_payload_size_kb": NoCrd("not verbatim: the library derives "
                                     "spec.dataCapture.modelPod.payloadConfig.maxPayloadSizeKB from it"),
    }
    enabled: bool = True
    """Turn the tier on."""
    initial_sampling_percentage: Sampling | None = None
    """Share of requests captured (0-100)."""
    capture_modes: CaptureModes = Field(default_factory=lambda: ["Input", "Output"])
    """Input, Output or both."""
    capture_content_type_header: ContentTypeHeader | None = None
    """Which content types are captured as CSV or JSON."""
    batch_size: Annotated[int, Field(ge=rules.BATCH_SIZE_RANGE[0], le=rules.BATCH_SIZE_RANGE[1])] | None = None
    """Records buffered before a write (1-1000)."""
    flush_interval_seconds: Annotated[int, Field(ge=rules.FLUSH_INTERVAL_RANGE[0], le=rules.FLUSH_INTERVAL_RANGE[1])] | None = None
    """Longest time a record waits in the buffer (10-300)."""
    max_payload_size_kb: Annotated[int, Field(ge=rules.MAX_PAYLOAD_KB_RANGE[0], le=rules.MAX_PAYLOAD_KB_RANGE[1])] | None = Field(
        default=None, alias="maxPayloadSizeKB")
    """Payloads above this are cut (0-10240; 0 = no cap)."""

    @field_validator("capture_modes")
    @classmethod
    def _modes(cls, v: list[str]) -> list[str]:
        return _unique_modes(v)


class DataCapture(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "sagemaker_endpoint": NoCrd("not verbatim: the library derives spec.dataCapture.sagemakerEndpoint from it"),
        "load_balancer": NoCrd("not verbatim: the library derives spec.dataCapture.loadBalancer from it"),
        "model_pod": NoCrd("not verbatim: the library derives spec.dataCapture.modelPod from it"),
    }
    sagemaker_endpoint: SagemakerEndpointCapture | None = None
    """Tier 1: at the SageMaker endpoint (needs sagemakerEndpointName)."""
    load_balancer: LoadBalancerCapture | None = None
    """Tier 2: ALB access logs."""
    model_pod: ModelPodCapture | None = None
    """Tier 3: full payloads in the model pod."""

    @property
    def any_enabled(self) -> bool:
        return any(t is not None and t.enabled for t in (self.sagemaker_endpoint, self.load_balancer, self.model_pod))


class Verify(Strict):
    """The post-deploy check. ``payload``: a string sent as given, or a YAML mapping or list sent as JSON (JSON content
    types only); None = the runtime's default. ``showResponse``: also report the answer's first bytes."""

    crd_paths: ClassVar[CrdPaths] = {
        "payload": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's resource"),
        "content_type": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's resource"),
        "fail_deployment": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                                 "resource"),
        "show_response": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                               "resource"),
        "timeout_minutes": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                                 "resource"),
    }
    payload: str | dict[str, Any] | list[Any] | None = None
    """The request body: a string sent as given, or a mapping or list sent as JSON; default the runtime's."""
    content_type: ContentType = "application/json"
    """The request's content type."""
    fail_deployment: bool = False
    """Fail (and roll back) the deployment when the endpoint does not answer."""
    show_response: bool = False
    """Report the first bytes of the answer."""
    timeout_minutes: Annotated[int, Field(ge=5, le=60)] = 60
    """How long to wait for the endpoint (5-60)."""

    @model_validator(mode="after")
    def _json_payload(self) -> Verify:
        if self.payload is not None and not isinstance(self.payload, str) and not safety.is_json_content_type(
                self.content_type):
            _raise_all(type(self), [_err(("payload",), f"a mapping or list is sent as JSON and needs a JSON content "
                                         f"type (contentType is {self.content_type}); give a string otherwise")])
        return self

    def body(self, default: str | None = None) -> str | None:
        """The request body as sent: the string, the mapping or list as compact JSON, or ``default``."""
        return safety.payload_text(self.payload) if self.payload is not None else default


class Resources(Strict):
    """Worker resources beyond the accelerators the instance type implies (Kubernetes quantities).

    Either the shorthand ``cpu`` / ``memory`` (request = limit), or ``requests`` / ``limits`` as Kubernetes takes
    them; ``gpus`` goes with both and overrides the instance table's count."""

    crd_paths: ClassVar[CrdPaths] = {
        "cpu": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
        "memory": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
        "gpus": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
    }
    cpu: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?m?$")] | None = None
    """CPU request = limit, e.g. 8 or 500m."""
    memory: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?$")] | None = None
    """Memory request = limit, e.g. 64Gi."""
    gpus: Annotated[int, Field(ge=0, le=64)] | None = None
    """Accelerators per pod, overriding the instance table's count."""
    requests: dict[ResourceName, Quantity] | None = crd("spec.worker.resources.requests")
    """Kubernetes resource requests."""
    limits: dict[ResourceName, Quantity] | None = crd("spec.worker.resources.limits")
    """Kubernetes resource limits."""

    @model_validator(mode="after")
    def _one_form(self) -> Resources:
        e = []
        if (self.requests is not None or self.limits is not None) and (self.cpu or self.memory):
            e.append(_err(("cpu" if self.cpu else "memory",), "give either the shorthand cpu / memory (request = "
                          "limit) or requests / limits, not both"))
        for problem in resource_problems(self.requests or {}, self.limits or {}):
            e.append(_err(("requests",), problem))
        named = [k for k in {**(self.requests or {}), **(self.limits or {})} if k in prod_facts.EXTENDED_RESOURCES]
        if self.gpus is not None and named:
            e.append(_err(("gpus",), f"give the accelerator count once: gpus or {named[0]} in requests / limits"))
        _raise_all(type(self), e)
        return self

    @property
    def detailed(self) -> bool:
        return self.requests is not None or self.limits is not None


# ----------------------------------------------------------------------------------------------------------- endpoint
InstanceType = Annotated[str, StringConstraints(pattern=rules.INSTANCE_TYPE)]
EnvName = Annotated[str, StringConstraints(pattern=prod_facts.ENV_NAME)]

# Keys only one kind has (YAML names); the other kind refuses them, naming itself.
IEC_ONLY = ("runtime", "image", "port", "args", "resources", "invocationEndpoint", "pdSpec", "instanceTypes",
            "nodeAffinity", "tags", "modelVersion", "probes", "requestLimits", "command", "workingDir", "portName",
            "schedulerName")
JSM_ONLY = ("acceleratorPartitionType", "acceleratorPartitionValidation", "executionRole")


class Endpoint(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "name": NoCrd("not verbatim: the library derives metadata.name, spec.modelName from it"),
        "namespace": NoCrd("not verbatim: the library derives metadata.namespace from it"),
        "kind": NoCrd("the resource's kind"),
        "sagemaker_endpoint_name": NoCrd("not verbatim: the library derives spec.endpointName, "
                                         "spec.sageMakerEndpoint.name from it"),
        "instance_type": NoCrd("not verbatim: the library derives spec.instanceType, spec.server.instanceType from "
                               "it"),
        "runtime": NoCrd("not verbatim: the library derives spec.worker from it"),
        "image": NoCrd("not verbatim: the library derives spec.worker.image from it"),
        "port": NoCrd("not verbatim: the library derives spec.worker.modelInvocationPort.containerPort from it"),
        "args": NoCrd("not verbatim: the library derives spec.worker.args from it"),
        "env": NoCrd("not verbatim: the library derives spec.worker.environmentVariables, spec.environmentVariables"
                     " from it"),
        "resources": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
        "model": NoCrd("not verbatim: the library derives spec.modelSourceConfig, spec.model from it"),
        "weight_cache": NoCrd("not verbatim: the library derives spec.modelCacheConfig from it"),
        "data_capture": NoCrd("not verbatim: the library derives spec.dataCapture from it"),
        "domain_name": NoCrd("not verbatim: the library derives spec.tlsConfig.customCertificateConfig.domainName "
                             "from it"),
        "verify": NoCrd("the post-deploy check (a Lambda-backed custom resource)"),
        "spec_overrides": NoCrd("merged last into the resource's spec as given (RFC 7386)"),
        "stack_group": NoCrd("AWS side, not the custom resource (which nested stack holds the endpoint)"),
        "alarms": NoCrd("AWS side, not the custom resource (this endpoint's CloudWatch alarms and alerting rules)"),
    }
    name: Annotated[str, StringConstraints(pattern=rules.DNS1123_LABEL, max_length=63)] = Field(
        description="metadata.name and spec.modelName: a DNS-1123 label (stricter than the CRD's modelName pattern, "
                    "which has no end anchor)")
    namespace: DnsLabel
    """The namespace of the custom resource."""
    kind: Literal["InferenceEndpointConfig", "JumpStartModel"] = "InferenceEndpointConfig"
    """InferenceEndpointConfig or JumpStartModel."""
    sagemaker_endpoint_name: Annotated[str, StringConstraints(pattern=rules.ENDPOINT_NAME, max_length=63),
                                       _rule(rules.endpoint_name_problem)] | None = None
    """Register a SageMaker endpoint of this name (needed by tier-1 capture and verify)."""
    instance_type: InstanceType | None = None
    """The instance type the pods run on, e.g. ml.g5.12xlarge."""
    instance_types: Annotated[list[InstanceType], Field(min_length=1, max_length=20)] | None = crd(
        "spec.instanceTypes", description="Instance types in order of preference (exclusive with instanceType and "
                                          "nodeAffinity).")
    node_affinity: NodeAffinity | None = crd("spec.nodeAffinity")
    """Node affinity (exclusive with instanceType and instanceTypes)."""
    replicas: Annotated[int, Field(ge=1, le=1000)] = Field(1, **_at("spec.replicas"))
    """Number of model pods."""
    runtime: Literal["vllm", "tgi", "sglang", "custom"] | None = None
    """The serving preset (vllm, tgi, sglang) or custom (needs image and port); default vllm."""
    image: Annotated[str, StringConstraints(min_length=1, max_length=512)] | None = None
    """The worker image (custom, or overriding the preset's)."""
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    """The container port the model answers on."""
    port_name: Literal["http", "grpc"] | None = crd("spec.worker.modelInvocationPort.name")
    """The invocation port's name (http or grpc)."""
    command: Annotated[list[Annotated[str, StringConstraints(min_length=1)]], Field(min_length=1)] | None = crd(
        "spec.worker.command", description="runtime: custom only (the presets set their own).")
    args: list[str] | None = None
    """Extra worker arguments (not the flags the preset sets)."""
    working_dir: AbsolutePath | None = crd("spec.worker.workingDir")
    """The worker's working directory."""
    env: dict[EnvName, EnvValue] | None = None
    """Worker environment variables (a value, or valueFrom)."""
    resources: Resources | None = None
    """Worker CPU, memory and accelerators."""
    probes: Probes | None = crd("spec.worker.probes")
    """Worker liveness, readiness and startup probes."""
    request_limits: RequestLimits | None = crd("spec.worker.requestLimits")
    """Concurrency and queue limits of the worker."""
    invocation_endpoint: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._/-]+$", max_length=256)] | None = \
        Field(None, **_at("spec.invocationEndpoint"))
    """The route requests are sent to; default the preset's."""
    health_check_path: Annotated[str, StringConstraints(pattern=prod_facts.HEALTH_CHECK_PATH)] | None = Field(
        None, **_at("spec.loadBalancer.healthCheckPath"))
    """The ALB health check path; default the preset's."""
    load_balancer: LoadBalancerSpec | None = crd("spec.loadBalancer")
    """ALB settings."""
    auto_scaling_spec: AutoScalingSpec | None = crd("spec.autoScalingSpec")
    """KEDA autoscaling."""
    intelligent_routing_spec: IntelligentRoutingSpec | None = crd("spec.intelligentRoutingSpec")
    """The operator's intelligent routing."""
    kv_cache_spec: KvCacheSpec | None = crd("spec.kvCacheSpec")
    """The operator's KV cache (L1 / L2)."""
    metrics: Metrics | None = crd("spec.metrics")
    """Metrics scraping."""
    pd_spec: PdSpec | None = crd("spec.pdSpec")
    """Disaggregated prefill and decode."""
    tags: Annotated[list[Tag], Field(max_length=50)] | None = crd("spec.tags")
    """Tags of the SageMaker endpoint."""
    max_deploy_time_in_seconds: Annotated[int, Field(ge=60, le=2**31 - 1)] | None = crd("spec.maxDeployTimeInSeconds")
    """How long the operator waits for the deployment."""
    model_version: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = crd("spec.modelVersion")
    """The model version recorded on the SageMaker endpoint."""
    scheduler_name: DnsSubdomain | None = crd("spec.kubernetes.schedulerName")
    """The Kubernetes scheduler of the pods."""
    image_cache: ImageCache | None = crd("spec.modelCacheConfig.imageCache", description="v3.3 and later")
    accelerator_partition_type: MigProfile | None = crd(
        "spec.server.acceleratorPartitionType", description="JumpStartModel: the MIG profile, e.g. mig-1g.10gb")
    accelerator_partition_validation: bool | None = crd("spec.server.validations.acceleratorPartitionValidation")
    """JumpStartModel: validate the MIG partition."""
    execution_role: JsmRoleArn | None = crd("spec.server.executionRole")
    """JumpStartModel: the role the server uses."""
    model: ModelSource
    """Where the weights come from: exactly one of huggingface, s3, fsx, jumpstart."""
    weight_cache: WeightCache = Field(default_factory=WeightCache)
    """Node-local weight cache."""
    data_capture: DataCapture | None = None
    """Which capture tiers are on (needs the top-level capture)."""
    domain_name: DomainName | None = None
    """A custom domain for the endpoint (needs the top-level domain)."""
    verify: Verify | None = None
    """A post-deploy check that invokes the endpoint (kubectl delivery only)."""
    stack_group: Annotated[str, StringConstraints(pattern=rules.DNS1123_LABEL, max_length=32)] | None = Field(
        default=None, description="With stackLayout: perNamespace, the nested stack of this namespace the endpoint "
                                  "goes to (endpoints of one namespace and group share one nested stack); splits a "
                                  "namespace that outgrows one template. Changing it moves (deletes and re-creates) "
                                  "the endpoint.")
    alarms: EndpointAlarms | None = None
    """This endpoint's alarm thresholds, or enabled: false to turn its alarms off (observability.alarms)."""
    spec_overrides: dict[str, Any] | None = Field(
        default=None, description="An RFC 7386 JSON merge patch applied last to the resource's spec, for fields the "
                                  "library does not model (refused on paths it writes or models).")

    @field_validator("domain_name", mode="before")
    @classmethod
    def _no_wildcard(cls, v: Any) -> Any:
        if isinstance(v, str) and "*" in v:
            raise PydanticCustomError("wildcard", "must be a specific domain, not a wildcard")
        return v

    @model_validator(mode="after")
    def _endpoint_rules(self) -> Endpoint:
        e: list[InitErrorDetails] = []
        jsm = self.kind == "JumpStartModel"
        source = self.model.kind
        e += [_err(loc, msg) for loc, msg in safety.token_shaped_values(self)]
        if jsm and source != "jumpstart":
            e.append(_err(("model", source), "kind: JumpStartModel takes only a jumpstart source"))
        if not jsm and source == "jumpstart":
            e.append(_err(("model", "jumpstart"), "a jumpstart source needs kind: JumpStartModel"))
        given = self.model_fields_set
        aliases = {name: (info.alias or name) for name, info in type(self).model_fields.items()}
        for name in sorted(given):
            alias = aliases[name]
            if getattr(self, name) is None:
                continue
            if jsm and alias in IEC_ONLY:
                e.append(_err((alias,), "not a field of kind: JumpStartModel (JumpStart picks the container and "
                              "places it on instanceType)"))
            if not jsm and alias in JSM_ONLY:
                e.append(_err((alias,), "not a field of kind: InferenceEndpointConfig (JumpStartModel only)"))
        if jsm:
            if self.weight_cache.mode == "daemonset":
                e.append(_err(("weightCache", "mode"),
                              "daemonset needs spec.kubernetes, which kind: JumpStartModel does not have"))
            for key, value in (self.env or {}).items():
                if not isinstance(value, str):
                    e.append(_err(("env", key), "kind: JumpStartModel takes only string values (no valueFrom)"))
            if len(self.env or {}) > prod_facts.JSM_ENV_MAX:
                e.append(_err(("env",), f"kind: JumpStartModel takes at most {prod_facts.JSM_ENV_MAX} variables"))
        e += self._placement_rules(jsm)
        if self.runtime == "custom" and not self.image:
            e.append(_err(("image",), "required with runtime: custom"))
        if self.runtime == "custom" and not self.port:
            e.append(_err(("port",), "required with runtime: custom"))
        if self.command is not None and not jsm and self.runtime != "custom":
            e.append(_err(("command",), "only with runtime: custom (the runtime preset sets the command)"))
        if self.health_check_path is not None and self.load_balancer and self.load_balancer.health_check_path:
            e.append(_err(("loadBalancer", "healthCheckPath"), "give the health check path once: healthCheckPath or "
                          "loadBalancer.healthCheckPath"))
        irs = self.intelligent_routing_spec
        if self.auto_scaling_spec is not None and irs is not None and irs.auto_scaling_spec is not None:
            e.append(_err(("intelligentRoutingSpec", "autoScalingSpec"),
                          "give autoscaling once: autoScalingSpec or intelligentRoutingSpec.autoScalingSpec"))
        runtime = self.effective_runtime
        if self.kv_cache_spec is not None and runtime in ("tgi", "sglang"):
            e.append(_err(("kvCacheSpec",), f"not supported with runtime: {runtime} (the operator's KV cache is "
                          "LMCache in vLLM)"))
        e += self._preset_conflicts(runtime)
        dc = self.data_capture
        if dc and dc.sagemaker_endpoint and dc.sagemaker_endpoint.enabled and not self.sagemaker_endpoint_name:
            e.append(_err(("sagemakerEndpointName",),
                          "required by dataCapture.sagemakerEndpoint (tier 1 captures at the SageMaker endpoint)"))
        if self.verify and not self.sagemaker_endpoint_name:
            e.append(_err(("sagemakerEndpointName",), "required by verify (it invokes the SageMaker endpoint)"))
        if self.weight_cache.mode == "daemonset" and source == "fsx" and not self.model.fsx.node_path:  # type: ignore[union-attr]
            e.append(_err(("model", "fsx", "nodePath"),
                          "required with weightCache.mode: daemonset (the agent copies from the node's FSx mount)"))
        if self.weight_cache.mode == "operator" and source == "huggingface":
            e.append(_err(("weightCache", "mode"),
                          "operator mode caches S3/FSx/JumpStart sources; for a Hugging Face model use daemonset"))
        if self.weight_cache.mode == "operator":
            facts = self.instance
            if facts is None or not facts.nvme:
                e.append(_err(("weightCache", "mode"), "operator mode needs instances with instance-store NVMe (the "
                              "operator's cache does not support EBS-only instances); "
                              f"{', '.join(self.placement_types() or ['the placement'])} is not known to have it"))
        if self.spec_overrides:
            for path, key in prod_facts.override_conflicts(self.spec_overrides, self.kind):
                e.append(_err(("specOverrides", *path),
                              f"spec.{prod_facts.dotted(path)} is written or modelled by the library; use {key}"))
        _raise_all(type(self), e)
        return self

    def _placement_rules(self, jsm: bool) -> list[InitErrorDetails]:
        e: list[InitErrorDetails] = []
        placed = [k for k, v in (("instanceType", self.instance_type), ("instanceTypes", self.instance_types),
                                 ("nodeAffinity", self.node_affinity)) if v is not None]
        if not placed:
            e.append(_err(("instanceType",), "give exactly one of instanceType, instanceTypes, nodeAffinity"
                          if not jsm else "required with kind: JumpStartModel"))
        for key in placed[1:]:
            e.append(_err((key,), f"exclusive with {placed[0]} (give exactly one of instanceType, instanceTypes, "
                          "nodeAffinity)"))
        if jsm or not placed:
            return e
        facts = self.instance
        res = self.resources
        gpus_given = res is not None and (res.gpus is not None or any(
            k in prod_facts.EXTENDED_RESOURCES for k in {**(res.requests or {}), **(res.limits or {})}))
        if facts is None and not gpus_given:
            types = self.placement_types()
            why = (f"{types[0]} is not in the instance table" if types and len(types) == 1 else
                   "the candidate instance types do not all agree on their accelerators (or one is unknown)" if types
                   else "nodeAffinity does not restrict node.kubernetes.io/instance-type in every required term")
            e.append(_err(("resources", "gpus"), f"required: {why}; give the accelerator count (0 for none)"))
        if facts is not None and facts.accelerator == "neuron" and self.effective_runtime != "custom":
            e.append(_err(("runtime",), "Neuron instances need runtime: custom with a Neuron image (the presets are "
                          "CUDA images)"))
        if facts is not None and res is not None and res.detailed:
            named = {**(res.requests or {}), **(res.limits or {})}
            wrong = prod_facts.NEURON if facts.accelerator == "nvidia" else prod_facts.NVIDIA_GPU
            if wrong in named:
                e.append(_err(("resources", "requests" if wrong in (res.requests or {}) else "limits"),
                              f"{wrong} does not exist on {', '.join(self.placement_types() or [])} "
                              f"({facts.accelerator} accelerators)"))
        return e

    def _preset_conflicts(self, runtime: str | None) -> list[InitErrorDetails]:
        e: list[InitErrorDetails] = []
        if runtime in ("vllm", "sglang"):
            for i, arg in enumerate(self.args or []):
                flag = prod_facts.preset_flag(arg)
                if flag:
                    e.append(_err(("args", i), f"{flag} is set by the {runtime} preset; use the config key "
                                  f"{prod_facts.PRESET_FLAGS[flag]} instead", arg))
        if runtime == "tgi":
            for key in self.env or {}:
                if key in prod_facts.TGI_PRESET_ENV:
                    e.append(_err(("env", key), f"{key} is set by the tgi preset; use the config key "
                                  f"{prod_facts.TGI_PRESET_ENV[key]} instead"))
        return e

    def placement_types(self) -> list[str] | None:
        """The instance types the endpoint may land on, or None when the placement does not say."""
        if self.instance_type:
            return [self.instance_type]
        if self.instance_types:
            return list(self.instance_types)
        if self.node_affinity is not None:
            return self.node_affinity.instance_types()
        return None

    @property
    def instance(self) -> instance_table.InstanceFacts | None:
        """What every candidate instance type has in common (the instance table), or None."""
        types = self.placement_types()
        return instance_table.agreed_facts(types) if types else None

    @property
    def accelerators(self) -> tuple[str, int]:
        """(extended resource, count) for the worker: resources.gpus wins over the instance table."""
        facts = self.instance
        resource = facts.resource if facts else prod_facts.NVIDIA_GPU
        if self.resources is not None and self.resources.gpus is not None:
            return resource, self.resources.gpus
        if self.resources is not None and self.resources.detailed:
            for name in prod_facts.EXTENDED_RESOURCES[:2]:
                given = (self.resources.limits or {}).get(name, (self.resources.requests or {}).get(name))
                if given is not None:
                    return name, int(prod_facts.quantity_value(given))
        return resource, facts.count if facts else 0

    @property
    def is_jumpstart(self) -> bool:
        return self.kind == "JumpStartModel"

    @property
    def effective_runtime(self) -> str | None:
        return None if self.is_jumpstart else (self.runtime or "vllm")


# ------------------------------------------------------------------------------------------------------------- config
class HyperPodConfig(Strict):
    """The whole config file."""

    crd_paths: ClassVar[CrdPaths] = {
        "api_version": NoCrd("the config file's own version"),
        "env": NoCrd("AWS side, not the custom resource"),
        "cluster": NoCrd("AWS side, not the custom resource"),
        "operator": NoCrd("how the operator is installed (add-on or chart values), not a custom resource field"),
        "manifests": NoCrd("how the stack delivers the manifests"),
        "namespaces": NoCrd("Namespace objects the stack owns"),
        "capture": NoCrd("AWS side: the capture bucket and key; the endpoints' spec.dataCapture.s3Uri points at "
                         "them"),
        "domain": NoCrd("AWS side: the zone and certificate; the endpoints' spec.tlsConfig / spec.dnsConfig point "
                        "at them"),
        "endpoints": NoCrd("one custom resource each"),
        "stack_name": NoCrd("AWS side, not the custom resource (the CloudFormation stack's name)"),
        "stack_layout": NoCrd("AWS side, not the custom resource (how the stack nests its templates)"),
        "observability": NoCrd("AWS side: dashboards, alarms and Prometheus rules over the endpoints"),
    }
    api_version: Literal["hyperpod-inference/v1"]
    """The config file's version: hyperpod-inference/v1."""
    env: Env | None = None
    """The account and region the stack deploys to (required by the app)."""
    cluster: Cluster
    """The existing HyperPod EKS cluster the stack installs into."""
    operator: Operator = Field(default_factory=Operator)
    """How the HyperPod inference operator and its dependencies are installed."""
    manifests: Manifests = Field(default_factory=Manifests)
    """How the Kubernetes objects reach the cluster."""
    namespaces: list[DnsLabel] = Field(default_factory=list)
    """Namespaces the stack creates and owns (deleted on destroy); an endpoint elsewhere needs its namespace to exist
    already."""
    capture: Capture | None = None
    """The capture bucket and key shared by every endpoint's data capture; absent = capture off everywhere."""
    domain: Domain | None = None
    """The Route 53 zone and ACM certificate for endpoint domain names."""
    endpoints: list[Endpoint] = Field(default_factory=list)
    """The model endpoints, one operator custom resource each."""
    stack_name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9-]*$", max_length=128)] | None = Field(
        default=None, description="The CloudFormation stack the app builds from this file. Default: HyperPodInference "
                                  "for one config file, HyperPodInference-<eksClusterName> for several "
                                  "(cdk synth -c config=a.yaml,b.yaml).")
    stack_layout: Literal["single", "perNamespace"] = Field(
        default="single", description="single: every resource in one template. perNamespace: one nested stack per "
                                      "namespace (and endpoint stackGroup) holding its manifests, roles and outputs, "
                                      "for fleets beyond one template's limits. Changing it on a deployed stack moves "
                                      "every endpoint's manifest, which deletes and re-creates the endpoints "
                                      "(docs/fleets.md).")
    observability: Observability = Field(default_factory=Observability)
    """Dashboards (on by default), alarms and Prometheus rules over the endpoints (docs/observability.md)."""

    @model_validator(mode="after")
    def _cross_rules(self, info: ValidationInfo) -> HyperPodConfig:
        e: list[InitErrorDetails] = []
        if not (info.context or {}).get("cluster_object"):
            # The app imports the cluster the config describes: it needs all of it.
            if self.env is None:
                e.append(_err(("env",), "required (the stack deploys to this account and region)"))
            for field, alias in (("eks_cluster_name", "eksClusterName"), ("kubectl_role_arn", "kubectlRoleArn"),
                                 ("oidc_provider_arn", "oidcProviderArn"), ("vpc_id", "vpcId")):
                if getattr(self.cluster, field) is None:
                    e.append(_err(("cluster", alias), "required (the stack imports the cluster by it; only a "
                                  "HyperPodInference given a cluster object does without)"))
        account, region = (self.env.account, self.env.region) if self.env else (None, None)
        partition = rules.partition_of_region(region) if region else None
        # identifiers that must belong to env (and its partition)
        for at, arn in ((("cluster", "hyperpodClusterArn"), self.cluster.hyperpod_cluster_arn),
                        (("cluster", "kubectlRoleArn"), self.cluster.kubectl_role_arn),
                        (("cluster", "oidcProviderArn"), self.cluster.oidc_provider_arn),
                        *((("operator", f), getattr(self.operator, a)) for f, a in (
                            ("albControllerRoleArn", "alb_controller_role_arn"), ("kedaRoleArn", "keda_role_arn"),
                            ("s3CsiDriverRoleArn", "s3_csi_driver_role_arn"),
                            ("executionRoleArn", "execution_role_arn"))),
                        (("capture", "kms"), self.capture.kms if self.capture is not None else None)):
            if partition and arn and arn.startswith("arn:") and rules.arn_parts(arn)[0] != partition:
                e.append(_err(at, f"must be in the partition of env.region ({partition})", arn))
        m = rules.CLUSTER_ARN_RE.match(self.cluster.hyperpod_cluster_arn)
        if m and self.env and (m.group(1), m.group(2)) != (region, account):
            e.append(_err(("cluster", "hyperpodClusterArn"), f"must be in env.account / env.region ({account} / {region})"))
        m = rules.OIDC_RE.match(self.cluster.oidc_provider_arn or "")
        if m and self.env and (m.group(1), m.group(2)) != (account, region):
            e.append(_err(("cluster", "oidcProviderArn"), f"must be the provider of a cluster in {account} / {region}"))
        m = rules.IAM_ROLE_ARN_RE.match(self.cluster.kubectl_role_arn or "")
        if m and self.env and m.group(1) != account:
            e.append(_err(("cluster", "kubectlRoleArn"), f"must be a role in env.account ({account})"))
        # namespaces
        seen_ns: set[str] = set()
        for i, ns in enumerate(self.namespaces):
            if ns in rules.SYSTEM_NAMESPACES:
                e.append(_err(("namespaces", i), f"'{ns}' exists on every cluster; the stack only creates namespaces it owns"))
            if ns in seen_ns:
                e.append(_err(("namespaces", i), f"duplicate namespace '{ns}'"))
            seen_ns.add(ns)
        # operator region support (chart mode pulls the operator image from a regional registry)
        if self.operator.install == "chart" and region:
            problem = operator_facts.image_region_problem(region, self.operator.version)
            if problem:
                e.append(_err(("env", "region"), problem))
        files = self.manifests.delivery == "files"
        if self.domain is not None and files:
            if self.domain.certificate_arn is None:
                e.append(_err(("domain", "certificateArn"),
                              "required with manifests.delivery: files (an issued certificate's ARN is known only at deploy)"))
            if self.domain.hosted_zone_id is None:
                e.append(_err(("domain", "hostedZoneId"),
                              "required with manifests.delivery: files (a created zone's ID is known only at deploy)"))
        if self.capture is not None:
            c = self.capture
            if c.bucket_account and account and c.bucket_account != account:
                e.append(_err(("capture", "bucketAccount"),
                              f"the capture bucket must be in the cluster's account ({account}): the operator requires it"))
            if region and rules.kms_key_arn_problem(c.kms) is None and rules.arn_parts(c.kms)[2] != region:
                e.append(_err(("capture", "kms"), f"the key must be in env.region ({region})"))
        # endpoints
        names: dict[tuple[str, str], int] = {}
        domains: dict[str, int] = {}
        sm_names: dict[str, int] = {}
        for i, ep in enumerate(self.endpoints):
            at = ("endpoints", i)
            key = (ep.namespace, ep.name)
            if key in names:
                e.append(_err(at + ("name",), f"duplicate endpoint '{ep.namespace}/{ep.name}' (also endpoints[{names[key]}])"))
            names.setdefault(key, i)
            if ep.sagemaker_endpoint_name:
                low = ep.sagemaker_endpoint_name.lower()
                if low in sm_names:
                    e.append(_err(at + ("sagemakerEndpointName",),
                                  f"duplicate SageMaker endpoint name (also endpoints[{sm_names[low]}])"))
                sm_names.setdefault(low, i)
            for crd_path, loc, value in (
                    ("spec.loadBalancer.idleTimeoutSeconds", ("loadBalancer", "idleTimeoutSeconds"),
                     ep.load_balancer.idle_timeout_seconds if ep.load_balancer else None),
                    ("spec.modelCacheConfig.imageCache", ("imageCache",), ep.image_cache)):
                if value is not None and not prod_facts.version_has(self.operator.version, crd_path):
                    e.append(_err(at + loc, f"needs operator.version {prod_facts.FIELD_SINCE[crd_path]} or later "
                                  f"(have {self.operator.version}; {crd_path} is not in its CRD)"))
            for loc, trigger in trigger_locations(ep):
                if isinstance(trigger, PrometheusTrigger):
                    m = prod_facts.AMP_WORKSPACE_RE.match(trigger.server_address)
                    if m and m.group(1) != region:
                        e.append(_err(at + loc + ("serverAddress",), f"the workspace must be in env.region ({region}):"
                                      " KEDA queries it with the stack's role", trigger.server_address))
            if ep.weight_cache.mode == "operator" and not operator_facts.has_field(self.operator.version,
                                                                                   "spec.modelCacheConfig"):
                since = operator_facts.field_since("spec.modelCacheConfig")
                e.append(_err(at + ("weightCache", "mode"),
                              f"operator mode needs operator.version {since} or later (have {self.operator.version})"))
            if region and not ep.is_jumpstart and ep.image is None and ep.effective_runtime in PRESETS:
                problem = dlc_registry_problem(region)
                if problem:
                    e.append(_err(at + ("image",), problem))
            if ep.data_capture is not None and ep.data_capture.any_enabled:
                if self.capture is None:
                    e.append(_err(at + ("dataCapture",), "capture is enabled here but the top-level capture section is absent"))
                elif (ep.data_capture.load_balancer and ep.data_capture.load_balancer.enabled
                      and self.capture.bucket_encryption == "SSE-KMS"):
                    e.append(_err(at + ("dataCapture", "loadBalancer"),
                                  "ALB access logs cannot be written to a bucket whose default encryption is SSE-KMS "
                                  "(capture.bucketEncryption)"))
            if ep.domain_name is not None:
                if self.domain is None:
                    e.append(_err(at + ("domainName",), "needs the top-level domain section"))
                elif not rules.domain_within_zone(ep.domain_name, self.domain.zone_name):
                    e.append(_err(at + ("domainName",), f"must be inside domain.zoneName ({self.domain.zone_name})"))
                if ep.domain_name in domains:
                    e.append(_err(at + ("domainName",), f"already used by endpoints[{domains[ep.domain_name]}]"))
                domains.setdefault(ep.domain_name, i)
            if ep.stack_group is not None and self.stack_layout != "perNamespace":
                e.append(_err(at + ("stackGroup",), "only with stackLayout: perNamespace (it names a nested stack of "
                              "the endpoint's namespace)"))
            if ep.verify is not None and files:
                e.append(_err(at + ("verify",), "not available with manifests.delivery: files (nothing applies the resource)"))
            if ep.model.huggingface and ep.model.huggingface.token and ep.model.huggingface.token.secrets_manager_arn:
                m = rules.SECRETS_ARN_RE.match(ep.model.huggingface.token.secrets_manager_arn)
                if m and account and m.group(2) != account:
                    e.append(_err(at + ("model", "huggingface", "token", "secretsManagerArn"),
                                  f"must be a secret in env.account ({account})"))
        if self.domain is not None and len(domains) > 100:
            e.append(_err(("endpoints",), "at most 100 endpoint domain names per stack"))
        if self.domain is not None and domains:
            d = self.domain
            if d.certificate_arn is not None:
                if d.wildcard is not None:
                    e.append(_err(("domain", "wildcard"), "only applies to an issued certificate; leave it unset when "
                                  "certificateArn imports one", d.wildcard))
                problem = rules.certificate_region_problem(d.certificate_arn, region)
                if problem:
                    e.append(_err(("domain", "certificateArn"), problem, d.certificate_arn))
            else:
                problem = rules.issued_certificate_problem(d.zone_name, list(domains), d.wildcard)
                if problem:
                    e.append(_err(("domain", "wildcard" if d.wildcard is False else "certificateArn"), problem))
        _raise_all(type(self), e)
        return self

    # conveniences used by the stack -----------------------------------------------------------------------------
    @property
    def capture_enabled(self) -> bool:
        return any(ep.data_capture is not None and ep.data_capture.any_enabled for ep in self.endpoints)

    @property
    def alb_logs_enabled(self) -> bool:
        return any(ep.data_capture and ep.data_capture.load_balancer and ep.data_capture.load_balancer.enabled
                   for ep in self.endpoints)

    @property
    def needs_custom_service_accounts(self) -> bool:
        return any(ep.weight_cache.mode == "daemonset" and not ep.is_jumpstart for ep in self.endpoints)
