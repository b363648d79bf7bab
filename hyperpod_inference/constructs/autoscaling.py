"""IAM for the endpoints' KEDA triggers: KEDA's role may read exactly what the triggers name.

- A CloudWatch trigger anywhere -> the CloudWatch metric reads KEDA's ``aws-cloudwatch`` scaler calls. These actions
  support no resource-level permissions, so the statement is on ``*`` (acknowledged with that reason).
- A Prometheus trigger -> ``aps:QueryMetrics`` and the read calls KEDA's ``prometheus`` scaler makes, on exactly the
  Amazon Managed Prometheus workspaces its ``serverAddress`` URLs name (in the config's account).
- No trigger, no grant.

A role created in this app gets the statements as a policy (:class:`KedaTriggerAccess`); an imported one (or
``operator.install: existing``) is never re-policied: the statements go to a stack output for its owner to add.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnOutput, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..plan.shared import TriggerNeeds

KEDA_CLOUDWATCH_ACTIONS = ("cloudwatch:GetMetricData", "cloudwatch:GetMetricStatistics", "cloudwatch:ListMetrics")
KEDA_PROMETHEUS_ACTIONS = ("aps:QueryMetrics", "aps:GetLabels", "aps:GetSeries", "aps:GetMetricMetadata")
CLOUDWATCH_REASON = ("cloudwatch:GetMetricData, GetMetricStatistics and ListMetrics support no resource-level "
                     "permissions; granted only because an endpoint has a CloudWatch trigger, which KEDA reads")


def keda_trigger_statements(scope: Construct, needs: TriggerNeeds, *, account: str) -> list[iam.PolicyStatement]:
    """The statements KEDA's role needs for what the endpoints' triggers read (the plan's ``needs``; empty: no
    trigger)."""
    stack = Stack.of(scope)
    out: list[iam.PolicyStatement] = []
    if needs.cloudwatch:
        out.append(iam.PolicyStatement(sid="KedaCloudWatchTriggers", actions=list(KEDA_CLOUDWATCH_ACTIONS),
                                       resources=["*"]))
    if needs.workspaces:
        arns = [stack.format_arn(service="aps", region=region, account=account, resource="workspace",
                                 resource_name=workspace) for region, workspace in needs.workspaces]
        out.append(iam.PolicyStatement(sid="KedaPrometheusTriggers", actions=list(KEDA_PROMETHEUS_ACTIONS),
                                       resources=arns))
    return out


class KedaTriggerAccess(Construct):
    """Gives KEDA's role exactly what the endpoints' triggers read.

    :param needs: what the endpoints' triggers read (the plan's :class:`~hyperpod_inference.plan.shared.TriggerNeeds`,
        ``trigger_needs(endpoints)``).
    :param keda_role: KEDA's role. An ``iam.Role`` created in this app gets a policy; anything else (an imported
        role, or None with ``operator.install: existing``) gets a stack output ``KedaTriggerStatements`` instead.
    :param account: the account the workspaces are in (the config's ``env.account``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, needs: TriggerNeeds, account: str,
                 keda_role: iam.IRole | None) -> None:
        super().__init__(scope, construct_id)
        self.needs = needs
        self.statements = keda_trigger_statements(self, needs, account=account)
        self.policy: iam.Policy | None = None
        self.output: CfnOutput | None = None
        if not self.statements:
            return
        if isinstance(keda_role, iam.Role):
            self.policy = iam.Policy(self, "Policy", statements=self.statements, roles=[keda_role])
            if self.needs.cloudwatch:
                Validations.of(self.policy).acknowledge(Acknowledgment(
                    id="AwsSolutions::AwsSolutions-IAM5[Resource::*]", reason=CLOUDWATCH_REASON))
        else:
            stack = Stack.of(self)
            document = {"Version": "2012-10-17", "Statement": [s.to_statement_json() for s in self.statements]}
            self.output = CfnOutput(
                self, "KedaTriggerStatements", value=stack.to_json_string(document),
                description="Add these statements to KEDA's role (imported, so the stack does not change it): "
                            "what the endpoints' autoscaling triggers read")
