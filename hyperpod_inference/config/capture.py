"""The ``capture`` section (the shared bucket and key) and an endpoint's ``dataCapture`` tiers."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..facts import analytics as analytics_facts
from ..facts import rules
from .base import (
    BucketName,
    ContentType,
    CrdPaths,
    NoCrd,
    Strict,
    _bool_or_object,
    _err,
    _literal_prefix,
    _raise_all,
)


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


