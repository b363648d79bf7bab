"""KEDA autoscaling as the operator takes it: ``autoScalingSpec`` (one shape wherever the CRD repeats it: at the top
level, in ``intelligentRoutingSpec`` and in ``pdSpec.autoScalingSpec``), its CloudWatch and Prometheus triggers, and
where an endpoint has them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from ..facts import production as prod_facts
from .base import Loc, NonNegative, Positive, Strict, Text, crd, crd_required

MetricType = Literal[prod_facts.METRIC_TYPES]  # type: ignore[valid-type]


class CloudWatchDimension(Strict):
    name: Text = crd_required("name")
    """Dimension name."""
    value: Text = crd_required("value")
    """Dimension value."""


class CloudWatchTrigger(Strict):
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


class PrometheusTrigger(Strict):
    """A KEDA ``prometheus`` trigger on an Amazon Managed Prometheus workspace (``serverAddress``: the CRD also
    accepts an empty string; here the workspace URL is required, and must be in the stack's region)."""

    name: Text | None = crd("name")
    """Trigger name."""
    namespace: Text | None = crd("namespace")
    """Prometheus namespace (tenant)."""
    server_address: Annotated[str, StringConstraints(pattern=prod_facts.AMP_WORKSPACE_URL,
                                                     max_length=512)] = crd_required(
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


class AutoScalingSpec(Strict):
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
                                                                   max_length=prod_facts.TRIGGER_LIST_MAX)
    """Several CloudWatch triggers (wins over the single one)."""
    prometheus_trigger: PrometheusTrigger | None = crd("prometheusTrigger")
    """One Prometheus trigger."""
    prometheus_trigger_list: list[PrometheusTrigger] | None = crd("prometheusTriggerList",
                                                                  max_length=prod_facts.TRIGGER_LIST_MAX)
    """Several Prometheus triggers (wins over the single one)."""

    @model_validator(mode="after")
    def _range(self) -> AutoScalingSpec:
        lo, hi = self.min_replicas, self.max_replicas
        if lo > hi:
            raise PydanticCustomError("range", "minReplicaCount ({lo}) must not exceed maxReplicaCount ({hi}; the "
                                      "operator's default is 5 when unset)", {"lo": lo, "hi": hi})
        if hi == 0:
            raise PydanticCustomError("range", "maxReplicaCount 0 never runs a pod: KEDA can scale between "
                                      "minReplicaCount and maxReplicaCount only; give maxReplicaCount 1 or more")
        return self

    @property
    def min_replicas(self) -> int:
        default = prod_facts.AUTOSCALING_DEFAULTS["minReplicaCount"]
        return self.min_replica_count if self.min_replica_count is not None else default

    @property
    def max_replicas(self) -> int:
        default = prod_facts.AUTOSCALING_DEFAULTS["maxReplicaCount"]
        return self.max_replica_count if self.max_replica_count is not None else default

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
