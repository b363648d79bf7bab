"""The observability section and endpoints[].alarms: defaults, refusals with their paths, warnings."""

from __future__ import annotations

import copy

import pytest

from hyperpod_inference.config import ConfigError
from hyperpod_inference.config.cross_rules import cluster_import_problems
from hyperpod_inference.config.loader import parse_config
from hyperpod_inference.config.warnings import endpoint_warnings
from hyperpod_inference.plan.observability import observed_endpoints
from tests.synth_helpers import DEFAULT_CONFIG, load_yaml

BASE = load_yaml(DEFAULT_CONFIG)
TOPIC = "arn:aws:sns:us-west-2:111122223333:oncall"
WORKSPACE = "arn:aws:aps:us-west-2:111122223333:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef"


def _config(observability=None, **endpoint_fields):
    data = copy.deepcopy(BASE)
    if observability is not None:
        data["observability"] = observability
    data["endpoints"][0].update(endpoint_fields)
    return data


def _problems(data, **kw) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as err:
        parse_config(data, **kw)
    return err.value.problems


def test_by_default_a_dashboard_and_nothing_else():
    obs = parse_config(_config()).observability
    assert obs.dashboard is True and obs.alarms is None and obs.prometheus_workspace_arn is None
    assert parse_config(_config({"dashboard": False})).observability.creates_anything is False


def test_alarms_need_exactly_one_destination():
    # GIVEN alarms naming both destinations THEN the file is refused at the section's path
    assert _problems(_config({"alarms": {"snsTopicArn": TOPIC, "createTopic": True}})) == [
        ("observability.alarms", "give snsTopicArn or createTopic: true, not both")]
    # GIVEN alarms naming none WHEN loaded THEN the file loads (a construct may get an imported topic instead), and
    # the stack the app builds from the file alone refuses it, naming the path
    config = parse_config(_config({"alarms": {}}))
    assert config.observability.alarms is not None
    assert [p for p, _ in cluster_import_problems(config)] == ["observability.alarms"]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("snsTopicArn", "oncall", "must be an SNS topic ARN"),
    ("errorRatePercent", 0, "greater than 0"),
    ("p99LatencyMs", 0, "greater than or equal to 1"),
    ("noInvocationsMinutes", 7, "multiple of 5"),
])
def test_bad_alarm_values_are_refused_with_their_path(field, value, message):
    alarms = {"createTopic": True, field: value} if field != "snsTopicArn" else {field: value}
    (problem,) = _problems(_config({"alarms": alarms}))
    assert problem[0] == f"observability.alarms.{field}" and message in problem[1]


def test_a_workspace_must_be_an_aps_workspace_arn():
    (problem,) = _problems(_config({"prometheusWorkspaceArn": "ws-123"}))
    assert problem[0] == "observability.prometheusWorkspaceArn"
    assert parse_config(_config({"prometheusWorkspaceArn": WORKSPACE})).observability.prometheus_workspace_arn


def test_endpoint_thresholds_override_the_section_and_enabled_false_turns_them_off():
    # GIVEN section defaults and one endpoint tuning its p99 threshold
    tuned = parse_config(_config({"alarms": {"createTopic": True, "errorRatePercent": 2}},
                                 alarms={"p99LatencyMs": 500, "noInvocationsMinutes": 60}))
    (ep,) = observed_endpoints(tuned.endpoints, tuned.observability)
    # THEN its own value wins, the rest comes from the section
    assert (ep.thresholds.error_rate_percent, ep.thresholds.p99_latency_ms, ep.thresholds.no_invocations_minutes) == (
        2.0, 500, 60)
    off = parse_config(_config({"alarms": {"createTopic": True}}, alarms={"enabled": False}))
    assert observed_endpoints(off.endpoints, off.observability)[0].thresholds is None
    # a workspace alone gives every endpoint the documented default thresholds (for its alerting rules)
    rules_only = parse_config(_config({"prometheusWorkspaceArn": WORKSPACE}))
    (ep,) = observed_endpoints(rules_only.endpoints, rules_only.observability)
    assert (ep.thresholds.error_rate_percent, ep.thresholds.p99_latency_ms, ep.thresholds.evaluation_periods,
            ep.thresholds.no_invocations_minutes) == (5.0, 10_000, 3, None)
    # and without an alarms section or a workspace there are no thresholds at all
    plain = parse_config(_config())
    assert observed_endpoints(plain.endpoints, plain.observability)[0].thresholds is None


