"""The Prometheus rule file (recording and alerting rules) for an Amazon Managed Prometheus rule groups namespace,
from the observed endpoints' pod metrics (no aws_cdk).

Recording rules, per namespace (every endpoint of the stack selected by its ``namespace`` and ``resource_name``
labels, kept apart by ``sum by (namespace, resource_name)``): request rate, error ratio, latency and TTFB quantiles
(p50/p90/p99). Alerting rules mirror the CloudWatch alarms: error ratio over the threshold, p99 latency over the
threshold, each held for the alarm's evaluation window; the no-invocations alert where it is opted in. Endpoints
that share thresholds share an alerting rule (``resource_name=~"a|b"``), so the file grows by a name per endpoint.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..facts import metrics as m
from ..plan.observability import ObservedEndpoint, Thresholds

BY = "namespace, resource_name"
WINDOW = "5m"
QUANTILES = (("p50", "0.5"), ("p90", "0.9"), ("p99", "0.99"))
RECORD_PREFIX = "hyperpod_inference"


def record_name(what: str) -> str:
    return f"{RECORD_PREFIX}:{what}"


def _selector(namespace: str, names: list[str]) -> str:
    names = sorted(names)
    match = f'resource_name="{names[0]}"' if len(names) == 1 else f'resource_name=~"{"|".join(names)}"'
    return f'{{namespace="{namespace}",{match}}}'


def _rate(metric: str, sel: str) -> str:
    assert m.PROMETHEUS[metric].kind == "counter"
    return f"sum by ({BY}) (rate({metric}{sel}[{WINDOW}]))"


def _quantile(q: str, metric: str, sel: str) -> str:
    return f"histogram_quantile({q}, sum by ({BY}, le) (rate({m.histogram_bucket(metric)}{sel}[{WINDOW}])))"


def recording_rules(namespace: str, names: list[str]) -> list[dict[str, Any]]:
    sel = _selector(namespace, names)
    invocations = _rate("model_invocations_total", sel)
    errors = _rate("model_errors_total", sel)
    rules = [
        {"record": record_name("request_rate:rate5m"), "expr": invocations},
        # no error series yet (nothing failed) counts as 0 errors, not as no data
        {"record": record_name("error_ratio:rate5m"), "expr": f"({errors} or {invocations} * 0) / {invocations}"},
    ]
    for metric, what in (("model_latency_milliseconds", "latency_ms"), ("model_ttfb_milliseconds", "ttfb_ms")):
        for label, q in QUANTILES:
            rules.append({"record": record_name(f"{what}:{label}"), "expr": _quantile(q, metric, sel)})
    return rules


def _alerts(namespace: str, names: list[str], t: Thresholds) -> list[dict[str, Any]]:
    sel = _selector(namespace, names)
    hold = f"{t.evaluation_periods * 5}m"
    which = f"{namespace}/{{{{ $labels.resource_name }}}}"
    rules = [
        {"alert": "HyperPodInferenceErrorRate",
         "expr": f"{record_name('error_ratio:rate5m')}{sel} > {t.error_rate_percent / 100:g}", "for": hold,
         "labels": {"severity": "page"},
         "annotations": {"summary": f"{which}: more than {t.error_rate_percent:g}% of requests fail",
                         "description": "model_errors_total / model_invocations_total over 5 minutes, for " + hold}},
        {"alert": "HyperPodInferenceP99Latency",
         "expr": f"{record_name('latency_ms:p99')}{sel} > {t.p99_latency_ms}", "for": hold,
         "labels": {"severity": "page"},
         "annotations": {"summary": f"{which}: p99 latency above {t.p99_latency_ms} ms",
                         "description": "histogram_quantile(0.99) of model_latency_milliseconds, for " + hold}},
    ]
    if t.no_invocations_minutes:
        span = f"{t.no_invocations_minutes}m"
        pods = f"count by ({BY}) (model_concurrent_requests{sel})"
        calls = f"sum by ({BY}) (increase(model_invocations_total{sel}[{span}]))"
        rules.append({
            "alert": "HyperPodInferenceNoInvocations",
            "expr": f"({calls} or {pods} * 0) == 0 and on ({BY}) {pods} > 0",
            "labels": {"severity": "ticket"},
            "annotations": {"summary": f"{which}: pods are up but got no invocations for {span}",
                            "description": "model_invocations_total did not grow while pods report "
                                           "model_concurrent_requests"}})
    return rules


def rule_groups(endpoints: list[ObservedEndpoint], scope: str) -> dict[str, Any]:
    """The rule file: one recording group and (when any endpoint has alarms) one alerting group per namespace."""
    groups = []
    by_ns: dict[str, list[ObservedEndpoint]] = {}
    for ep in endpoints:
        if ep.pod_metrics:
            by_ns.setdefault(ep.namespace, []).append(ep)
    for ns, eps in sorted(by_ns.items()):
        groups.append({"name": f"{scope}-{ns}-recording", "interval": "1m",
                       "rules": recording_rules(ns, [e.name for e in eps])})
        by_thresholds: dict[Thresholds, list[str]] = {}
        for ep in eps:
            if ep.thresholds is not None:
                by_thresholds.setdefault(ep.thresholds, []).append(ep.name)
        alerts = [r for t, names in by_thresholds.items() for r in _alerts(ns, names, t)]
        if alerts:
            groups.append({"name": f"{scope}-{ns}-alerts", "interval": "1m", "rules": alerts})
    return {"groups": groups}


def rule_file(endpoints: list[ObservedEndpoint], scope: str) -> str:
    return yaml.safe_dump(rule_groups(endpoints, scope), sort_keys=False, width=1000)
