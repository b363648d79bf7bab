"""The observability builders without jsii: CloudWatch dashboard layout and split, alarm texts, the Prometheus rule
file (checked and evaluated by the real promtool) and the Grafana dashboard, all from plain endpoint values."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.constructs import cloudwatch_layout as layout
from hyperpod_inference.constructs.grafana_dashboard import grafana_dashboard
from hyperpod_inference.constructs.prometheus_rules import rule_file, rule_groups
from hyperpod_inference.facts import metrics as m
from hyperpod_inference.plan.observability import ObservedEndpoint, ScalingMetric, ScalingQuery, Thresholds

INFO = layout.StackInfo("Fleet", "us-west-2", capture_bucket="fleet-capture", work_group="fleet-capture")
T = Thresholds(error_rate_percent=5.0, p99_latency_ms=2000, evaluation_periods=3, no_invocations_minutes=30)
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian package prometheus; make deps) missing")


def fleet(n: int, namespaces: int = 5) -> list[ObservedEndpoint]:
    return [ObservedEndpoint(name=f"model-{i}", namespace=f"team-{i % namespaces}",
                             sagemaker_endpoint_name=f"sm-model-{i}", thresholds=T) for i in range(n)]


def _overlaps(widgets: list[dict]) -> list[tuple[int, int]]:
    cells: dict[tuple[int, int], int] = {}
    clashes = []
    for i, w in enumerate(widgets):
        for x in range(w["x"], w["x"] + w["width"]):
            for y in range(w["y"], w["y"] + w["height"]):
                if (x, y) in cells:
                    clashes.append((cells[(x, y)], i))
                cells[(x, y)] = i
    return clashes


# ------------------------------------------------------------------------------------------------ dashboards
def test_fifty_endpoints_fit_one_readable_dashboard_with_a_row_each():
    # GIVEN 50 endpoints over 5 namespaces
    eps = fleet(50)
    # WHEN laid out
    (body,) = layout.dashboard_bodies(eps, INFO)
    widgets = body["widgets"]
    # THEN one dashboard within CloudWatch's widget limit, on the 24-wide grid, no widget over another
    assert len(widgets) <= m.DASHBOARD_MAX_WIDGETS
    assert all(0 <= w["x"] and w["x"] + w["width"] <= m.DASHBOARD_GRID_WIDTH for w in widgets)
    assert _overlaps(widgets) == []
    # and every endpoint has its own full-width row plotting its SageMaker endpoint's requests, errors and latency
    text = json.dumps(body)
    for ep in eps:
        (row,) = [w for w in widgets if w["properties"].get("title", "").startswith(ep.key + ":")]
        assert row["width"] == m.DASHBOARD_GRID_WIDTH
        plotted = [r[1] for r in row["properties"]["metrics"] if r[0] != "..."]
        assert plotted == ["Invocations", "Invocation4XXErrors", "Invocation5XXErrors", "ModelLatency"]
        assert row["properties"]["metrics"][0][3] == ep.sagemaker_endpoint_name
        assert f"**{ep.name}**: SageMaker `{ep.sagemaker_endpoint_name}`" in text


@pytest.mark.parametrize(("n", "dashboards"), [(300, 3), (1000, 10)])
def test_large_fleets_split_into_dashboards_within_the_widget_limit(n: int, dashboards: int):
    # GIVEN more endpoints than one dashboard shows (100 rows each, for readability)
    eps = fleet(n, namespaces=10)
    # WHEN laid out
    bodies = layout.dashboard_bodies(eps, INFO)
    # THEN that many dashboards, each within CloudWatch's limit and without overlaps, together giving every endpoint
    # exactly one row
    assert len(bodies) == dashboards
    assert all(len(b["widgets"]) <= m.DASHBOARD_MAX_WIDGETS and _overlaps(b["widgets"]) == [] for b in bodies)
    rows = [w["properties"]["title"].split(":")[0] for b in bodies for w in b["widgets"]
            if w["type"] == "metric" and "latency" in w["properties"]["title"]]
    assert sorted(rows) == sorted(ep.key for ep in eps)
    # and an alarm links the dashboard that shows its endpoint
    where = layout.dashboard_of(eps)
    for i, b in enumerate(bodies):
        shown = {w["properties"]["title"].split(":")[0] for w in b["widgets"] if "latency" in w["properties"]
                 .get("title", "")}
        assert shown == {k for k, d in where.items() if d == i}
    # and the names tell the parts apart
    assert layout.dashboard_name("Fleet", "us-west-2", 0) == "Fleet-us-west-2-inference"
    assert layout.dashboard_name("Fleet", "us-west-2", 1) == "Fleet-us-west-2-inference-2"


def test_alb_panels_search_the_load_balancers_the_controller_names_after_the_namespace():
    # GIVEN an endpoint in a namespace longer than the controller keeps (8 alphanumerics)
    (body,) = layout.dashboard_bodies([ObservedEndpoint("a", "inference-prod", "sm-a")], INFO)
    expressions = [row[0]["expression"] for w in body["widgets"] for row in w["properties"].get("metrics", [])
                   if isinstance(row[0], dict)]
    # THEN every ALB query is a SEARCH in AWS/ApplicationELB for k8s-<first 8>-
    assert expressions and all(e.startswith("SEARCH('{AWS/ApplicationELB,LoadBalancer}") for e in expressions)
    assert all('"k8s-inferenc-"' in e for e in expressions)


def test_an_endpoint_without_a_sagemaker_endpoint_is_named_but_gets_no_metric_row():
    (body,) = layout.dashboard_bodies([ObservedEndpoint("pods-only", "ns")], INFO)
    rows = [w for w in body["widgets"] if "pods-only" in json.dumps(w)]
    assert [w["type"] for w in rows] == ["text"]
    assert "**pods-only**: no SageMaker endpoint" in rows[0]["properties"]["markdown"]


def test_the_capture_bucket_and_workgroup_show_only_when_capture_is_on():
    with_capture = json.dumps(layout.dashboard_bodies(fleet(1), INFO))
    without = json.dumps(layout.dashboard_bodies(fleet(1), layout.StackInfo("Fleet", "us-west-2")))
    assert "BucketSizeBytes" in with_capture and "fleet-capture" in with_capture
    assert "BucketSizeBytes" not in without and "Athena" not in without


INVOCATIONS = ScalingMetric("autoScalingSpec.cloudWatchTrigger", "AWS/SageMaker", "Invocations",
                            (("EndpointName", "sm-a"), ("VariantName", "AllTraffic")), "Sum", 60, 60.0, True)


def test_an_autoscaling_endpoint_shows_what_its_trigger_reads_beside_its_requests():
    # GIVEN an endpoint scaling on its Invocations (Sum per minute, 60 per replica), one without autoscaling
    scaled = ObservedEndpoint("a", "ns", "sm-a", scaling=(INVOCATIONS,))
    (body,) = layout.dashboard_bodies([scaled, ObservedEndpoint("b", "ns", "sm-b")], INFO)
    rows = {w["properties"]["title"]: w for w in body["widgets"] if w["type"] == "metric"}
    # THEN a's row is split: requests and latency, then the trigger's metric as KEDA reads it, with its target line
    requests, scaling = rows["ns/a: requests, 4xx, 5xx · latency µs (right)"], rows["ns/a: what autoscaling reads"]
    assert requests["width"] + scaling["width"] == m.DASHBOARD_GRID_WIDTH and scaling["x"] == requests["width"]
    assert scaling["y"] == requests["y"]
    assert scaling["properties"]["metrics"] == [["AWS/SageMaker", "Invocations", "EndpointName", "sm-a", "VariantName",
                                                 "AllTraffic", {"stat": "Sum", "period": 60,
                                                                "label": "Invocations (Sum, 60 s)"}]]
    assert scaling["properties"]["annotations"] == {"horizontal": [
        {"label": "autoScalingSpec.cloudWatchTrigger: target 60 per replica", "value": 60.0}]}
    # AND b keeps its full-width row; nothing overlaps
    assert rows["ns/b: requests, 4xx, 5xx · latency µs (right)"]["width"] == m.DASHBOARD_GRID_WIDTH
    assert _overlaps(body["widgets"]) == []
    # AND an endpoint without a SageMaker endpoint still shows what its trigger reads
    (body,) = layout.dashboard_bodies([ObservedEndpoint("c", "ns", scaling=(INVOCATIONS,))], INFO)
    assert [w["properties"]["title"] for w in body["widgets"] if w["type"] == "metric"][-1] == \
        "ns/c: what autoscaling reads"


def test_the_widget_count_of_autoscaling_rows_keeps_a_dashboard_within_cloudwatchs_limit():
    eps = [ObservedEndpoint(f"e{i}", f"ns{i % 3}", f"sm-{i}", scaling=(INVOCATIONS,)) for i in range(250)]
    bodies = layout.dashboard_bodies(eps, INFO)
    assert all(len(b["widgets"]) <= m.DASHBOARD_MAX_WIDGETS for b in bodies)
    assert sum(1 for b in bodies for w in b["widgets"] if w["properties"].get("title", "").endswith(
        "what autoscaling reads")) == 250


def test_the_grafana_dashboard_plots_a_prometheus_triggers_query_and_target():
    query = ScalingQuery("autoScalingSpec.prometheusTrigger", "sum(model_concurrent_requests)", 8.0, True)
    board = grafana_dashboard([ObservedEndpoint("a", "ns", "sm-a", scaling_queries=(query,))], "S")
    (panel,) = [p for p in board["panels"] if p.get("title") == "a: what autoscaling reads"]
    assert [(t["expr"], t["legendFormat"]) for t in panel["targets"]] == [
        ("sum(model_concurrent_requests)", "autoScalingSpec.prometheusTrigger"),
        ("vector(8)", "autoScalingSpec.prometheusTrigger: target per replica")]


def test_no_endpoints_no_dashboard():
    assert layout.dashboard_bodies([], INFO) == []


def test_every_metric_and_namespace_the_dashboard_uses_is_sourced():
    # GIVEN a dashboard of every kind of row
    bodies = layout.dashboard_bodies(fleet(3) + [ObservedEndpoint("x", "team-0")], INFO)
    names = set()
    for b in bodies:
        for w in b["widgets"]:
            for row in w["properties"].get("metrics", []):
                if isinstance(row[0], dict):
                    names |= set(re.findall(r'MetricName=\\?"([A-Za-z0-9_]+)', row[0]["expression"]))
                elif row[0] not in (".", "..."):
                    names.add(row[1])
                elif len(row) > 1 and isinstance(row[1], str) and row[1] != ".":
                    names.add(row[1])
    # THEN each one is in the facts table
    assert names and names <= set(m.CLOUDWATCH), names - set(m.CLOUDWATCH)


def test_alarm_texts_name_the_endpoint_link_the_dashboard_and_fit_cloudwatch_limits():
    ep = ObservedEndpoint("a" * 63, "n" * 63, "s" * 63, thresholds=T)
    for kind in layout.ALARM_KINDS:
        name = layout.alarm_name("S" * 128, ep, kind)
        text = layout.alarm_description(ep, kind, dashboard="S-inference", region="us-west-2")
        assert len(name) <= m.ALARM_NAME_MAX and name.startswith("S" * 128)
        assert len(text) <= m.ALARM_DESCRIPTION_MAX
        assert "#dashboards/dashboard/S-inference" in text and "docs/observability.md" in text
    assert "more than 5% of invocations failed" in layout.alarm_description(ep, "error-rate", dashboard=None,
                                                                             region="us-west-2")
    # the status command names the endpoint's own kind
    jsm = ObservedEndpoint("j", "ns", "sm-j", thresholds=T, resource="jumpstartmodel")
    assert "kubectl get jumpstartmodel j -n ns -o jsonpath='{.status}'" in layout.alarm_description(
        jsm, "health", dashboard=None, region="us-west-2")


# ---------------------------------------------------------------------------------------------- prometheus
def test_rules_select_each_endpoint_by_namespace_and_resource_name():
    eps = fleet(4, namespaces=2)
    groups = rule_groups(eps, "Fleet")["groups"]
    exprs = " ".join(r["expr"] for g in groups for r in g["rules"])
    for ns in ("team-0", "team-1"):
        names = sorted(e.name for e in eps if e.namespace == ns)
        assert f'{{namespace="{ns}",resource_name=~"{"|".join(names)}"}}' in exprs
    assert {g["name"] for g in groups} == {"Fleet-team-0-recording", "Fleet-team-0-alerts", "Fleet-team-1-recording",
                                           "Fleet-team-1-alerts"}


def test_rules_use_only_sourced_metrics():
    text = rule_file(fleet(2), "Fleet")
    used = set(re.findall(r"\b(model_[a-z_]+|lmcache:[a-z_]+|router_[a-z_]+)\{", text))
    sourced = set(m.PROMETHEUS) | {m.histogram_bucket(n) for n, p in m.PROMETHEUS.items() if p.kind == "histogram"}
    assert used and used <= sourced, used - sourced


def test_an_endpoint_with_alarms_off_or_no_pod_metrics_has_no_alert():
    eps = [ObservedEndpoint("quiet", "ns", thresholds=None), ObservedEndpoint("nometrics", "ns", pod_metrics=False,
                                                                               thresholds=T)]
    groups = rule_groups(eps, "S")["groups"]
    assert [g["name"] for g in groups] == ["S-ns-recording"]
    assert "nometrics" not in json.dumps(groups)


@needs_promtool
def test_promtool_accepts_the_rule_file(tmp_path: Path):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_file(fleet(20), "Fleet"))
    result = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _series(ep: str, *, requests_per_min: int, errors_per_min: int, slow: bool) -> list[dict]:
    """One hour of a pod's counters: requests and errors growing per minute, latency buckets (ms)."""
    sel = f'namespace="ns",resource_name="{ep}",pod_name="{ep}-0",method="POST"'
    out = [{"series": f"model_invocations_total{{{sel}}}", "values": f"0+{requests_per_min}x60"},
           {"series": f"model_concurrent_requests{{{sel}}}", "values": "1x60"}]
    if errors_per_min:
        out.append({"series": f'model_errors_total{{{sel},status="500"}}', "values": f"0+{errors_per_min}x60"})
    for metric in ("model_latency_milliseconds_bucket", "model_ttfb_milliseconds_bucket"):
        for le in ("100", "1000", "5000", "+Inf"):
            fast = {"100": requests_per_min, "1000": requests_per_min}.get(le, requests_per_min)
            slow_counts = {"100": 0, "1000": 0, "5000": 0}.get(le, requests_per_min)
            out.append({"series": f'{metric}{{{sel},le="{le}"}}',
                        "values": f"0+{slow_counts if slow else fast}x60"})
    return out


