"""CloudWatch dashboard bodies and alarm texts from the observed endpoints (plain dicts and strings; no aws_cdk).

Layout of one dashboard (the grid is 24 wide): a header row (title, links to the troubleshooting page and the Athena
workgroup, the capture bucket's size and object count when capture is on); per namespace a row with a text widget
naming its endpoints with their SageMaker names and URLs and its load balancers' metrics (``SEARCH`` over the ALBs the
controller names after the namespace); then one row per endpoint: requests, 4xx and 5xx with ModelLatency
p50/p90/p99 on the right axis, and beside it, for an endpoint that autoscales on CloudWatch, the metric each trigger
reads (its statistic and period, as KEDA queries it) against the trigger's target. Past 100 endpoints (for readability; CloudWatch's limit is 500 widgets) a dashboard's
endpoints continue on the next one (``<name>-2``, ...).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..facts import alarms as alarm_facts
from ..facts import metrics as m
from ..facts import naming
from ..plan.observability import TROUBLESHOOTING_URL, ObservedEndpoint, ScalingMetric

ROW_HEIGHT = 5
PERIOD = 300
WIDGETS_PER_ENDPOINT = 1
#: The width of an endpoint's autoscaling widget (its requests and latency take the rest of the row).
SCALING_WIDTH = 8
NAMESPACE_WIDGETS = 3
#: Rows per dashboard before the next one starts: a choice for readability (CloudWatch's limit is 500 widgets).
ENDPOINTS_PER_DASHBOARD = 100
SM = m.SAGEMAKER_NS


@dataclass(frozen=True)
class StackInfo:
    """The stack-wide values the dashboards and alarms show."""

    scope: str  # the stack's name scope (names of dashboards and alarms start with it)
    region: str
    capture_bucket: str | None = None
    work_group: str | None = None


def dashboard_name(scope: str, region: str, index: int = 0) -> str:
    """``<scope>-<region>-inference`` (``-2``, ``-3`` ... for the dashboards after the first): letters, digits, -
    and _. Dashboards are global to the account, so the region is in the name (the same stack in two regions)."""
    base = re.sub(r"[^A-Za-z0-9_-]", "-", f"{scope}-{region}")[:230]
    return f"{base}-inference" + (f"-{index + 1}" if index else "")


def _sm(metric: str, endpoint_name: str, **options: Any) -> list[Any]:
    assert m.CLOUDWATCH[metric].namespace == SM
    row: list[Any] = [SM, metric, "EndpointName", endpoint_name, "VariantName", m.VARIANT]
    return row + ([options] if options else [])


def _metric_widget(x: int, y: int, width: int, title: str, region: str, metrics: list[Any], **props: Any) -> dict:
    # no "period": a widget's default is 300 seconds (PERIOD), and every byte here is paid per endpoint
    return {"type": "metric", "x": x, "y": y, "width": width, "height": ROW_HEIGHT,
            "properties": {"title": title, "region": region, "metrics": metrics, **props}}


def _text(x: int, y: int, width: int, height: int, markdown: str) -> dict:
    return {"type": "text", "x": x, "y": y, "width": width, "height": height, "properties": {"markdown": markdown}}


def endpoint_line(ep: ObservedEndpoint) -> str:
    """The endpoint's line in its namespace's text widget: names and URL."""
    line = f"**{ep.name}**: " + (f"SageMaker `{ep.sagemaker_endpoint_name}`" if ep.sagemaker_endpoint_name else
                                 "no SageMaker endpoint (no AWS/SageMaker metrics; pod metrics: Grafana)")
    if ep.url:
        line += f" · [{ep.url.removeprefix('https://')}]({ep.url})"
    return line


def endpoint_row(ep: ObservedEndpoint, y: int, region: str) -> list[dict[str, Any]]:
    """One endpoint's row: with a SageMaker endpoint, requests, 4xx and 5xx (left axis) and ModelLatency p50/p90/p99
    in microseconds (right axis), in one widget, since every byte of it is paid per endpoint; with CloudWatch
    autoscaling triggers, the metrics they read beside it (:func:`scaling_widget`)."""
    scaling = scaling_widget(ep, y, region, m.DASHBOARD_GRID_WIDTH - SCALING_WIDTH) if ep.scaling else None
    if not ep.sagemaker_endpoint_name:
        return [scaling] if scaling else []
    name = ep.sagemaker_endpoint_name
    right = {"yAxis": "right"}
    width = m.DASHBOARD_GRID_WIDTH - (SCALING_WIDTH if scaling else 0)
    return [_metric_widget(0, y, width, f"{ep.key}: requests, 4xx, 5xx · latency µs (right)", region, [
        _sm("Invocations", name), [".", "Invocation4XXErrors", ".", ".", ".", "."],
        [".", "Invocation5XXErrors", ".", ".", ".", "."],
        [".", "ModelLatency", ".", ".", ".", ".", {"stat": "p50", **right}],
        ["...", {"stat": "p90", **right}], ["...", {"stat": "p99", **right}]], stat="Sum"), *([scaling] if scaling else [])]


def _scaling_label(s: ScalingMetric) -> str:
    return f"{s.metric} ({s.stat}, {s.period} s)"


def scaling_widget(ep: ObservedEndpoint, y: int, region: str, x: int) -> dict[str, Any]:
    """The metric each CloudWatch autoscaling trigger of ``ep`` reads, with the statistic and period KEDA queries,
    and the trigger's target as a horizontal line (per replica when ``metricType`` is Average, KEDA's default)."""
    rows: list[Any] = []
    lines = []
    for s in ep.scaling:
        dims = [part for pair in s.dimensions for part in pair]
        rows.append([s.namespace, s.metric, *dims, {"stat": s.stat, "period": s.period, "label": _scaling_label(s)}])
        lines.append({"label": f"{s.where}: target {s.target:g}" + (" per replica" if s.per_replica else ""),
                      "value": s.target})
    return _metric_widget(x, y, SCALING_WIDTH, f"{ep.key}: what autoscaling reads", region, rows,
                          annotations={"horizontal": lines})


def _alb_search(namespace: str, metric: str, stat: str, label: str, ident: str) -> dict[str, Any]:
    assert m.CLOUDWATCH[metric].namespace == m.ALB_NS
    prefix = m.alb_name_prefix(namespace)
    return {"expression": f"SEARCH('{{{m.ALB_NS},LoadBalancer}} MetricName=\"{metric}\" \"{prefix}\"', "
                          f"'{stat}', {PERIOD})", "label": label, "id": ident}


def namespace_row(namespace: str, endpoints: list[ObservedEndpoint], y: int, region: str) -> list[dict[str, Any]]:
    """The namespace's endpoints (names, URLs) and its load balancers (named ``k8s-<namespace>-...`` by the
    controller): requests, target 4xx/5xx, target response time."""
    third = m.DASHBOARD_GRID_WIDTH // 3
    counts = [[_alb_search(namespace, metric, "Sum", label, f"c{i}")] for i, (metric, label) in enumerate((
        ("RequestCount", "requests"), ("HTTPCode_Target_4XX_Count", "target 4xx"),
        ("HTTPCode_Target_5XX_Count", "target 5xx")))]
    times = [[_alb_search(namespace, "TargetResponseTime", stat, stat, f"t{i}")]
             for i, stat in enumerate(("p50", "p90", "p99"))]
    text = "\n\n".join([f"### namespace {namespace}", *(endpoint_line(ep) for ep in endpoints)])
    height = max(ROW_HEIGHT, 2 + len(endpoints))
    widgets = [
        _text(0, y, third, height, text),
        _metric_widget(third, y, third, f"namespace {namespace}: load balancers (requests, 4xx, 5xx)", region,
                       counts, period=PERIOD),
        _metric_widget(2 * third, y, third, f"namespace {namespace}: target response time (seconds)", region,
                       times, period=PERIOD),
    ]
    for w in widgets[1:]:
        w["height"] = height
    return widgets


def header(info: StackInfo, y: int, *, part: int, parts: int) -> list[dict[str, Any]]:
    title = f"# HyperPod inference: {info.scope}" + (f" ({part + 1} of {parts})" if parts > 1 else "")
    links = [f"[Troubleshooting]({TROUBLESHOOTING_URL}) (and docs/troubleshooting.md, docs/observability.md)"]
    if info.work_group:
        home = alarm_facts.console_home(info.region)
        console = f" ([console]({home}/athena/home?region={info.region}))" if home else ""
        links.append(f"Captured data: Athena workgroup `{info.work_group}`{console}")
    widgets: list[dict[str, Any]] = []
    width = m.DASHBOARD_GRID_WIDTH if not info.capture_bucket else m.DASHBOARD_GRID_WIDTH // 2
    widgets.append(_text(0, y, width, 3, title + "\n\n" + " · ".join(links)))
    if info.capture_bucket:
        widgets.append({"type": "metric", "x": width, "y": y, "width": width, "height": 3, "properties": {
            "title": f"capture bucket {info.capture_bucket}: size (bytes) and objects, daily", "region": info.region,
            "period": 86400, "stat": "Average", "metrics": [
                [m.S3_NS, "BucketSizeBytes", "BucketName", info.capture_bucket, "StorageType", "StandardStorage"],
                [m.S3_NS, "NumberOfObjects", "BucketName", info.capture_bucket, "StorageType", "AllStorageTypes",
                 {"yAxis": "right"}]]}})
    return widgets


def _widgets(ep: ObservedEndpoint) -> int:
    """The widgets of an endpoint's row: its requests and latency, and its autoscaling metrics."""
    return WIDGETS_PER_ENDPOINT + (1 if ep.scaling else 0)


