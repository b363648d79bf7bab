"""EndpointVerification: the custom resource, the shared provider, exact IAM, cdk-nag and cfn-lint."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from hyperpod_inference.constructs.endpoint_verification import HANDLER_DIR, RESOURCE_TYPE, EndpointVerification
from tests.template_lint import cfn_lint_errors

ENV = cdk.Environment(account="111122223333", region="us-west-2")


def _load_handler():
    import importlib.util

    spec = importlib.util.spec_from_file_location("verify_endpoint_index_for_construct", HANDLER_DIR / "index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


verify_handler = _load_handler()
PAYLOAD = '{"inputs": "What is AWS SageMaker?"}'


def _stack(app: cdk.App | None = None) -> cdk.Stack:
    return cdk.Stack(app or cdk.App(), "VerifyStack", env=ENV)


def _endpoint_arn(name: str) -> dict:
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":sagemaker:us-west-2:111122223333:endpoint/{name}"]]}


def _two_verifications(stack: cdk.Stack) -> tuple[EndpointVerification, EndpointVerification]:
    chat = EndpointVerification(stack, "QwenChat", endpoint_name="Qwen-Chat", payload=PAYLOAD)
    llama = EndpointVerification(
        stack, "Llama", endpoint_name="llama-3-8b", payload="hello", content_type="text/plain", fail_deployment=True
    )
    return chat, llama


def _statements(template: Template) -> list[dict]:
    policies = template.find_resources("AWS::IAM::Policy")
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _sagemaker_statements(template: Template) -> list[dict]:
    return [s for s in _statements(template) if any(a.startswith("sagemaker:") for a in _as_list(s["Action"]))]


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def _logical_id(stack: cdk.Stack, construct) -> str:
    return stack.get_logical_id(construct.node.default_child)


# -- the custom resource ----------------------------------------------------------------------------------------------


def test_custom_resource_carries_the_verification_properties_as_strings():
    # GIVEN two verifications in one stack
    stack = _stack()
    _two_verifications(stack)
    # WHEN the stack is synthesized
    template = Template.from_stack(stack)
    # THEN each custom resource carries its endpoint, payload, and the content type and CloudFormation-string flags
    # that differ from the handler's defaults (application/json, "false")
    template.resource_count_is(RESOURCE_TYPE, 2)
    template.has_resource_properties(
        RESOURCE_TYPE,
        {
            "EndpointName": "Qwen-Chat",
            "Payload": PAYLOAD,
            "ContentType": Match.absent(),
            "FailDeployment": Match.absent(),
            "ShowResponse": Match.absent(),
            "TimeoutSeconds": Match.absent(),
            "QueryIntervalSeconds": Match.absent(),
            "Nonce": Match.absent(),
        },
    )
    template.has_resource_properties(
        RESOURCE_TYPE,
        {"EndpointName": "llama-3-8b", "Payload": "hello", "ContentType": "text/plain", "FailDeployment": "true"},
    )


@pytest.mark.parametrize("payload, content_type, sent", [
    ({"inputs": "Hi", "parameters": {"max_new_tokens": 8}}, "application/json",
     '{"inputs":"Hi","parameters":{"max_new_tokens":8}}'),
    ([{"role": "user", "content": "Hi"}], "application/json", '[{"role":"user","content":"Hi"}]'),
    ("plain text", "text/plain", "plain text"),
])
def test_a_mapping_or_list_payload_is_sent_as_json(payload, content_type, sent):
    # GIVEN a verification whose payload is a mapping, a list or a string
    stack = _stack()
    EndpointVerification(stack, "V", endpoint_name="chat", payload=payload, content_type=content_type)
    # THEN the custom resource carries the body as sent: compact JSON for a mapping or list, a string as given (and
    # a content type other than the handler's default)
    expected_type = Match.absent() if content_type == "application/json" else content_type
    Template.from_stack(stack).has_resource_properties(RESOURCE_TYPE, {"Payload": sent, "ContentType": expected_type})


def test_a_mapping_payload_with_a_non_json_content_type_is_refused():
    with pytest.raises(ValueError, match="payload: a mapping or list is sent as JSON and needs a JSON content type"):
        EndpointVerification(_stack(), "V", endpoint_name="chat", payload={"a": 1}, content_type="text/csv")


def test_show_response_is_passed_to_the_handler():
    stack = _stack()
    EndpointVerification(stack, "V", endpoint_name="chat", payload="x", show_response=True)
    Template.from_stack(stack).has_resource_properties(RESOURCE_TYPE, {"ShowResponse": "true"})


def test_nonce_is_passed_through_to_rerun_the_verification():
    # GIVEN a verification with a nonce
    stack = _stack()
    EndpointVerification(stack, "V", endpoint_name="chat", payload=PAYLOAD, nonce="build-42")
    # WHEN the stack is synthesized
    # THEN the nonce is a property (changing it changes the resource, so CloudFormation verifies again)
    Template.from_stack(stack).has_resource_properties(RESOURCE_TYPE, {"Nonce": "build-42"})


def test_status_and_summary_are_attributes_of_the_custom_resource():
    # GIVEN a verification whose status and summary are exported
    stack = _stack()
    verification = EndpointVerification(stack, "V", endpoint_name="chat", payload=PAYLOAD)
    cdk.CfnOutput(stack, "Status", value=verification.status)
    cdk.CfnOutput(stack, "Summary", value=verification.summary)
    # WHEN the stack is synthesized
    outputs = Template.from_stack(stack).to_json()["Outputs"]
    # THEN they read the custom resource's Status and Summary attributes
    resource_id = _logical_id(stack, verification.custom_resource)
    assert outputs["Status"]["Value"] == {"Fn::GetAtt": [resource_id, "Status"]}
    assert outputs["Summary"]["Value"] == {"Fn::GetAtt": [resource_id, "Summary"]}


def test_add_dependency_orders_the_custom_resource_after_the_given_construct():
    # GIVEN a verification that must wait for what creates the endpoint
    stack = _stack()
    creator = sns.Topic(stack, "StandInForTheManifest")
    verification = EndpointVerification(stack, "V", endpoint_name="chat", payload=PAYLOAD)
    # WHEN a dependency is added
    verification.add_dependency(creator)
    # THEN the custom resource depends on it (and on the polling function's endpoint policy)
    resource = Template.from_stack(stack).to_json()["Resources"][_logical_id(stack, verification.custom_resource)]
    assert _logical_id(stack, creator) in resource["DependsOn"]
    assert _logical_id(stack, verification.provider.endpoint_policy) in resource["DependsOn"]


# -- one provider, exact IAM ------------------------------------------------------------------------------------------


def test_two_verifications_share_one_provider_whose_policy_lists_exactly_their_lowercase_endpoint_arns():
    # GIVEN two verifications with the same timeout and query interval
    stack = _stack()
    chat, llama = _two_verifications(stack)
    # WHEN the stack is synthesized
    template = Template.from_stack(stack)
    # THEN there is one provider: two handler functions, one waiter, both custom resources use its token
    assert chat.provider is llama.provider
    template.resource_count_is("AWS::StepFunctions::StateMachine", 1)
    template.resource_count_is("AWS::Lambda::Function", 5)  # 2 handlers + 3 framework functions
    tokens = {json.dumps(r["Properties"]["ServiceToken"]) for r in template.find_resources(RESOURCE_TYPE).values()}
    assert len(tokens) == 1
    # AND one statement allows DescribeEndpoint/InvokeEndpoint on exactly the two (lowercased) endpoint ARNs
    assert _sagemaker_statements(template) == [
        {
            "Action": ["sagemaker:DescribeEndpoint", "sagemaker:InvokeEndpoint"],
            "Effect": "Allow",
            "Resource": [_endpoint_arn("qwen-chat"), _endpoint_arn("llama-3-8b")],
        }
    ]


def test_the_endpoint_policy_is_attached_to_the_polling_function_only():
    # GIVEN two verifications
    stack = _stack()
    chat, _ = _two_verifications(stack)
    # WHEN the stack is synthesized
    template = Template.from_stack(stack)
    # THEN the endpoint policy's only role is the isComplete handler's
    policy = template.to_json()["Resources"][_logical_id(stack, chat.provider.endpoint_policy)]
    is_complete_role = _logical_id(stack, chat.provider.is_complete_handler.role)
    assert policy["Properties"]["Roles"] == [{"Ref": is_complete_role}]


def test_grant_verify_returns_the_grant_whose_dependable_is_the_endpoint_policy():
    # GIVEN a verification's provider and a construct that must wait for the polling function's access
    stack = _stack()
    chat, _ = _two_verifications(stack)
    waiting = sns.Topic(stack, "Waiting")
    arn = "arn:aws:sagemaker:us-west-2:111122223333:endpoint/other"
    # WHEN one more endpoint is granted, and granted again
    grant = chat.provider.grant_verify(arn)
    again = chat.provider.grant_verify(arn)
    grant.apply_before(waiting)
    # THEN each is an iam.Grant that succeeded with the two actions on that endpoint, the ARN is listed once, and the
    # construct depends on the endpoint policy
    assert isinstance(grant, iam.Grant) and grant.success and again.success
    assert grant.principal_statement.to_statement_json() == {
        "Action": ["sagemaker:DescribeEndpoint", "sagemaker:InvokeEndpoint"], "Effect": "Allow", "Resource": arn}
    assert chat.provider.endpoint_arns.count(arn) == 1
    topic = Template.from_stack(stack).to_json()["Resources"][_logical_id(stack, waiting)]
    assert _logical_id(stack, chat.provider.endpoint_policy) in topic["DependsOn"]


def test_verifying_the_same_endpoint_twice_lists_its_arn_once():
    # GIVEN two verifications of one endpoint (different payloads)
    stack = _stack()
    EndpointVerification(stack, "A", endpoint_name="chat", payload=PAYLOAD)
    EndpointVerification(stack, "B", endpoint_name="chat", payload="ping")
    # WHEN the stack is synthesized
    # THEN the ARN appears once
    assert _sagemaker_statements(Template.from_stack(stack))[0]["Resource"] == _endpoint_arn("chat")


def test_no_statement_in_the_template_allows_every_resource():
    # GIVEN two verifications
    stack = _stack()
    _two_verifications(stack)
    # WHEN the stack is synthesized
    # THEN no IAM statement has Resource "*" (the waiter's log delivery statement is not there)
    for statement in _statements(Template.from_stack(stack)):
        assert "*" not in _as_list(statement["Resource"]), statement


def test_different_timeouts_get_separate_providers_each_scoped_to_its_endpoints():
    # GIVEN verifications with different timeouts
    stack = _stack()
    fast = EndpointVerification(stack, "Fast", endpoint_name="small", payload="x", timeout=cdk.Duration.minutes(10))
    slow = EndpointVerification(stack, "Slow", endpoint_name="large", payload="x")
    # WHEN the stack is synthesized
    template = Template.from_stack(stack)
    # THEN each timeout has its own provider and each policy names only its own endpoint
    assert fast.provider is not slow.provider
    template.resource_count_is("AWS::StepFunctions::StateMachine", 2)
    assert sorted(json.dumps(s["Resource"]) for s in _sagemaker_statements(template)) == sorted(
        [json.dumps(_endpoint_arn("small")), json.dumps(_endpoint_arn("large"))]
    )


# -- provider timing and functions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timeout", "interval", "attempts"),
    [
        (cdk.Duration.minutes(60), cdk.Duration.seconds(30), 120),
        (cdk.Duration.minutes(20), cdk.Duration.minutes(1), 20),
    ],
)
def test_provider_total_timeout_and_query_interval_drive_the_waiter(timeout, interval, attempts):
    # GIVEN a verification with a timeout and query interval
    stack = _stack()
    EndpointVerification(stack, "V", endpoint_name="chat", payload=PAYLOAD, timeout=timeout, query_interval=interval)
    # WHEN the stack is synthesized
    state_machine = next(iter(Template.from_stack(stack).find_resources("AWS::StepFunctions::StateMachine").values()))
    definition = json.dumps(state_machine["Properties"]["DefinitionString"])
    # THEN the waiter polls every interval, total timeout / interval times
    assert f'\\"IntervalSeconds\\":{int(interval.to_seconds())}' in definition
    assert f'\\"MaxAttempts\\":{attempts}' in definition
    # AND both handlers know the timeout and interval from their environment (the custom resources omit them)
    handlers = [f for f in Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
                if f["Properties"].get("Handler", "").startswith("index.")]
    assert len(handlers) == 2
    for function in handlers:
        assert function["Properties"]["Environment"]["Variables"] == {
            "TIMEOUT_SECONDS": str(int(timeout.to_seconds())), "QUERY_INTERVAL_SECONDS": str(int(interval.to_seconds()))}


def test_handler_functions_use_the_latest_python_on_arm_with_small_limits_and_a_one_month_log_group():
    # GIVEN a verification
    stack = _stack()
    EndpointVerification(stack, "V", endpoint_name="chat", payload=PAYLOAD)
    # WHEN the stack is synthesized
    template = Template.from_stack(stack)
    # THEN both handlers run the newest Python runtime aws-cdk-lib knows (cdk-nag L1 demands it), arm64, 128 MB,
    # and the timeout the handler sizes its SageMaker clients for
    latest_python = max(
        (r.name for r in lambda_.Runtime.ALL if r.name.startswith("python3.")),
        key=lambda name: int(name.split(".")[1]),
    )
    handlers = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": Match.string_like_regexp(r"^index\.")}}
    )
    assert sorted(h["Properties"]["Handler"] for h in handlers.values()) == ["index.is_complete", "index.on_event"]
    log_groups = template.find_resources("AWS::Logs::LogGroup")
    for handler in handlers.values():
        props = handler["Properties"]
        assert (props["Runtime"], props["Architectures"], props["MemorySize"], props["Timeout"]) == (
            latest_python,
            ["arm64"],
            128,
            verify_handler.FUNCTION_TIMEOUT_SECONDS,
        )
        log_group = log_groups[props["LoggingConfig"]["LogGroup"]["Ref"]]
        assert log_group["Properties"]["RetentionInDays"] == 30
        # AND their roles carry no AWS managed policy
        role_id = props["Role"]["Fn::GetAtt"][0]
        assert "ManagedPolicyArns" not in template.to_json()["Resources"][role_id]["Properties"]


def test_handler_asset_is_the_verify_endpoint_folder():
    # GIVEN the asset folder shipped with the package
    from hyperpod_inference.constructs.endpoint_verification import HANDLER_DIR

    # WHEN it is inspected
    # THEN it holds the handler module with both entry points
    source = (HANDLER_DIR / "index.py").read_text()
    assert "def on_event(" in source and "def is_complete(" in source


# -- validation -------------------------------------------------------------------------------------------------------


def test_invalid_props_are_reported_together():
    # GIVEN a bad endpoint name, an empty payload and a timeout beyond CloudFormation's hour
    stack = _stack()
    # WHEN the construct is created
    # THEN one error names every problem
    with pytest.raises(ValueError) as raised:
        EndpointVerification(stack, "V", endpoint_name="bad_name!", payload="", timeout=cdk.Duration.minutes(90))
    message = str(raised.value)
    assert "endpoint_name 'bad_name!'" in message
    assert "payload: must not be empty" in message
    assert "timeout: must be between 5 and 60 minutes" in message


@pytest.mark.parametrize(
    ("timeout", "interval", "expected"),
    [
        (cdk.Duration.minutes(10), cdk.Duration.seconds(7), "must be a multiple of query_interval"),
        (cdk.Duration.minutes(10), cdk.Duration.minutes(5), "must be at least 4 query intervals"),
        (cdk.Duration.minutes(10), cdk.Duration.seconds(1), "query_interval: must be between 5 seconds and 5 minutes"),
    ],
)
def test_timeout_and_query_interval_must_fit_the_provider(timeout, interval, expected):
    # GIVEN a timeout / interval pair the Provider's waiter cannot express well
    stack = _stack()
    # WHEN the construct is created
    # THEN it is refused with the reason
    with pytest.raises(ValueError, match=expected):
        EndpointVerification(stack, "V", endpoint_name="chat", payload="x", timeout=timeout, query_interval=interval)


def test_a_deploy_time_endpoint_name_is_used_as_given_with_a_warning():
    # GIVEN an endpoint name known only at deploy time
    stack = _stack()
    name = cdk.CfnParameter(stack, "EndpointName").value_as_string
    # WHEN the construct is created
    EndpointVerification(stack, "V", endpoint_name=name, payload=PAYLOAD)
    # THEN a warning says the ARN is not lowercased
    Annotations.from_stack(stack).has_warning("/VerifyStack/V", Match.string_like_regexp("lowercase"))


# -- cdk-nag and cfn-lint ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nag_synth(tmp_path_factory) -> Path:
    """A stack with two verifications, synthesized with AwsSolutionsChecks registered as the app will."""
    outdir = tmp_path_factory.mktemp("verify-nag")
    app = cdk.App(outdir=str(outdir))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    _two_verifications(_stack(app))
    app.synth()  # raises when a finding is not acknowledged
    return outdir


def test_cdk_nag_reports_no_unacknowledged_finding(nag_synth):
    # GIVEN the synthesized app with AwsSolutionsChecks
    # WHEN the validation report is read
    report = json.loads((nag_synth / "validation-report.json").read_text())
    # THEN AwsSolutions passed with zero open findings
    [plugin] = report["pluginReports"]
    assert plugin["conclusion"] == "success"
    assert plugin["violations"] == []


def test_every_acknowledgment_has_a_reason_and_covers_only_the_cdk_owned_provider(nag_synth):
    # GIVEN the synthesized app with AwsSolutionsChecks
    report = json.loads((nag_synth / "validation-report.json").read_text())
    suppressed = report["pluginReports"][0]["suppressedViolations"]
    # WHEN the acknowledged findings are listed
    # THEN each carries a reason and sits on a construct inside custom_resources.Provider, never on our handlers
    assert suppressed
    for finding in suppressed:
        assert finding["reason"].strip(), finding["ruleName"]
        assert "/Provider/" in finding["acknowledgedAt"] + "/", finding
        for construct in finding["violatingConstructs"]:
            assert "/Provider/" in construct["constructPath"], construct


def test_cfn_lint_finds_no_error(nag_synth):
    # GIVEN the synthesized template
    templates = sorted(str(p) for p in nag_synth.glob("*.template.json"))
    assert templates
    # WHEN cfn-lint checks it (warnings such as W3005 from CDK's own DependsOn do not fail)
    # THEN it finds no error
    assert cfn_lint_errors(templates) == []
