"""facts/metrics.py: every metric and limit carries its source; the ALB name prefix follows the controller."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hyperpod_inference.facts import metrics as m


def test_every_entry_has_a_source_url():
    for table in (m.CLOUDWATCH, m.PROMETHEUS):
        for name, entry in table.items():
            assert entry.source.startswith("https://"), name


def test_every_limit_cites_its_source_in_its_comment():
    # GIVEN the limits section of facts/metrics.py / THEN each limit's comment block names its source
    text = Path(m.__file__).read_text()
    start = text.index("- limits\n")
    section = text[start:text.index("\n# ---", start)]
    blocks = re.findall(r"((?:#:.*\n)+)((?:[A-Z_]+ = .*\n)+)", section)
    limits = {line.split(" = ")[0]: comment for comment, names in blocks for line in names.splitlines()}
    assert {"DASHBOARD_MAX_WIDGETS", "DASHBOARD_GRID_WIDTH", "ALARM_NAME_MAX", "ALARM_DESCRIPTION_MAX"} <= set(limits)
    assert all("https://" in comment for comment in limits.values()), limits


def test_cloudwatch_metrics_carry_unit_statistics_and_dimensions():
    assert m.CLOUDWATCH["ModelLatency"].unit == "Microseconds"
    assert m.CLOUDWATCH["Invocations"].dimensions == ("EndpointName", "VariantName")
    assert all(e.unit and e.statistics and e.dimensions for e in m.CLOUDWATCH.values())


def test_alb_prefix_keeps_the_first_eight_alphanumerics_of_the_namespace():
    # the controller: fmt.Sprintf("k8s-%.8s-%.8s-%.10s", namespace without non-alphanumerics, name, hash)
    assert m.alb_name_prefix("inference") == "k8s-inferenc-"
    assert m.alb_name_prefix("a-b-c") == "k8s-abc-"


def test_histogram_bucket_only_for_histograms():
    assert m.histogram_bucket("model_latency_milliseconds") == "model_latency_milliseconds_bucket"
    with pytest.raises(ValueError, match="not a histogram"):
        m.histogram_bucket("model_invocations_total")