@needs_promtool
def test_each_alert_fires_on_a_bad_series_and_stays_quiet_on_a_good_one(tmp_path: Path):
    # GIVEN rules for a good endpoint and a bad one (10% errors, every request slower than 5 s), thresholds 5% and
    # 2000 ms held 15 minutes, and an idle one (pods up, no requests) with the no-invocations alert at 30 minutes
    eps = [ObservedEndpoint(n, "ns", thresholds=T) for n in ("good", "bad", "idle")]
    rules = yaml.safe_load(rule_file(eps, "S"))
    for rule in (r for g in rules["groups"] for r in g["rules"]):
        rule.pop("annotations", None)  # promtool compares annotations too; the labels are what matter here
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    series = (_series("good", requests_per_min=60, errors_per_min=0, slow=False)
              + _series("bad", requests_per_min=60, errors_per_min=6, slow=True)
              + _series("idle", requests_per_min=0, errors_per_min=0, slow=False))
    labels = {"namespace": "ns", "resource_name": "bad", "severity": "page"}
    tests = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "alert_rule_test": [
            # before the hold time nothing fires, not even for the bad one
            {"eval_time": "10m", "alertname": "HyperPodInferenceErrorRate", "exp_alerts": []},
            # after it: exactly the bad endpoint (good stays quiet; idle has no requests, so no ratio)
            {"eval_time": "40m", "alertname": "HyperPodInferenceErrorRate", "exp_alerts": [{"exp_labels": labels}]},
            {"eval_time": "40m", "alertname": "HyperPodInferenceP99Latency", "exp_alerts": [{"exp_labels": labels}]},
            # only the idle endpoint: its pods are up and no invocation came for 30 minutes
            {"eval_time": "45m", "alertname": "HyperPodInferenceNoInvocations", "exp_alerts": [{"exp_labels": {
                "namespace": "ns", "resource_name": "idle", "severity": "ticket"}}]},
        ]}]}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    # WHEN promtool evaluates the rules over the series
    result = subprocess.run([PROMTOOL, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True)
    # THEN every expectation holds (promtool lists each mismatch otherwise)
    assert result.returncode == 0, result.stdout + result.stderr


# ------------------------------------------------------------------------------------------------- grafana
def test_grafana_has_a_row_per_endpoint_and_feature_panels_only_when_on():
    eps = [ObservedEndpoint("plain", "ns"), ObservedEndpoint("cached", "ns", kv_cache=True, routing=True)]
    board = grafana_dashboard(eps, "Fleet")
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert rows == ["ns/plain", "ns/cached"]
    titles = [p["title"] for p in board["panels"] if p["type"] != "row"]
    assert "cached: KV cache usage" in titles and "cached: router CPU" in titles
    assert not any(t.startswith("plain: KV") or t.startswith("plain: router") for t in titles)
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert all('namespace="ns",resource_name="' in e for e in exprs)
    assert board["templating"]["list"][0]["name"] == "datasource"
    assert len(board["uid"]) <= 40
