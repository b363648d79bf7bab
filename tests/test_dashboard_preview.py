"""tools/dashboard_preview.py: every CloudWatch dashboard of a cdk.out becomes a PNG of its grid, each widget showing
its title and the metrics it plots (from the template, deploy-time values as placeholders)."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from hyperpod_inference.constructs import cloudwatch_layout as layout
from hyperpod_inference.plan.observability import ObservedEndpoint
from tests.docs.helpers import tool

preview = tool("dashboard_preview")


def _cdk_out(tmp_path: Path, body: dict, name: object = "S-inference") -> Path:
    template = {"Resources": {"Dash": {"Type": "AWS::CloudWatch::Dashboard", "Properties": {
        "DashboardName": name, "DashboardBody": body}}}}
    (tmp_path / "S.template.json").write_text(json.dumps(template))
    return tmp_path


def test_each_dashboard_becomes_a_png_as_wide_as_the_grid(tmp_path: Path) -> None:
    # GIVEN a template holding a laid-out dashboard of two endpoints
    (body,) = layout.dashboard_bodies([ObservedEndpoint("a", "ns", "sm-a"), ObservedEndpoint("b", "ns", "sm-b")],
                                      layout.StackInfo("S", "us-west-2"))
    out = _cdk_out(tmp_path, layout.body_json(body))
    # WHEN the tool runs
    assert preview.main(["--cdk-out", str(out), "--docs-png", str(tmp_path / "doc.png")]) == 0
    # THEN one PNG per dashboard, 24 columns wide and as tall as its rows, copied for the docs
    image = Image.open(out / "dashboards" / "S-inference.png")
    rows = max(w["y"] + w["height"] for w in body["widgets"])
    assert image.size == (24 * preview.UNIT_W + 2 * preview.MARGIN, rows * preview.UNIT_H + 2 * preview.MARGIN + 30)
    assert (tmp_path / "doc.png").read_bytes() == (out / "dashboards" / "S-inference.png").read_bytes()


def test_widget_lines_name_the_metrics_and_their_statistics() -> None:
    (body,) = layout.dashboard_bodies([ObservedEndpoint("a", "ns", "sm-a")], layout.StackInfo("S", "us-west-2"))
    lines = {preview.widget_lines(w)[0]: preview.widget_lines(w)[1] for w in body["widgets"]}
    assert lines["ns/a: requests, 4xx, 5xx · latency µs (right)"] == [
        "Invocations (Sum)", "Invocation4XXErrors (Sum)", "Invocation5XXErrors (Sum)", "ModelLatency (p50)",
        "ModelLatency (p90)", "ModelLatency (p99)"]
    assert lines["namespace ns"] == ["a: SageMaker `sm-a`"]


def test_a_body_with_deploy_time_values_shows_placeholders(tmp_path: Path) -> None:
    joined = {"Fn::Join": ["", ['{"widgets":[{"type":"text","x":0,"y":0,"width":6,"height":2,"properties":'
                                '{"markdown":"bucket ', {"Ref": "CaptureBucket"}, '"}}]}']]}
    boards = preview.dashboards(_cdk_out(tmp_path, joined, name={"Ref": "X"}))
    assert boards == {"Dash": {"widgets": [{"type": "text", "x": 0, "y": 0, "width": 6, "height": 2,
                                            "properties": {"markdown": "bucket <CaptureBucket>"}}]}}
