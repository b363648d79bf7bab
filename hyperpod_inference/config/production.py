"""The operator's production fields, under the operator's own names and shapes (InferenceEndpointConfig v1 and
JumpStartModel v1), so a block can be pasted from the operator's documentation onto an endpoint.

Every field carries its CRD path as schema data (``x-crd-path``): relative to the object holding the model (so one
model serves every place the CRD repeats its shape, e.g. ``autoScalingSpec`` at the top level, in
``intelligentRoutingSpec`` and in ``pdSpec.autoScalingSpec``), or absolute when it starts with ``spec.``.
Nothing here has a default the resource would receive: a field is written only when the user sets it, so the API
server applies the CRD's defaults to the rest.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import textwrap
from collections.abc import Iterator
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainValidator,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from ..facts import operator as operator_facts
from ..facts import production as f
from .suggest import with_suggestions
from .warnings import ConfigWarning, config_rule, endpoint_rule


class NoCrd(NamedTuple):
    """A field no CRD path receives, and why (``x-crd-path: null`` with ``x-crd-path-reason`` in the schema)."""

    reason: str


CrdPaths = dict[str, "str | NoCrd"]


@functools.cache
def attribute_docstrings(cls: type) -> dict[str, str]:
    """Field name -> the docstring written under it in ``cls``'s own body (``x: int``, then a string on its own
    line), cleaned as ``inspect.cleandoc`` does. Read from the source only when a schema is made, so that loading a
    config does not parse the source of every model."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    return {prev.target.id: inspect.cleandoc(node.value.value) for prev, node in itertools.pairwise(body)
            if isinstance(prev, ast.AnnAssign) and isinstance(prev.target, ast.Name) and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def crd_schema_extra(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """Schema data of a model: each field's description from its attribute docstring (in ``cls`` or the model it
    inherits the field from) unless the field names one, and from the model's ``crd_paths`` table (for fields
    without ``crd()``): ``x-crd-path`` is the CRD path, or null with ``x-crd-path-reason``."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if issubclass(klass, BaseModel) and klass is not BaseModel:
            docs.update(attribute_docstrings(klass))
    table: CrdPaths = cls.__dict__.get("crd_paths", {})
    properties = schema.get("properties", {})
    for name, field in cls.model_fields.items():
        prop = properties.get(field.alias or name)
        if prop is None:
            continue
        if field.description is None and name in docs:
            prop["description"] = docs[name]
        if name not in table or "x-crd-path" in prop:
            continue
        entry = table[name]
        if isinstance(entry, NoCrd):
            prop.update({"x-crd-path": None, "x-crd-path-reason": entry.reason})
        else:
            prop["x-crd-path"] = entry


SCHEMA_DOCS: Any = {"json_schema_extra": crd_schema_extra}


class _Strict(BaseModel):
    """camelCase keys, unknown keys rejected (with the nearest field name), immutable once validated: the base of
    every model of the config."""

    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", frozen=True, populate_by_name=False,
                              regex_engine="python-re", **SCHEMA_DOCS)

    @model_validator(mode="wrap")
    @classmethod
    def _unknown_keys(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        """An unknown key gets "did you mean" with this model's nearest field, whoever validates the model
        (``Endpoint.model_validate({...})`` as much as the loader)."""
        try:
            return handler(data)
        except ValidationError as err:
            suggested = with_suggestions(cls, err)
            if suggested is None:
                raise
            raise suggested from None


def crd(path: str, *, description: str | None = None, alias: str | None = None, **kw: Any) -> Any:
    """An optional field mapped to CRD path ``path`` (see the module docstring)."""
    extra: dict[str, Any] = {"x-crd-path": path}
    return Field(default=None, json_schema_extra=extra, description=description, alias=alias, **kw)


def crd_required(path: str, *, description: str | None = None, alias: str | None = None, **kw: Any) -> Any:
    return Field(json_schema_extra={"x-crd-path": path}, description=description, alias=alias, **kw)


NonNegative = Annotated[int, Field(ge=0, le=2**31 - 1)]
Positive = Annotated[int, Field(ge=1, le=2**31 - 1)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
Quantity = Annotated[str, StringConstraints(pattern=f.QUANTITY, max_length=64)] | Annotated[int, Field(ge=0)]
ResourceName = Annotated[str, StringConstraints(pattern=f.RESOURCE_NAME, max_length=253)]
LabelKey = Annotated[str, StringConstraints(pattern=f.LABEL_KEY, max_length=317)]
MetricType = Literal[f.METRIC_TYPES]  # type: ignore[valid-type]
Loc = tuple[str | int, ...]


# ---------------------------------------------------------------------------------------------------- autoscaling
class CloudWatchDimension(_Strict):
    name: Text = crd_required("name")
    """Dimension name."""
    value: Text = crd_required("value")
    """Dimension value."""


class CloudWatchTrigger(_Strict):
    """A KEDA ``aws-cloudwatch`` trigger. ``namespace``, ``metricName`` and ``targetValue`` are required here (the
    CRD marks none of them, yet the trigger cannot work without them)."""

    name: Text | None = crd("name")
    """Trigger name."""
    namespace: Text = crd_required("namespace")
    """CloudWatch metric namespace."""
    metric_name: Text = crd_required("metricName")
    """CloudWatch metric name."""
    target_value: float = crd_required("targetValue")
    """Metric value per replica KEDA aims at."""
    dimensions: list[CloudWatchDimension] | None = crd("dimensions", max_length=30)
    """Metric dimensions."""
    metric_stat: Text | None = crd("metricStat")
    """Statistic, e.g. Average."""
    metric_type: MetricType | None = crd("metricType")
    """Value or Average."""
    activation_target_value: float | None = crd("activationTargetValue")
    """Value above which KEDA scales from zero."""
    min_value: float | None = crd("minValue")
    """Value used when the metric has no data."""
    metric_collection_period: Positive | None = crd("metricCollectionPeriod")
    """Seconds of the metric period."""
    metric_collection_start_time: Positive | None = crd("metricCollectionStartTime")
    """Seconds back the query starts."""
    use_cached_metrics: bool | None = crd("useCachedMetrics")
    """Use KEDA's cache."""


class PrometheusTrigger(_Strict):
    """A KEDA ``prometheus`` trigger on an Amazon Managed Prometheus workspace (``serverAddress``: the CRD also
    accepts an empty string; here the workspace URL is required, and must be in the stack's region)."""

    name: Text | None = crd("name")
    """Trigger name."""
    namespace: Text | None = crd("namespace")
    """Prometheus namespace (tenant)."""
    server_address: Annotated[str, StringConstraints(pattern=f.AMP_WORKSPACE_URL, max_length=512)] = crd_required(
        "serverAddress", description="An Amazon Managed Prometheus workspace URL (stricter than the CRD: anchored, "
                                     "with a region, never empty).")
    query: Annotated[str, StringConstraints(min_length=1, max_length=8192)] = crd_required("query")
    """The PromQL query."""
    target_value: float = crd_required("targetValue")
    """Query value per replica KEDA aims at."""
    activation_target_value: float | None = crd("activationTargetValue")
    """Value above which KEDA scales from zero."""
    metric_type: MetricType | None = crd("metricType")
    """Value or Average."""
    custom_headers: Text | None = crd("customHeaders")
    """Extra HTTP headers for the query."""
    use_cached_metrics: bool | None = crd("useCachedMetrics")
    """Use KEDA's cache."""


class AutoScalingSpec(_Strict):
    """KEDA autoscaling as the operator takes it (one shape wherever the CRD repeats it)."""

    min_replica_count: NonNegative | None = crd("minReplicaCount")
    """Fewest replicas (operator default 1)."""
    max_replica_count: NonNegative | None = crd("maxReplicaCount")
    """Most replicas (operator default 5); 0 is refused (it never runs a pod)."""
    polling_interval: NonNegative | None = crd("pollingInterval")
    """Seconds between trigger checks."""
    cooldown_period: NonNegative | None = crd("cooldownPeriod")
    """Seconds before scaling to zero."""
    initial_cooldown_period: NonNegative | None = crd("initialCooldownPeriod")
    """Seconds after start before cooldown applies."""
    scale_up_stabilization_time: NonNegative | None = crd("scaleUpStabilizationTime")
    """Seconds the scale-up decision must hold."""
    scale_down_stabilization_time: NonNegative | None = crd("scaleDownStabilizationTime")
    """Seconds the scale-down decision must hold."""
    cloud_watch_trigger: CloudWatchTrigger | None = crd("cloudWatchTrigger")
    """One CloudWatch trigger."""
    cloud_watch_trigger_list: list[CloudWatchTrigger] | None = crd("cloudWatchTriggerList",
                                                                   max_length=f.TRIGGER_LIST_MAX)
    """Several CloudWatch triggers (wins over the single one)."""
    prometheus_trigger: PrometheusTrigger | None = crd("prometheusTrigger")
    """One Prometheus trigger."""
    prometheus_trigger_list: list[PrometheusTrigger] | None = crd("prometheusTriggerList",
                                                                  max_length=f.TRIGGER_LIST_MAX)
    """Several Prometheus triggers (wins over the single one)."""

    @model_validator(mode="after")
    def _range(self) -> AutoScalingSpec:
        lo = self.min_replica_count if self.min_replica_count is not None else f.AUTOSCALING_DEFAULTS["minReplicaCount"]
        hi = self.max_replica_count if self.max_replica_count is not None else f.AUTOSCALING_DEFAULTS["maxReplicaCount"]
        if lo > hi:
            raise PydanticCustomError("range", "minReplicaCount ({lo}) must not exceed maxReplicaCount ({hi}; the "
                                      "operator's default is 5 when unset)", {"lo": lo, "hi": hi})
        if hi == 0:
            raise PydanticCustomError("range", "maxReplicaCount 0 never runs a pod: KEDA can scale between "
                                      "minReplicaCount and maxReplicaCount only; give maxReplicaCount 1 or more")
        return self

    @property
    def min_replicas(self) -> int:
        return self.min_replica_count if self.min_replica_count is not None else f.AUTOSCALING_DEFAULTS["minReplicaCount"]

    @property
    def max_replicas(self) -> int:
        return self.max_replica_count if self.max_replica_count is not None else f.AUTOSCALING_DEFAULTS["maxReplicaCount"]

    @property
    def cloudwatch_triggers(self) -> list[CloudWatchTrigger]:
        """The triggers the operator uses: the list wins over the single form (CRD)."""
        if self.cloud_watch_trigger_list:
            return list(self.cloud_watch_trigger_list)
        return [self.cloud_watch_trigger] if self.cloud_watch_trigger else []

    @property
    def prometheus_triggers(self) -> list[PrometheusTrigger]:
        if self.prometheus_trigger_list:
            return list(self.prometheus_trigger_list)
        return [self.prometheus_trigger] if self.prometheus_trigger else []


# ------------------------------------------------------------------------------------------ routing, cache, metrics
class IntelligentRoutingSpec(_Strict):
    enabled: bool | None = crd("enabled")
    """Turn intelligent routing on."""
    routing_strategy: Literal[f.ROUTING_STRATEGIES] | None = crd("routingStrategy")  # type: ignore[valid-type]
    """How requests are routed; kvaware without a KV cache (kvCacheSpec enableL1Cache / enableL2Cache) is
    warned."""
    auto_scaling_spec: AutoScalingSpec | None = crd("autoScalingSpec")
    """Autoscaling of the router."""


class L2CacheSpec(_Strict):
    l2_cache_backend: Literal[f.L2_CACHE_BACKENDS] = crd_required(  # type: ignore[valid-type]
        "l2CacheBackend", description="redis or tieredstorage, lowercase (stricter than the CRD's unanchored, "
                                      "case-insensitive pattern).")
    l2_cache_local_url: Text | None = crd("l2CacheLocalUrl")
    """URL of the L2 cache."""


class KvCacheSpec(_Strict):
    cache_config_file: Text | None = crd("cacheConfigFile")
    """An LMCache config file."""
    enable_l1_cache: bool | None = crd("enableL1Cache", alias="enableL1Cache")
    """Turn the in-memory L1 cache on."""
    enable_l2_cache: bool | None = crd("enableL2Cache", alias="enableL2Cache")
    """Turn the L2 cache on (needs l2CacheSpec)."""
    l2_cache_spec: L2CacheSpec | None = crd("l2CacheSpec", alias="l2CacheSpec")
    """The L2 backend."""

    @model_validator(mode="after")
    def _l2(self) -> KvCacheSpec:
        if self.enable_l2_cache and self.l2_cache_spec is None:
            raise PydanticCustomError("l2", "enableL2Cache: true needs l2CacheSpec (the L2 backend)")
        return self


class ModelMetrics(_Strict):
    path: Annotated[str, StringConstraints(pattern=f.METRICS_PATH, max_length=256)] | None = crd("path")
    """Path the model serves metrics on."""
    port: Annotated[int, Field(ge=f.METRICS_PORT_RANGE[0], le=f.METRICS_PORT_RANGE[1])] | None = crd("port")
    """Port the model serves metrics on; warned when it is not the model server's port (nothing else in the pod
    serves metrics)."""


class Metrics(_Strict):
    enabled: bool | None = crd("enabled")
    """Turn metrics scraping on."""
    metrics_scrape_interval_seconds: Annotated[
        int, Field(ge=f.SCRAPE_INTERVAL_RANGE[0], le=f.SCRAPE_INTERVAL_RANGE[1])] | None = crd(
        "metricsScrapeIntervalSeconds")
    """Seconds between scrapes."""
    model_metrics: ModelMetrics | None = crd("modelMetrics")
    """Where the model serves its metrics."""


class LoadBalancerSpec(_Strict):
    health_check_path: Annotated[str, StringConstraints(pattern=f.HEALTH_CHECK_PATH, max_length=1024)] | None = crd(
        "healthCheckPath")
    """The ALB health check path."""
    routing_algorithm: Literal[f.ROUTING_ALGORITHMS] | None = crd(  # type: ignore[valid-type]
        "routingAlgorithm")
    """How the ALB spreads requests."""
    idle_timeout_seconds: Annotated[int, Field(ge=f.IDLE_TIMEOUT_RANGE[0], le=f.IDLE_TIMEOUT_RANGE[1])] | None = crd(
        "idleTimeoutSeconds", description="v3.3 and later")


class Tag(_Strict):
    name: Annotated[str, StringConstraints(min_length=1, max_length=f.TAG_KEY_MAX)] = crd_required(
        "name", description="Tag key: 1-128 characters, not starting with aws: (reserved by AWS; SageMaker refuses "
                            "it), unique among the endpoint's tags.")
    value: Annotated[str, StringConstraints(max_length=f.TAG_VALUE_MAX)] = crd_required("value")
    """Tag value (at most 256 characters)."""

    @model_validator(mode="after")
    def _not_reserved(self) -> Tag:
        if self.name.lower().startswith("aws:"):
            raise PydanticCustomError("tag", "tag keys starting with aws: are reserved by AWS; SageMaker refuses "
                                      "them ({name})", {"name": self.name})
        return self


class ImageCache(_Strict):
    enabled: bool = crd_required("enabled")
    """Cache the worker image on the nodes."""


# -------------------------------------------------------------------------------------------------------- resources
class ResourceClaim(_Strict):
    name: Text = crd_required("name")
    """The pod's resource claim."""
    request: Text | None = crd("request")
    """The request inside the claim."""


class ResourceRequirements(_Strict):
    requests: dict[ResourceName, Quantity] | None = crd("requests")
    """Resource requests."""
    limits: dict[ResourceName, Quantity] | None = crd("limits")
    """Resource limits."""
    claims: list[ResourceClaim] | None = crd("claims")
    """Dynamic resource claims."""

    @model_validator(mode="after")
    def _bounds(self) -> ResourceRequirements:
        problems = resource_problems(self.requests or {}, self.limits or {})
        if problems:
            raise PydanticCustomError("resources", "; ".join(problems))
        return self


def resource_problems(requests: dict[str, Any], limits: dict[str, Any]) -> list[str]:
    """requests ≤ limits; an extended resource (GPU, Neuron) needs request = limit (Kubernetes refuses the pod)."""
    out = []
    for name, req in requests.items():
        lim = limits.get(name)
        if name in f.EXTENDED_RESOURCES:
            if lim is None or f.quantity_value(req) != f.quantity_value(lim):
                out.append(f"{name}: an extended resource needs requests = limits (requests {req}, limits {lim})")
        elif lim is not None and f.quantity_value(req) > f.quantity_value(lim):
            out.append(f"{name}: requests ({req}) must not exceed limits ({lim})")
    return out  # an extended resource only in limits is fine: Kubernetes defaults the request to the limit


# ---------------------------------------------------------------------------------------------------------- probes
class ExecAction(_Strict):
    command: list[Annotated[str, StringConstraints(min_length=1)]] = crd_required("command", min_length=1)
    """The command run in the container."""


class HttpHeader(_Strict):
    name: Text = crd_required("name")
    """Header name."""
    value: str = crd_required("value")
    """Header value."""


PortRef = Annotated[int, Field(ge=1, le=65535)] | Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=15)]


