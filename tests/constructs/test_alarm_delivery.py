"""Every alarm action the synth emits reaches a person: for each action of each alarm, in every template (nested ones
included), the chain alarm -> topic -> topic policy -> key policy is decided as SNS and KMS would decide CloudWatch's
publish (principal ``cloudwatch.amazonaws.com``, ``sns:Publish`` on the topic, then ``kms:GenerateDataKey`` and
``kms:Decrypt`` on its key, with ``aws:SourceArn`` = the alarm, ``aws:SourceAccount`` and ``aws:SecureTransport``),
with the policy evaluator of ops/policy_eval.py (tested on AWS's documented examples in tests/ops).

A topic with no topic policy is decided under SNS's default policy; two topic policies on one topic are a failure
(the last one deployed replaces the other). The same decision refuses an alarm of another stack, account or region,
and a publish without TLS."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hyperpod_inference.facts import alarms as alarm_facts
from hyperpod_inference.ops.policy_eval import ALLOW, EXPLICIT_DENY, IMPLICIT_DENY, Request, decide
from tests.cfn_intrinsics import resolve
from tests.synth_helpers import DEFAULT_CONFIG, Synth, gen_config, load_yaml, synth_config

ACCOUNT, REGION, PARTITION = "111122223333", "us-west-2", "aws"
ALARM_TYPES = ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
ACTION_KEYS = ("AlarmActions", "OKActions", "InsufficientDataActions")
KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")
SUBSCRIBERS = ["oncall@example.com", "https://hooks.example.com/alarms",
               f"arn:aws:sqs:{REGION}:999999999999:oncall", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:pager"]


def sns_default_policy(topic_arn: str) -> dict[str, Any]:
    """The policy SNS gives a topic that has none (its ``__default_statement_ID``, publish and the rest)."""
    return {"Version": "2008-10-17", "Statement": [{
        "Sid": "__default_statement_ID", "Effect": "Allow", "Principal": {"AWS": "*"},
        "Action": ["SNS:GetTopicAttributes", "SNS:SetTopicAttributes", "SNS:AddPermission", "SNS:RemovePermission",
                   "SNS:DeleteTopic", "SNS:Subscribe", "SNS:ListSubscriptionsByTopic", "SNS:Publish"],
        "Resource": topic_arn, "Condition": {"StringEquals": {"AWS:SourceOwner": ACCOUNT}}}]}


# --------------------------------------------------------------------------------------- the templates, resolved
@dataclass
class Scope:
    """One template and the values of its parameters, resolving intrinsics as CloudFormation would."""

    label: str
    template: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template.get("Resources", {})

    def ref(self, name: str) -> Any:
        pseudo = {"AWS::Partition": PARTITION, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                  "AWS::URLSuffix": "amazonaws.com"}
        if name in pseudo:
            return pseudo[name]
        if name in self.params:
            return self.params[name]
        resource = self.resources[name]
        if resource["Type"] == "AWS::SNS::Topic":  # Ref of a topic is its ARN
            topic_name = resource["Properties"].get("TopicName") or f"{self.label}-{name}"
            return f"arn:{PARTITION}:sns:{REGION}:{ACCOUNT}:{self(topic_name)}"
        if resource["Type"] == "AWS::KMS::Key":  # Ref of a key is its ID
            return f"{self.label}-{name}"
        return f"<{self.label}:{name}>"

    def get_att(self, name: str, attribute: str) -> Any:
        resource = self.resources[name]
        if resource["Type"] == "AWS::KMS::Key" and attribute == "Arn":
            return f"arn:{PARTITION}:kms:{REGION}:{ACCOUNT}:key/{self.ref(name)}"
        if resource["Type"] == "AWS::SNS::Topic" and attribute == "TopicArn":
            return self.ref(name)
        return f"<{self.label}:{name}.{attribute}>"

    def __call__(self, value: Any) -> Any:
        return resolve(value, self.ref, self.get_att)


def _nested_files(s: Synth) -> dict[str, str]:
    """Each nested stack's resource (``<parent template>/<logical ID>``) -> its template file."""
    out = {}
    for node in s.stack.node.find_all():
        if isinstance(node, cdk.NestedStack) and node.nested_stack_resource is not None:
            parent = node.nested_stack_parent
            assert parent is not None
            out[f"{parent.template_file}/{parent.get_logical_id(node.nested_stack_resource)}"] = node.template_file
    return out


