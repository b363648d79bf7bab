"""Behaviour of the endpoint-verification handlers (``hyperpod_inference/lambda/verify_endpoint/index.py``).

SageMaker and SageMaker Runtime are moto's: endpoints are created InService through boto3, other states are set on
moto's backend object, and InvokeEndpoint answers come from moto's result queue.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.exceptions import JsonRESTError
from moto.sagemaker.models import SageMakerModelBackend, sagemaker_backends
from moto.sagemakerruntime.models import SageMakerRuntimeBackend, sagemakerruntime_backends

HANDLER_PATH = Path(__file__).resolve().parents[2] / "hyperpod_inference" / "lambda" / "verify_endpoint" / "index.py"
REGION = "us-west-2"
ENDPOINT = "qwen-chat"
PAYLOAD = '{"inputs": "What is AWS SageMaker?"}'
CFN_RESPONSE_LIMIT_BYTES = 4096


def _load_handler():
    spec = importlib.util.spec_from_file_location("verify_endpoint_index", HANDLER_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


handler = _load_handler()


@pytest.fixture(autouse=True)
def _aws_env(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    boto3.DEFAULT_SESSION = None  # no session cached from another test's environment


@pytest.fixture
def aws():
    with mock_aws():
        yield


def _create_endpoint(name: str = ENDPOINT) -> None:
    sm = boto3.client("sagemaker", region_name=REGION)
    sm.create_model(
        ModelName=f"{name}-model",
        ExecutionRoleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/sagemaker",
        PrimaryContainer={"Image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm:latest"},
    )
    sm.create_endpoint_config(
        EndpointConfigName=f"{name}-config",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": f"{name}-model",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.g4dn.xlarge",  # moto knows an older instance list
            }
        ],
    )
    sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config")


def _set_endpoint_status(status: str, failure_reason: str | None = None, name: str = ENDPOINT) -> None:
    endpoint = sagemaker_backends[DEFAULT_ACCOUNT_ID][REGION].endpoints[name]
    endpoint.endpoint_status = status
    endpoint.failure_reason = failure_reason


def _record_invokes() -> list[dict]:
    """The parameters of every InvokeEndpoint call the handler makes from now on (boto3's default session)."""
    sent: list[dict] = []
    boto3.setup_default_session(region_name=REGION)
    boto3.DEFAULT_SESSION.events.register(
        "before-parameter-build.sagemaker-runtime.InvokeEndpoint", lambda params, **_: sent.append(dict(params))
    )
    return sent


def _queue_invoke_result(body, content_type: str = "application/json") -> None:
    sagemakerruntime_backends[DEFAULT_ACCOUNT_ID][REGION].results_queue.append((body, content_type, "AllTraffic", ""))


def _event(request_type: str = "Create", fail_deployment: str = "false", started_at: int | None = None, **props):
    resource_properties = {
        "ServiceToken": "arn:aws:lambda:us-west-2:111122223333:function:provider",
        "EndpointName": ENDPOINT,
        "Payload": PAYLOAD,
        "ContentType": "application/json",
        "FailDeployment": fail_deployment,
        "TimeoutSeconds": "3600",
        "QueryIntervalSeconds": "30",
        **props,
    }
    event = {
        "RequestType": request_type,
        "RequestId": "5d7c9f2e-request",
        "StackId": "arn:aws:cloudformation:us-west-2:111122223333:stack/HyperPodInference/6f1e2d30-aaaa-bbbb-cccc-0123456789ab",
        "LogicalResourceId": "QwenChatVerificationCustomResource1A2B3C4D",
        "ResourceType": "Custom::SageMakerEndpointVerification",
        "ResourceProperties": resource_properties,
    }
    if request_type != "Create":
        event["PhysicalResourceId"] = f"verify-{ENDPOINT}"
    event["Data"] = {"StartedAt": int(time.time()) if started_at is None else started_at}
    return event


def _framework_response(event: dict, result: dict) -> dict:
    """What the Provider framework sends to CloudFormation for a completed is_complete (its Data merge included)."""
    return {
        "Status": "SUCCESS",
        "Reason": "SUCCESS",
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "PhysicalResourceId": event.get("PhysicalResourceId", f"verify-{ENDPOINT}"),
        "LogicalResourceId": event["LogicalResourceId"],
        "NoEcho": False,
        "Data": {**event["Data"], **result.get("Data", {})},
    }


# ---------------------------------------------------------------------------------------------------------------------
# on_event


def test_create_returns_physical_id_named_after_the_endpoint_and_records_the_start_time():
    # GIVEN a Create request
    before = int(time.time())
    event = _event("Create")
    del event["Data"]
    # WHEN on_event runs
    result = handler.on_event(event, None)
    # THEN the physical id names the endpoint and Data carries the start time for the soft deadline
    assert result["PhysicalResourceId"] == "verify-qwen-chat"
    assert before <= result["Data"]["StartedAt"] <= int(time.time())


def test_update_keeps_the_existing_physical_id_even_when_the_endpoint_name_changes():
    # GIVEN an Update of a resource created for another endpoint name
    event = _event("Update", EndpointName="renamed-endpoint")
    event["PhysicalResourceId"] = "verify-qwen-chat"
    # WHEN on_event runs
    result = handler.on_event(event, None)
    # THEN the physical id is unchanged, so CloudFormation does not replace the resource
    assert result["PhysicalResourceId"] == "verify-qwen-chat"


def test_delete_is_a_no_op_without_any_aws_call(monkeypatch):
    # GIVEN no moto and every way to create an AWS client patched to explode
    def explode(*args, **kwargs):
        raise AssertionError("Delete must not create an AWS client")

    monkeypatch.setattr(boto3, "client", explode)
    monkeypatch.setattr(boto3.session.Session, "client", explode)
    event = _event("Delete")
    # WHEN both handlers run for Delete
    on_event_result = handler.on_event(event, None)
    is_complete_result = handler.is_complete(event, None)
    # THEN both answer without touching AWS, keeping the physical id
    assert on_event_result == {"PhysicalResourceId": "verify-qwen-chat"}
    assert is_complete_result == {"IsComplete": True}


# ---------------------------------------------------------------------------------------------------------------------
# is_complete: success


def test_a_resource_without_content_type_and_flags_gets_the_defaults_the_construct_leaves_out(aws):
    # GIVEN an InService endpoint and a resource without ContentType, FailDeployment and ShowResponse (the construct
    # leaves its defaults out)
    from hyperpod_inference.constructs.endpoint_verification import DEFAULT_CONTENT_TYPE

    _create_endpoint()
    _queue_invoke_result('{"generated_text": "hi"}')
    sent = _record_invokes()
    event = _event()
    for key in ("ContentType", "FailDeployment", "ShowResponse"):
        event["ResourceProperties"].pop(key, None)
    # WHEN is_complete runs
    result = handler.is_complete(event, None)
    # THEN it sends the construct's default content type and shows no answer text
    assert sent == [{"EndpointName": ENDPOINT, "Body": PAYLOAD.encode(), "ContentType": DEFAULT_CONTENT_TYPE}]
    assert result["IsComplete"] is True and result["Data"]["Status"] == "Succeeded"
    assert "BodyPreview" not in result["Data"]


def test_in_service_endpoint_is_invoked_with_the_payload_and_reports_latency_and_preview(aws):
    # GIVEN an InService endpoint that answers a JSON body, verified with ShowResponse "true"
    _create_endpoint()
    _queue_invoke_result('{"generated_text": "Amazon SageMaker is a managed ML service."}')
    sent = _record_invokes()
    # WHEN is_complete runs
    result = handler.is_complete(_event(ShowResponse="true"), None)
    # THEN the payload and content type were sent, and the verification succeeded with its measurements
    assert sent == [{"EndpointName": ENDPOINT, "Body": PAYLOAD.encode(), "ContentType": "application/json"}]
    assert result["IsComplete"] is True
    data = result["Data"]
    assert data["Status"] == "Succeeded"
    assert data["EndpointStatus"] == "InService"
    assert data["HttpStatus"] == 200
    assert isinstance(data["LatencyMs"], int) and data["LatencyMs"] >= 0
    assert data["BodyPreview"] == '{"generated_text": "Amazon SageMaker is a managed ML service."}'
    assert data["Summary"].startswith("qwen-chat: InService, HTTP 200 in ")


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("x" * (1024 * 1024), id="1MB-ascii"),
        pytest.param("\u00e9\u4e2d\U0001f600" * (1024 * 1024 // 9), id="1MB-multibyte"),
    ],
)
def test_a_1mb_response_keeps_the_custom_resource_response_under_4kb(aws, body):
    # GIVEN an InService endpoint that answers about 1 MB, its preview shown
    _create_endpoint()
    _queue_invoke_result(body)
    event = _event(ShowResponse="true")
    # WHEN is_complete runs
    result = handler.is_complete(event, None)
    # THEN the preview holds at most the first 256 bytes and the whole framework response stays far under 4 KB
    data = result["Data"]
    assert data["BodyBytes"] == len(body.encode("utf-8"))
    assert data["BodyPreview"] == body.encode("utf-8")[:256].decode("utf-8", errors="replace")
    response = json.dumps(_framework_response(event, result)).encode("utf-8")  # ASCII-escaped: the larger form
    assert len(response) < CFN_RESPONSE_LIMIT_BYTES


def test_an_in_service_endpoint_is_verified_even_after_the_soft_deadline(aws):
    # GIVEN an InService endpoint and a verification that started longer ago than its timeout
    _create_endpoint()
    event = _event(started_at=int(time.time()) - 7200, fail_deployment="true")
    # WHEN is_complete runs
    result = handler.is_complete(event, None)
    # THEN the deadline only bounds waiting: a healthy endpoint still succeeds
    assert result["Data"]["Status"] == "Succeeded"


# ---------------------------------------------------------------------------------------------------------------------
# is_complete: not yet


@pytest.mark.parametrize("status", ["Creating", "Updating", "SystemUpdating"])
def test_endpoint_still_changing_is_not_complete(aws, status):
    # GIVEN an endpoint that is still being created or updated
    _create_endpoint()
    _set_endpoint_status(status)
    # WHEN is_complete runs (well before the deadline)
    result = handler.is_complete(_event(fail_deployment="true"), None)
    # THEN the Provider is asked to poll again, with no Data (the framework rejects Data when not complete)
    assert result == {"IsComplete": False}


def test_endpoint_not_created_yet_by_the_operator_is_not_complete(aws):
    # GIVEN no endpoint yet (the operator creates it after the custom resource is applied)
    # WHEN is_complete runs
    result = handler.is_complete(_event(fail_deployment="true"), None)
    # THEN it is "not yet", not a failure
    assert result == {"IsComplete": False}


def test_transient_invoke_error_is_not_complete(aws, monkeypatch):
    # GIVEN an InService endpoint whose model container is not ready to answer yet
    _create_endpoint()

    def not_ready(self, endpoint_name, unique_repr):
        raise JsonRESTError("ModelNotReadyException", "Model is not ready")

    monkeypatch.setattr(SageMakerRuntimeBackend, "invoke_endpoint", not_ready)
    # WHEN is_complete runs
    result = handler.is_complete(_event(fail_deployment="true"), None)
    # THEN it polls again instead of failing
    assert result == {"IsComplete": False}


# ---------------------------------------------------------------------------------------------------------------------
# is_complete: failure


def test_failed_endpoint_fails_the_deployment_when_fail_deployment_is_true(aws):
    # GIVEN an endpoint in Failed state
    _create_endpoint()
    _set_endpoint_status("Failed", "CUDA out of memory on ml.g5.8xlarge")
    # WHEN is_complete runs with FailDeployment "true"
    # THEN it raises a short message that the Provider reports to CloudFormation
    with pytest.raises(handler.VerificationFailed) as raised:
        handler.is_complete(_event(fail_deployment="true"), None)
    message = str(raised.value)
    assert "qwen-chat" in message and "Failed" in message and "CUDA out of memory" in message
    assert len(message) < 500


def test_failed_endpoint_is_reported_without_failing_when_fail_deployment_is_false(aws):
    # GIVEN an endpoint in Failed state
    _create_endpoint()
    _set_endpoint_status("Failed", "CUDA out of memory on ml.g5.8xlarge")
    # WHEN is_complete runs with FailDeployment "false"
    result = handler.is_complete(_event(fail_deployment="false"), None)
    # THEN the resource completes and its attributes say why verification failed
    assert result["IsComplete"] is True
    assert result["Data"]["Status"] == "Failed"
    assert result["Data"]["EndpointStatus"] == "Failed"
    assert result["Data"]["Reason"] == "endpoint status Failed: CUDA out of memory on ml.g5.8xlarge"
    assert result["Data"]["Summary"].startswith("qwen-chat: verification failed")


@pytest.mark.parametrize("status", ["OutOfService", "Deleting"])
def test_out_of_service_or_deleting_endpoint_is_a_failure(aws, status):
    # GIVEN an endpoint that will not serve
    _create_endpoint()
    _set_endpoint_status(status)
    # WHEN is_complete runs with FailDeployment "false"
    result = handler.is_complete(_event(), None)
    # THEN the verification completes as Failed naming the status
    assert result["Data"]["Status"] == "Failed"
    assert status in result["Data"]["Reason"]


def test_model_error_on_invoke_is_a_failure(aws, monkeypatch):
    # GIVEN an InService endpoint whose model rejects the payload
    _create_endpoint()

    def model_error(self, endpoint_name, unique_repr):
        raise JsonRESTError("ModelError", "Received client error (400) from primary: bad request")

    monkeypatch.setattr(SageMakerRuntimeBackend, "invoke_endpoint", model_error)
    # WHEN is_complete runs with FailDeployment "true" and "false"
    # THEN "true" raises and "false" reports Failed with the error code
    with pytest.raises(handler.VerificationFailed, match="ModelError"):
        handler.is_complete(_event(fail_deployment="true"), None)
    result = handler.is_complete(_event(fail_deployment="false"), None)
    assert result["Data"]["Status"] == "Failed"
    assert result["Data"]["Reason"].startswith("InvokeEndpoint failed: ModelError")


def test_a_long_failure_reason_is_truncated(aws):
    # GIVEN an endpoint whose failure reason is very long
    _create_endpoint()
    _set_endpoint_status("Failed", "x" * 100_000)
    event = _event()
    # WHEN is_complete runs with FailDeployment "false"
    result = handler.is_complete(event, None)
    # THEN the reason is cut and the framework response stays under 4 KB
    assert len(result["Data"]["Reason"]) <= handler.MAX_REASON_CHARS
    assert len(json.dumps(_framework_response(event, result)).encode()) < CFN_RESPONSE_LIMIT_BYTES


# ---------------------------------------------------------------------------------------------------------------------
# is_complete: soft deadline


def test_waiting_past_the_soft_deadline_fails_the_deployment_when_fail_deployment_is_true(aws):
    # GIVEN an endpoint still missing 59 minutes into a 60-minute verification
    event = _event(fail_deployment="true", started_at=int(time.time()) - 3540)
    # WHEN is_complete runs
    # THEN it raises a timeout naming the last status, before the Provider's own timeout hits
    with pytest.raises(handler.VerificationFailed, match=r"timedout.*within 3600 s \(last status: NotFound\)"):
        handler.is_complete(event, None)


def test_waiting_past_the_soft_deadline_completes_as_timed_out_when_fail_deployment_is_false(aws):
    # GIVEN an endpoint stuck Creating 59 minutes into a 60-minute verification
    _create_endpoint()
    _set_endpoint_status("Creating")
    event = _event(fail_deployment="false", started_at=int(time.time()) - 3540)
    # WHEN is_complete runs
    result = handler.is_complete(event, None)
    # THEN the resource completes with Status TimedOut, so the deployment goes on
    assert result["IsComplete"] is True
    assert result["Data"]["Status"] == "TimedOut"
    assert result["Data"]["Reason"] == "endpoint not verified within 3600 s (last status: Creating)"


def test_soft_deadline_margin_grows_with_the_query_interval(aws):
    # GIVEN a 5-minute query interval: the margin must cover two polls (600 s), not just 60 s
    event = _event(fail_deployment="false", started_at=int(time.time()) - 3100, QueryIntervalSeconds="300")
    # WHEN is_complete runs 3100 s into a 3600 s verification of a missing endpoint
    result = handler.is_complete(event, None)
    # THEN it already stops waiting
    assert result["Data"]["Status"] == "TimedOut"


def test_the_timeout_and_interval_come_from_the_environment_when_the_resource_omits_them(aws, monkeypatch):
    # GIVEN a resource without TimeoutSeconds / QueryIntervalSeconds, on a provider of 20 minutes and 5-minute polls
    monkeypatch.setenv("TIMEOUT_SECONDS", "1200")
    monkeypatch.setenv("QUERY_INTERVAL_SECONDS", "300")
    _create_endpoint()
    _set_endpoint_status("Creating")
    event = _event(fail_deployment="false", started_at=int(time.time()) - 700)
    for key in ("TimeoutSeconds", "QueryIntervalSeconds"):
        event["ResourceProperties"].pop(key)
    # WHEN is_complete runs 700 s in (past 1200 s minus two polls)
    result = handler.is_complete(event, None)
    # THEN it stops waiting, naming the provider's timeout
    assert result["Data"]["Status"] == "TimedOut"
    assert result["Data"]["Reason"] == "endpoint not verified within 1200 s (last status: Creating)"


def test_fail_deployment_strings_are_parsed_case_insensitively():
    # GIVEN the strings CloudFormation may pass
    # WHEN they are parsed
    # THEN only "true" (any case) and True mean true
    assert [handler._as_bool(v) for v in ("true", "True", "TRUE", True)] == [True] * 4
    assert [handler._as_bool(v) for v in ("false", "False", "", "yes", None, False)] == [False] * 6


def test_access_denied_on_describe_is_a_failure_not_a_wait(aws, monkeypatch):
    # GIVEN a polling role that may not describe the endpoint
    def denied(self, endpoint_name):
        raise JsonRESTError("AccessDeniedException", "not authorized to perform sagemaker:DescribeEndpoint")

    monkeypatch.setattr(SageMakerModelBackend, "describe_endpoint", denied)
    # WHEN is_complete runs with FailDeployment "false"
    result = handler.is_complete(_event(), None)
    # THEN it completes at once as Failed, naming the error (waiting would not help)
    assert result["Data"]["Status"] == "Failed"
    assert result["Data"]["Reason"].startswith("DescribeEndpoint failed: AccessDeniedException")


# ---------------------------------------------------------------------------------------------------------------------
# logging


def test_logs_name_the_outcome_but_never_the_payload_or_the_body_beyond_the_preview(aws, caplog):
    # GIVEN a payload and a response body with markers (the body's marker lies beyond the 256-byte preview)
    _create_endpoint()
    _queue_invoke_result("a" * 300 + "TAIL-MARKER")
    event = _event(Payload='{"inputs": "PAYLOAD-MARKER"}', ShowResponse="true")
    # WHEN both handlers run with INFO logging captured
    with caplog.at_level("INFO"):
        handler.on_event(event, None)
        result = handler.is_complete(event, None)
    # THEN the logs report the verification without either marker
    assert result["Data"]["Status"] == "Succeeded"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "endpoint qwen-chat verified: HTTP 200" in logged
    assert "PAYLOAD-MARKER" not in logged
    assert "TAIL-MARKER" not in logged


def test_the_answer_text_is_neither_output_nor_logged_without_show_response(aws, caplog):
    # GIVEN an endpoint whose answer holds a marker, verified without ShowResponse (the default)
    _create_endpoint()
    answer = '{"generated_text": "ANSWER-MARKER"}'
    _queue_invoke_result(answer)
    # WHEN is_complete runs with INFO logging captured
    with caplog.at_level("INFO"):
        result = handler.is_complete(_event(), None)
    # THEN status, latency and byte count are reported, the answer nowhere
    data = result["Data"]
    assert data["Status"] == "Succeeded" and data["HttpStatus"] == 200 and data["BodyBytes"] == len(answer)
    assert isinstance(data["LatencyMs"], int)
    assert "BodyPreview" not in data
    assert "ANSWER-MARKER" not in json.dumps(data)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "HTTP 200" in logged and f"{len(answer)} response bytes" in logged
    assert "ANSWER-MARKER" not in logged


def test_a_model_error_message_is_hidden_without_show_response(aws, monkeypatch):
    # GIVEN a model whose error echoes the request's text
    _create_endpoint()

    def model_error(self, endpoint_name, unique_repr):
        raise JsonRESTError("ModelError", "Received client error (400): USER-TEXT-MARKER")

    monkeypatch.setattr(SageMakerRuntimeBackend, "invoke_endpoint", model_error)
    # WHEN is_complete runs without and with ShowResponse
    hidden = handler.is_complete(_event(), None)["Data"]["Reason"]
    shown = handler.is_complete(_event(ShowResponse="true"), None)["Data"]["Reason"]
    # THEN the model's message appears only when asked for
    assert hidden.startswith("InvokeEndpoint failed: ModelError") and "USER-TEXT-MARKER" not in hidden
    assert "USER-TEXT-MARKER" in shown


def test_one_poll_fits_the_function_timeout_minus_five_seconds():
    # GIVEN the clients the handler builds for one poll (DescribeEndpoint, then InvokeEndpoint)
    clients = [handler.client("sagemaker"), handler.client("sagemaker-runtime")]
    # WHEN their timeouts and attempts are read from botocore's client configuration
    worst = 0
    for client in clients:
        config = client.meta.config
        worst += (config.connect_timeout + config.read_timeout) * config.retries["total_max_attempts"]
    # THEN the worst case fits the function's timeout minus 5 s, and no call is retried (the model runs once)
    assert worst <= handler.FUNCTION_TIMEOUT_SECONDS - 5
    assert [c.meta.config.retries["total_max_attempts"] for c in clients] == [1, 1]


def test_access_denied_on_invoke_is_reported_not_raised(aws, monkeypatch):
    # GIVEN a polling role that may describe but not invoke the endpoint
    _create_endpoint()

    def denied(self, endpoint_name, unique_repr):
        raise JsonRESTError("AccessDeniedException", "not authorized to perform sagemaker:InvokeEndpoint")

    monkeypatch.setattr(SageMakerRuntimeBackend, "invoke_endpoint", denied)
    # WHEN is_complete runs with FailDeployment "false"
    result = handler.is_complete(_event(), None)
    # THEN it completes as Failed naming the error
    assert result["IsComplete"] is True
    assert result["Data"]["Reason"].startswith("InvokeEndpoint failed: AccessDeniedException")


@pytest.mark.parametrize("error", [KeyError("EndpointStatus"), RuntimeError("unexpected"), TimeoutError()])
def test_any_other_error_is_reported_and_fails_only_with_fail_deployment(monkeypatch, error):
    # GIVEN a poll that hits an error the handler does not classify
    def broken(service):
        raise error

    monkeypatch.setattr(handler, "client", broken)
    # WHEN is_complete runs with FailDeployment "false"
    result = handler.is_complete(_event(), None)
    # THEN the verification completes as Failed (the deployment goes on) naming the error's type
    assert result["IsComplete"] is True
    assert result["Data"]["Status"] == "Failed"
    assert type(error).__name__ in result["Data"]["Reason"]
    # AND with FailDeployment "true" it fails the deployment
    with pytest.raises(handler.VerificationFailed):
        handler.is_complete(_event(fail_deployment="true"), None)