class HttpGetAction(_Strict):
    path: Annotated[str, StringConstraints(pattern=r"^/\S*$", max_length=1024)] | None = crd("path")
    """Path requested."""
    port: PortRef = crd_required("port")
    """Port number or name."""
    host: Text | None = crd("host")
    """Host to connect to."""
    scheme: Literal[f.PROBE_SCHEMES] | None = crd("scheme")  # type: ignore[valid-type]
    """HTTP or HTTPS."""
    http_headers: list[HttpHeader] | None = crd("httpHeaders")
    """Headers sent."""


class TcpSocketAction(_Strict):
    port: PortRef = crd_required("port")
    """Port number or name."""
    host: Text | None = crd("host")
    """Host to connect to."""


class GrpcAction(_Strict):
    port: Annotated[int, Field(ge=1, le=65535)] = crd_required("port")
    """Port number."""
    service: Text | None = crd("service")
    """gRPC health service name."""


class Probe(_Strict):
    """A core/v1 Probe: exactly one handler."""

    exec_: ExecAction | None = crd("exec", alias="exec")
    """Run a command."""
    http_get: HttpGetAction | None = crd("httpGet")
    """Send an HTTP GET."""
    tcp_socket: TcpSocketAction | None = crd("tcpSocket")
    """Open a TCP connection."""
    grpc: GrpcAction | None = crd("grpc")
    """Call the gRPC health check."""
    initial_delay_seconds: NonNegative | None = crd("initialDelaySeconds")
    """Seconds before the first probe."""
    period_seconds: Positive | None = crd("periodSeconds")
    """Seconds between probes."""
    timeout_seconds: Positive | None = crd("timeoutSeconds")
    """Seconds a probe may take."""
    success_threshold: Positive | None = crd("successThreshold")
    """Successes needed after a failure."""
    failure_threshold: Positive | None = crd("failureThreshold")
    """Failures before acting."""
    termination_grace_period_seconds: Positive | None = crd("terminationGracePeriodSeconds")
    """Grace period when the probe fails."""

    @model_validator(mode="after")
    def _one_handler(self) -> Probe:
        given = [n for n, v in (("exec", self.exec_), ("httpGet", self.http_get), ("tcpSocket", self.tcp_socket),
                                ("grpc", self.grpc)) if v is not None]
        if len(given) != 1:
            raise PydanticCustomError("probe", "give exactly one of exec, httpGet, tcpSocket, grpc (got {n})",
                                      {"n": ", ".join(given) or "none"})
        return self


