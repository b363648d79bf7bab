"""The ``observability:`` section (dashboards, alarms, Prometheus rules) and each endpoint's ``alarms`` tuning.

Defaults: one CloudWatch dashboard per stack; no alarms unless ``alarms`` names where they go (an SNS topic ARN or
``createTopic: true``, or an imported ``sns.ITopic`` given to the construct); Prometheus rule groups only with
``prometheusWorkspaceArn``. Metrics and their sources: ``facts/metrics.py``.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from ..facts import alarms as alarm_facts
from ..facts import metrics as facts
from .base import CrdPaths, NoCrd, Strict, _err, _raise_all

#: Documented defaults of the alarm thresholds.
DEFAULT_ERROR_RATE_PERCENT = 5.0
DEFAULT_P99_LATENCY_MS = 10_000
DEFAULT_EVALUATION_PERIODS = 3
#: Every alarm and rule looks at 5-minute windows.
PERIOD_SECONDS = 300
_AWS_SIDE = NoCrd("AWS side (CloudWatch, SNS, Amazon Managed Prometheus), not the custom resource")


def _aws_side(*fields: str) -> CrdPaths:
    return dict.fromkeys(fields, _AWS_SIDE)


def _shape(pattern: str, what: str) -> AfterValidator:
    def check(value: str) -> str:
        problem = facts.arn_shape_problem(pattern, what, value)
        if problem:
            raise PydanticCustomError("shape", "{problem}", {"problem": problem})
        return value

    return AfterValidator(check)


SnsTopicArn = Annotated[str, _shape(facts.SNS_TOPIC_ARN, "an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)")]
WorkspaceArn = Annotated[str, _shape(facts.APS_WORKSPACE_ARN, "an Amazon Managed Prometheus workspace ARN "
                                     "(arn:aws:aps:<region>:<account>:workspace/ws-...)")]
def _subscription(value: str) -> str:
    parsed = alarm_facts.parse_subscription(value)
    if isinstance(parsed, str):
        raise PydanticCustomError("subscription", "{problem}", {"problem": parsed})
    return value.strip()


SubscriptionEndpoint = Annotated[str, AfterValidator(_subscription)]
Percent = Annotated[float, Field(gt=0, le=100)]
LatencyMs = Annotated[int, Field(ge=1, le=3_600_000)]
NoInvocationsMinutes = Annotated[int, Field(ge=5, le=1440, multiple_of=5)]


class Alarms(Strict):
    """Where alarms go and their default thresholds; absent = no alarms."""

    crd_paths: ClassVar[CrdPaths] = _aws_side("sns_topic_arn", "create_topic", "subscriptions", "error_rate_percent",
                                              "p99_latency_ms", "evaluation_periods", "no_invocations_minutes")

    sns_topic_arn: SnsTopicArn | None = None
    """An existing SNS topic the alarms notify (exclusive with createTopic)."""
    create_topic: bool = False
    """Create an encrypted SNS topic named after the stack (exclusive with snsTopicArn)."""
    subscriptions: list[SubscriptionEndpoint] | None = Field(default=None, max_length=100)
    """Who the created topic notifies: e-mail addresses, https:// URLs, SQS queue or Lambda function ARNs (the
    protocol is inferred; queues and functions in the stack's region). Needs createTopic: true."""
    error_rate_percent: Percent = DEFAULT_ERROR_RATE_PERCENT
    """Alarm when 4xx + 5xx responses exceed this share of invocations (percent). Default 5."""
    p99_latency_ms: LatencyMs = DEFAULT_P99_LATENCY_MS
    """Alarm when the p99 model latency exceeds this (milliseconds). Default 10000."""
    evaluation_periods: Annotated[int, Field(ge=1, le=288)] = DEFAULT_EVALUATION_PERIODS
    """Consecutive 5-minute periods over a threshold before an alarm fires. Default 3."""
    no_invocations_minutes: NoInvocationsMinutes | None = None
    """Opt-in: alarm when an endpoint gets no invocations for this many minutes (multiple of 5). Default off."""

    @model_validator(mode="after")
    def _one_destination(self) -> Alarms:
        # Neither is allowed here: a HyperPodInference may take an imported sns.ITopic (alarm_topic) instead; the
        # app, which has only the file, requires one (config.cross_rules.cluster_import_problems).
        if self.sns_topic_arn is not None and self.create_topic:
            raise PydanticCustomError("config", "give snsTopicArn or createTopic: true, not both")
        errors = []
        if self.subscriptions and not self.create_topic:
            errors.append(_err(("subscriptions",), "subscribes to the topic the stack creates: needs createTopic: true "
                               "(subscribe a topic of your own, snsTopicArn, with aws sns subscribe)"))
        seen: set[str] = set()
        for i, endpoint in enumerate(self.subscriptions or []):
            if endpoint in seen:
                errors.append(_err(("subscriptions", i), f"{endpoint} is listed twice"))
            seen.add(endpoint)
        _raise_all(type(self), errors)
        return self

    @property
    def parsed_subscriptions(self) -> list[alarm_facts.Subscription]:
        """``subscriptions`` with their protocols (validated: each parses)."""
        return [s for s in map(alarm_facts.parse_subscription, self.subscriptions or [])
                if isinstance(s, alarm_facts.Subscription)]


class Observability(Strict):
    """CloudWatch dashboards, alarms and Amazon Managed Prometheus rules made from the endpoints."""

    crd_paths: ClassVar[CrdPaths] = _aws_side("dashboard", "alarms", "prometheus_workspace_arn")

    dashboard: bool = True
    """One CloudWatch dashboard per stack (split past 500 widgets) and a Grafana dashboard file. Default true."""
    alarms: Alarms | None = None
    """CloudWatch alarms per endpoint; absent = none."""
    prometheus_workspace_arn: WorkspaceArn | None = None
    """An Amazon Managed Prometheus workspace: recording and alerting rules per endpoint go there."""

    @property
    def creates_anything(self) -> bool:
        return self.dashboard or self.alarms is not None or self.prometheus_workspace_arn is not None


class EndpointAlarms(Strict):
    """One endpoint's alarm tuning; unset values use observability.alarms."""

    crd_paths: ClassVar[CrdPaths] = _aws_side("enabled", "error_rate_percent", "p99_latency_ms",
                                              "no_invocations_minutes")

    enabled: bool = True
    """false: no alarms and no alerting rules for this endpoint."""
    error_rate_percent: Percent | None = None
    """The error-rate threshold for this endpoint (percent)."""
    p99_latency_ms: LatencyMs | None = None
    """The p99 latency threshold for this endpoint (milliseconds)."""
    no_invocations_minutes: NoInvocationsMinutes | None = None
    """Opt-in no-invocations alarm for this endpoint (minutes, multiple of 5)."""
