"""Dashboards, alarms and Prometheus rules for a stack's endpoints, from plain values.

* ``dashboard`` (default on): the CloudWatch dashboard(s) :mod:`.cloudwatch_layout` lays out, one resource each
  (``AWS::CloudWatch::Dashboard`` from the body: the L2 ``Dashboard`` builds its body from widget objects, this body
  comes from a builder that is tested and previewed without jsii), and the Grafana dashboard JSON
  (:mod:`.grafana_dashboard`), written by :meth:`InferenceObservability.write_grafana`.
* ``alarms``: per endpoint with a SageMaker endpoint name and alarms on, error rate (metric math over Invocations
  and the 4xx/5xx counts), p99 ModelLatency, the opt-in no-invocations alarm, and a composite alarm over them that
  is the only one notifying the topic (one page per endpoint, not three). The topic: ``alarm_topic`` (an imported
  ``sns.ITopic``), else ``snsTopicArn``, else a created topic encrypted with a created key. A created topic's policy
  keeps CDK's TLS-only deny and lets ``cloudwatch.amazonaws.com`` publish for this stack's composite alarms only
  (``aws:SourceAccount`` and ``aws:SourceArn``); the key lets it use the key under the same conditions. The alarms
  are named by the stack, so their ARNs are written out: no reference to them (which would be a cycle through the
  key, that the topic needs and the alarms name) and no wait. ``alarms.subscriptions`` subscribe to it; a queue's or
  function's owner adds the access the stack prints (an imported resource is never re-policied).
* ``prometheusWorkspaceArn``: one ``AWS::APS::RuleGroupsNamespace`` with :mod:`.prometheus_rules`'s file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping

from aws_cdk import Duration, Stack
from aws_cdk import aws_aps as aps
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ..config.observability import Observability
from ..facts import alarms as alarm_facts
from ..facts import metrics as m
from ..plan.observability import ObservedEndpoint
from . import cloudwatch_layout as layout
from .grafana_dashboard import grafana_dashboard
from .lazy import is_unresolved, literal_partition
from .prometheus_rules import rule_file

_PERIOD = Duration.minutes(5)


class InferenceObservability(Construct):
    """CloudWatch dashboards and alarms, Prometheus rules and a Grafana dashboard for the observed endpoints.

    :param scope_name: what every name starts with (the stack's name scope).
    :param endpoints: the endpoints (``observed_endpoints(...)``: plain values).
    :param settings: the ``observability`` section.
    :param region: the stack's region (dashboard widgets and links).
    :param alarm_topic: the SNS topic the alarms notify, instead of ``alarms.snsTopicArn`` / ``createTopic``.
    :param capture_bucket: the capture bucket's name (its size and object count on the dashboard), if any.
    :param work_group: the Athena workgroup over the captured data (linked from the dashboard), if any.
    :param alarm_scopes: where each endpoint's alarms go, by ``namespace/name`` (e.g. the nested stack holding the
        endpoint, so a fleet's alarms spread over its templates like its endpoints). Default: this construct.

    Attributes: ``dashboard_names``, ``dashboards``, ``alarms`` (endpoint key -> {kind: alarm}), ``topic``,
    ``topic_key`` (the created topic's key, or None), ``created_topic`` (the topic when the construct created it),
    ``source_arns`` (the alarm ARNs or ARN pattern CloudWatch may publish for), ``queue_statements`` (what each
    subscribed queue's owner adds to its queue policy), ``function_permissions`` (``aws lambda add-permission``
    argvs for each subscribed function's owner), ``rule_groups`` (the RuleGroupsNamespace or None), ``rules`` (the
    rule file or None), ``grafana`` (the JSON model or None).
    """

    def __init__(self, scope: Construct, construct_id: str, *, scope_name: str, endpoints: list[ObservedEndpoint],
                 settings: Observability, region: str, alarm_topic: sns.ITopic | None = None,
                 capture_bucket: str | None = None, work_group: str | None = None,
                 alarm_scopes: Mapping[str, Construct] | None = None) -> None:
        super().__init__(scope, construct_id)
        _check_regions(settings, region)
        self.scope_name = scope_name
        self.region = region
        self.endpoints = endpoints
        self.dashboard_names: list[str] = []
        self.dashboards: list[cw.CfnDashboard] = []
        self.alarms: dict[str, dict[str, cw.IAlarm]] = {}
        self.topic: sns.ITopic | None = None
        self.topic_key: kms.Key | None = None
        self.created_topic: sns.Topic | None = None
        self.source_arns: list[str] = []
        self.queue_statements: list[dict] = []
        self.function_permissions: list[list[str]] = []
        self.rule_groups: aps.CfnRuleGroupsNamespace | None = None
        self.rules: str | None = None
        self.grafana: dict | None = None
        self._alarm_scopes = dict(alarm_scopes or {})
        self._alarm_ids: dict[Construct, Construct] = {}
        self._dashboard_of = layout.dashboard_of(endpoints)
        if settings.dashboard and endpoints:
            info = layout.StackInfo(scope_name, region, capture_bucket, work_group)
            for i, body in enumerate(layout.dashboard_bodies(endpoints, info)):
                name = layout.dashboard_name(scope_name, region, i)
                self.dashboard_names.append(name)
                self.dashboards.append(cw.CfnDashboard(self, f"Dashboard{i + 1}" if i else "Dashboard",
                                                       dashboard_name=name, dashboard_body=layout.body_json(body)))
            self.grafana = grafana_dashboard(endpoints, scope_name)
        if settings.alarms is not None or alarm_topic is not None:
            self.topic = self._topic(settings, alarm_topic)
            for ep in endpoints:
                if ep.thresholds is not None and ep.sagemaker_endpoint_name:
                    self.alarms[ep.key] = self._endpoint_alarms(ep)
            if self.created_topic is not None:
                self._let_cloudwatch_publish([layout.alarm_name(scope_name, ep, "health") for ep in endpoints
                                              if ep.key in self.alarms])
        if settings.prometheus_workspace_arn:
            self.rules = rule_file(endpoints, scope_name)
            self.rule_groups = aps.CfnRuleGroupsNamespace(
                self, "RuleGroups", workspace=settings.prometheus_workspace_arn, data=self.rules,
                name=_rule_namespace_name(scope_name))

    # -------------------------------------------------------------------------------------------------- topic
    def _topic(self, settings: Observability, given: sns.ITopic | None) -> sns.ITopic:
        if given is not None:
            return given
        alarms = settings.alarms
        if alarms is None or (alarms.sns_topic_arn is None and not alarms.create_topic):
            raise ValueError("observability.alarms: needs snsTopicArn, createTopic: true or the alarm_topic prop")
        if alarms.sns_topic_arn:
            return sns.Topic.from_topic_arn(self, "AlarmTopic", alarms.sns_topic_arn)
        # CloudWatch cannot publish to a topic under the AWS managed SNS key: a key of the stack, which CloudWatch
        # may use for exactly this stack's alarms (the statement comes with the alarms' names)
        key = self.topic_key = kms.Key(
            self, "AlarmTopicKey", enable_key_rotation=True,
            description=f"Encrypts {self.scope_name}'s inference alarm topic (hyperpod-inference-cdk)")
        topic = self.created_topic = sns.Topic(
            self, "AlarmTopic", topic_name=_topic_name(self.scope_name), master_key=key, enforce_ssl=True,
            display_name=f"{self.scope_name} inference alarms")
        for sub in alarms.parsed_subscriptions:
            self._subscribe(topic, sub)
        return topic

    def _source_arns(self, alarm_names: list[str]) -> list[str]:
        """The ARNs of the alarms that notify the topic; past :data:`~..facts.alarms.SOURCE_ARNS_MAX_CHARS` (or with
        no alarm yet) the pattern of this stack's alarm names (``<scope>-*``)."""
        stack = Stack.of(self)
        partition = literal_partition(self)
        def arn(name: str) -> str:
            return alarm_facts.alarm_arn(partition, self.region, stack.account, name)
        arns = [arn(name) for name in alarm_names]
        if not arns or sum(len(a) for a in arns) > alarm_facts.SOURCE_ARNS_MAX_CHARS:
            return [arn(f"{self.scope_name}-*")]
        return arns

    def _let_cloudwatch_publish(self, alarm_names: list[str]) -> None:
        """The created topic's policy and key let CloudWatch publish for this stack's alarms only."""
        assert self.created_topic is not None and self.topic_key is not None
        self.source_arns = self._source_arns(alarm_names)
        exact = not self.source_arns[0].endswith("-*")
        conditions = {"StringEquals": {alarm_facts.SOURCE_ACCOUNT: Stack.of(self).account},
                      "ArnEquals" if exact else "ArnLike": {alarm_facts.SOURCE_ARN: self.source_arns}}
        cloudwatch = iam.ServicePrincipal(alarm_facts.CLOUDWATCH_PRINCIPAL)
        self.created_topic.add_to_resource_policy(iam.PolicyStatement(
            sid="AllowCloudWatchAlarmsOfThisStack", principals=[cloudwatch], actions=[alarm_facts.PUBLISH_ACTION],
            resources=[self.created_topic.topic_arn], conditions=conditions))
        self.topic_key.add_to_resource_policy(iam.PolicyStatement(
            sid="AllowCloudWatchAlarmsOfThisStack", principals=[cloudwatch], actions=list(alarm_facts.KEY_ACTIONS),
            resources=["*"], conditions=conditions))

    def _subscribe(self, topic: sns.Topic, sub: alarm_facts.Subscription) -> None:
        """One of ``alarms.subscriptions``. A queue or function is imported, never re-policied: what its owner adds
        goes to ``queue_statements`` / ``function_permissions`` (stack outputs)."""
        if sub.protocol == "email":
            topic.add_subscription(subscriptions.EmailSubscription(sub.endpoint))
        elif sub.protocol == "https":
            topic.add_subscription(subscriptions.UrlSubscription(sub.endpoint))
        elif sub.protocol == "sqs":
            queue = sqs.Queue.from_queue_arn(self, f"Subscriber{_digest(sub.endpoint)}", sub.endpoint)
            topic.add_subscription(subscriptions.SqsSubscription(queue))
            self.queue_statements.append({
                "Sid": "AllowHyperPodInferenceAlarmTopic", "Effect": "Allow",
                "Principal": {"Service": alarm_facts.SNS_PRINCIPAL}, "Action": "sqs:SendMessage",
                "Resource": sub.endpoint, "Condition": {"ArnEquals": {alarm_facts.SOURCE_ARN: topic.topic_arn}}})
        else:
            function = lambda_.Function.from_function_attributes(
                self, f"Subscriber{_digest(sub.endpoint)}", function_arn=sub.endpoint, same_environment=False,
                skip_permissions=True)
            topic.add_subscription(subscriptions.LambdaSubscription(function))
            self.function_permissions.append([
                "aws", "lambda", "add-permission", "--function-name", sub.endpoint,
                "--statement-id", _topic_name(self.scope_name)[:100], "--action", "lambda:InvokeFunction",
                "--principal", alarm_facts.SNS_PRINCIPAL, "--source-arn", topic.topic_arn, "--region", sub.region or ""])

    # ------------------------------------------------------------------------------------------------- alarms
    def _endpoint_alarms(self, ep: ObservedEndpoint) -> dict[str, cw.IAlarm]:
        t = ep.thresholds
        assert t is not None and ep.sagemaker_endpoint_name is not None
        dims = {"EndpointName": ep.sagemaker_endpoint_name, "VariantName": m.VARIANT}

        def metric(name: str, statistic: str) -> cw.Metric:
            assert m.CLOUDWATCH[name].namespace == m.SAGEMAKER_NS
            return cw.Metric(namespace=m.SAGEMAKER_NS, metric_name=name, dimensions_map=dims, statistic=statistic,
                             period=_PERIOD)

        key = re.sub(r"[^A-Za-z0-9]", "", f"{ep.namespace.title()}{ep.name.title()}")
        scope = self._alarm_scope(ep)
        dashboard = self.dashboard_names[self._dashboard_of[ep.key]] if self.dashboard_names else None
        out: dict[str, cw.IAlarm] = {}

        def alarm(kind: str, construct_id: str, target: cw.IMetric, **kw: object) -> None:
            out[kind] = cw.Alarm(scope, f"{key}{construct_id}", metric=target,
                                 alarm_name=layout.alarm_name(self.scope_name, ep, kind),
                                 alarm_description=layout.alarm_description(ep, kind, dashboard=dashboard,
                                                                            region=self.region), **kw)

        # No invocations in a period is missing data: neither a failure nor a success.
        alarm("error-rate", "ErrorRate", cw.MathExpression(
            expression=layout.error_rate_expression(), period=_PERIOD, label="error rate (%)",
            using_metrics={"inv": metric("Invocations", "Sum"), "e4": metric("Invocation4XXErrors", "Sum"),
                           "e5": metric("Invocation5XXErrors", "Sum")}),
            threshold=t.error_rate_percent, evaluation_periods=t.evaluation_periods,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING)
        # ModelLatency is in microseconds.
        alarm("p99-latency", "P99Latency", metric("ModelLatency", "p99"), threshold=t.p99_latency_ms * 1000,
              evaluation_periods=t.evaluation_periods, comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
              treat_missing_data=cw.TreatMissingData.NOT_BREACHING)
        if t.no_invocations_minutes:
            # SageMaker publishes no data point for a period without requests: missing data is the signal here.
            alarm("no-invocations", "NoInvocations", metric("Invocations", "Sum"), threshold=1,
                  evaluation_periods=t.no_invocations_minutes // 5,
                  comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
                  treat_missing_data=cw.TreatMissingData.BREACHING)
        health = cw.CompositeAlarm(
            scope, f"{key}Health", composite_alarm_name=layout.alarm_name(self.scope_name, ep, "health"),
            alarm_description=layout.alarm_description(ep, "health", dashboard=dashboard, region=self.region),
            alarm_rule=cw.AlarmRule.any_of(*out.values()))
        assert self.topic is not None
        action = cw_actions.SnsAction(self.topic)
        health.add_alarm_action(action)
        health.add_ok_action(action)
        out["health"] = health
        return out

    def _alarm_scope(self, ep: ObservedEndpoint) -> Construct:
        """The endpoint's alarm scope: a child ``Alarms`` of the scope it was given (one per scope), else this."""
        given = self._alarm_scopes.get(ep.key)
        if given is None or given is self.node.scope:
            return self
        known = self._alarm_ids.get(given)
        if known is None:
            known = self._alarm_ids[given] = Construct(given, f"{self.node.id}Alarms")
        return known

    # -------------------------------------------------------------------------------------------------- files
    def write_grafana(self, outdir: str, file_name: str) -> str | None:
        """``<outdir>/dashboards/<file_name>.json``: the Grafana dashboard (None when the dashboard is off)."""
        if self.grafana is None:
            return None
        folder = os.path.join(outdir, "dashboards")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{file_name}.json")
        with open(path, "w") as f:
            json.dump(self.grafana, f, indent=1, sort_keys=True)
        return path


def _check_regions(settings: Observability, region: str) -> None:
    """The topic the alarms notify, its queue and function subscribers, and the workspace the rules go to must be in
    the stack's region (and partition)."""
    if is_unresolved(region):
        return
    problems = []
    for path, arn in (("observability.alarms.snsTopicArn", settings.alarms.sns_topic_arn if settings.alarms else None),
                      ("observability.prometheusWorkspaceArn", settings.prometheus_workspace_arn)):
        if arn and arn.split(":")[3] != region:
            problems.append(f"{path}: must be in the stack's region ({region}), got {arn.split(':')[3]}")
    for i, sub in enumerate(settings.alarms.parsed_subscriptions if settings.alarms else []):
        problem = alarm_facts.subscription_place_problem(sub, region=region)
        if problem:
            problems.append(f"observability.alarms.subscriptions[{i}]: {sub.endpoint} {problem}")
    if problems:
        raise ValueError("; ".join(problems))


def _digest(value: str) -> str:
    """A short stable id for an imported subscriber (its logical IDs do not move when others are added)."""
    return hashlib.sha256(value.encode()).hexdigest()[:10]


def _topic_name(scope: str) -> str:
    return (re.sub(r"[^A-Za-z0-9_-]", "-", scope)[:240] + "-inference-alarms")[:256]


def _rule_namespace_name(scope: str) -> str:
    """A rule groups namespace name: 1-64 of letters, digits, ``-._``, starting with a letter or digit."""
    return (re.sub(r"[^A-Za-z0-9._-]", "-", scope)[:53] + "-inference").lstrip("-._")[:64]
