"""``doctor``'s check of an alarm topic the user owns (``observability.alarms.snsTopicArn``): the stack never changes
that topic, so nothing at synth says whether an alarm would reach anyone through it.

Read-only (``GetTopicAttributes``, ``DescribeKey``, ``GetKeyPolicy``, ``ListSubscriptionsByTopic``), it decides with
:mod:`.policy_eval` what SNS and KMS would decide for CloudWatch's publish of each composite alarm the stack creates
(``aws:SourceArn`` the alarm, ``aws:SourceAccount`` / ``aws:SourceOwner`` the config's account, over TLS):
- the topic's access policy lets ``cloudwatch.amazonaws.com`` ``sns:Publish``;
- an encrypted topic's key is a customer managed key whose policy lets CloudWatch use it (never ``alias/aws/sns``);
- at least one subscription is confirmed (an unconfirmed e-mail or HTTPS subscriber receives nothing).
Registered with doctor's ``check`` decorator (doctor.py imports this module).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from ..facts import alarms as alarm_facts
from ..facts import naming
from .doctor import FAIL, PASS, WARN, Context, Result, check
from .policy_eval import ALLOW, Request, Unsupported, decide

CHECK_ID = "alarms.topic"


def alarm_arns(ctx: Context) -> list[str]:
    """The composite alarms the stack would create (the ones that notify the topic), as ARNs; with none yet, an
    example of this stack's alarm names."""
    scope = ctx.plan().context.name_scope
    partition = ctx.plan().context.partition
    names = [naming.alarm_name(scope, ep.namespace, ep.name, "health") for ep in ctx.config.endpoints
             if ep.sagemaker_endpoint_name and (ep.alarms is None or ep.alarms.enabled)]
    return [alarm_facts.alarm_arn(partition, ctx.region, ctx.account, name)
            for name in names or [naming.alarm_name(scope, "<namespace>", "<endpoint>", "health")]]


def _requests(ctx: Context, action: str, resource: str) -> list[Request]:
    return [Request(alarm_facts.CLOUDWATCH_PRINCIPAL, action, resource, {
        alarm_facts.SOURCE_ARN: arn, alarm_facts.SOURCE_ACCOUNT: ctx.account, "aws:SourceOwner": ctx.account,
        "aws:SecureTransport": "true"}) for arn in alarm_arns(ctx)]


def _denied(policy: str, requests: list[Request]) -> list[str] | None:
    """The alarms whose request ``policy`` does not allow (None: a form the evaluator cannot decide)."""
    try:
        return [r.context[alarm_facts.SOURCE_ARN].rsplit(":", 1)[-1]  # type: ignore[union-attr]
                for r in requests if decide(policy, r) != ALLOW]
    except Unsupported:
        return None


def _statement(ctx: Context, actions: list[str], resource: str) -> str:
    scope = ctx.plan().context.name_scope
    pattern = alarm_facts.alarm_arn(ctx.plan().context.partition, ctx.region, ctx.account, f"{scope}-*")
    return json.dumps({"Effect": "Allow", "Principal": {"Service": alarm_facts.CLOUDWATCH_PRINCIPAL},
                       "Action": actions if len(actions) > 1 else actions[0], "Resource": resource, "Condition": {
                           "StringEquals": {alarm_facts.SOURCE_ACCOUNT: ctx.account},
                           "ArnLike": {alarm_facts.SOURCE_ARN: pattern}}}, separators=(",", ":"))


@check(CHECK_ID, "observability.alarms.snsTopicArn lets CloudWatch publish (policy and key) and has a confirmed "
                 "subscription", lambda c: f"SNS topic {c.config.observability.alarms.sns_topic_arn}")
def check_alarm_topic(ctx: Context) -> Iterator[Result]:
    alarms = ctx.config.observability.alarms
    if alarms is None or not alarms.sns_topic_arn:
        return
    arn = alarms.sns_topic_arn
    resource = f"SNS topic {arn}"
    found = ctx.aws.call("sns", "GetTopicAttributes", TopicArn=arn, missing=("NotFound",))
    if found is None:
        yield Result(CHECK_ID, FAIL, resource, "no such topic",
                     "set observability.alarms.snsTopicArn to a topic of yours, or createTopic: true")
        return
    attributes = found.get("Attributes") or {}
    yield _policy_result(ctx, resource, arn, attributes.get("Policy") or "{}")
    key = attributes.get("KmsMasterKeyId")
    if key:
        yield _key_result(ctx, key)
    yield _subscriptions_result(ctx, resource, arn)