def test_endpoint_alarms_without_anywhere_to_go_warn():
    config = parse_config(_config(alarms={"p99LatencyMs": 500}))
    ids = [w.id for w in endpoint_warnings(config.endpoints[0], config)]
    assert "alarmsUnused" in ids


def test_subscriptions_take_each_protocol_inferred_from_the_value():
    values = ["oncall@example.com", "https://hooks.example.com/alarms?team=a",
              "arn:aws:sqs:us-west-2:111122223333:oncall", "arn:aws:lambda:us-west-2:111122223333:function:pager:live"]
    alarms = parse_config(_config({"alarms": {"createTopic": True, "subscriptions": values}})).observability.alarms
    assert [(s.protocol, s.endpoint) for s in alarms.parsed_subscriptions] == [
        ("email", values[0]), ("https", values[1]), ("sqs", values[2]), ("lambda", values[3])]
    assert [s.imported for s in alarms.parsed_subscriptions] == [False, False, True, True]


@pytest.mark.parametrize(("value", "message"), [
    ("http://hooks.example.com/alarms", "an http:// URL would carry the alarm unencrypted; give the endpoint's https://"),
    ("arn:aws:sqs:us-west-2:111122223333:oncall.fifo", "a FIFO queue receives only from a FIFO topic"),
    ("arn:aws:sns:us-west-2:111122223333:other", "neither a standard SQS queue nor a Lambda function"),
    ("oncall", "must be an e-mail address, an https:// URL, or an SQS queue or Lambda function ARN"),
    ("https:///no-host", "a URL must be https://<host>/..."),
    ("+15555550100", "must be an e-mail address"),
])
def test_a_subscription_that_cannot_be_one_is_refused_at_its_index(value, message):
    problems = _problems(_config({"alarms": {"createTopic": True, "subscriptions": ["ok@example.com", value]}}))
    assert [(p, m.startswith(message) or message in m) for p, m in problems] == [
        ("observability.alarms.subscriptions[1]", True)], problems


def test_subscriptions_need_the_created_topic_and_are_listed_once():
    assert _problems(_config({"alarms": {"snsTopicArn": TOPIC, "subscriptions": ["a@example.com"]}})) == [
        ("observability.alarms.subscriptions", "subscribes to the topic the stack creates: needs createTopic: true "
                                               "(subscribe a topic of your own, snsTopicArn, with aws sns subscribe)")]
    assert _problems(_config({"alarms": {"createTopic": True, "subscriptions": ["a@example.com", "a@example.com"]}})) \
        == [("observability.alarms.subscriptions[1]", "a@example.com is listed twice")]


def test_the_observed_endpoint_carries_what_its_triggers_read_with_the_crds_defaults():
    # GIVEN the default config's trigger, and a router trigger that sets neither statistic, period nor metric type
    router = {"namespace": "AWS/SageMaker", "metricName": "Invocations", "targetValue": 7, "metricType": "Value",
              "dimensions": [{"name": "EndpointName", "value": "qwen-chat"}, {"name": "VariantName",
                                                                             "value": "AllTraffic"}]}
    data = _config()
    data["endpoints"][0]["intelligentRoutingSpec"] = {"enabled": True, "autoScalingSpec": {"cloudWatchTrigger": router}}
    data["endpoints"][0].pop("autoScalingSpec")
    config = parse_config(data)
    (ep,) = observed_endpoints(config.endpoints, config.observability)
    (scaling,) = ep.scaling
    # THEN the dashboard reads it as KEDA does: Average over 300 s unless set (the CRD's defaults)
    assert (scaling.where, scaling.stat, scaling.period, scaling.target, scaling.per_replica) == (
        "intelligentRoutingSpec.autoScalingSpec.cloudWatchTrigger", "Average", 300, 7.0, False)
    (shipped,) = observed_endpoints(parse_config(_config()).endpoints, config.observability)
    assert [(s.metric, s.stat, s.period, s.per_replica) for s in shipped.scaling] == [("Invocations", "Sum", 60, True)]


def test_the_observability_pages_example_is_a_valid_section():
    # GIVEN docs/observability.md's first YAML block (the observability section and an endpoint's alarms)
    import re

    from tests.synth_helpers import REPO

    block = re.search(r"```yaml\n(.*?)```", (REPO / "docs" / "observability.md").read_text(), re.S).group(1)
    example = __import__("yaml").safe_load(block)
    # WHEN it is put into the default config THEN it loads, with each subscription's protocol
    config = parse_config(_config(example["observability"], alarms=example["endpoints"][0]["alarms"]))
    assert [s.protocol for s in config.observability.alarms.parsed_subscriptions] == ["email", "https", "sqs", "lambda"]
