"""A Grafana dashboard (JSON model) per stack over the pod metrics in Amazon Managed Prometheus, built with the
Grafana Foundation SDK (no aws_cdk).

The same rows as the CloudWatch dashboard, one per endpoint (request rate, error ratio, latency and TTFB
p50/p90/p99, concurrency), plus KV-cache panels when ``kvCacheSpec`` is on, router panels when
``intelligentRoutingSpec`` is on, and the query each Prometheus autoscaling trigger reads, against its target. Every query selects the endpoint by its ``namespace`` and ``resource_name`` labels;
the data source is a dashboard variable (``datasource``, any Prometheus data source), so the file imports anywhere.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from grafana_foundation_sdk.builders import dashboard as gdash
from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

from ..facts import metrics as m
from ..plan.observability import ObservedEndpoint

DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
WINDOW = "5m"
QUANTILES = (("p50", "0.5"), ("p90", "0.9"), ("p99", "0.99"))


def _sel(ep: ObservedEndpoint) -> str:
    return f'{{namespace="{ep.namespace}",resource_name="{ep.name}"}}'


def _panel(title: str, unit: str, targets: list[tuple[str, str]], width: int = 8) -> timeseries.Panel:
    panel = timeseries.Panel().title(title).unit(unit).datasource(DATASOURCE).height(8).span(width)
    for i, (expr, legend) in enumerate(targets):
        panel = panel.with_target(prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(chr(65 + i)))
    return panel


def _check(*names: str) -> None:
    for name in names:
        assert name in m.PROMETHEUS, f"{name} is not a sourced metric (facts/metrics.py)"


def endpoint_panels(ep: ObservedEndpoint) -> list[timeseries.Panel]:
    s = _sel(ep)
    _check("model_invocations_total", "model_errors_total", "model_latency_milliseconds", "model_ttfb_milliseconds",
           "model_concurrent_requests")
    inv = f"sum(rate(model_invocations_total{s}[{WINDOW}]))"
    err = f"sum(rate(model_errors_total{s}[{WINDOW}]))"
    panels = [
        _panel(f"{ep.name}: requests and errors", "reqps", [(inv, "requests"), (err, "errors")], 6),
        _panel(f"{ep.name}: error ratio", "percentunit", [(f"({err} or {inv} * 0) / {inv}", "errors / requests")], 4),
        _panel(f"{ep.name}: latency", "ms", [
            (f"histogram_quantile({q}, sum by (le) (rate({m.histogram_bucket('model_latency_milliseconds')}{s}"
             f"[{WINDOW}])))", label) for label, q in QUANTILES], 5),
        _panel(f"{ep.name}: time to first byte", "ms", [
            (f"histogram_quantile({q}, sum by (le) (rate({m.histogram_bucket('model_ttfb_milliseconds')}{s}"
             f"[{WINDOW}])))", label) for label, q in QUANTILES], 5),
        _panel(f"{ep.name}: concurrent requests", "short", [(f"sum(model_concurrent_requests{s})", "in flight")], 4),
    ]
    if ep.kv_cache:
        _check("lmcache:local_cache_usage", "lmcache:remote_cache_usage", "lmcache:lookup_hit_rate")
        panels += [
            _panel(f"{ep.name}: KV cache usage", "bytes", [(f"sum(lmcache:local_cache_usage{s})", "local"),
                                                         (f"sum(lmcache:remote_cache_usage{s})", "remote")], 12),
            _panel(f"{ep.name}: KV cache lookup hit rate", "percentunit",
                   [(f"avg(lmcache:lookup_hit_rate{s})", "hit rate")], 12)]
    if ep.routing:
        _check("router_cpu_usage_percent")
        panels.append(_panel(f"{ep.name}: router CPU", "percent",
                             [(f"avg(router_cpu_usage_percent{s})", "router CPU")], 24))
    if ep.scaling_queries:
        # the trigger's own query (the user's PromQL), and its target as a constant series
        panels.append(_panel(f"{ep.name}: what autoscaling reads", "short", [
            target for q in ep.scaling_queries for target in (
                (q.query, q.where), (f"vector({q.target:g})", f"{q.where}: target"
                                     + (" per replica" if q.per_replica else "")))], 24))
    return panels


def grafana_dashboard(endpoints: list[ObservedEndpoint], scope: str) -> dict[str, Any]:
    """The dashboard's JSON model: a ``datasource`` variable, then a row per endpoint with pod metrics."""
    board = (gdash.Dashboard(f"HyperPod inference: {scope}").uid(_uid(scope)).tags(["hyperpod", "inference"])
             .time("now-6h", "now").refresh("1m")
             .with_variable(gdash.DatasourceVariable("datasource").label("Prometheus").type("prometheus")))
    for ep in endpoints:
        if not ep.pod_metrics:
            continue
        board = board.with_row(gdash.Row(ep.key))
        for panel in endpoint_panels(ep):
            board = board.with_panel(panel)
    return json.loads(json.dumps(board.build(), cls=JSONEncoder))


def _uid(scope: str) -> str:
    """Grafana UIDs are at most 40 characters: the scope, cut, with a short hash when cut."""
    clean = "".join(c if c.isalnum() or c in "-_" else "-" for c in scope)
    if len(clean) <= 40:
        return clean
    return clean[:31] + "-" + hashlib.sha256(scope.encode()).hexdigest()[:8]