class Probes(_Strict):
    liveness_probe: Probe | None = crd("livenessProbe")
    """Restart the container when it fails."""
    readiness_probe: Probe | None = crd("readinessProbe")
    """Remove the pod from service when it fails."""
    startup_probe: Probe | None = crd("startupProbe")
    """Hold the other probes until the model has started."""


class RequestLimits(_Strict):
    max_concurrent_requests: Positive | None = crd("maxConcurrentRequests")
    """Requests served at once."""
    max_queue_size: NonNegative | None = crd("maxQueueSize")
    """Requests waiting beyond those."""
    overflow_status_code: Annotated[
        int, Field(ge=f.OVERFLOW_STATUS_RANGE[0], le=f.OVERFLOW_STATUS_RANGE[1])] | None = crd("overflowStatusCode")
    """HTTP status when the queue is full."""


# --------------------------------------------------------------------------------------------------------- env from
class KeyRef(_Strict):
    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
                                           max_length=253)] = crd_required("name")
    """The Secret or ConfigMap."""
    key: Annotated[str, StringConstraints(pattern=r"^[-._a-zA-Z0-9]+$", max_length=253)] = crd_required("key")
    """The key in it."""
    optional: bool | None = crd("optional")
    """Allow it to be missing."""


class FieldRef(_Strict):
    field_path: Text = crd_required("fieldPath")
    """The pod field, e.g. metadata.name."""
    api_version: Text | None = crd("apiVersion")
    """Its API version."""


