"""The stack outputs: per endpoint (from its plan), for capture and the domain, the global ones, and the fold that
keeps a template under CloudFormation's 200 outputs. The commands in them come from the plan (``plan.commands``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..constructs.analytics import CaptureAnalytics
from ..constructs.data_capture import DataCaptureStorage
from ..constructs.domain import CustomDomain, delegation_instructions
from ..constructs.endpoint_verification import EndpointVerification
from ..constructs.observability import InferenceObservability
from ..facts import alarms as alarm_facts
from ..plan import commands
from ..plan.endpoints import EndpointPlan
from ..plan.gateways import GatewayPlan
from ..plan.outputs import folded_output_id, nested_stack_output_id, verification_output_id
from .limits import MAX_OUTPUTS, template_counts


@dataclass
class EndpointOutputs:
    """The outputs of one endpoint, for the fold."""

    plan: EndpointPlan
    outputs: list[cdk.CfnOutput] = field(default_factory=list)


def endpoint_outputs(scope: Construct, plan: EndpointPlan,
                     verification: EndpointVerification | None) -> EndpointOutputs:
    """The plan's outputs (status, invoke) and the check's summary, in ``scope``."""
    outs = [cdk.CfnOutput(scope, o.construct_id, value=o.value, description=o.description) for o in plan.outputs]
    if verification is not None:
        outs.append(cdk.CfnOutput(scope, verification_output_id(plan.output_key), value=verification.summary,
                                  description=f"{plan.label}: post-deploy check"))
    return EndpointOutputs(plan, outs)


def global_outputs(owner: Construct, execution_role: iam.IRole, tls_bucket_name: str) -> None:
    cdk.CfnOutput(owner, "OperatorExecutionRoleArn", value=execution_role.role_arn)
    cdk.CfnOutput(owner, "TlsBucketName", value=tls_bucket_name)


def gateway_outputs(owner: Construct, gateways: Iterable[GatewayPlan]) -> None:
    """Each Inference Gateway's status command and how to reach its internal load balancer."""
    for gateway in gateways:
        for o in gateway.outputs:
            cdk.CfnOutput(owner, o.construct_id, value=o.value, description=o.description)


def domain_outputs(owner: Construct, domain: CustomDomain, zone_name: str) -> None:
    if domain.created_zone and domain.name_servers is not None:
        cdk.CfnOutput(owner, "DomainNameServers", value=cdk.Fn.join(",", domain.name_servers),
                      description=delegation_instructions(zone_name)[:1000])


def capture_outputs(owner: Construct, capture: DataCaptureStorage, analytics: CaptureAnalytics | None, *,
                    key_principals: Callable[[], list[str]], region: str) -> None:
    """Where each tier writes, what an imported bucket's or key's owner must add (``key_principals``: who the key
    must admit, asked only for an imported key), and the Athena commands."""
    stack = cdk.Stack.of(owner)
    prefixes = capture.tier_prefixes()
    cdk.CfnOutput(owner, "CaptureBucket", value=capture.bucket_name,
                  description="Data capture bucket (retained on delete)")
    cdk.CfnOutput(owner, "CapturePrefixes", description=(
        "Where each tier writes; <hash> is computed by the operator per deployment (cluster ARN, namespace, "
        "kind, name)"), value=" ; ".join(f"{tier}: {uri}" for tier, uri in prefixes.items())
        + f" ; list: {commands.capture_list_command(capture.s3_uri)}")
    owner_bucket = capture.owner_bucket_policy_statements()
    if owner_bucket:
        cdk.CfnOutput(owner, "CaptureBucketPolicyToAdd", value=stack.to_json_string(owner_bucket),
                      description="Imported bucket: statements its owner must add to the bucket policy")
    if capture.imported_key:
        cdk.CfnOutput(owner, "CaptureKeyPolicyToAdd",
                      value=stack.to_json_string(capture.owner_key_policy_statements(key_principals())),
                      description="Imported key: statements its owner must add to the key policy")
    if analytics is None:
        return
    cdk.CfnOutput(owner, "CaptureQueryWorkGroup", value=analytics.work_group_name, description=(
        f"Athena workgroup over the captured data: database {analytics.database_name}, tables "
        f"{', '.join(analytics.table_names.values())}; named queries and prepared statements per table"))
    cdk.CfnOutput(owner, "CaptureFindHash", description=(
        "Finding an endpoint's <hash>: list the hash folders; tier 1: <hash>/sme/ holds folders named after "
        "SageMaker endpoints; tier 2: the load balancer (named after the Ingress) that logged under a hash"),
        value=commands.capture_find_hash_command(
            s3_uri=capture.s3_uri, work_group=analytics.work_group_name, region=region,
            load_balancers_sql=analytics.load_balancers_query_string))
    cdk.CfnOutput(owner, "CaptureLatencyQuery", description=(
        "Target latency p50/p90/p99 per hour from the ALB access logs: give the hash and a day range, then "
        "read the results with the printed QueryExecutionId"),
        value=commands.capture_latency_command(
            work_group=analytics.work_group_name, region=region, latency_sql=analytics.latency_query_string))
    if analytics.results_lifecycle_to_add:
        cdk.CfnOutput(owner, "CaptureQueryResultsLifecycleToAdd", value=analytics.results_lifecycle_to_add)


