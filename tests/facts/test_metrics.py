"""facts/metrics.py: every metric, label and limit carries its source; the ALB name prefix follows the controller."""

from __future__ import annotations

import pytest

from hyperpod_inference.facts import metrics as m


def test_every_entry_has_a_source_url():
    for table in (m.CLOUDWATCH, m.PROMETHEUS, m.PROM_LABELS):
        for name, entry in table.items():
            assert entry.source.startswith("https://"), name
    assert set(m.LIMIT_SOURCES) == {"DASHBOARD_MAX_WIDGETS", "DASHBOARD_GRID_WIDTH", "ALARM_NAME_MAX",
                                    "ALARM_DESCRIPTION_MAX", "COMPOSITE_RULE_MAX"}


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