class ResourceFieldRef(_Strict):
    resource: Text = crd_required("resource")
    """The resource, e.g. limits.cpu."""
    container_name: Text | None = crd("containerName")
    """The container."""
    divisor: Quantity | None = crd("divisor")
    """Unit of the value."""


class EnvVarSource(_Strict):
    secret_key_ref: KeyRef | None = crd("secretKeyRef")
    """A key of a Secret."""
    config_map_key_ref: KeyRef | None = crd("configMapKeyRef")
    """A key of a ConfigMap."""
    field_ref: FieldRef | None = crd("fieldRef")
    """A field of the pod."""
    resource_field_ref: ResourceFieldRef | None = crd("resourceFieldRef")
    """A resource of the container."""

    @model_validator(mode="after")
    def _one(self) -> EnvVarSource:
        given = [n for n in ("secret_key_ref", "config_map_key_ref", "field_ref", "resource_field_ref")
                 if getattr(self, n) is not None]
        if len(given) != 1:
            raise PydanticCustomError("valueFrom", "give exactly one of secretKeyRef, configMapKeyRef, fieldRef, "
                                      "resourceFieldRef")
        return self


class EnvFrom(_Strict):
    """``env: {NAME: {valueFrom: ...}}`` (InferenceEndpointConfig only)."""

    value_from: EnvVarSource = crd_required("valueFrom")
    """Where the value comes from."""


