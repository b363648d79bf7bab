"""KEDA trigger IAM: exactly what the endpoints' triggers read; no trigger, no grant; imported roles get an output."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import aws_cdk as cdk
import yaml
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from hyperpod_inference.config import parse_config
from hyperpod_inference.constructs.autoscaling import (
    CLOUDWATCH_REASON,
    KEDA_CLOUDWATCH_ACTIONS,
    KEDA_PROMETHEUS_ACTIONS,
    KedaTriggerAccess,
)
from hyperpod_inference.plan.shared import trigger_needs

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
DEFAULT["endpoints"][0].pop("autoScalingSpec")  # the default config's own trigger: each test sets what it tests
ACCOUNT, REGION = "111122223333", "us-west-2"
CW = {"namespace": "AWS/SageMaker", "metricName": "Invocations", "targetValue": 100,
      "dimensions": [{"name": "EndpointName", "value": "qwen-chat"}, {"name": "VariantName", "value": "AllTraffic"}]}
WS = "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0123abcd"
PROM = {"serverAddress": WS, "query": "sum(vllm:num_requests_waiting)", "targetValue": 5}


def endpoints(*specs: dict | None):
    """One endpoint per autoscaling block (None: no autoScalingSpec)."""
    data = copy.deepcopy(DEFAULT)
    base = data["endpoints"][0]
    data["endpoints"] = []
    for i, spec in enumerate(specs):
        ep = copy.deepcopy(base)
        ep.update(name=f"ep{i}", sagemakerEndpointName=f"ep{i}", domainName=f"ep{i}.example.com")
        if spec is not None:
            ep.update(spec)
        data["endpoints"].append(ep)
    return parse_config(data).endpoints


def synth(eps, *, imported: bool = False):
    app = cdk.App()
    stack = cdk.Stack(app, "Keda", env=cdk.Environment(account=ACCOUNT, region=REGION))
    role = (iam.Role.from_role_arn(stack, "Imported", f"arn:aws:iam::{ACCOUNT}:role/keda") if imported
            else iam.Role(stack, "KedaRole", assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com")))
    access = KedaTriggerAccess(stack, "KedaTriggers", needs=trigger_needs(eps), account=ACCOUNT, keda_role=role)
    return stack, access, Template.from_stack(stack)


def statements(template: Template) -> list[dict]:
    return [s for p in template.find_resources("AWS::IAM::Policy").values()
            for s in p["Properties"]["PolicyDocument"]["Statement"]]


def test_no_trigger_no_grant():
    # GIVEN endpoints without autoscaling, and one with autoscaling but no trigger WHEN synthesized THEN no policy
    _, access, template = synth(endpoints(None, {"autoScalingSpec": {"maxReplicaCount": 3}}))
    assert access.statements == [] and template.find_resources("AWS::IAM::Policy") == {}
    assert template.find_outputs("*") == {}


def test_a_cloudwatch_trigger_grants_cloudwatch_reads_only():
    _, _, template = synth(endpoints({"autoScalingSpec": {"cloudWatchTrigger": CW}}))
    assert statements(template) == [{"Sid": "KedaCloudWatchTriggers", "Effect": "Allow",
                                     "Action": list(KEDA_CLOUDWATCH_ACTIONS), "Resource": "*"}]


def test_prometheus_triggers_grant_exactly_their_workspaces():
    # GIVEN two endpoints naming two workspaces (one twice, one in intelligent routing and pdSpec)
    other = WS.replace("ws-0123abcd", "ws-9999-ffff")
    eps = endpoints({"autoScalingSpec": {"prometheusTriggerList": [PROM, PROM]}},
                    {"intelligentRoutingSpec": {"enabled": True, "autoScalingSpec": {
                        "prometheusTrigger": {**PROM, "serverAddress": other}}}})
    _, _, template = synth(eps)
    # THEN one statement, on exactly those two workspace ARNs in env.account
    (statement,) = statements(template)
    assert statement["Action"] == list(KEDA_PROMETHEUS_ACTIONS) and "aps:QueryMetrics" in statement["Action"]
    resources = [json.dumps(r) for r in statement["Resource"]]
    assert len(resources) == 2
    for ws in ("ws-0123abcd", "ws-9999-ffff"):
        assert any(f":aps:us-west-2:{ACCOUNT}:workspace/{ws}" in r for r in resources), resources


def test_the_list_form_wins_so_a_single_trigger_beside_it_grants_nothing():
    # GIVEN a single Prometheus trigger beside a Prometheus list WHEN needs are computed THEN only the list's
    # workspace is granted (the operator uses only the list)
    eps = endpoints({"autoScalingSpec": {"prometheusTrigger": PROM, "prometheusTriggerList": [
        {**PROM, "serverAddress": WS.replace("ws-0123abcd", "ws-list")}]}})
    assert trigger_needs(eps).workspaces == (("us-west-2", "ws-list"),)
    assert trigger_needs(eps).cloudwatch is False


def test_pd_spec_triggers_count_too():
    eps = endpoints({"pdSpec": {"prefillSpec": {}, "decodingSpec": {}, "autoScalingSpec": {
        "decodingAutoScaling": {"cloudWatchTrigger": CW}}}})
    assert trigger_needs(eps).cloudwatch is True


def test_an_imported_role_is_not_policied_and_gets_the_statements_as_an_output():
    _, access, template = synth(endpoints({"autoScalingSpec": {"cloudWatchTrigger": CW,
                                                                   "prometheusTrigger": PROM}}), imported=True)
    assert template.find_resources("AWS::IAM::Policy") == {} and access.output is not None
    (output,) = template.find_outputs("*").values()
    text = json.dumps(output["Value"])  # a JSON document joined with the partition token
    assert "KedaCloudWatchTriggers" in text and "KedaPrometheusTriggers" in text and "ws-0123abcd" in text


def test_cdk_nag_accepts_the_cloudwatch_statement_with_its_reason(tmp_path):
    app = cdk.App(outdir=str(tmp_path))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = cdk.Stack(app, "KedaNag", env=cdk.Environment(account=ACCOUNT, region=REGION))
    role = iam.Role(stack, "KedaRole", assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com"))
    needs = trigger_needs(endpoints({"autoScalingSpec": {"cloudWatchTrigger": CW}}))
    KedaTriggerAccess(stack, "KedaTriggers", needs=needs, account=ACCOUNT, keda_role=role)
    app.synth()  # raises on an unacknowledged finding
    report = json.loads((tmp_path / "validation-report.json").read_text())
    (plugin,) = report["pluginReports"]
    assert plugin["violations"] == []
    assert CLOUDWATCH_REASON in json.dumps(report)