def _policy_result(ctx: Context, resource: str, arn: str, policy: str) -> Result:
    denied = _denied(policy, _requests(ctx, alarm_facts.PUBLISH_ACTION, arn))
    if denied is None:
        return Result(CHECK_ID, WARN, resource, "its access policy uses a condition or principal form doctor cannot "
                      "evaluate; check by hand that it lets cloudwatch.amazonaws.com sns:Publish",
                      f"the statement: {_statement(ctx, [alarm_facts.PUBLISH_ACTION], arn)}")
    if denied:
        return Result(CHECK_ID, FAIL, resource, f"its access policy does not let CloudWatch publish for "
                      f"{', '.join(denied)}: those alarms would change state and page no one",
                      f"add to the topic's access policy: {_statement(ctx, [alarm_facts.PUBLISH_ACTION], arn)}")
    return Result(CHECK_ID, PASS, resource, "its access policy lets CloudWatch publish for this stack's alarms")


def _key_result(ctx: Context, key: str) -> Result:
    resource = f"KMS key {key} (the alarm topic's)"
    fix = (f"encrypt the topic with a customer managed key whose policy has: "
           f"{_statement(ctx, list(alarm_facts.KEY_ACTIONS), '*')}")
    if key.endswith(alarm_facts.AWS_MANAGED_SNS_KEY):
        return Result(CHECK_ID, FAIL, resource, "the AWS managed SNS key: CloudWatch may not use it", fix)
    described = ctx.aws.call("kms", "DescribeKey", KeyId=key, missing=("NotFoundException",))
    if described is None:
        return Result(CHECK_ID, FAIL, resource, "no such key: SNS cannot encrypt what CloudWatch publishes", fix)
    metadata = described["KeyMetadata"]
    if metadata.get("KeyManager") == "AWS":
        return Result(CHECK_ID, FAIL, resource, "an AWS managed key: CloudWatch may not use it", fix)
    policy = ctx.aws.call("kms", "GetKeyPolicy", KeyId=metadata["KeyId"], PolicyName="default") or {}
    # what CloudWatch calls: kms:GenerateDataKey and kms:Decrypt (the policy grants kms:GenerateDataKey*)
    verdicts = [_denied(policy.get("Policy") or "{}", _requests(ctx, action.rstrip("*"), metadata["Arn"]))
                for action in alarm_facts.KEY_ACTIONS]
    if any(v is None for v in verdicts):
        return Result(CHECK_ID, WARN, resource, "its key policy uses a form doctor cannot evaluate; check by hand "
                      "that it lets cloudwatch.amazonaws.com use kms:Decrypt and kms:GenerateDataKey*", fix)
    denied = sorted({name for v in verdicts for name in v or []})
    if denied:
        return Result(CHECK_ID, FAIL, resource, f"its key policy does not let CloudWatch encrypt for "
                      f"{', '.join(denied)}: SNS refuses those alarms' messages", f"add to the key policy: "
                      f"{_statement(ctx, list(alarm_facts.KEY_ACTIONS), '*')}")
    return Result(CHECK_ID, PASS, resource, "its key policy lets CloudWatch use it for this stack's alarms")


def _subscriptions_result(ctx: Context, resource: str, arn: str) -> Result:
    subscriptions = list(ctx.aws.pages("sns", "ListSubscriptionsByTopic", "Subscriptions", token="NextToken",
                                       TopicArn=arn))
    confirmed = [s for s in subscriptions if str(s.get("SubscriptionArn", "")).startswith("arn:")]
    pending = len(subscriptions) - len(confirmed)
    if not confirmed:
        waiting = f" ({pending} waiting for confirmation)" if pending else ""
        return Result(CHECK_ID, FAIL, f"{resource} subscriptions", f"no confirmed subscription{waiting}: the alarms "
                      "reach no one", f"aws sns subscribe --topic-arn {arn} --protocol email --notification-endpoint "
                      "<you@example.com>, then confirm from the message")
    protocols = sorted({str(s.get("Protocol")) for s in confirmed})
    return Result(CHECK_ID, PASS, f"{resource} subscriptions", f"{len(confirmed)} confirmed ({', '.join(protocols)})"
                  + (f", {pending} waiting for confirmation" if pending else ""))