def _env_value(v: Any) -> str | EnvFrom:
    # A plain validator (not a str | EnvFrom union) so errors name env.<NAME>.valueFrom..., not the union's branches.
    if isinstance(v, (str, EnvFrom)):
        return v
    if isinstance(v, dict):
        return EnvFrom.model_validate(v)
    raise PydanticCustomError("env", "must be a string or {valueFrom: {secretKeyRef | configMapKeyRef | fieldRef | "
                              "resourceFieldRef}}")


EnvValue = Annotated[Any, PlainValidator(_env_value), WithJsonSchema({"anyOf": [
    {"type": "string"},
    {"type": "object", "required": ["valueFrom"], "additionalProperties": False,
     "properties": {"valueFrom": {"type": "object", "description": "core/v1 EnvVarSource (one of secretKeyRef, "
                                                                  "configMapKeyRef, fieldRef, resourceFieldRef)"}}},
]})]


# ----------------------------------------------------------------------------------------------------- node affinity
class NodeSelectorRequirement(_Strict):
    key: LabelKey = crd_required("key")
    """Node label."""
    operator: Literal[f.NODE_SELECTOR_OPERATORS] = crd_required("operator")  # type: ignore[valid-type]
    """In, NotIn, Exists, DoesNotExist, Gt or Lt."""
    values: list[Annotated[str, StringConstraints(max_length=63)]] | None = crd("values")
    """Label values."""

    @model_validator(mode="after")
    def _values(self) -> NodeSelectorRequirement:
        if self.key in f.MISSPELLED_NODE_LABELS:
            raise PydanticCustomError("label", "no node carries the label {key}; it is {real}",
                                      {"key": self.key, "real": f.MISSPELLED_NODE_LABELS[self.key]})
        n = len(self.values or [])
        if self.operator in ("In", "NotIn") and n == 0:
            raise PydanticCustomError("values", "operator {op} needs values", {"op": self.operator})
        if self.operator in ("Exists", "DoesNotExist") and n:
            raise PydanticCustomError("values", "operator {op} takes no values", {"op": self.operator})
        if self.operator in ("Gt", "Lt") and (n != 1 or not (self.values or [""])[0].lstrip("-").isdigit()):
            raise PydanticCustomError("values", "operator {op} takes exactly one integer value", {"op": self.operator})
        return self


class NodeSelectorTerm(_Strict):
    match_expressions: list[NodeSelectorRequirement] | None = crd("matchExpressions")
    """Requirements on node labels."""
    match_fields: list[NodeSelectorRequirement] | None = crd("matchFields")
    """Requirements on node fields."""


class NodeSelector(_Strict):
    node_selector_terms: list[NodeSelectorTerm] = crd_required("nodeSelectorTerms", min_length=1)
    """Terms, any of which a node must meet."""


class PreferredSchedulingTerm(_Strict):
    weight: Annotated[int, Field(ge=f.NODE_AFFINITY_WEIGHT_RANGE[0], le=f.NODE_AFFINITY_WEIGHT_RANGE[1])] = \
        crd_required("weight")
    """Weight 1-100."""
    preference: NodeSelectorTerm = crd_required("preference")
    """The preferred term."""


