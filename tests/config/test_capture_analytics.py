"""``capture.analytics``: true | false | {enabled, bytesScannedCutoffMB, resultsRetentionDays}."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.config import ConfigError, config_json_schema, parse_config

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "hyperpod.yaml").read_text())


def _with_capture(**changes):
    data = copy.deepcopy(DEFAULT)
    data["capture"].update(changes)
    return data


def test_analytics_is_on_with_its_defaults_when_capture_is_set():
    settings = parse_config(_with_capture()).capture.analytics
    assert (settings.enabled, settings.bytes_scanned_cutoff_mb, settings.results_retention_days) == (True, 1000, 30)


@pytest.mark.parametrize("value, enabled", [(True, True), (False, False)])
def test_a_boolean_is_shorthand_for_enabled(value, enabled):
    settings = parse_config(_with_capture(analytics=value)).capture.analytics
    assert settings.enabled is enabled
    assert settings.bytes_scanned_cutoff_mb == 1000


def test_the_object_form_takes_the_limits():
    settings = parse_config(_with_capture(analytics={"bytesScannedCutoffMB": 10, "resultsRetentionDays": 7})
                            ).capture.analytics
    assert (settings.enabled, settings.bytes_scanned_cutoff_mb, settings.results_retention_days) == (True, 10, 7)


@pytest.mark.parametrize("analytics, path, words", [
    ({"bytesScannedCutoffMB": 9}, "capture.analytics.bytesScannedCutoffMB", "greater than or equal to 10"),
    ({"resultsRetentionDays": 0}, "capture.analytics.resultsRetentionDays", "greater than or equal to 1"),
    ({"bytesScannedCutoffMb": 100}, "capture.analytics.bytesScannedCutoffMb", "did you mean bytesScannedCutoffMB?"),
    ("yes", "capture.analytics", "valid dictionary"),
])
def test_bad_analytics_settings_name_the_field(analytics, path, words):
    with pytest.raises(ConfigError) as err:
        parse_config(_with_capture(analytics=analytics), "hyperpod.yaml")
    lines = [line for line in str(err.value).splitlines() if line.startswith(f"hyperpod.yaml: {path}: ")]
    assert lines and any(words in line for line in lines), str(err.value)


def test_a_capture_prefix_under_the_results_prefix_is_refused_only_with_analytics_on():
    with pytest.raises(ConfigError) as err:
        parse_config(_with_capture(prefix="athena-results"), "hyperpod.yaml")
    assert "hyperpod.yaml: capture.prefix: athena-results/ holds the query results" in str(err.value)
    assert parse_config(_with_capture(prefix="athena-results", analytics=False)).capture.prefix == "athena-results"


def test_the_json_schema_accepts_a_boolean_or_the_object():
    schema = config_json_schema()
    prop = schema["$defs"]["Capture"]["properties"]["analytics"]
    assert prop["anyOf"][0] == {"type": "boolean"}
    ref = prop["anyOf"][1]["$ref"].rsplit("/", 1)[-1]
    assert set(schema["$defs"][ref]["properties"]) == {"enabled", "bytesScannedCutoffMB", "resultsRetentionDays"}
