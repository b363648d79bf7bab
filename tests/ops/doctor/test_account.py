"""``doctor``'s ``alarms.topic`` against the moto account (tests/ops/conftest.py): a topic of the user's
(``observability.alarms.snsTopicArn``) passes only when its policy and key let CloudWatch publish for this stack's
alarms and a subscription is confirmed; each fault fails naming what to add, with read calls only."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hyperpod_inference.ops.aws import is_read_operation
from tests.fake_aws import ACCOUNT, REGION, Account
from tests.ops.conftest import full_config, run_doctor, run_init

CHECK = "alarms.topic"
STACK_ALARMS = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:HyperPodInference-*"
TLS_ONLY = {"Effect": "Deny", "Principal": "*", "Action": "sns:Publish", "Resource": "*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}


@pytest.fixture
def config(account: Account) -> dict:
    status, path = run_init(account)
    assert status == 0
    import yaml

    data = full_config(account, yaml.safe_load(path.read_text()))
    data["endpoints"][0]["sagemakerEndpointName"] = "qwen-s3"  # one endpoint with alarms
    return data


def _alarm_results(account: Account, data: dict) -> list[dict]:
    _, results = run_doctor(account, data, "--only", "alarms")
    return results


def _allow(resource: str, arn_like: str = STACK_ALARMS, actions: Any = "sns:Publish") -> dict:
    return {"Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"}, "Action": actions,
            "Resource": resource, "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT},
                                                "ArnLike": {"aws:SourceArn": arn_like}}}


def _set_policy(account: Account, *statements: dict) -> None:
    account.client("sns").set_topic_attributes(
        TopicArn=account.ids["alarm_topic"], AttributeName="Policy",
        AttributeValue=json.dumps({"Version": "2012-10-17", "Statement": list(statements)}))


def test_the_default_policy_and_a_confirmed_queue_pass_with_read_calls_only(account, config):
    # GIVEN the account's topic: SNS's default policy, a confirmed SQS subscriber
    before = account.moto_state()
    account.calls.clear()
    results = _alarm_results(account, config)
    # THEN the policy and the subscriptions pass, and doctor only read
    assert [(r["status"], r["resource"]) for r in results] == [
        ("pass", f"SNS topic {account.ids['alarm_topic']}"),
        ("pass", f"SNS topic {account.ids['alarm_topic']} subscriptions")]
    assert "1 confirmed (sqs)" in results[1]["detail"]
    operations = {op for _, _, op in account.calls}
    assert {"GetTopicAttributes", "ListSubscriptionsByTopic"} <= operations
    assert all(is_read_operation(op) for op in operations)
    assert account.moto_state() == before


def test_a_policy_that_only_denies_fails_and_names_the_statement_to_add(account, config):
    # GIVEN the topic's policy replaced by the TLS-only deny (SNS's default is gone)
    _set_policy(account, TLS_ONLY)
    (policy, _) = _alarm_results(account, config)
    # THEN it fails naming the stack's alarm, and the fix is a statement scoped to this stack's alarms
    assert policy["status"] == "fail"
    assert "HyperPodInference-inference-qwen-s3-health" in policy["detail"]
    added = json.loads(policy["fix"].split(": ", 1)[1])
    assert added["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT},
                                  "ArnLike": {"aws:SourceArn": STACK_ALARMS}}
    # WHEN the owner adds that statement THEN it passes; a statement for another stack's alarms does not
    _set_policy(account, TLS_ONLY, added)
    assert _alarm_results(account, config)[0]["status"] == "pass"
    _set_policy(account, TLS_ONLY, _allow(account.ids["alarm_topic"], STACK_ALARMS.replace("HyperPod", "Other")))
    assert _alarm_results(account, config)[0]["status"] == "fail"


def test_a_policy_doctor_cannot_evaluate_is_a_warning(account, config):
    _set_policy(account, {**_allow("*"), "Condition": {"DateGreaterThan": {"aws:CurrentTime": "2020-01-01"}}})
    (policy, _) = _alarm_results(account, config)
    assert policy["status"] == "warn" and "cannot evaluate" in policy["detail"]


def test_a_missing_topic_fails(account, config):
    config["observability"]["alarms"]["snsTopicArn"] = account.ids["alarm_topic"] + "-gone"
    (result,) = _alarm_results(account, config)
    assert result["status"] == "fail" and result["detail"] == "no such topic"


def test_a_topic_under_the_aws_managed_key_fails(account, config):
    account.client("sns").set_topic_attributes(TopicArn=account.ids["alarm_topic"], AttributeName="KmsMasterKeyId",
                                               AttributeValue="alias/aws/sns")
    key = [r for r in _alarm_results(account, config) if r["resource"].startswith("KMS key")]
    assert [(r["status"], r["detail"]) for r in key] == [
        ("fail", "the AWS managed SNS key: CloudWatch may not use it")]


def test_a_customer_key_passes_only_when_its_policy_lets_cloudwatch_use_it(account, config):
    # GIVEN the topic under a customer managed key whose policy admits only the account
    kms = account.client("kms")
    root = {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "kms:*",
            "Resource": "*"}
    key = kms.create_key(Policy=json.dumps({"Version": "2012-10-17", "Statement": [root]}))["KeyMetadata"]
    account.client("sns").set_topic_attributes(TopicArn=account.ids["alarm_topic"], AttributeName="KmsMasterKeyId",
                                               AttributeValue=key["Arn"])
    (result,) = [r for r in _alarm_results(account, config) if r["resource"].startswith("KMS key")]
    # THEN it fails: CloudWatch's publish would be refused by KMS
    assert result["status"] == "fail" and "HyperPodInference-inference-qwen-s3-health" in result["detail"]
    # WHEN the key policy gets the statement doctor names THEN it passes
    added = json.loads(result["fix"].split(": ", 1)[1])
    assert added["Action"] == ["kms:Decrypt", "kms:GenerateDataKey*"]
    kms.put_key_policy(KeyId=key["KeyId"], PolicyName="default",
                       Policy=json.dumps({"Version": "2012-10-17", "Statement": [root, added]}))
    (result,) = [r for r in _alarm_results(account, config) if r["resource"].startswith("KMS key")]
    assert result["status"] == "pass"


def test_only_unconfirmed_subscriptions_fail_until_one_confirms(account, config):
    # GIVEN a topic whose only subscriber is an e-mail address that has not confirmed (SNS: PendingConfirmation)
    sns = account.client("sns")
    topic = sns.create_topic(Name="oncall-mail")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="email", Endpoint="oncall@example.com")
    config["observability"]["alarms"]["snsTopicArn"] = topic
    (_, subs) = _alarm_results(account, config)
    # THEN it fails: the alarms reach no one yet, and the fix is the subscribe command
    assert subs["status"] == "fail"
    assert subs["detail"] == "no confirmed subscription (1 waiting for confirmation): the alarms reach no one"
    assert subs["fix"].startswith(f"aws sns subscribe --topic-arn {topic} --protocol email")
    # WHEN the address confirms THEN it passes
    account.confirmed.add("oncall@example.com")
    assert _alarm_results(account, config)[1]["status"] == "pass"


def test_without_an_sns_topic_arn_the_check_says_nothing(account, config):
    config["observability"] = {"alarms": {"createTopic": True}}
    assert _alarm_results(account, config) == []
