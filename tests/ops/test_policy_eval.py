"""The policy evaluator (ops/policy_eval.py) on AWS's documented examples: an explicit deny wins, the condition
operators the library's policies and AWS's own examples use, wildcards in actions and ARNs, and every principal form;
what it does not know it refuses to decide."""

from __future__ import annotations

import pytest

from hyperpod_inference.ops.policy_eval import (
    ALLOW,
    EXPLICIT_DENY,
    IMPLICIT_DENY,
    Request,
    Unsupported,
    decide,
)

ACCOUNT = "111122223333"
TOPIC = f"arn:aws:sns:us-east-1:{ACCOUNT}:MyTopic"
ALARM = f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:ServerCpuTooHigh"
CLOUDWATCH = "cloudwatch.amazonaws.com"


def publish(context: dict | None = None, *, principal: str = CLOUDWATCH, resource: str = TOPIC) -> Request:
    return Request(principal, "sns:Publish", resource, context or {})


def policy(*statements: dict) -> dict:
    return {"Version": "2012-10-17", "Statement": list(statements)}


# The knowledge-center answer to "alarm is not authorized to perform SNS:Publish", with its condition
# (repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger).
ALLOW_PUBLISH_ALARMS = {
    "Sid": "Allow_Publish_Alarms", "Effect": "Allow", "Principal": {"Service": [CLOUDWATCH]},
    "Action": "sns:Publish", "Resource": TOPIC,
    "Condition": {"ArnLike": {"aws:SourceArn": f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:*"}}}
# The TLS-only statement (aws-cdk-lib's enforceSSL; AWS's "deny requests that are not over HTTPS" example).
DENY_INSECURE = {"Sid": "AllowPublishThroughSSLOnly", "Effect": "Deny", "Principal": "*", "Action": "sns:Publish",
                 "Resource": TOPIC, "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
# SNS's default topic policy (its __default_statement_ID), abridged to the publish action.
SNS_DEFAULT = {"Sid": "__default_statement_ID", "Effect": "Allow", "Principal": {"AWS": "*"},
               "Action": ["SNS:GetTopicAttributes", "SNS:Subscribe", "SNS:Publish"], "Resource": TOPIC,
               "Condition": {"StringEquals": {"AWS:SourceOwner": ACCOUNT}}}


def test_the_knowledge_center_statement_allows_an_alarm_of_its_account_and_region_only():
    doc = policy(ALLOW_PUBLISH_ALARMS)
    assert decide(doc, publish({"aws:SourceArn": ALARM})) == ALLOW
    assert decide(doc, publish({"aws:SourceArn": ALARM.replace("us-east-1", "eu-west-1")})) == IMPLICIT_DENY
    assert decide(doc, publish({"aws:SourceArn": ALARM.replace(ACCOUNT, "444455556666")})) == IMPLICIT_DENY
    # a key the request lacks fails a positive operator
    assert decide(doc, publish()) == IMPLICIT_DENY
    # another service principal, another action or another topic: the statement does not apply
    assert decide(doc, publish({"aws:SourceArn": ALARM}, principal="events.amazonaws.com")) == IMPLICIT_DENY
    assert decide(doc, Request(CLOUDWATCH, "sns:Subscribe", TOPIC, {"aws:SourceArn": ALARM})) == IMPLICIT_DENY
    assert decide(doc, publish({"aws:SourceArn": ALARM}, resource=TOPIC + "2")) == IMPLICIT_DENY


def test_an_explicit_deny_wins_over_any_allow():
    # "Policy evaluation logic": an explicit deny in any applicable statement overrides every allow
    doc = policy(ALLOW_PUBLISH_ALARMS, DENY_INSECURE)
    assert decide(doc, publish({"aws:SourceArn": ALARM, "aws:SecureTransport": "false"})) == EXPLICIT_DENY
    assert decide(doc, publish({"aws:SourceArn": ALARM, "aws:SecureTransport": "true"})) == ALLOW
    # Bool with the key absent does not match: the deny does not apply, nothing else is decided by it
    assert decide(doc, publish({"aws:SourceArn": ALARM})) == ALLOW
    assert decide(policy(DENY_INSECURE), publish({"aws:SecureTransport": "true"})) == IMPLICIT_DENY


def test_the_sns_default_policy_lets_a_service_publish_for_its_owner_account():
    # {"AWS": "*"} is every principal, services included; AWS:SourceOwner names the account the source belongs to
    doc = policy(SNS_DEFAULT)
    assert decide(doc, publish({"aws:SourceOwner": ACCOUNT})) == ALLOW
    assert decide(doc, publish({"aws:SourceOwner": "444455556666"})) == IMPLICIT_DENY


def test_string_equals_on_source_account_and_its_negation():
    scoped = {**ALLOW_PUBLISH_ALARMS, "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT},
                                                    "ArnEquals": {"aws:SourceArn": [ALARM]}}}
    # every operator and key of a condition must match
    assert decide(policy(scoped), publish({"aws:SourceArn": ALARM, "aws:SourceAccount": ACCOUNT})) == ALLOW
    assert decide(policy(scoped), publish({"aws:SourceArn": ALARM, "aws:SourceAccount": "444455556666"})) \
        == IMPLICIT_DENY
    assert decide(policy(scoped), publish({"aws:SourceAccount": ACCOUNT})) == IMPLICIT_DENY
    # values of StringEquals are case-sensitive, key names are not
    upper = {**scoped, "Condition": {"StringEquals": {"AWS:SOURCEACCOUNT": ACCOUNT}}}
    assert decide(policy(upper), publish({"aws:SourceAccount": ACCOUNT})) == ALLOW
    named = {**scoped, "Condition": {"StringEquals": {"aws:SourceAccount": "Abc"}}}
    assert decide(policy(named), publish({"aws:SourceAccount": "abc"})) == IMPLICIT_DENY
    folded = {**scoped, "Condition": {"StringEqualsIgnoreCase": {"aws:SourceAccount": "Abc"}}}
    assert decide(policy(folded), publish({"aws:SourceAccount": "abc"})) == ALLOW
    # a negated operator: true when no value matches, and when the key is missing (IAM's condition-operator page)
    other = {**scoped, "Effect": "Deny", "Condition": {"StringNotEquals": {"aws:SourceAccount": ACCOUNT}}}
    assert decide(policy(other), publish({"aws:SourceAccount": "444455556666"})) == EXPLICIT_DENY
    assert decide(policy(other), publish({"aws:SourceAccount": ACCOUNT})) == IMPLICIT_DENY
    assert decide(policy(other), publish()) == EXPLICIT_DENY


def test_arn_operators_match_each_part_with_wildcards():
    def arn_like(pattern: str, operator: str = "ArnLike") -> dict:
        return policy({**ALLOW_PUBLISH_ALARMS, "Condition": {operator: {"aws:SourceArn": pattern}}})

    assert decide(arn_like(f"arn:aws:cloudwatch:*:{ACCOUNT}:alarm:Server*"), publish({"aws:SourceArn": ALARM})) == ALLOW
    assert decide(arn_like(f"arn:aws:cloudwatch:us-east-?:{ACCOUNT}:alarm:*"), publish({"aws:SourceArn": ALARM})) \
        == ALLOW
    # ArnEquals takes the same wildcards; an exact ARN matches only itself (case-sensitive)
    assert decide(arn_like(ALARM, "ArnEquals"), publish({"aws:SourceArn": ALARM})) == ALLOW
    assert decide(arn_like(ALARM.lower(), "ArnEquals"), publish({"aws:SourceArn": ALARM})) == IMPLICIT_DENY
    # a wildcard does not cross into another part of the ARN, and a value that is no ARN never matches
    assert decide(arn_like("arn:aws:cloudwatch:*:alarm:ServerCpuTooHigh"), publish({"aws:SourceArn": ALARM})) \
        == IMPLICIT_DENY
    assert decide(arn_like("*"), publish({"aws:SourceArn": "not-an-arn"})) == IMPLICIT_DENY
    # ArnNotLike with the key missing is true (a Deny with it applies)
    deny = policy({**DENY_INSECURE, "Condition": {"ArnNotLike": {"aws:SourceArn": ALARM}}})
    assert decide(deny, publish()) == EXPLICIT_DENY
    assert decide(deny, publish({"aws:SourceArn": ALARM})) == IMPLICIT_DENY


def test_if_exists_and_null():
    exists = policy({**ALLOW_PUBLISH_ALARMS, "Condition": {"ArnLikeIfExists": {"aws:SourceArn": ALARM}}})
    assert decide(exists, publish()) == ALLOW
    assert decide(exists, publish({"aws:SourceArn": ALARM + "x"})) == IMPLICIT_DENY
    null = policy({**ALLOW_PUBLISH_ALARMS, "Condition": {"Null": {"aws:SourceArn": "false"}}})
    assert decide(null, publish({"aws:SourceArn": ALARM})) == ALLOW
    assert decide(null, publish()) == IMPLICIT_DENY


def test_actions_match_case_insensitively_with_wildcards_and_not_action():
    for action in ("SNS:Publish", "sns:*", "sns:Pub*", "*", ["sqs:SendMessage", "sns:publish"]):
        doc = policy({**ALLOW_PUBLISH_ALARMS, "Action": action, "Condition": {}})
        assert decide(doc, publish()) == ALLOW, action
    everything_else = policy({**ALLOW_PUBLISH_ALARMS, "Action": None, "NotAction": "sns:Publish", "Condition": {}})
    everything_else["Statement"][0].pop("Action")
    assert decide(everything_else, publish()) == IMPLICIT_DENY
    assert decide(everything_else, Request(CLOUDWATCH, "sns:Subscribe", TOPIC)) == ALLOW


def test_resources_match_case_sensitively_with_wildcards():
    for resource, verdict in ((f"arn:aws:sns:*:{ACCOUNT}:*", ALLOW), ("*", ALLOW), (TOPIC.lower(), IMPLICIT_DENY),
                              (f"arn:aws:sns:us-east-1:{ACCOUNT}:Other", IMPLICIT_DENY)):
        doc = policy({**ALLOW_PUBLISH_ALARMS, "Resource": resource, "Condition": {}})
        assert decide(doc, publish()) == verdict, resource


@pytest.mark.parametrize(("principal", "caller", "verdict"), [
    ("*", CLOUDWATCH, ALLOW),
    ({"AWS": "*"}, CLOUDWATCH, ALLOW),
    ({"Service": CLOUDWATCH}, CLOUDWATCH, ALLOW),
    ({"Service": ["events.amazonaws.com", CLOUDWATCH]}, CLOUDWATCH, ALLOW),
    ({"Service": "events.amazonaws.com"}, CLOUDWATCH, IMPLICIT_DENY),
    # an account principal admits that account's IAM principals, never a service principal
    ({"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, CLOUDWATCH, IMPLICIT_DENY),
    ({"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, f"arn:aws:iam::{ACCOUNT}:role/oncall", ALLOW),
    ({"AWS": ACCOUNT}, f"arn:aws:iam::{ACCOUNT}:role/oncall", ALLOW),
    ({"AWS": ACCOUNT}, "arn:aws:iam::444455556666:role/oncall", IMPLICIT_DENY),
    ({"AWS": f"arn:aws:iam::{ACCOUNT}:role/oncall"}, f"arn:aws:iam::{ACCOUNT}:role/oncall", ALLOW),
    ({"AWS": f"arn:aws:iam::{ACCOUNT}:role/oncall"}, f"arn:aws:iam::{ACCOUNT}:role/other", IMPLICIT_DENY),
])
def test_principal_forms(principal, caller, verdict):
    doc = policy({**ALLOW_PUBLISH_ALARMS, "Principal": principal, "Condition": {}})
    assert decide(doc, publish(principal=caller)) == verdict


def test_not_principal_applies_to_everyone_else():
    doc = policy({**DENY_INSECURE, "Condition": {}, "NotPrincipal": {"Service": CLOUDWATCH}},
                 {**ALLOW_PUBLISH_ALARMS, "Principal": "*", "Condition": {}})
    doc["Statement"][0].pop("Principal")
    assert decide(doc, publish()) == ALLOW
    assert decide(doc, publish(principal="events.amazonaws.com")) == EXPLICIT_DENY


def test_a_policy_given_as_json_text_is_read():
    import json

    assert decide(json.dumps(policy(ALLOW_PUBLISH_ALARMS)), publish({"aws:SourceArn": ALARM})) == ALLOW


@pytest.mark.parametrize("statement", [
    {**ALLOW_PUBLISH_ALARMS, "Condition": {"NumericLessThan": {"aws:MultiFactorAuthAge": "3600"}}},
    {**ALLOW_PUBLISH_ALARMS, "Condition": {"ForAnyValue:StringEquals": {"aws:TagKeys": ["a"]}}},
    {**ALLOW_PUBLISH_ALARMS, "Principal": {"Federated": "cognito-identity.amazonaws.com"}},
])
def test_what_it_does_not_know_it_refuses_to_decide(statement):
    with pytest.raises(Unsupported):
        decide(policy(statement), publish({"aws:SourceArn": ALARM}))
