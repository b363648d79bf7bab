"""Post-deploy verification of a SageMaker endpoint: a custom resource that waits until the endpoint is ``InService``
and answers one ``InvokeEndpoint`` call with a given payload.

The inference operator creates the SageMaker endpoint some time after its custom resource is applied, so the
verification polls (``query_interval``) until the endpoint answers, fails, or ``timeout`` runs out. With
``fail_deployment=False`` (the default) a failed or timed-out verification does not fail the deployment: the
outcome is in the resource's ``Status`` (``Succeeded`` | ``Failed`` | ``TimedOut``) and ``Summary`` attributes.
With ``fail_deployment=True`` the custom resource fails, and CloudFormation rolls the deployment back.

Every ``EndpointVerification`` in a stack with the same ``timeout`` and ``query_interval`` shares one
:class:`EndpointVerificationProvider` (two Lambda functions and one ``custom_resources.Provider``); its IAM policy
lists exactly the endpoints verified through it.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Acknowledgment, Annotations, CustomResource, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from ..facts import rules
from ..facts.safety import verify_body
from .lazy import is_unresolved

HANDLER_DIR = Path(__file__).resolve().parent.parent / "lambda" / "verify_endpoint"
RESOURCE_TYPE = "Custom::SageMakerEndpointVerification"

#: ``EndpointVerification`` defaults: wait up to an hour, poll every 30 seconds.
DEFAULT_TIMEOUT = Duration.minutes(60)
DEFAULT_QUERY_INTERVAL = Duration.seconds(30)
#: The handler's content type when the resource gives none (also its default for FailDeployment and ShowResponse:
#: "false").
DEFAULT_CONTENT_TYPE = "application/json"
_MIN_TIMEOUT = Duration.minutes(5)
#: A custom resource must answer CloudFormation within one hour.
_MAX_TIMEOUT = Duration.minutes(60)
_MIN_QUERY_INTERVAL = Duration.seconds(5)
_MAX_QUERY_INTERVAL = Duration.minutes(5)
_LOG_RETENTION = logs.RetentionDays.ONE_MONTH
#: Each handler's timeout. The handler sizes its SageMaker clients' timeouts so one poll ends 5 s before it
#: (FUNCTION_TIMEOUT_SECONDS in the handler, which tests hold equal to this).
HANDLER_TIMEOUT = Duration.seconds(60)

#: cdk-nag AwsSolutions rule IDs acknowledged on what ``custom_resources.Provider`` creates and this construct cannot
#: configure: its three framework functions' roles and its waiter state machine. Each acknowledgment sits on the
#: narrowest CDK-owned construct (a framework function's role, the waiter), so the verification's own functions and
#: roles stay fully checked. IDs that embed a logical ID are built in ``_acknowledge_provider_framework``.
_BASIC_EXECUTION_ROLE_ACK = "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]"
_INVOKE_ANY_VERSION_ACK = "AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>:*]"
_WAITER_LOGS_ACK = "AwsSolutions::AwsSolutions-SF1"
_WAITER_XRAY_ACK = "AwsSolutions::AwsSolutions-SF2"


#: Seconds per Duration object, for as long as the object lives (each reading is a call into the CDK runtime).
_SECONDS: weakref.WeakKeyDictionary[Duration, int] = weakref.WeakKeyDictionary()


def _seconds(value: Duration) -> int:
    """``value`` in whole seconds."""
    known = _SECONDS.get(value)
    if known is None:
        known = _SECONDS[value] = int(value.to_seconds())
    return known


#: What the polling function may do on each verified endpoint.
VERIFY_ACTIONS = ("sagemaker:DescribeEndpoint", "sagemaker:InvokeEndpoint")


class _EndpointStatementGrantee(iam.PrincipalBase):
    """The polling function's role as a grantee whose every grant adds its endpoint to one statement of one policy
    (``iam.Grant`` then says what was granted, and that policy is what depends on it), never a statement per
    endpoint: a fleet verifies hundreds through one provider."""

    def __init__(self, role: iam.IRole, statement: iam.PolicyStatement, policy: iam.Policy) -> None:
        super().__init__()
        self._role = role
        self._statement = statement
        self._policy = policy
        self.resources: list[str] = []

    @property
    def policy_fragment(self) -> iam.PrincipalPolicyFragment:
        return self._role.policy_fragment

    def dedupe_string(self) -> str | None:
        return None  # never merged with another principal: it stands for one role inside this construct

    def add_to_principal_policy(self, statement: iam.PolicyStatement) -> iam.AddToPrincipalPolicyResult:
        for arn in statement.resources:
            if arn not in self.resources:  # idempotent
                self.resources.append(arn)
                self._statement.add_resources(arn)
        return iam.AddToPrincipalPolicyResult(statement_added=True, policy_dependable=self._policy)


#: stack -> provider id -> provider, for as long as the stack lives: a fleet asks for it once per endpoint.
_PROVIDERS: weakref.WeakKeyDictionary[Stack, dict[str, EndpointVerificationProvider]] = weakref.WeakKeyDictionary()


class EndpointVerificationProvider(Construct):
    """The handlers and the ``custom_resources.Provider`` shared by the verifications of one stack.

    Use :meth:`of`; do not construct directly. One provider exists per stack and (``timeout``, ``query_interval``)
    pair, because both are properties of the Provider's waiter.
    """

    def __init__(self, scope: Construct, id: str, *, timeout: Duration, query_interval: Duration) -> None:
        super().__init__(scope, id)
        self.timeout = timeout
        self.query_interval = query_interval

        code = lambda_.Code.from_asset(str(HANDLER_DIR), exclude=["__pycache__", "*.pyc"])

        self.on_event_handler, _ = self._function("OnEvent", "index.on_event", code)
        self.is_complete_handler, is_complete_role = self._function("IsComplete", "index.is_complete", code)

        # One statement, filled by grant_verify(): exactly the verified endpoints, never "*".
        endpoint_statement = iam.PolicyStatement(actions=list(VERIFY_ACTIONS), resources=[])
        #: The polling function's access to the verified endpoints (a dependency target for the custom resources).
        self.endpoint_policy = iam.Policy(
            self, "EndpointAccess", statements=[endpoint_statement], roles=[is_complete_role]
        )
        self._endpoint_grantee = _EndpointStatementGrantee(is_complete_role, endpoint_statement, self.endpoint_policy)

        framework_logs = logs.LogGroup(
            self, "FrameworkLogs", retention=_LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.on_event_handler,
            is_complete_handler=self.is_complete_handler,
            query_interval=query_interval,
            total_timeout=timeout,
            log_group=framework_logs,
            # Waiter logging stays off (the Provider's default): vended Step Functions logs need a
            # logs:*LogDelivery statement on Resource "*". See _acknowledge_provider_framework.
            disable_waiter_state_machine_logging=True,
        )
        self._acknowledge_provider_framework()

    @classmethod
    def of(cls, scope: Construct, *, timeout: Duration, query_interval: Duration) -> EndpointVerificationProvider:
        """The stack's provider for this timeout and query interval, created on first use."""
        stack = Stack.of(scope)
        provider_id = f"EndpointVerificationProvider{_seconds(timeout)}s{_seconds(query_interval)}s"
        providers = _PROVIDERS.setdefault(stack, {})
        known = providers.get(provider_id)
        if known is not None:
            return known
        existing = stack.node.try_find_child(provider_id)
        if existing is not None:
            if not isinstance(existing, EndpointVerificationProvider):
                raise ValueError(f"construct id {provider_id!r} is taken in stack {stack.node.path}")
            providers[provider_id] = existing
            return existing
        provider = providers[provider_id] = cls(stack, provider_id, timeout=timeout, query_interval=query_interval)
        return provider

    @property
    def service_token(self) -> str:
        return self.provider.service_token

    @property
    def endpoint_arns(self) -> list[str]:
        """The endpoint ARNs the polling function may describe and invoke (in order of first grant)."""
        return list(self._endpoint_grantee.resources)

    def grant_verify(self, endpoint_arn: str) -> iam.Grant:
        """Allow ``DescribeEndpoint`` and ``InvokeEndpoint`` on one more endpoint (idempotent): the ARN joins the one
        statement of :attr:`endpoint_policy`, which the grant's ``apply_before`` makes a construct depend on."""
        return iam.Grant.add_to_principal(grantee=self._endpoint_grantee, actions=list(VERIFY_ACTIONS),
                                          resource_arns=[endpoint_arn])

    def _acknowledge_provider_framework(self) -> None:
        stack = Stack.of(self)
        user_function_ids = [
            stack.get_logical_id(fn.node.default_child) for fn in (self.on_event_handler, self.is_complete_handler)
        ]
        framework_function_ids = []
        for name in ("framework-onEvent", "framework-isComplete", "framework-onTimeout"):
            framework_function = self.provider.node.find_child(name)
            framework_function_ids.append(stack.get_logical_id(framework_function.node.default_child))
            Validations.of(framework_function.role).acknowledge(
                Acknowledgment(
                    id=_BASIC_EXECUTION_ROLE_ACK,
                    reason="CDK-owned custom_resources.Provider framework function: CDK attaches the AWS managed "
                    "basic execution role (CloudWatch Logs only)",
                ),
                *[
                    Acknowledgment(
                        id=_INVOKE_ANY_VERSION_ACK.format(logical_id=logical_id),
                        reason="CDK-owned custom_resources.Provider framework function: CDK grants "
                        "lambda:InvokeFunction on the user handler and its versions (<arn>:*), nothing else",
                    )
                    for logical_id in user_function_ids
                ],
            )
        waiter = self.provider.node.find_child("waiter-state-machine")
        Validations.of(waiter).acknowledge(
            *[
                Acknowledgment(
                    id=_INVOKE_ANY_VERSION_ACK.format(logical_id=logical_id),
                    reason="CDK-owned custom_resources.Provider waiter: CDK grants lambda:InvokeFunction on the "
                    "framework isComplete/onTimeout function and its versions (<arn>:*), nothing else",
                )
                for logical_id in framework_function_ids[1:]
            ],
            Acknowledgment(
                id=_WAITER_LOGS_ACK,
                reason="CDK-owned custom_resources.Provider waiter only re-invokes isComplete; every poll and its "
                "outcome is logged by the isComplete handler (1-month log group). Waiter logging would add a "
                "logs:*LogDelivery statement on Resource '*'",
            ),
            Acknowledgment(
                id=_WAITER_XRAY_ACK,
                reason="CDK-owned custom_resources.Provider waiter state machine has no tracing option",
            ),
        )

    def _function(self, id: str, handler: str, code: lambda_.Code) -> tuple[lambda_.Function, iam.Role]:
        # The waiter's timeout and query interval are this provider's (one per pair), so the handlers read them from
        # their environment rather than from every custom resource.
        log_group = logs.LogGroup(self, f"{id}Logs", retention=_LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
        # An explicit role: no AWS managed policy, only write access to this function's own log group.
        role = iam.Role(
            self,
            f"{id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"SageMaker endpoint verification: {id} handler",
        )
        log_group.grant_write(role)
        function = lambda_.Function(
            self,
            id,
            runtime=lambda_.Runtime.PYTHON_3_14,
            architecture=lambda_.Architecture.ARM_64,
            handler=handler,
            code=code,
            memory_size=128,
            timeout=HANDLER_TIMEOUT,
            role=role,
            log_group=log_group,
            environment={"TIMEOUT_SECONDS": str(_seconds(self.timeout)),
                         "QUERY_INTERVAL_SECONDS": str(_seconds(self.query_interval))},
            description="Post-deploy verification of a SageMaker endpoint (custom_resources.Provider handler)",
        )
        return function, role


class EndpointVerification(Construct):
    """Wait for a SageMaker endpoint to be ``InService`` after deployment and check that it answers ``payload``.

    :param endpoint_name: the SageMaker endpoint name (``spec.endpointName`` of the operator's custom resource)
    :param payload: the request body sent to ``InvokeEndpoint``: a string, or a mapping or list serialized to JSON
        (only with a JSON content type). Stored in the template, so no secrets
    :param content_type: the request's content type. Default ``application/json``
    :param show_response: report the first bytes of the model's answer in :attr:`summary`'s resource data and the
        handler's logs. Default ``False``: only status, latency and byte count (the answer may hold user data)
    :param fail_deployment: fail the deployment when the verification fails or times out. Default ``False``: the
        outcome is reported in :attr:`status` / :attr:`summary` and the deployment continues
    :param timeout: how long to wait for the endpoint (5-60 minutes, a multiple of ``query_interval``). Default 60
        minutes, CloudFormation's limit for a custom resource
    :param query_interval: how often to poll (5 seconds to 5 minutes). Default 30 seconds
    :param nonce: any string; change it to run the verification again on a deployment that changes nothing else.
        Default: none (the verification runs when it is created and when a property changes)

    Make it wait for what creates the endpoint with :meth:`add_dependency` (for example the Kubernetes manifest that
    applies the operator's custom resource).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        endpoint_name: str,
        payload: str | Mapping[str, Any] | Sequence[Any],
        content_type: str = DEFAULT_CONTENT_TYPE,
        fail_deployment: bool = False,
        show_response: bool = False,
        timeout: Duration = DEFAULT_TIMEOUT,
        query_interval: Duration = DEFAULT_QUERY_INTERVAL,
        nonce: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        payload = payload_text(payload, content_type)
        _validate(endpoint_name, payload, content_type, timeout, query_interval)

        self.endpoint_name = endpoint_name
        self.fail_deployment = fail_deployment
        if is_unresolved(endpoint_name):
            Annotations.of(self).add_warning_v2(
                "hyperpod-inference:verifyEndpointNameToken",
                "endpoint_name is a deploy-time value: the IAM policy uses it as given, but SageMaker endpoint ARNs "
                "are lowercase, so a name with capitals will be denied. Prefer a literal name.",
            )
            arn_name = endpoint_name
        else:
            arn_name = endpoint_name.lower()
        stack = Stack.of(self)
        #: ``arn:<partition>:sagemaker:<region>:<account>:endpoint/<name, lowercased>``
        self.endpoint_arn = stack.format_arn(service="sagemaker", resource="endpoint", resource_name=arn_name)

        self.provider = EndpointVerificationProvider.of(stack, timeout=timeout, query_interval=query_interval)
        self.provider.grant_verify(self.endpoint_arn)

        # The handler's defaults (application/json, FailDeployment and ShowResponse "false") and the provider's
        # own timeout and interval (its handlers' environment) are left out: a fleet carries one such resource per
        # endpoint.
        properties = {"EndpointName": endpoint_name, "Payload": payload}
        if content_type != DEFAULT_CONTENT_TYPE:
            properties["ContentType"] = content_type
        if fail_deployment:
            properties["FailDeployment"] = "true"
        if show_response:
            properties["ShowResponse"] = "true"
        if nonce is not None:
            properties["Nonce"] = nonce
        self.custom_resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties=properties,
        )
        # The polling function must hold its endpoint permissions before the first poll.
        self.custom_resource.node.add_dependency(self.provider.endpoint_policy)

    @property
    def status(self) -> str:
        """``Succeeded``, ``Failed`` or ``TimedOut`` (a deploy-time value)."""
        return self.custom_resource.get_att_string("Status")

    @property
    def summary(self) -> str:
        """A one-line outcome, e.g. ``qwen-chat: InService, HTTP 200 in 412 ms (96 bytes)`` (a deploy-time value)."""
        return self.custom_resource.get_att_string("Summary")

    def add_dependency(self, *constructs: IConstruct) -> None:
        """Verify only after ``constructs`` are deployed (e.g. the manifest that creates the endpoint)."""
        self.custom_resource.node.add_dependency(*constructs)


def payload_text(payload: Any, content_type: str) -> str:
    """The request body as sent (:func:`facts.safety.verify_body`, the one place it is built): a string as given; a
    mapping or list as compact JSON, for a JSON content type only. Raises ValueError for anything else."""
    if payload is None:
        raise ValueError("EndpointVerification: payload: must be a string, a mapping or a list (got NoneType)")
    try:
        return verify_body(payload, None if is_unresolved(content_type) else content_type, "")
    except ValueError as err:
        raise ValueError(f"EndpointVerification: payload: {err}") from None


def _validate(endpoint_name: str, payload: str, content_type: str, timeout: Duration, query_interval: Duration) -> None:
    problems: list[str] = []
    if not is_unresolved(endpoint_name) and (problem := rules.endpoint_name_problem(endpoint_name)):
        problems.append(f"endpoint_name {endpoint_name!r}: {problem}")
    if not is_unresolved(payload) and not payload:
        problems.append("payload: must not be empty")
    if not is_unresolved(content_type) and not content_type.strip():
        problems.append("content_type: must not be empty")
    timeout_s, interval_s = _seconds(timeout), _seconds(query_interval)
    if not _seconds(_MIN_TIMEOUT) <= timeout_s <= _seconds(_MAX_TIMEOUT):
        problems.append(
            f"timeout: must be between 5 and 60 minutes (is {timeout_s} s); CloudFormation waits at most "
            "one hour for a custom resource"
        )
    if not _seconds(_MIN_QUERY_INTERVAL) <= interval_s <= _seconds(_MAX_QUERY_INTERVAL):
        problems.append(f"query_interval: must be between 5 seconds and 5 minutes (is {interval_s} s)")
    elif timeout_s % interval_s:
        problems.append(f"timeout: must be a multiple of query_interval ({timeout_s} s / {interval_s} s)")
    elif timeout_s < 4 * interval_s:
        problems.append(f"timeout: must be at least 4 query intervals ({timeout_s} s < 4 x {interval_s} s)")
    if problems:
        raise ValueError("EndpointVerification: " + "; ".join(problems))
