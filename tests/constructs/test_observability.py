"""InferenceObservability through the app and the construct: the dashboard references every endpoint, alarms go to
the given topic, the rule group is one promtool accepts, an imported topic works, and dashboard: false creates
nothing. cdk-nag (AwsSolutions) runs on every synth here."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from hyperpod_inference import HyperPodInference, parse_config
from tests.synth_helpers import DEFAULT_CONFIG, REPO, load_yaml, synth_config

TOPIC = "arn:aws:sns:us-west-2:111122223333:oncall"
WORKSPACE = "arn:aws:aps:us-west-2:111122223333:workspace/ws-0123abcd-4567-89ef-0123-456789abcdef"
OBSERVABILITY_TYPES = {"AWS::CloudWatch::Dashboard", "AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm",
                       "AWS::SNS::Topic", "AWS::APS::RuleGroupsNamespace"}


def _fleet(observability: dict[str, Any] | None) -> dict[str, Any]:
    """The default config with three endpoints: two with SageMaker endpoints (one tuned), one without."""
    data = load_yaml(DEFAULT_CONFIG)
    first = data["endpoints"][0]
    second = copy.deepcopy(first) | {"name": "llama", "sagemakerEndpointName": "llama-sm",
                                     "alarms": {"p99LatencyMs": 1500, "noInvocationsMinutes": 30}}
    third = copy.deepcopy(first) | {"name": "pods-only"}
    for ep in (second, third):
        ep.pop("domainName", None)
        ep.pop("verify", None)
        ep.pop("dataCapture", None)
    third.pop("sagemakerEndpointName", None)
    data["endpoints"] = [first, second, third]
    if observability is not None:
        data["observability"] = observability
    return data


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory):
    return synth_config(_fleet({"alarms": {"snsTopicArn": TOPIC, "errorRatePercent": 2},
                                "prometheusWorkspaceArn": WORKSPACE}), tmp_path_factory.mktemp("obs-fleet"))


def test_the_dashboard_references_every_sagemaker_endpoint(fleet) -> None:
    (dashboard,) = _of_type(fleet.template, "AWS::CloudWatch::Dashboard").values()
    # dashboards are global to the account: the region is in the name
    assert dashboard["Properties"]["DashboardName"] == "HyperPodInference-us-west-2-inference"
    body = json.loads(dashboard["Properties"]["DashboardBody"])
    text = json.dumps(body)
    for ep in fleet.stack.config.endpoints:
        assert f"**{ep.name}**" in text
        if ep.sagemaker_endpoint_name:
            assert f'"EndpointName", "{ep.sagemaker_endpoint_name}"' in text


def test_alarms_per_endpoint_go_to_the_topic_through_one_composite(fleet) -> None:
    alarms = _of_type(fleet.template, "AWS::CloudWatch::Alarm")
    composites = _of_type(fleet.template, "AWS::CloudWatch::CompositeAlarm")
    names = sorted(a["Properties"]["AlarmName"] for a in alarms.values())
    # qwen-chat: error rate and p99; llama: plus its opt-in no-invocations; pods-only: none (no SageMaker endpoint)
    assert names == ["HyperPodInference-inference-llama-error-rate", "HyperPodInference-inference-llama-no-invocations",
                     "HyperPodInference-inference-llama-p99-latency", "HyperPodInference-inference-qwen-chat-error-rate",
                     "HyperPodInference-inference-qwen-chat-p99-latency"]
    # only the composites notify, and they notify the given topic (alarm and recovery)
    assert all("AlarmActions" not in a["Properties"] for a in alarms.values())
    assert len(composites) == 2
    for c in composites.values():
        assert c["Properties"]["AlarmActions"] == [TOPIC] and c["Properties"]["OKActions"] == [TOPIC]
        assert "#dashboards/dashboard/HyperPodInference-us-west-2-inference" in c["Properties"]["AlarmDescription"]


def test_error_rate_is_metric_math_with_missing_data_not_breaching(fleet) -> None:
    t = Template.from_json(fleet.template)
    t.has_resource_properties("AWS::CloudWatch::Alarm", {
        "AlarmName": "HyperPodInference-inference-qwen-chat-error-rate", "Threshold": 2,
        "ComparisonOperator": "GreaterThanThreshold", "TreatMissingData": "notBreaching",
        "Metrics": Match.array_with([
            Match.object_like({"Expression": "IF(inv > 0, 100 * (FILL(e4, 0) + FILL(e5, 0)) / inv)"}),
            Match.object_like({"Id": "inv", "MetricStat": Match.object_like({"Metric": {
                "Namespace": "AWS/SageMaker", "MetricName": "Invocations", "Dimensions": Match.array_with([
                    {"Name": "EndpointName", "Value": "qwen-chat"}, {"Name": "VariantName", "Value": "AllTraffic"}])},
                "Stat": "Sum"})})])})
    # the tuned endpoint's p99 threshold, in ModelLatency's microseconds; its no-invocations alarm breaches on
    # missing data (SageMaker publishes nothing for a period without requests)
    t.has_resource_properties("AWS::CloudWatch::Alarm", {
        "AlarmName": "HyperPodInference-inference-llama-p99-latency", "Threshold": 1_500_000,
        "ExtendedStatistic": "p99", "MetricName": "ModelLatency"})
    t.has_resource_properties("AWS::CloudWatch::Alarm", {
        "AlarmName": "HyperPodInference-inference-llama-no-invocations", "EvaluationPeriods": 6,
        "TreatMissingData": "breaching", "ComparisonOperator": "LessThanThreshold"})


def test_the_rule_group_selects_every_endpoint_and_promtool_accepts_it(fleet, tmp_path: Path) -> None:
    (group,) = _of_type(fleet.template, "AWS::APS::RuleGroupsNamespace").values()
    assert group["Properties"]["Workspace"] == WORKSPACE
    assert group["Properties"]["Name"] == "HyperPodInference-inference"
    data = group["Properties"]["Data"]
    assert '{namespace="inference",resource_name=~"llama|pods-only|qwen-chat"}' in data
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus; make deps) missing")
    (tmp_path / "rules.yaml").write_text(data)
    result = subprocess.run([promtool, "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_app_writes_the_grafana_dashboard_beside_the_manifests(fleet) -> None:
    from hyperpod_inference.app import write_all_manifests

    write_all_manifests([fleet.stack], str(fleet.outdir))
    board = json.loads((fleet.outdir / "dashboards" / "HyperPodInference.json").read_text())
    assert [p["title"] for p in board["panels"] if p["type"] == "row"] == [
        "inference/qwen-chat", "inference/llama", "inference/pods-only"]


def test_created_topic_is_encrypted_with_a_key_cloudwatch_may_use(tmp_path: Path) -> None:
    s = synth_config(_fleet({"dashboard": False, "alarms": {"createTopic": True}}), tmp_path)
    assert not _of_type(s.template, "AWS::CloudWatch::Dashboard")
    (topic,) = _of_type(s.template, "AWS::SNS::Topic").values()
    assert topic["Properties"]["TopicName"] == "HyperPodInference-inference-alarms"
    key_ref = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key = s.template["Resources"][key_ref]
    assert key["Properties"]["EnableKeyRotation"] is True
    assert any(st.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
               for st in key["Properties"]["KeyPolicy"]["Statement"])
    # and the alarm descriptions do not link a dashboard that does not exist
    composite = next(iter(_of_type(s.template, "AWS::CloudWatch::CompositeAlarm").values()))
    assert "dashboards/dashboard" not in composite["Properties"]["AlarmDescription"]


SUBSCRIBERS = ["oncall@example.com", "https://hooks.example.com/alarms", "arn:aws:sqs:us-west-2:999999999999:pages",
               "arn:aws:lambda:us-west-2:111122223333:function:pager"]


@pytest.fixture(scope="module")
def subscribed(tmp_path_factory: pytest.TempPathFactory):
    return synth_config(_fleet({"alarms": {"createTopic": True, "subscriptions": SUBSCRIBERS}}),
                        tmp_path_factory.mktemp("obs-subscribed"))


def test_the_created_topic_lets_this_stacks_alarms_publish_and_keeps_the_tls_deny(subscribed) -> None:
    (policy,) = _of_type(subscribed.template, "AWS::SNS::TopicPolicy").values()
    deny, allow = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    # CloudWatch may publish for the composite alarms of this stack only (exact ARNs), from this account
    composites = sorted(c["Properties"]["AlarmName"]
                        for c in _of_type(subscribed.template, "AWS::CloudWatch::CompositeAlarm").values())
    arns = [f"arn:aws:cloudwatch:us-west-2:111122223333:alarm:{name}" for name in composites]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"} and allow["Action"] == "sns:Publish"
    assert sorted(allow["Condition"]["ArnEquals"]["aws:SourceArn"]) == arns
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": "111122223333"}
    # AND the key lets CloudWatch use it under the same conditions
    (key,) = [k for k in _of_type(subscribed.template, "AWS::KMS::Key").values()
              if "alarm topic" in k["Properties"]["Description"]]
    (cloudwatch,) = [st for st in key["Properties"]["KeyPolicy"]["Statement"]
                     if st.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]
    assert cloudwatch["Action"] == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert cloudwatch["Condition"] == allow["Condition"]


def test_subscriptions_get_their_protocols_and_imported_subscribers_are_not_repolicied(subscribed) -> None:
    subs = _of_type(subscribed.template, "AWS::SNS::Subscription").values()
    assert sorted((s["Properties"]["Protocol"], s["Properties"]["Endpoint"]) for s in subs) == sorted(
        zip(["email", "https", "sqs", "lambda"], SUBSCRIBERS, strict=True))
    types = {r["Type"] for r in subscribed.template["Resources"].values()}
    assert not types & {"AWS::SQS::QueuePolicy", "AWS::Lambda::Permission"}


def test_outputs_give_the_topic_the_dashboard_the_subscribe_command_and_what_owners_add(subscribed) -> None:
    from tests.docs import commands

    outputs = subscribed.template["Outputs"]
    topic_ref = {"Ref": next(iter(_of_type(subscribed.template, "AWS::SNS::Topic")))}
    assert outputs["AlarmTopicArn"]["Value"] == topic_ref
    assert outputs["DashboardUrl"]["Value"] == ("https://us-west-2.console.aws.amazon.com/cloudwatch/home?region="
                                                "us-west-2#dashboards/dashboard/HyperPodInference-us-west-2-inference")

    def text(output: str) -> str:  # the output with the topic's ARN in place of its reference
        value = outputs[output]["Value"]
        return "".join(p if isinstance(p, str) else TOPIC for p in value["Fn::Join"][1])

    subscribe = commands.Command("outputs", text("AlarmSubscribeCommand")).argv
    assert subscribe[:7] == ["aws", "sns", "subscribe", "--topic-arn", TOPIC, "--protocol", "email"]
    permission = commands.Command("outputs", text("AlarmFunctionPermissionToAdd")).argv
    for argv in (subscribe, permission):
        assert commands.check_aws(argv) == []
    assert permission[permission.index("--function-name") + 1] == SUBSCRIBERS[3]
    assert permission[permission.index("--source-arn") + 1] == TOPIC
    (statement,) = json.loads(text("AlarmQueuePolicyToAdd"))
    assert statement == {"Sid": "AllowHyperPodInferenceAlarmTopic", "Effect": "Allow",
                         "Principal": {"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage",
                         "Resource": SUBSCRIBERS[2], "Condition": {"ArnEquals": {"aws:SourceArn": TOPIC}}}


def test_an_imported_topic_is_an_output_and_gets_no_policy(fleet) -> None:
    assert fleet.template["Outputs"]["AlarmTopicArn"]["Value"] == TOPIC
    assert not _of_type(fleet.template, "AWS::SNS::TopicPolicy")


@pytest.mark.parametrize(("subscriber", "message"), [
    ("arn:aws:sqs:us-east-1:111122223333:pages", "is in us-east-1; the alarm topic is in the stack's region"),
    ("arn:aws-cn:lambda:cn-north-1:111122223333:function:pager", "is in partition aws-cn; the alarm topic is in aws"),
])
def test_a_queue_or_function_elsewhere_is_refused(subscriber: str, message: str) -> None:
    from hyperpod_inference.config.observability import Observability
    from hyperpod_inference.constructs.observability import InferenceObservability

    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="111122223333", region="us-west-2"))
    settings = Observability.model_validate({"alarms": {"createTopic": True,
                                                        "subscriptions": ["a@example.com", subscriber]}})
    with pytest.raises(ValueError, match=rf"observability.alarms.subscriptions\[1\]: {subscriber} {message}"):
        InferenceObservability(stack, "Obs", scope_name="S", endpoints=[], region="us-west-2", settings=settings)


def test_dashboard_false_creates_nothing(tmp_path: Path) -> None:
    s = synth_config(_fleet({"dashboard": False}), tmp_path)
    assert {r["Type"] for r in s.template["Resources"].values()} & OBSERVABILITY_TYPES == set()
    assert s.stack.inference.observability is None
    assert not (tmp_path / "dashboards").exists()


def test_an_imported_topic_through_the_construct_props(tmp_path: Path) -> None:
    # GIVEN a user's stack, the files config with an alarms section naming no destination, and their own topic
    data = load_yaml(REPO / "tests" / "fixtures" / "files.yaml")
    data["observability"] = {"alarms": {}}
    config = parse_config(data)
    app = cdk.App(outdir=str(tmp_path))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = cdk.Stack(app, "UserStack", env=cdk.Environment(account="111122223333", region="us-west-2"))
    topic = sns.Topic.from_topic_arn(stack, "Oncall", "arn:aws:sns:us-west-2:111122223333:team-oncall")
    HyperPodInference(stack, "Inference", config=config, alarm_topic=topic)
    # WHEN synthesized THEN the composites notify that topic, and no topic is created
    template = json.loads((Path(app.synth().directory) / "UserStack.template.json").read_text())
    composites = _of_type(template, "AWS::CloudWatch::CompositeAlarm")
    assert composites and all(c["Properties"]["AlarmActions"] == ["arn:aws:sns:us-west-2:111122223333:team-oncall"]
                              for c in composites.values())
    assert not _of_type(template, "AWS::SNS::Topic")
    # names carry the construct's scope (stack and construct id), so two of these never collide
    assert all(c["Properties"]["AlarmName"].startswith("UserStack-Inference-") for c in composites.values())


def test_alarms_with_no_destination_and_no_topic_prop_are_refused() -> None:
    # GIVEN the files config with an alarms section naming no destination, and no alarm_topic prop
    data = load_yaml(REPO / "tests" / "fixtures" / "files.yaml")
    data["observability"] = {"alarms": {}}
    stack = cdk.Stack(cdk.App(), "UserStack", env=cdk.Environment(account="111122223333", region="us-west-2"))
    # WHEN the construct is built THEN it names the config key and the prop that would give the destination
    with pytest.raises(ValueError, match=r"observability.alarms: needs snsTopicArn or createTopic: true .* alarm_topic"):
        HyperPodInference(stack, "Inference", config=parse_config(data))


@pytest.mark.parametrize(("settings", "path"), [
    ({"alarms": {"snsTopicArn": "arn:aws:sns:eu-west-1:111122223333:oncall"}}, "observability.alarms.snsTopicArn"),
    ({"prometheusWorkspaceArn": WORKSPACE.replace("us-west-2", "eu-west-1")}, "observability.prometheusWorkspaceArn"),
])
def test_a_topic_or_workspace_in_another_region_is_refused(settings: dict[str, Any], path: str) -> None:
    from hyperpod_inference.config.observability import Observability
    from hyperpod_inference.constructs.observability import InferenceObservability

    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="111122223333", region="us-west-2"))
    with pytest.raises(ValueError, match=rf"{path}: must be in the stack's region \(us-west-2\), got eu-west-1"):
        InferenceObservability(stack, "Obs", scope_name="S", endpoints=[], region="us-west-2",
                               settings=Observability.model_validate(settings))
