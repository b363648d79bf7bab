"""Observability, planned: whether the stack makes dashboards, alarms or Prometheus rules at all
(:func:`plan_observability` -> :class:`ObservabilityPlan`), and what the builders need of each endpoint as plain
values.

:func:`observed_endpoints` turns config endpoints and the ``observability`` section into :class:`ObservedEndpoint`
values: names, the SageMaker endpoint name, the features that add panels, the resolved alarm thresholds
(the endpoint's ``alarms`` over ``observability.alarms``; None when the endpoint's alarms are off), and what its
autoscaling triggers read (so the dashboards show the metric each trigger scales on). The dashboard layout, the
Prometheus rules and the Grafana JSON are built from them without jsii (``constructs/cloudwatch_layout.py``,
``prometheus_rules.py``, ``grafana_dashboard.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..config import Endpoint
from ..config.autoscaling import CloudWatchTrigger, PrometheusTrigger, trigger_locations
from ..config.base import config_path
from ..config.observability import (
    DEFAULT_ERROR_RATE_PERCENT,
    DEFAULT_EVALUATION_PERIODS,
    DEFAULT_P99_LATENCY_MS,
    Observability,
)
from ..facts.production import CLOUDWATCH_TRIGGER_DEFAULTS

#: AWS's troubleshooting page for HyperPod model deployment (the project's own is docs/troubleshooting.md).
TROUBLESHOOTING_URL = ("https://docs.aws.amazon.com/sagemaker/latest/dg/"
                       "sagemaker-hyperpod-model-deployment-ts-deployment-issues.html")


@dataclass(frozen=True)
class Thresholds:
    error_rate_percent: float
    p99_latency_ms: int
    evaluation_periods: int
    no_invocations_minutes: int | None


@dataclass(frozen=True)
class ScalingMetric:
    """The CloudWatch metric an autoscaling trigger reads, as KEDA queries it (the CRD's defaults filled in)."""

    where: str  # the trigger's config path, e.g. autoScalingSpec.cloudWatchTrigger
    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str
    period: int
    target: float
    per_replica: bool  # metricType Average: KEDA aims at target per replica


@dataclass(frozen=True)
class ScalingQuery:
    """The PromQL query a Prometheus autoscaling trigger reads."""

    where: str
    query: str
    target: float
    per_replica: bool


@dataclass(frozen=True)
class ObservedEndpoint:
    name: str
    namespace: str
    sagemaker_endpoint_name: str | None = None
    url: str | None = None
    kv_cache: bool = False
    routing: bool = False
    pod_metrics: bool = True
    thresholds: Thresholds | None = None
    #: The custom resource's kind, lowercased as kubectl takes it.
    resource: str = "inferenceendpointconfig"
    scaling: tuple[ScalingMetric, ...] = ()
    scaling_queries: tuple[ScalingQuery, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def thresholds_for(endpoint: Endpoint, observability: Observability) -> Thresholds | None:
    """The endpoint's alarm thresholds, or None (no alarms section, or the endpoint's alarms are off)."""
    base = observability.alarms
    own = endpoint.alarms
    if own is not None and not own.enabled:
        return None
    if base is None and observability.prometheus_workspace_arn is None:
        return None
    def pick(name: str, default: object) -> object:
        value = getattr(own, name, None) if own is not None else None
        if value is None and base is not None:
            value = getattr(base, name)
        return default if value is None else value

    return Thresholds(
        error_rate_percent=float(pick("error_rate_percent", DEFAULT_ERROR_RATE_PERCENT)),  # type: ignore[arg-type]
        p99_latency_ms=int(pick("p99_latency_ms", DEFAULT_P99_LATENCY_MS)),  # type: ignore[call-overload]
        evaluation_periods=int(base.evaluation_periods if base is not None else DEFAULT_EVALUATION_PERIODS),
        no_invocations_minutes=pick("no_invocations_minutes", None))  # type: ignore[arg-type]


def scaling_of(endpoint: Endpoint) -> tuple[tuple[ScalingMetric, ...], tuple[ScalingQuery, ...]]:
    """What each autoscaling trigger the operator uses reads (every ``autoScalingSpec`` of the endpoint)."""
    metrics: list[ScalingMetric] = []
    queries: list[ScalingQuery] = []
    defaults = CLOUDWATCH_TRIGGER_DEFAULTS
    for loc, trigger in trigger_locations(endpoint):
        where = config_path(loc)
        per_replica = (trigger.metric_type or defaults["metricType"]) == "Average"
        if isinstance(trigger, CloudWatchTrigger):
            metrics.append(ScalingMetric(
                where, trigger.namespace, trigger.metric_name,
                tuple((d.name, d.value) for d in trigger.dimensions or ()),
                trigger.metric_stat or defaults["metricStat"],
                trigger.metric_collection_period or defaults["metricCollectionPeriod"],
                trigger.target_value, per_replica))
        elif isinstance(trigger, PrometheusTrigger):
            queries.append(ScalingQuery(where, trigger.query, trigger.target_value, per_replica))
    return tuple(metrics), tuple(queries)


def observed_endpoints(endpoints: Iterable[Endpoint], observability: Observability) -> list[ObservedEndpoint]:
    out = []
    for ep in endpoints:
        metrics = ep.metrics.enabled if ep.metrics is not None and ep.metrics.enabled is not None else True
        scaling, queries = scaling_of(ep)
        out.append(ObservedEndpoint(
            name=ep.name, namespace=ep.namespace, sagemaker_endpoint_name=ep.sagemaker_endpoint_name,
            url=f"https://{ep.domain_name}" if ep.domain_name else None,
            kv_cache=ep.kv_cache_spec is not None, routing=ep.intelligent_routing_spec is not None,
            pod_metrics=bool(metrics), thresholds=thresholds_for(ep, observability),
            resource="jumpstartmodel" if ep.is_jumpstart else "inferenceendpointconfig", scaling=scaling,
            scaling_queries=queries))
    return out


@dataclass(frozen=True)
class ObservabilityPlan:
    """The stack's dashboards, alarms and Prometheus rules (``construct_id``), over ``endpoints``: made when the
    ``observability`` section asks for any of them or the construct was given an alarm topic."""

    settings: Observability
    endpoints: tuple[ObservedEndpoint, ...]
    construct_id: str = "Observability"


def plan_observability(settings: Observability, endpoints: Iterable[Endpoint], *,
                       alarm_topic: bool = False) -> ObservabilityPlan | None:
    """The observability of ``endpoints``; None when nothing is asked for (``alarm_topic``: a topic was given)."""
    if not (settings.creates_anything or alarm_topic):
        return None
    return ObservabilityPlan(settings, tuple(observed_endpoints(endpoints, settings)))
