"""Post-deploy verification of a SageMaker endpoint, as the two user handlers of ``custom_resources.Provider``.

``on_event`` only records when the verification started; ``is_complete`` is polled by the Provider's waiter until the
endpoint is ``InService`` and answers one ``InvokeEndpoint`` call, or until the verification fails.

Resource properties (CloudFormation passes every value as a string):

- ``EndpointName``: the SageMaker endpoint to verify (the operator creates it some time after the custom resource).
- ``Payload``, ``ContentType``: the request body and its content type.
- ``FailDeployment``: ``"true"`` fails the deployment when verification fails; ``"false"`` reports
  ``Status: Failed`` / ``Status: TimedOut`` in the resource attributes and lets the deployment succeed.
- ``TimeoutSeconds``: the Provider's total timeout (default: the ``TIMEOUT_SECONDS`` environment variable the
  construct sets on the Provider's handlers). The handler stops waiting a margin before it (the *soft deadline*), so
  that ``FailDeployment: "false"`` is honoured on time-outs too.
- ``QueryIntervalSeconds``: the Provider's query interval (sizes the margin; default: ``QUERY_INTERVAL_SECONDS``).
- ``ShowResponse``: ``"true"`` adds the first bytes of the model's answer (``BodyPreview``) to the output and the logs;
  otherwise only status, latency and byte count are reported (the answer may hold user data).
- anything else (a ``Nonce``) only forces CloudFormation to run the verification again.

Only the endpoint name, statuses, sizes and latency are logged (and the answer's first bytes with ``ShowResponse``);
never the payload. Every string returned in ``Data`` is bounded: a custom resource response must stay under 4 KB.

One poll never outlives the function: each client's (connect + read timeout) x ``total_max_attempts``, summed over the
two calls of a poll, fits ``FUNCTION_TIMEOUT_SECONDS`` minus ``TIMEOUT_RESERVE_SECONDS`` (the construct gives the
function that timeout). Every error is reported in the outcome; only ``FailDeployment: "true"`` fails the deployment.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError

LOGGER = logging.getLogger(__name__)
LOGGER.setLevel(logging.INFO)

PREVIEW_BYTES = 256
MAX_REASON_CHARS = 300
MAX_SUMMARY_CHARS = 300
MAX_DATA_BYTES = 2048  # JSON of Data, ASCII-escaped; leaves room for the response envelope under 4096 bytes
SOFT_DEADLINE_MARGIN_SECONDS = 60
DEFAULT_TIMEOUT_SECONDS = 3600
DEFAULT_QUERY_INTERVAL_SECONDS = 30
#: The function's timeout (the construct sets the same) and what a poll leaves free of it for the handler itself.
FUNCTION_TIMEOUT_SECONDS = 60
TIMEOUT_RESERVE_SECONDS = 5
#: botocore settings of each client; ``total_max_attempts: 1`` is one attempt, no retry (the Provider polls again,
#: and a retried InvokeEndpoint would run the model twice).
CLIENT_SETTINGS: dict[str, dict[str, Any]] = {
    "sagemaker": {"connect_timeout": 5, "read_timeout": 10,
                  "retries": {"total_max_attempts": 1, "mode": "standard"}},
    "sagemaker-runtime": {"connect_timeout": 5, "read_timeout": 35,
                          "retries": {"total_max_attempts": 1, "mode": "standard"}},
}
INVOKE_READ_TIMEOUT_SECONDS = CLIENT_SETTINGS["sagemaker-runtime"]["read_timeout"]

# SageMaker EndpointStatus values.
IN_SERVICE = "InService"
PENDING_STATUSES = frozenset({"Creating", "Updating", "SystemUpdating", "RollingBack"})
FAILED_STATUSES = frozenset({"Failed", "OutOfService", "Deleting", "UpdateRollbackFailed"})
# InvokeEndpoint errors worth another poll rather than a verdict: the endpoint is starting or busy.
TRANSIENT_INVOKE_ERRORS = frozenset(
    {
        "ModelNotReadyException",
        "ServiceUnavailable",
        "ThrottlingException",
        "InternalFailure",
        "InternalDependencyException",
    }
)
TRANSIENT_DESCRIBE_ERRORS = frozenset({"ThrottlingException", "ServiceUnavailable", "InternalFailure"})


class VerificationFailed(RuntimeError):
    """Raised when verification fails and ``FailDeployment`` is true; the Provider fails the deployment with it."""


class _NotYet(Exception):
    """The endpoint is not ready to be verified yet; poll again."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status