def scopes(s: Synth) -> list[Scope]:
    """The stack's template and every nested template under it, each with its parameters' values."""
    files = _nested_files(s)
    out: list[Scope] = []
    todo = [Scope(s.template_file, s.template)]
    while todo:
        scope = todo.pop()
        out.append(scope)
        for name, resource in scope.resources.items():
            if resource["Type"] != "AWS::CloudFormation::Stack":
                continue
            file = files[f"{scope.label.rsplit('/', 1)[-1]}/{name}"]
            params = scope(resource["Properties"].get("Parameters", {}))
            todo.append(Scope(f"{scope.label}/{file}", json.loads((s.outdir / file).read_text()), params))
    return out


@dataclass(frozen=True)
class Action:
    alarm: str  # where the alarm is, for messages
    alarm_arn: str
    target: str  # the resolved action ARN


def alarm_actions(all_scopes: list[Scope]) -> list[Action]:
    out = []
    for scope in all_scopes:
        for name, resource in scope.resources.items():
            if resource["Type"] not in ALARM_TYPES:
                continue
            props = resource["Properties"]
            alarm_name = scope(props.get("AlarmName"))
            assert isinstance(alarm_name, str), f"{scope.label}/{name}: an alarm without a name known at synth"
            arn = alarm_facts.alarm_arn(PARTITION, REGION, ACCOUNT, alarm_name)
            out += [Action(f"{scope.label}/{name}", arn, scope(target)) for key in ACTION_KEYS
                    for target in props.get(key, [])]
    return out


def publish_problems(all_scopes: list[Scope], action: Action, *, secure: bool = True) -> list[str]:
    """What stops CloudWatch delivering ``action`` (empty: SNS and KMS allow it)."""
    context = {"aws:SourceArn": action.alarm_arn, "aws:SourceAccount": ACCOUNT, "aws:SourceOwner": ACCOUNT,
               "aws:SecureTransport": "true" if secure else "false"}
    topics = [(scope, name) for scope in all_scopes for name, r in scope.resources.items()
              if r["Type"] == "AWS::SNS::Topic" and scope.ref(name) == action.target]
    if not topics:
        return [f"{action.alarm}: {action.target} is not a topic of this synth"]
    ((scope, topic),) = topics
    policies = [scope(r["Properties"]["PolicyDocument"]) for s2 in all_scopes for r in s2.resources.values()
                if r["Type"] == "AWS::SNS::TopicPolicy" and action.target in s2(r["Properties"]["Topics"])]
    if len(policies) > 1:
        return [f"{action.alarm}: {len(policies)} topic policies on {action.target}: each replaces the other"]
    topic_policy = policies[0] if policies else sns_default_policy(action.target)
    problems = []
    verdict = decide(topic_policy, Request(alarm_facts.CLOUDWATCH_PRINCIPAL, "sns:Publish", action.target, context))
    if verdict != ALLOW:
        problems.append(f"{action.alarm}: sns:Publish on {action.target}: {verdict}")
    key_id = scope(scope.resources[topic]["Properties"].get("KmsMasterKeyId"))
    if key_id is None:
        return problems
    keys = [(s2, name) for s2 in all_scopes for name, r in s2.resources.items() if r["Type"] == "AWS::KMS::Key"
            and key_id in (s2.ref(name), s2.get_att(name, "Arn"))]
    if not keys:
        return [*problems, f"{action.alarm}: the topic's key {key_id} is not a key of this synth (CloudWatch may not "
                           "use the AWS managed SNS key)"]
    ((key_scope, key),) = keys
    key_policy = key_scope(key_scope.resources[key]["Properties"]["KeyPolicy"])
    for kms_action in KEY_ACTIONS:
        verdict = decide(key_policy, Request(alarm_facts.CLOUDWATCH_PRINCIPAL, kms_action,
                                             key_scope.get_att(key, "Arn"), context))
        if verdict != ALLOW:
            problems.append(f"{action.alarm}: {kms_action} on {key_id}: {verdict}")
    return problems


# ------------------------------------------------------------------------------------------------------ the synths
def _default_with_topic() -> dict[str, Any]:
    data = load_yaml(DEFAULT_CONFIG)
    data["observability"] = {"alarms": {"createTopic": True, "subscriptions": SUBSCRIBERS}}
    return data


def _nested_fleet_with_topic() -> dict[str, Any]:
    data = gen_config().config(4, "verify", namespace_count=2, layout="perNamespace")
    data["observability"] = {"alarms": {"createTopic": True, "noInvocationsMinutes": 60}}
    return data


