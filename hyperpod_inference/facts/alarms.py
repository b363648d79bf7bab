"""Where an alarm reaches a person: what CloudWatch needs to publish to an SNS topic (and to use the topic's key), the
subscriptions ``observability.alarms.subscriptions`` takes (protocol inferred from the value), and the console's
address in each partition. Standard library only; each fact with its source.

Rule functions return ``None`` (or the parsed value) for a good value and a short reason otherwise, so each caller
adds its own location.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from .rules import PARTITION, REGION, partition_of_region

# Sources: AWS's answer to "alarm is not authorized to perform SNS:Publish" (the topic policy must allow CloudWatch's
# service principal, scoped with aws:SourceArn, the alarm, and aws:SourceAccount):
# https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger . CloudWatch cannot publish to a topic
# under the AWS managed key alias/aws/sns; a customer managed key must let it use kms:Decrypt and
# kms:GenerateDataKey*: https://repost.aws/knowledge-center/cloudwatch-configure-alarm-sns and
# https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services .

CLOUDWATCH_PRINCIPAL = "cloudwatch.amazonaws.com"
SNS_PRINCIPAL = "sns.amazonaws.com"
PUBLISH_ACTION = "sns:Publish"
#: What CloudWatch calls on the topic's key when it publishes to an encrypted topic.
KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey*")
#: The AWS managed SNS key: CloudWatch may not use it.
AWS_MANAGED_SNS_KEY = "alias/aws/sns"
#: The global condition keys AWS sets when a service acts for a resource (the confused-deputy guards).
SOURCE_ARN, SOURCE_ACCOUNT = "aws:SourceArn", "aws:SourceAccount"


#: How many characters of exact alarm ARNs the topic policy and the key policy take before the stack's alarm-name
#: pattern is used instead (an SNS topic policy may be 30 KB, https://docs.aws.amazon.com/general/latest/gr/sns.html;
#: a KMS key policy 32 KB; each ARN is about 100).
SOURCE_ARNS_MAX_CHARS = 10_000


def alarm_arn(partition: str, region: str, account: str, alarm_name: str) -> str:
    """A metric or composite alarm's ARN, ``arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>``: alarms are
    named by the stack, so their ARNs are known without a reference to them."""
    return f"arn:{partition}:cloudwatch:{region}:{account}:alarm:{alarm_name}"


# ----------------------------------------------------------------------------------------------- subscriptions
# The protocols inferred: email, https, sqs, lambda (https://docs.aws.amazon.com/sns/latest/api/API_Subscribe.html;
# a queue: https://docs.aws.amazon.com/sns/latest/dg/subscribe-sqs-queue-to-sns-topic.html, a FIFO one:
# https://docs.aws.amazon.com/sns/latest/dg/fifo-topic-subscriptions.html; a function:
# https://docs.aws.amazon.com/sns/latest/dg/sns-lambda-as-subscriber.html).
EMAIL = r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?" \
        r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
SQS_QUEUE_ARN = rf"^arn:({PARTITION}):sqs:([a-z0-9-]+):([0-9]{{12}}):([A-Za-z0-9_-]{{1,80}}|[A-Za-z0-9_-]{{1,75}}\.fifo)$"
LAMBDA_FUNCTION_ARN = (rf"^arn:({PARTITION}):lambda:([a-z0-9-]+):([0-9]{{12}}):function:([A-Za-z0-9_-]{{1,64}})"
                       r"(?::(?:\$LATEST|[A-Za-z0-9_-]{1,128}))?$")
URL_MAX = 2048
WHAT = "an e-mail address, an https:// URL, or an SQS queue or Lambda function ARN"


@dataclass(frozen=True)
class Subscription:
    """One subscriber of the alarm topic: ``protocol`` (SNS's word) and ``endpoint`` (the value as given); for an
    ARN also its partition, region and account."""

    protocol: str
    endpoint: str
    partition: str | None = None
    region: str | None = None
    account: str | None = None

    @property
    def imported(self) -> bool:
        """An SQS queue or Lambda function: its owner must let the topic deliver to it."""
        return self.protocol in ("sqs", "lambda")


def parse_subscription(value: str) -> Subscription | str:
    """The subscription ``value`` names (protocol inferred), or why it cannot be one."""
    value = value.strip()
    if value.startswith("arn:"):
        sqs = re.match(SQS_QUEUE_ARN, value)
        if sqs:
            if sqs.group(4).endswith(".fifo"):
                return ("a FIFO queue receives only from a FIFO topic, and the alarm topic is a standard topic "
                        "(CloudWatch publishes to standard topics only): subscribe a standard queue")
            return Subscription("sqs", value, *sqs.group(1, 2, 3))
        fn = re.match(LAMBDA_FUNCTION_ARN, value)
        if fn:
            return Subscription("lambda", value, *fn.group(1, 2, 3))
        return f"must be {WHAT}; this ARN is neither a standard SQS queue nor a Lambda function"
    if "://" in value:
        url = urllib.parse.urlsplit(value)
        if url.scheme == "http":
            return ("an http:// URL would carry the alarm unencrypted; give the endpoint's https:// URL (SNS "
                    "delivers to HTTPS endpoints whose certificate a public CA signed)")
        if url.scheme != "https" or not url.hostname or len(value) > URL_MAX or re.search(r"\s", value):
            return f"must be {WHAT}; a URL must be https://<host>/... (at most {URL_MAX} characters, no spaces)"
        return Subscription("https", value)
    if re.match(EMAIL, value) and len(value) <= 254:
        return Subscription("email", value)
    return f"must be {WHAT}"


def subscription_place_problem(sub: Subscription, *, region: str) -> str | None:
    """A queue or function must be in the topic's partition and region: SNS never delivers across partitions, and
    the library keeps the alarms, their topic and its subscribers in the stack's region (as ``snsTopicArn``)."""
    if sub.region is None or sub.region == region:
        return None
    if sub.partition != partition_of_region(region):
        return (f"is in partition {sub.partition}; the alarm topic is in {partition_of_region(region)} ({region}), "
                "and SNS does not deliver across partitions")
    return (f"is in {sub.region}; the alarm topic is in the stack's region ({region}): use a queue or function in "
            f"{region}, or subscribe this one yourself (aws sns subscribe, with its own policy)")


# ---------------------------------------------------------------------------------------------------- console
#: The AWS Management Console's host per partition (commercial Regions take a Region subdomain). Partitions not
#: listed (the isolated ones) have no public console address: no link is made there
#: (https://docs.aws.amazon.com/govcloud-us/latest/UserGuide/getting-started-sign-in.html,
#: https://docs.amazonaws.cn/en_us/aws/latest/userguide/endpoints-Beijing.html).
CONSOLE_DOMAINS = {"aws": "console.aws.amazon.com", "aws-cn": "console.amazonaws.cn",
                   "aws-us-gov": "console.amazonaws-us-gov.com"}


def console_home(region: str) -> str | None:
    """``https://<host>`` of the console for ``region`` (None where no public console address is known, or the
    region is not known at synth)."""
    if not re.match(REGION, region):
        return None
    partition = partition_of_region(region)
    domain = CONSOLE_DOMAINS.get(partition)
    if domain is None:
        return None
    return f"https://{region}.{domain}" if partition == "aws" else f"https://{domain}"


def dashboard_url(region: str, name: str) -> str | None:
    """The CloudWatch console's address of dashboard ``name`` in ``region`` (None where :func:`console_home` is)."""
    home = console_home(region)
    return f"{home}/cloudwatch/home?region={region}#dashboards/dashboard/{name}" if home else None