class _Failure(Exception):
    def __init__(self, reason: str, endpoint_status: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.endpoint_status = endpoint_status


# ---------------------------------------------------------------------------------------------------------------------
# entry points


def on_event(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    request_type = event["RequestType"]
    props = event.get("ResourceProperties") or {}
    endpoint_name = str(props.get("EndpointName", ""))
    LOGGER.info("on_event %s for endpoint %s", request_type, endpoint_name)
    if request_type == "Delete":
        # Nothing was created: deleting the verification is a no-op.
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    if request_type == "Update" and event.get("PhysicalResourceId"):
        physical_id = event["PhysicalResourceId"]
    else:
        physical_id = f"verify-{endpoint_name}"
    # The Provider merges this Data into the event is_complete receives (and into the final attributes).
    return {"PhysicalResourceId": physical_id, "Data": {"StartedAt": int(time.time())}}


def is_complete(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}

    props = event.get("ResourceProperties") or {}
    endpoint_name = str(props.get("EndpointName", ""))
    fail_deployment = _as_bool(props.get("FailDeployment", "false"))
    show_response = _as_bool(props.get("ShowResponse", "false"))

    try:
        data = _verify(
            endpoint_name, str(props.get("Payload", "")), str(props.get("ContentType") or "application/json"),
            show_response,
        )
    except _NotYet as not_yet:
        deadline = _soft_deadline(event)
        if deadline is None or time.time() < deadline:
            LOGGER.info("endpoint %s not ready yet (%s)", endpoint_name, not_yet.status)
            return {"IsComplete": False}
        timeout = _setting(props, "TimeoutSeconds", "TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)
        reason = f"endpoint not verified within {timeout} s (last status: {not_yet.status})"
        return _outcome(endpoint_name, "TimedOut", reason, not_yet.status, fail_deployment)
    except _Failure as failure:
        return _outcome(endpoint_name, "Failed", failure.reason, failure.endpoint_status, fail_deployment)
    except Exception as error:  # noqa: BLE001 - any other error is reported; only FailDeployment fails the deploy
        reason = f"verification error: {type(error).__name__}: {error}"
        return _outcome(endpoint_name, "Failed", reason, None, fail_deployment)

    LOGGER.info(
        "endpoint %s verified: HTTP %s in %s ms, %s response bytes%s",
        endpoint_name,
        data["HttpStatus"],
        data["LatencyMs"],
        data["BodyBytes"],
        f", preview {data['BodyPreview']!r}" if "BodyPreview" in data else "",
    )
    return {"IsComplete": True, "Data": _bounded(data)}


# ---------------------------------------------------------------------------------------------------------------------
# verification


def client(service: str) -> Any:
    """The handler's client for ``service`` ("sagemaker" or "sagemaker-runtime"), with CLIENT_SETTINGS."""
    return boto3.client(service, config=Config(**CLIENT_SETTINGS[service]))


def _verify(endpoint_name: str, payload: str, content_type: str, show_response: bool = False) -> dict[str, Any]:
    status, failure_reason = _describe(endpoint_name)
    if status in FAILED_STATUSES:
        reason = f"endpoint status {status}"
        if failure_reason:
            reason += f": {failure_reason}"
        raise _Failure(reason, status)
    if status != IN_SERVICE:  # PENDING_STATUSES, or a status this handler does not know yet: keep polling
        raise _NotYet(status)
    return _invoke(endpoint_name, payload, content_type, status, show_response)


def _describe(endpoint_name: str) -> tuple[str, str]:
    sagemaker = client("sagemaker")
    try:
        description = sagemaker.describe_endpoint(EndpointName=endpoint_name)
    except ClientError as error:
        code, message = _error(error)
        if code == "ValidationException" and "could not find endpoint" in message.lower():
            # The operator creates the endpoint some time after the custom resource is applied.
            raise _NotYet("NotFound") from None
        if code in TRANSIENT_DESCRIBE_ERRORS:
            raise _NotYet(code) from None
        raise _Failure(f"DescribeEndpoint failed: {code}: {message}") from None
    except BotoCoreError as error:
        raise _NotYet(type(error).__name__) from None
    return str(description.get("EndpointStatus", "Unknown")), str(description.get("FailureReason") or "")


def _invoke(endpoint_name: str, payload: str, content_type: str, endpoint_status: str,
            show_response: bool = False) -> dict[str, Any]:
    runtime = client("sagemaker-runtime")
    started = time.monotonic()
    try:
        response = runtime.invoke_endpoint(
            EndpointName=endpoint_name, Body=payload.encode("utf-8"), ContentType=content_type
        )
        preview, body_bytes = _read_preview(response["Body"])
    except ClientError as error:
        code, message = _error(error)
        if code in TRANSIENT_INVOKE_ERRORS:
            raise _NotYet(f"{endpoint_status}, InvokeEndpoint {code}") from None
        original = error.response.get("OriginalStatusCode")
        detail = f" (model returned HTTP {original})" if original else ""
        if code == "ModelError" and not show_response:
            message = "the model's message is shown with verify.showResponse: true"  # it may echo user data
        raise _Failure(f"InvokeEndpoint failed: {code}{detail}: {message}", endpoint_status) from None
    except ReadTimeoutError:
        raise _Failure(
            f"InvokeEndpoint did not answer within {INVOKE_READ_TIMEOUT_SECONDS} s", endpoint_status
        ) from None
    except BotoCoreError as error:
        raise _Failure(f"InvokeEndpoint failed: {type(error).__name__}: {error}", endpoint_status) from None
    latency_ms = int(round((time.monotonic() - started) * 1000))
    http_status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
    summary = f"{endpoint_name}: {endpoint_status}, HTTP {http_status} in {latency_ms} ms ({body_bytes} bytes)"
    data = {
        "Status": "Succeeded",
        "EndpointStatus": endpoint_status,
        "LatencyMs": latency_ms,
        "HttpStatus": http_status,
        "BodyBytes": body_bytes,
        "Summary": summary,
    }
    if show_response:
        data["BodyPreview"] = preview
    return data


def _read_preview(body: Any) -> tuple[str, int]:
    """Read the whole streamed body (so the latency covers the full answer) but keep only its first bytes."""
    head = b""
    total = 0
    try:
        for chunk in body.iter_chunks(chunk_size=64 * 1024):
            if len(head) < PREVIEW_BYTES:
                head += chunk[: PREVIEW_BYTES - len(head)]
            total += len(chunk)
    finally:
        body.close()
    return head.decode("utf-8", errors="replace"), total


# ---------------------------------------------------------------------------------------------------------------------
# outcomes and bounds


def _outcome(
    endpoint_name: str, status: str, reason: str, endpoint_status: str | None, fail_deployment: bool
) -> dict[str, Any]:
    reason = _truncate(reason, MAX_REASON_CHARS)
    LOGGER.info("endpoint %s verification %s: %s (failDeployment=%s)", endpoint_name, status, reason, fail_deployment)
    if fail_deployment:
        raise VerificationFailed(f"{endpoint_name}: verification {status.lower()}: {reason}") from None
    data: dict[str, Any] = {
        "Status": status,
        "Reason": reason,
        "Summary": f"{endpoint_name}: verification {status.lower()}: {reason}",
    }
    if endpoint_status:
        data["EndpointStatus"] = endpoint_status
    return {"IsComplete": True, "Data": _bounded(data)}


def _bounded(data: dict[str, Any]) -> dict[str, Any]:
    """Cap every string, then shrink the preview (and, last, the summary) until Data fits MAX_DATA_BYTES."""
    caps = {"Reason": MAX_REASON_CHARS, "Summary": MAX_SUMMARY_CHARS, "BodyPreview": PREVIEW_BYTES}
    out = {k: _truncate(v, caps.get(k, 128)) if isinstance(v, str) else v for k, v in data.items()}
    for key in ("BodyPreview", "Summary", "Reason"):
        while key in out and out[key] and len(json.dumps(out).encode("utf-8")) > MAX_DATA_BYTES:
            out[key] = _truncate(out[key], len(out[key]) // 2)
    return out


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def _setting(props: dict[str, Any], key: str, env: str, default: int) -> int:
    """A resource property, else the handler's environment (the Provider's own setting), else ``default``."""
    return _int(props.get(key, os.environ.get(env)), default)


def _soft_deadline(event: dict[str, Any]) -> float | None:
    started_at = (event.get("Data") or {}).get("StartedAt")
    if started_at is None:
        return None
    props = event.get("ResourceProperties") or {}
    timeout = _setting(props, "TimeoutSeconds", "TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS)
    interval = _setting(props, "QueryIntervalSeconds", "QUERY_INTERVAL_SECONDS", DEFAULT_QUERY_INTERVAL_SECONDS)
    # The last poll must land before the Provider's own (hard) timeout fires.
    margin = max(SOFT_DEADLINE_MARGIN_SECONDS, 2 * interval)
    return float(started_at) + timeout - margin


def _error(error: ClientError) -> tuple[str, str]:
    details = error.response.get("Error", {})
    return str(details.get("Code", "Unknown")), _truncate(str(details.get("Message", "")), 200)


def _as_bool(value: Any) -> bool:
    return value is True or str(value).strip().lower() == "true"


def _int(value: Any, default: int) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default