CONFIGS = {"default": _default_with_topic, "perNamespace": _nested_fleet_with_topic}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def synthesized(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Scope]]:
    s = synth_config(CONFIGS[request.param](), tmp_path_factory.mktemp(f"alarms-{request.param}"), nag=False)
    return request.param, scopes(s)


def test_every_alarm_action_reaches_the_topic_through_its_policy_and_key(synthesized) -> None:
    # GIVEN a synth with createTopic (one stack; alarms in nested stacks)
    name, all_scopes = synthesized
    actions = alarm_actions(all_scopes)
    # THEN there are actions, and each one CloudWatch takes is allowed by the topic policy and the key policy
    assert actions, name
    if name == "perNamespace":
        assert any(".nested.template.json/" in a.alarm for a in actions), "the fleet's alarms are in nested stacks"
    assert [p for a in actions for p in publish_problems(all_scopes, a)] == []


def test_the_same_chain_refuses_other_alarms_and_publishing_without_tls(synthesized) -> None:
    _, all_scopes = synthesized
    action = alarm_actions(all_scopes)[0]
    # an alarm of another stack (a name this stack did not give), of another account, of another region
    for other in (action.alarm_arn.replace(":alarm:", ":alarm:Other-"),
                  action.alarm_arn.replace(ACCOUNT, "444455556666"), action.alarm_arn.replace(REGION, "eu-west-1")):
        (problem, *_) = publish_problems(all_scopes, Action(action.alarm, other, action.target))
        assert f"sns:Publish on {action.target}: {IMPLICIT_DENY}" in problem
    (problem, *_) = publish_problems(all_scopes, action, secure=False)
    assert f"sns:Publish on {action.target}: {EXPLICIT_DENY}" in problem


def test_past_the_size_budget_the_policy_names_the_stacks_alarm_prefix(monkeypatch, tmp_path: Path) -> None:
    # GIVEN exact ARNs over the budget (here: any) WHEN synthesized
    monkeypatch.setattr(alarm_facts, "SOURCE_ARNS_MAX_CHARS", 1)
    s = synth_config(_default_with_topic(), tmp_path, nag=False)
    (policy,) = [r["Properties"]["PolicyDocument"] for r in s.resources("AWS::SNS::TopicPolicy").values()]
    (allow,) = [st for st in policy["Statement"] if st["Effect"] == "Allow"]
    # THEN the statement matches this stack's alarm names by their prefix, and the chain still holds
    assert allow["Condition"]["ArnLike"] == {"aws:SourceArn": [
        f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:HyperPodInference-*"]}
    all_scopes = scopes(s)
    assert [p for a in alarm_actions(all_scopes) for p in publish_problems(all_scopes, a)] == []


def test_the_check_fails_a_topic_policy_that_only_denies() -> None:
    # GIVEN a created topic whose policy is the TLS-only deny alone (what enforce_ssl writes without an allow)
    topic_arn = f"arn:aws:sns:{REGION}:{ACCOUNT}:t"
    template = {"Resources": {
        "Key": {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": {"Statement": [
            {"Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"},
             "Action": ["kms:Decrypt", "kms:GenerateDataKey*"], "Resource": "*"}]}}},
        "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "t",
                                                            "KmsMasterKeyId": {"Fn::GetAtt": ["Key", "Arn"]}}},
        "Policy": {"Type": "AWS::SNS::TopicPolicy", "Properties": {"Topics": [{"Ref": "Topic"}], "PolicyDocument": {
            "Statement": [{"Effect": "Deny", "Principal": "*", "Action": "sns:Publish", "Resource": {"Ref": "Topic"},
                           "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}}},
        "Alarm": {"Type": "AWS::CloudWatch::CompositeAlarm", "Properties": {
            "AlarmName": "a", "AlarmActions": [{"Ref": "Topic"}]}}}}
    all_scopes = [Scope("S", template)]
    # THEN the publish is denied implicitly: nothing allows CloudWatch (the topic policy replaced SNS's default)
    assert [p for a in alarm_actions(all_scopes) for p in publish_problems(all_scopes, a)] == [
        f"S/Alarm: sns:Publish on {topic_arn}: {IMPLICIT_DENY}"]
    # AND without any topic policy, SNS's default one lets the account's alarms publish
    del template["Resources"]["Policy"]
    assert [p for a in alarm_actions(all_scopes) for p in publish_problems(all_scopes, a)] == []
