"""The ``account`` family of ``doctor``: the credentials, the CDK bootstrap stack, and the resources of the account the
config names by ARN or name and the stack only uses (a model's S3 prefix, a token's secret, KMS keys, the alarm topic).

``alarms.topic`` is here because the topic is such a resource: the user's, named by ``observability.alarms.snsTopicArn``
and never changed by the stack (like a ``kmsKeyArn`` or a ``secretsManagerArn``), so nothing at synth says whether an
alarm would reach anyone through it. Read-only (``GetTopicAttributes``, ``DescribeKey``, ``GetKeyPolicy``,
``ListSubscriptionsByTopic``), it decides with :mod:`..policy_eval` what SNS and KMS would decide for CloudWatch's
publish of each composite alarm the stack creates (``aws:SourceArn`` the alarm, ``aws:SourceAccount`` /
``aws:SourceOwner`` the config's account, over TLS):
- the topic's access policy lets ``cloudwatch.amazonaws.com`` ``sns:Publish``;
- an encrypted topic's key is a customer managed key whose policy lets CloudWatch use it (never ``alias/aws/sns``);
- at least one subscription is confirmed (an unconfirmed e-mail or HTTPS subscriber receives nothing).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ...facts import alarms as alarm_facts
from ...facts import naming
from ..policy_eval import ALLOW, Request, Unsupported, decide
from .base import FAIL, PASS, WARN, Context, Family, Result, each

FAMILY = Family("account", "the credentials, the CDK bootstrap, and the account's resources the config names")

#: The oldest CDK bootstrap stack the synthesized template accepts (its ``CheckBootstrapVersion`` rule; a test
#: checks this against a synthesized template).
MIN_BOOTSTRAP_VERSION = 6
TOOLKIT_STACK = "CDKToolkit"
ALARM_TOPIC = "alarms.topic"


@FAMILY.check("identity.account", "the caller's credentials are of env.account", lambda c: "sts get-caller-identity")
def check_account(ctx: Context) -> Iterator[Result]:
    me = ctx.identity()
    if me["Account"] != ctx.account:
        yield Result("identity.account", FAIL, me["Arn"],
                     f"the credentials are of account {me['Account']}; the config deploys to env.account "
                     f"{ctx.account}", "use credentials of that account (AWS_PROFILE), or set env.account")
    else:
        yield Result("identity.account", PASS, me["Arn"], f"account {ctx.account}")


@FAMILY.check("bootstrap.cdk-toolkit", "the CDK bootstrap stack exists at a version the template needs",
              lambda c: f"CloudFormation stack {TOOLKIT_STACK} in {c.region}")
def check_bootstrap(ctx: Context) -> Iterator[Result]:
    resource = f"CloudFormation stack {TOOLKIT_STACK} in {ctx.region}"
    fix = f"make bootstrap (cdk bootstrap aws://{ctx.account}/{ctx.region})"
    found = ctx.aws.call("cloudformation", "DescribeStacks", StackName=TOOLKIT_STACK, missing=("ValidationError",))
    stacks = (found or {}).get("Stacks") or []
    if not stacks:
        yield Result("bootstrap.cdk-toolkit", FAIL, resource, "the account and Region are not bootstrapped", fix)
        return
    stack = stacks[0]
    status = stack.get("StackStatus", "")
    outputs = {o.get("OutputKey"): o.get("OutputValue") for o in stack.get("Outputs") or []}
    version = outputs.get("BootstrapVersion")
    if status.endswith(("FAILED", "IN_PROGRESS")) or status.startswith(("DELETE", "ROLLBACK")):
        yield Result("bootstrap.cdk-toolkit", FAIL, resource, f"the stack is {status}", fix)
    elif version is None or not str(version).isdigit():
        yield Result("bootstrap.cdk-toolkit", FAIL, resource, "the stack has no BootstrapVersion output", fix)
    elif int(version) < MIN_BOOTSTRAP_VERSION:
        yield Result("bootstrap.cdk-toolkit", FAIL, resource,
                     f"bootstrap version {version}; the template needs at least {MIN_BOOTSTRAP_VERSION}", fix)
    else:
        yield Result("bootstrap.cdk-toolkit", PASS, resource, f"bootstrap version {version}")


@FAMILY.check("endpoint.model-s3", "an S3 model prefix exists and holds files", lambda c: "endpoints")
def check_model_s3(ctx: Context) -> Iterator[Result]:
    for i, ep in enumerate(ctx.config.endpoints):
        source = ep.model.s3 if ep.model is not None else None
        if source is None:
            continue
        uri = f"s3://{source.bucket}/{source.folder_prefix}"

        def one(i: int = i, source: Any = source, uri: str = uri) -> Result:
            resource = f"endpoints[{i}].model.s3 {uri}"
            found = ctx.aws.call("s3", "ListObjectsV2", Bucket=source.bucket, Prefix=source.folder_prefix, MaxKeys=1,
                                 missing=("NoSuchBucket",))
            if found is None:
                return Result("endpoint.model-s3", FAIL, resource, f"no bucket {source.bucket}",
                              f"set endpoints[{i}].model.s3.bucket")
            if not found.get("KeyCount") and not found.get("Contents"):
                return Result("endpoint.model-s3", FAIL, resource, "no object under the prefix",
                              f"aws s3 sync ./model {uri}")
            return Result("endpoint.model-s3", PASS, resource, "holds files")
        yield from each("endpoint.model-s3", f"endpoints[{i}].model.s3 {uri}", one)


@FAMILY.check("endpoint.token-secret", "a Secrets Manager token secret exists (described, never read)",
              lambda c: "endpoints")
def check_token_secret(ctx: Context) -> Iterator[Result]:
    for ep in ctx.secret_token_endpoints():
        i = ctx.config.endpoints.index(ep)
        arn = ep.model.huggingface.token.secrets_manager_arn

        def one(i: int = i, arn: str = arn) -> Result:
            resource = f"endpoints[{i}] secret {arn}"
            found = ctx.aws.call("secretsmanager", "DescribeSecret", SecretId=arn,
                                 missing=("ResourceNotFoundException",))
            if found is None:
                return Result("endpoint.token-secret", FAIL, resource, "no such secret",
                              f"aws secretsmanager create-secret ...; or set endpoints[{i}].model.huggingface.token")
            if found.get("DeletedDate"):
                return Result("endpoint.token-secret", FAIL, resource, "scheduled for deletion",
                              f"aws secretsmanager restore-secret --secret-id {arn}")
            return Result("endpoint.token-secret", PASS, resource, "exists (its value was not read)")
        yield from each("endpoint.token-secret", f"endpoints[{i}] secret {arn}", one)


def _key_arns(ctx: Context) -> list[tuple[str, str]]:
    out = []
    capture = ctx.config.capture
    if capture is not None and capture.kms.startswith("arn:"):
        out.append(("capture.kms", capture.kms))
    for i, ep in enumerate(ctx.config.endpoints):
        model = ep.model
        if model is not None and model.s3 is not None and model.s3.kms_key_arn:
            out.append((f"endpoints[{i}].model.s3.kmsKeyArn", model.s3.kms_key_arn))
        token = model.huggingface.token if model is not None and model.huggingface is not None else None
        if token is not None and token.kms_key_arn:
            out.append((f"endpoints[{i}].model.huggingface.token.kmsKeyArn", token.kms_key_arn))
    return out


@FAMILY.check("kms.key", "every KMS key given by ARN exists and is enabled", lambda c: "KMS keys")
def check_keys(ctx: Context) -> Iterator[Result]:
    for key, arn in _key_arns(ctx):
        def one(key: str = key, arn: str = arn) -> Result:
            resource = f"{key} {arn}"
            found = ctx.aws.call("kms", "DescribeKey", KeyId=arn, missing=("NotFoundException",))
            if found is None:
                return Result("kms.key", FAIL, resource, "no such key", f"set {key}")
            state = found["KeyMetadata"].get("KeyState")
            if state != "Enabled":
                return Result("kms.key", FAIL, resource, f"key state {state}, not Enabled",
                              f"aws kms enable-key --key-id {arn}" if state == "Disabled" else f"set {key}")
            return Result("kms.key", PASS, resource, "Enabled")
        yield from each("kms.key", f"{key} {arn}", one)


# ---------------------------------------------------------------------------------------------------- alarm topic
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


@FAMILY.check(ALARM_TOPIC, "observability.alarms.snsTopicArn lets CloudWatch publish (policy and key) and has a "
                           "confirmed subscription", lambda c: f"SNS topic {c.config.observability.alarms.sns_topic_arn}")
def check_alarm_topic(ctx: Context) -> Iterator[Result]:
    alarms = ctx.config.observability.alarms
    if alarms is None or not alarms.sns_topic_arn:
        return
    arn = alarms.sns_topic_arn
    resource = f"SNS topic {arn}"
    found = ctx.aws.call("sns", "GetTopicAttributes", TopicArn=arn, missing=("NotFound",))
    if found is None:
        yield Result(ALARM_TOPIC, FAIL, resource, "no such topic",
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
        return Result(ALARM_TOPIC, WARN, resource, "its access policy uses a condition or principal form doctor cannot "
                      "evaluate; check by hand that it lets cloudwatch.amazonaws.com sns:Publish",
                      f"the statement: {_statement(ctx, [alarm_facts.PUBLISH_ACTION], arn)}")
    if denied:
        return Result(ALARM_TOPIC, FAIL, resource, f"its access policy does not let CloudWatch publish for "
                      f"{', '.join(denied)}: those alarms would change state and page no one",
                      f"add to the topic's access policy: {_statement(ctx, [alarm_facts.PUBLISH_ACTION], arn)}")
    return Result(ALARM_TOPIC, PASS, resource, "its access policy lets CloudWatch publish for this stack's alarms")


def _key_result(ctx: Context, key: str) -> Result:
    resource = f"KMS key {key} (the alarm topic's)"
    fix = (f"encrypt the topic with a customer managed key whose policy has: "
           f"{_statement(ctx, list(alarm_facts.KEY_ACTIONS), '*')}")
    if key.endswith(alarm_facts.AWS_MANAGED_SNS_KEY):
        return Result(ALARM_TOPIC, FAIL, resource, "the AWS managed SNS key: CloudWatch may not use it", fix)
    described = ctx.aws.call("kms", "DescribeKey", KeyId=key, missing=("NotFoundException",))
    if described is None:
        return Result(ALARM_TOPIC, FAIL, resource, "no such key: SNS cannot encrypt what CloudWatch publishes", fix)
    metadata = described["KeyMetadata"]
    if metadata.get("KeyManager") == "AWS":
        return Result(ALARM_TOPIC, FAIL, resource, "an AWS managed key: CloudWatch may not use it", fix)
    policy = ctx.aws.call("kms", "GetKeyPolicy", KeyId=metadata["KeyId"], PolicyName="default") or {}
    # what CloudWatch calls: kms:GenerateDataKey and kms:Decrypt (the policy grants kms:GenerateDataKey*)
    verdicts = [_denied(policy.get("Policy") or "{}", _requests(ctx, action.rstrip("*"), metadata["Arn"]))
                for action in alarm_facts.KEY_ACTIONS]
    if any(v is None for v in verdicts):
        return Result(ALARM_TOPIC, WARN, resource, "its key policy uses a form doctor cannot evaluate; check by hand "
                      "that it lets cloudwatch.amazonaws.com use kms:Decrypt and kms:GenerateDataKey*", fix)
    denied = sorted({name for v in verdicts for name in v or []})
    if denied:
        return Result(ALARM_TOPIC, FAIL, resource, f"its key policy does not let CloudWatch encrypt for "
                      f"{', '.join(denied)}: SNS refuses those alarms' messages", f"add to the key policy: "
                      f"{_statement(ctx, list(alarm_facts.KEY_ACTIONS), '*')}")
    return Result(ALARM_TOPIC, PASS, resource, "its key policy lets CloudWatch use it for this stack's alarms")


def _subscriptions_result(ctx: Context, resource: str, arn: str) -> Result:
    subscriptions = list(ctx.aws.pages("sns", "ListSubscriptionsByTopic", "Subscriptions", token="NextToken",
                                       TopicArn=arn))
    confirmed = [s for s in subscriptions if str(s.get("SubscriptionArn", "")).startswith("arn:")]
    pending = len(subscriptions) - len(confirmed)
    if not confirmed:
        waiting = f" ({pending} waiting for confirmation)" if pending else ""
        return Result(ALARM_TOPIC, FAIL, f"{resource} subscriptions", f"no confirmed subscription{waiting}: the alarms "
                      "reach no one", f"aws sns subscribe --topic-arn {arn} --protocol email --notification-endpoint "
                      "<you@example.com>, then confirm from the message")
    protocols = sorted({str(s.get("Protocol")) for s in confirmed})
    return Result(ALARM_TOPIC, PASS, f"{resource} subscriptions", f"{len(confirmed)} confirmed ({', '.join(protocols)})"
                  + (f", {pending} waiting for confirmation" if pending else ""))