def _split(endpoints: list[ObservedEndpoint]) -> list[list[ObservedEndpoint]]:
    """Endpoints per dashboard: at most ENDPOINTS_PER_DASHBOARD (so one stays readable), and never past CloudWatch's
    widget limit."""
    parts: list[list[ObservedEndpoint]] = [[]]
    widgets = 2  # header
    namespaces: set[str] = set()
    for ep in endpoints:
        cost = _widgets(ep) + (NAMESPACE_WIDGETS if ep.namespace not in namespaces else 0)
        if widgets + cost > m.DASHBOARD_MAX_WIDGETS or len(parts[-1]) >= ENDPOINTS_PER_DASHBOARD:
            parts.append([])
            widgets, namespaces = 2, set()
            cost = _widgets(ep) + NAMESPACE_WIDGETS
        parts[-1].append(ep)
        namespaces.add(ep.namespace)
        widgets += cost
    return parts


def dashboard_of(endpoints: list[ObservedEndpoint]) -> dict[str, int]:
    """Which dashboard (0, 1, ...) shows each endpoint's row, by ``namespace/name``."""
    return {ep.key: i for i, part in enumerate(_split(endpoints)) for ep in part} if endpoints else {}


def dashboard_bodies(endpoints: list[ObservedEndpoint], info: StackInfo) -> list[dict[str, Any]]:
    """One body per dashboard (usually one): header, then per namespace its load balancers and its endpoints."""
    if not endpoints:
        return []
    parts = _split(endpoints)
    bodies = []
    for i, part in enumerate(parts):
        widgets = header(info, 0, part=i, parts=len(parts))
        y = 3
        by_ns: dict[str, list[ObservedEndpoint]] = {}
        for ep in part:
            by_ns.setdefault(ep.namespace, []).append(ep)
        for ns, eps in by_ns.items():
            row = namespace_row(ns, eps, y, info.region)
            widgets += row
            y += row[0]["height"]
            for ep in eps:
                row = endpoint_row(ep, y, info.region)
                widgets += row
                y += ROW_HEIGHT if row else 0
        bodies.append({"start": "-PT6H", "periodOverride": "inherit", "widgets": widgets})
    return bodies