def observability_outputs(owner: Construct, obs: InferenceObservability, region: str) -> None:
    """The dashboards' console addresses, the alarm topic and how to subscribe to it, and what the owner of a
    subscribed queue or function must add so the topic can deliver to it."""
    stack = cdk.Stack.of(owner)
    for i, name in enumerate(obs.dashboard_names):
        url = alarm_facts.dashboard_url(region, name)
        if url:
            cdk.CfnOutput(owner, f"DashboardUrl{i + 1 if i else ''}", value=url,
                          description=f"CloudWatch dashboard {name}")
    if obs.topic is None:
        return
    cdk.CfnOutput(owner, "AlarmTopicArn", value=obs.topic.topic_arn,
                  description="The SNS topic the endpoints' composite alarms notify (on alarm and on recovery)")
    cdk.CfnOutput(owner, "AlarmSubscribeCommand", value=commands.join_commands([commands.subscribe_argv(
        topic_arn=obs.topic.topic_arn, region=region)]), description=(
        "Subscribe someone to the alarms: put in the address (or --protocol https|sqs|lambda and its endpoint); an "
        "e-mail or https subscriber confirms from the message SNS sends"))
    if obs.queue_statements:
        cdk.CfnOutput(owner, "AlarmQueuePolicyToAdd", value=stack.to_json_string(obs.queue_statements), description=(
            "Subscribed queues (imported, so not changed by the stack): statements each owner adds to its queue "
            "policy; a queue encrypted with a customer managed key also needs sns.amazonaws.com allowed "
            "kms:GenerateDataKey* and kms:Decrypt in that key's policy"))
    if obs.function_permissions:
        cdk.CfnOutput(owner, "AlarmFunctionPermissionToAdd", value=commands.join_commands(obs.function_permissions),
                      description="Subscribed Lambda functions (imported, so not changed by the stack): the command "
                                  "each owner runs so the topic may invoke it")


def nested_stack_outputs(owner: Construct, nested_stacks: dict[tuple[str, str | None], cdk.NestedStack],
                         region: str) -> None:
    """The enclosing stack's one output per nested stack: the command that lists that stack's outputs (the
    per-endpoint commands live there, so the parent stays far below 200 outputs)."""
    for (ns, group), nested in nested_stacks.items():
        construct_id = nested_stack_output_id(ns, group)
        if owner.node.try_find_child(construct_id) is not None:
            continue
        stack_id = nested.nested_stack_resource.ref if nested.nested_stack_resource is not None else ""
        cdk.CfnOutput(owner, construct_id, value=commands.join_commands([[
            "aws", "cloudformation", "describe-stacks", "--stack-name", stack_id, "--region", region,
            "--query", "Stacks[0].Outputs", "--output", "table"]]),
            description=f"namespace {ns}" + (f", stackGroup {group}" if group else "")
            + ": the nested stack's outputs (status, invoke and check commands of its endpoints)")


def fold_outputs(stack: cdk.Stack, nested: Sequence[cdk.Stack],
                 endpoints: list[EndpointOutputs]) -> list[EndpointOutputs]:
    """Over CloudFormation's 200 outputs (2-3 per endpoint) in a template: one output per endpoint of that template
    instead, the same values joined; each stack (the enclosing one, every nested stack) is folded on its own.
    Returns the endpoints left unfolded."""
    counts = template_counts(stack)
    for each in [stack, *nested]:
        if counts.get(each, (0, 0))[1] <= MAX_OUTPUTS:
            continue
        rest = []
        for entry in endpoints:
            outs = entry.outputs
            if len(outs) < 2 or cdk.Stack.of(outs[0]) is not each:
                rest.append(entry)
                continue
            scope = outs[0].node.scope
            for out in outs:
                scope.node.try_remove_child(out.node.id)
            cdk.CfnOutput(scope, folded_output_id(entry.plan.output_key), value=" ; ".join(out.value for out in outs),
                          description=f"{entry.plan.label}: status and events commands, URL and invoke command, "
                          "post-deploy check")
        endpoints = rest
    return endpoints
