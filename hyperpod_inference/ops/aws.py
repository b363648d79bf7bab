"""A small read-only AWS client: only read operations (Describe / List / Get / Head, and IAM's policy simulation)
pass, every call is bounded (timeouts, a few retries, a page limit), and throttling or access denied become
:class:`Skip` with the reason instead of an exception that ends the run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

#: Operation names (the API's own, e.g. ``DescribeCluster``) ``init`` and ``doctor`` may call.
READ_PREFIXES = ("Describe", "List", "Get", "Head")
READ_OPERATIONS = frozenset({"SimulatePrincipalPolicy"})

THROTTLING_CODES = frozenset({"Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
                              "TooManyRequestsException", "RequestThrottled", "RequestThrottledException",
                              "SlowDown", "ProvisionedThroughputExceededException"})
ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
                                 "AuthorizationError", "AuthorizationErrorException", "UnauthorizedException",
                                 "NotAuthorized", "Forbidden"})
#: Pages read from one List operation at most.
MAX_PAGES = 50


def is_read_operation(operation: str) -> bool:
    return operation.startswith(READ_PREFIXES) or operation in READ_OPERATIONS


class Skip(Exception):  # noqa: N818 - a check's outcome, not an error
    """The check cannot tell: throttled, access denied, or a piece it needs could not be read."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Status(Exception):  # noqa: N818
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _snake(operation: str) -> str:
    from botocore import xform_name

    return xform_name(operation)


class Aws:
    """Read-only calls in one Region. ``session``: a ``boto3.Session`` (default: a new one from the environment)."""

    def __init__(self, region: str | None = None, session: boto3.Session | None = None) -> None:
        self.session = session or boto3.Session(region_name=region)
        self.region = region or self.session.region_name
        self._clients: dict[str, Any] = {}
        self._config = Config(region_name=self.region, connect_timeout=5, read_timeout=20,
                              retries={"mode": "standard", "max_attempts": 3})

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session.client(service, config=self._config)
        return self._clients[service]

    def call(self, service: str, operation: str, *, missing: tuple[str, ...] = (), **params: Any) -> dict | None:
        """``operation`` (e.g. ``DescribeCluster``) with ``params``. None when the error code (or HTTP status, as a
        string) is one of ``missing`` (the resource does not exist); :class:`Skip` for throttling and access denied.
        """
        if not is_read_operation(operation):
            raise ValueError(f"{service} {operation} is not a read operation")
        method = getattr(self.client(service), _snake(operation))
        try:
            return method(**params)
        except ClientError as err:
            error = err.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = str(err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            if code in missing or status in missing:
                return None
            if operation.startswith("Head") and status in ("403", "404"):
                raise _Status(int(status)) from None
            if code in THROTTLING_CODES:
                raise Skip(f"{service} {operation} was throttled ({code}); run doctor again") from None
            if code in ACCESS_DENIED_CODES or status == "403":
                raise Skip(f"the caller may not call {service}:{operation} ({code or status})") from None
            raise Skip(f"{service} {operation} failed: {code} {error.get('Message', '')}".strip()) from None
        except BotoCoreError as err:
            raise Skip(f"{service} {operation} failed: {err}") from None

    def status(self, service: str, operation: str, **params: Any) -> int:
        """The HTTP status of a ``Head`` operation: 200, or the 403 / 404 it answered (``HeadBucket`` says only that:
        404 is a free name, 403 another account's bucket or one the caller may not see). Skip when throttled."""
        try:
            self.call(service, operation, **params)
        except _Status as answered:
            return answered.status
        return 200

    def pages(self, service: str, operation: str, key: str, *, token: str = "nextToken", next_param: str | None = None,
              **params: Any) -> Iterator[Any]:
        """The items under ``key`` of every page, at most :data:`MAX_PAGES` pages."""
        for _ in range(MAX_PAGES):
            page = self.call(service, operation, **params) or {}
            yield from page.get(key, [])
            nxt = page.get(token)
            if not nxt:
                return
            params = {**params, (next_param or token): nxt}
        raise Skip(f"{service} {operation} returned more than {MAX_PAGES} pages")