class NodeAffinity(_Strict):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = crd(
        "requiredDuringSchedulingIgnoredDuringExecution")
    """Nodes the pods must land on."""
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = crd(
        "preferredDuringSchedulingIgnoredDuringExecution")
    """Nodes the pods prefer."""

    def instance_type_values(self, label: str = f.INSTANCE_TYPE_LABEL) -> list[tuple[Loc, str]]:
        """Every value given for the instance-type label (In and NotIn, required and preferred terms), with its
        path below ``nodeAffinity``."""
        out: list[tuple[Loc, str]] = []
        req = self.required_during_scheduling_ignored_during_execution
        terms: list[tuple[Loc, NodeSelectorTerm]] = []
        if req is not None:
            terms += [(("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", i), term)
                      for i, term in enumerate(req.node_selector_terms)]
        for i, pref in enumerate(self.preferred_during_scheduling_ignored_during_execution or []):
            terms.append((("preferredDuringSchedulingIgnoredDuringExecution", i, "preference"), pref.preference))
        for at, term in terms:
            for j, expr in enumerate(term.match_expressions or []):
                if expr.key == label and expr.operator in ("In", "NotIn"):
                    out += [((*at, "matchExpressions", j, "values", k), v) for k, v in enumerate(expr.values or [])]
        return out

    def instance_types(self, label: str = f.INSTANCE_TYPE_LABEL) -> list[str] | None:
        """The instance types the required terms allow (``<label> In [...]`` in every term), or None when a term does
        not restrict them."""
        req = self.required_during_scheduling_ignored_during_execution
        if req is None:
            return None
        out: list[str] = []
        for term in req.node_selector_terms:
            values = [v for e in term.match_expressions or [] if e.key == label and e.operator == "In"
                      for v in e.values or []]
            if not values:
                return None
            out += [v for v in values if v not in out]
        return out


# ----------------------------------------------------------------------------------------------------------- pdSpec
class PdRoleSpec(_Strict):
    args: list[str] | None = crd("args")
    """Worker arguments."""
    node_selector: dict[LabelKey, Annotated[str, StringConstraints(max_length=63)]] | None = crd("nodeSelector")
    """Node labels the pods need."""
    replicas: Positive | None = crd("replicas")
    """Number of pods."""
    resources: ResourceRequirements | None = crd("resources")
    """Pod resources."""


class PdAutoScaling(_Strict):
    prefill_auto_scaling: AutoScalingSpec | None = crd("prefillAutoScaling")
    """Autoscaling of the prefill pods."""
    decoding_auto_scaling: AutoScalingSpec | None = crd("decodingAutoScaling")
    """Autoscaling of the decode pods."""


class TopologySpec(_Strict):
    availability_zone: Text | None = crd("availabilityZone")
    """The zone to place pods in."""
    placement_group: Text | None = crd("placementGroup")
    """The EC2 placement group."""
    same_az: bool | None = crd("sameAZ", alias="sameAZ")
    """Keep prefill and decode in one zone."""


class PdSpec(_Strict):
    """Disaggregated prefill and decode (its presence turns DPD on)."""

    prefill_spec: PdRoleSpec = crd_required("prefillSpec")
    """The prefill pods."""
    decoding_spec: PdRoleSpec = crd_required("decodingSpec")
    """The decode pods."""
    auto_scaling_spec: PdAutoScaling | None = crd("autoScalingSpec")
    """Autoscaling of both."""
    routing_threshold: NonNegative | None = crd("routingThreshold")
    """Prompt length above which prefill is split off."""
    topology_spec: TopologySpec | None = crd("topologySpec")
    """Where the pods are placed."""


# -------------------------------------------------------------------------------------------------------- JumpStart
class AdditionalConfig(_Strict):
    name: Text = crd_required("name")
    """Setting name."""
    value: Annotated[str, StringConstraints(max_length=1024)] = crd_required("value")
    """Setting value."""


JsmRoleArn = Annotated[str, StringConstraints(pattern=f.JSM_ROLE_ARN, min_length=f.ROLE_ARN_LENGTH[0],
                                              max_length=f.ROLE_ARN_LENGTH[1])]
JumpStartModelVersion = Annotated[str, StringConstraints(
    pattern=f.JUMPSTART_MODEL_VERSION, min_length=f.JUMPSTART_MODEL_VERSION_LENGTH[0],
    max_length=f.JUMPSTART_MODEL_VERSION_LENGTH[1])]
MigProfile = Annotated[str, StringConstraints(pattern=f.MIG_PROFILE, max_length=64)]


def dump(model: BaseModel | None) -> Any:
    """A model as the CRD's JSON: camelCase, only what the user set."""
    if model is None:
        return None
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


# --------------------------------------------------------------------------------------- where the triggers are


def autoscaling_locations(ep: Any) -> list[tuple[Loc, AutoScalingSpec]]:
    """Every autoScalingSpec of an endpoint with its config path (top level, intelligent routing, prefill/decoding)."""
    out: list[tuple[Loc, AutoScalingSpec]] = []
    if ep.auto_scaling_spec is not None:
        out.append((("autoScalingSpec",), ep.auto_scaling_spec))
    irs = ep.intelligent_routing_spec
    if irs is not None and irs.auto_scaling_spec is not None:
        out.append((("intelligentRoutingSpec", "autoScalingSpec"), irs.auto_scaling_spec))
    pd = ep.pd_spec
    if pd is not None and pd.auto_scaling_spec is not None:
        for key in ("prefillAutoScaling", "decodingAutoScaling"):
            spec = getattr(pd.auto_scaling_spec, "prefill_auto_scaling" if key.startswith("p") else "decoding_auto_scaling")
            if spec is not None:
                out.append((("pdSpec", "autoScalingSpec", key), spec))
    return out