def body_json(body: dict[str, Any]) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------------------------------------- alarms
ALARM_KINDS = ("error-rate", "p99-latency", "no-invocations", "health")


def alarm_name(scope: str, ep: ObservedEndpoint, kind: str) -> str:
    assert kind in ALARM_KINDS
    return naming.alarm_name(scope, ep.namespace, ep.name, kind)


def alarm_description(ep: ObservedEndpoint, kind: str, *, dashboard: str | None, region: str) -> str:
    """What happened, in words for the person on call, what to look at (the dashboard's console address, or its name
    where the partition has no public console address), and how to silence or tune it."""
    t = ep.thresholds
    assert t is not None
    window = f"{t.evaluation_periods} consecutive 5-minute periods"
    what = {
        "error-rate": f"more than {t.error_rate_percent:g}% of invocations failed (4xx and 5xx) in {window}",
        "p99-latency": f"the slowest 1% of requests took longer than {t.p99_latency_ms} ms (p99 ModelLatency) in "
                       f"{window}",
        "no-invocations": f"no invocations for {t.no_invocations_minutes} minutes (is traffic reaching it?)",
        "health": "one of its alarms (error rate, p99 latency, no invocations) is firing",
    }[kind]
    look = f"Dashboard: {alarm_facts.dashboard_url(region, dashboard) or dashboard}. " if dashboard else ""
    text = (f"HyperPod inference {ep.key} (SageMaker endpoint {ep.sagemaker_endpoint_name}): {what}. {look}"
            f"Status: kubectl get {ep.resource} {ep.name} -n {ep.namespace} -o jsonpath='{{.status}}'. "
            "Tune or silence: endpoints[].alarms in the config (docs/observability.md).")
    return text[: m.ALARM_DESCRIPTION_MAX]


def error_rate_expression() -> str:
    """Errors over invocations, in percent; a period with no invocations is missing data (not 0% and not 100%)."""
    return "IF(inv > 0, 100 * (FILL(e4, 0) + FILL(e5, 0)) / inv)"