def trigger_locations(ep: Any) -> list[tuple[Loc, CloudWatchTrigger | PrometheusTrigger]]:
    """Every trigger the operator will use (the list form wins over the single one), with its config path."""
    out: list[tuple[Loc, CloudWatchTrigger | PrometheusTrigger]] = []
    for loc, spec in autoscaling_locations(ep):
        for single, many in (("cloudWatchTrigger", "cloudWatchTriggerList"),
                             ("prometheusTrigger", "prometheusTriggerList")):
            listed = getattr(spec, "cloud_watch_trigger_list" if single.startswith("c") else "prometheus_trigger_list")
            one = getattr(spec, "cloud_watch_trigger" if single.startswith("c") else "prometheus_trigger")
            if listed:
                out += [(loc + (many, i), t) for i, t in enumerate(listed)]
            elif one is not None:
                out.append((loc + (single,), one))
    return out


def config_path(loc: Loc) -> str:
    """``("autoScalingSpec", "cloudWatchTriggerList", 0)`` -> ``autoScalingSpec.cloudWatchTriggerList[0]``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


# --------------------------------------------------------------------------------------------------- warnings
# One registered function per warning ID (config/warnings.py keeps the registry).
@endpoint_rule("placementRegistration")
def _placement_registration(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    if ep.sagemaker_endpoint_name and (ep.instance_types is not None or ep.node_affinity is not None):
        key = "instanceTypes" if ep.instance_types is not None else "nodeAffinity"
        yield ConfigWarning("placementRegistration", key, "with instanceTypes or nodeAffinity, how the operator "
                            "fills the SageMaker endpoint registration's instance type is not documented")


@endpoint_rule("replicasOutsideAutoscaling")
def _replicas_outside_autoscaling(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    for loc, spec in autoscaling_locations(ep):
        if loc in (("autoScalingSpec",), ("intelligentRoutingSpec", "autoScalingSpec")) \
                and not spec.min_replicas <= ep.replicas <= spec.max_replicas:
            yield ConfigWarning("replicasOutsideAutoscaling", "replicas", f"replicas ({ep.replicas}) is outside "
                                f"{config_path(loc)}'s range [{spec.min_replicas}, {spec.max_replicas}]; KEDA will move it")


@endpoint_rule("triggerSingleAndList")
def _trigger_single_and_list(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    for loc, spec in autoscaling_locations(ep):
        for single, many, kind in ((spec.cloud_watch_trigger, spec.cloud_watch_trigger_list, "cloudWatchTrigger"),
                                   (spec.prometheus_trigger, spec.prometheus_trigger_list, "prometheusTrigger")):
            if single is not None and many:
                yield ConfigWarning("triggerSingleAndList", f"{config_path(loc)}.{kind}", f"both {kind} and {kind}List are "
                                    f"set; the operator uses only {kind}List")


@endpoint_rule("activationWithMinReplicas")
def _activation_with_min_replicas(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    for loc, spec in autoscaling_locations(ep):
        if spec.min_replicas <= 0:
            continue
        for tloc, trig in trigger_locations(ep):
            if tloc[:len(loc)] == loc and len(tloc) > len(loc) and tloc[len(loc)] in (
                    "cloudWatchTrigger", "cloudWatchTriggerList", "prometheusTrigger", "prometheusTriggerList") \
                    and trig.activation_target_value is not None:
                yield ConfigWarning("activationWithMinReplicas", config_path(tloc) + ".activationTargetValue",
                                    f"activationTargetValue only matters when scaling from zero; {config_path(loc)}."
                                    f"minReplicaCount is {spec.min_replicas}")


@endpoint_rule("scaleToZeroVerify")
def _scale_to_zero_verify(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    for loc, spec in autoscaling_locations(ep):
        if spec.min_replicas == 0 and ep.verify is not None:
            yield ConfigWarning("scaleToZeroVerify", f"{config_path(loc)}.minReplicaCount", "minReplicaCount 0 with verify: "
                                "the endpoint may have scaled to zero when the check invokes it")


@endpoint_rule("kvCacheCustomRuntime")
def _kv_cache_custom_runtime(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    if ep.kv_cache_spec is not None and ep.effective_runtime == "custom":
        yield ConfigWarning("kvCacheCustomRuntime", "kvCacheSpec", "only vLLM / LMCache images are known to work with "
                            "the operator's KV cache")


@endpoint_rule("l2CacheRedisIgnored")
def _l2_cache_redis_ignored(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    kv = ep.kv_cache_spec
    if kv is not None and kv.l2_cache_spec is not None and kv.l2_cache_spec.l2_cache_backend == "redis":
        yield ConfigWarning("l2CacheRedisIgnored", "kvCacheSpec.l2CacheSpec.l2CacheBackend", "the operator ignores the "
                            "redis backend today (aws/sagemaker-hyperpod-cli issue #431)")


@endpoint_rule("intelligentRouting")
def _intelligent_routing(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    if ep.intelligent_routing_spec is not None:
        yield ConfigWarning("intelligentRouting", "intelligentRoutingSpec", "the operator refuses adding "
                            "intelligentRoutingSpec to an existing deployment, and it moves the Ingress to "
                            "hyperpod-inference-system")


@endpoint_rule("kvawareWithoutKvCache")
def _kvaware_without_kv_cache(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    irs = ep.intelligent_routing_spec
    kv = ep.kv_cache_spec
    if irs is not None and irs.routing_strategy == "kvaware" and (
            kv is None or not (kv.enable_l1_cache or kv.enable_l2_cache)):
        yield ConfigWarning("kvawareWithoutKvCache", "intelligentRoutingSpec.routingStrategy",
                            "kvaware routes by the KV cache's contents, and kvCacheSpec turns on no cache "
                            "(enableL1Cache / enableL2Cache): requests are routed as if no pod had cached anything")


@endpoint_rule("metricsPortUnserved")
def _metrics_port_unserved(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    mm = ep.metrics.model_metrics if ep.metrics is not None else None
    if ep.is_jumpstart or mm is None or mm.port is None or ep.metrics.enabled is False:
        return
    served = ep.served_port
    if mm.port != served:
        yield ConfigWarning("metricsPortUnserved", "metrics.modelMetrics.port", f"port {mm.port} is not the port the "
                            f"model server serves ({served}, where vLLM, SGLang and TGI serve /metrics); nothing "
                            "else in the pod is known to serve it, so the scrape finds nothing")


@endpoint_rule("sagemakerFieldWithoutEndpoint")
def _sagemaker_field_without_endpoint(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    if not ep.sagemaker_endpoint_name:
        for key, value in (("tags", ep.tags), ("modelVersion", ep.model_version)):
            if value is not None:
                yield ConfigWarning("sagemakerFieldWithoutEndpoint", key, f"{key} applies to the SageMaker endpoint, "
                                    "and sagemakerEndpointName is not set")


@endpoint_rule("deployTimeBeyondVerify")
def _deploy_time_beyond_verify(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    if ep.max_deploy_time_in_seconds is not None and ep.verify is not None \
            and ep.max_deploy_time_in_seconds > ep.verify.timeout_minutes * 60:
        yield ConfigWarning("deployTimeBeyondVerify", "maxDeployTimeInSeconds", f"the deployment may take up to "
                            f"{ep.max_deploy_time_in_seconds} s, longer than verify waits "
                            f"({ep.verify.timeout_minutes} min)")


@endpoint_rule("weightCacheWithoutNvme")
def _weight_cache_without_nvme(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    if ep.weight_cache.mode == "daemonset" and not ep.is_jumpstart:
        facts = ep.instance
        if facts is None or not facts.nvme:
            yield ConfigWarning("weightCacheWithoutNvme", "weightCache.mode", "the instance is not known to have "
                                "instance-store NVMe: the cache lands on the root disk (within minFreePercent)")


@endpoint_rule("requestNearInstanceLimit")
def _request_near_instance_limit(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    for loc, message in ep.request_limit_findings(warn=True):
        yield ConfigWarning("requestNearInstanceLimit", config_path(loc), message)


@endpoint_rule("specOverridesUnchecked")
def _spec_overrides_unchecked(ep: Any, config: Any) -> Iterator[ConfigWarning]:
    if ep.spec_overrides and ep.spec_overrides_unchecked:
        paths = ", ".join(f"spec.{f.dotted(p)}" for p in f.override_leaves(ep.spec_overrides))
        yield ConfigWarning("specOverridesUnchecked", "specOverridesUnchecked", "specOverrides merged into the "
                            f"resource without checking its paths against the operator's fields: {paths}")


@config_rule("addonVersionUnvalidated")
def _addon_version_unvalidated(config: Any) -> Iterator[ConfigWarning]:
    op = config.operator
    validated = operator_facts.release(op.version).addon_version
    if op.install == "addon" and op.addon_version and op.addon_version != validated:
        newer = operator_facts.NEWER_ADDON_VERSIONS.get(op.addon_version)
        detail = (f"it installs operator {newer}, whose CRD is not available to validate against" if newer
                  else "the library has not validated it")
        if op.addon_version.startswith("v2."):
            detail += "; v2.x reads other configuration keys (inferenceOperator.*, inferenceGateway.*) and its " \
                      "schema is unknown, so the configurationValues written for v1.x may not apply"
        yield ConfigWarning("addonVersionUnvalidated", "operator.addonVersion",
                            f"{op.addon_version} is not the add-on of operator.version {op.version} "
                            f"({validated}): {detail}; operator.version stays the field "
                            "set the config validates")


@config_rule("addonConfigurationOverrides")
def _addon_configuration_overrides(config: Any) -> Iterator[ConfigWarning]:
    op = config.operator
    if op.addon_configuration_overrides:
        paths = ", ".join(f.dotted(p) for p in f.override_leaves(op.addon_configuration_overrides))
        yield ConfigWarning("addonConfigurationOverrides", "operator.addonConfigurationOverrides",
                            f"merged into the add-on's configurationValues unvalidated: {paths}")
