"""A small read-only AWS client: only read operations (Describe / List / Get / Head, and IAM's policy simulation)
pass, every call is bounded (timeouts, a few retries, a page limit), and throttling or access denied become
:class:`Skip` with the reason instead of an exception that ends the run.

Credentials that cannot be used (none found, expired, not valid) are :class:`CredentialsSkip`: the first such answer
is remembered and every later call skips with it at once, without calling AWS again. A configuration that cannot be
used at all (an unknown ``AWS_PROFILE``, an unreadable ``~/.aws/config``) is :class:`AwsUnusable` when the client is
made. Every reason is one line of bounded length, whatever the service answered (an HTML error page included)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
    SSOError,
    TokenRetrievalError,
)

from .text import one_line

#: Operation names (the API's own, e.g. ``DescribeCluster``) ``init`` and ``doctor`` may call.
READ_PREFIXES = ("Describe", "List", "Get", "Head")
READ_OPERATIONS = frozenset({"SimulatePrincipalPolicy"})

THROTTLING_CODES = frozenset({"Throttling", "ThrottlingException", "ThrottledException", "RequestLimitExceeded",
                              "TooManyRequestsException", "RequestThrottled", "RequestThrottledException",
                              "SlowDown", "ProvisionedThroughputExceededException"})
ACCESS_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation",
                                 "AuthorizationError", "AuthorizationErrorException", "UnauthorizedException",
                                 "NotAuthorized", "Forbidden"})
#: The session's credentials have expired.
EXPIRED_CODES = frozenset({"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"})
#: The credentials are not valid (unknown key, wrong secret, a token of another session).
INVALID_CREDENTIALS_CODES = frozenset({"InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch",
                                       "InvalidSignatureException", "IncompleteSignature", "InvalidAccessKeyId",
                                       "MissingAuthenticationToken", "AuthFailure"})
#: What to do about credentials that cannot be used.
CREDENTIALS_FIX = ("set AWS_PROFILE to a configured profile (aws configure list-profiles; aws sso login --profile "
                   "<name> for an SSO one), or AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN")
#: Pages read from one List operation at most.
MAX_PAGES = 50


def is_read_operation(operation: str) -> bool:
    return operation.startswith(READ_PREFIXES) or operation in READ_OPERATIONS


class Skip(Exception):  # noqa: N818 - a check's outcome, not an error
    """The check cannot tell: throttled, access denied, or a piece it needs could not be read."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CredentialsSkip(Skip):
    """The credentials cannot be used: nothing in AWS can be checked until they are fixed."""


class AwsUnusable(Exception):  # noqa: N818 - the reason neither init nor doctor can start
    """The AWS configuration cannot be used at all (an unknown profile, an unreadable config file)."""


def _unusable(err: BotoCoreError) -> AwsUnusable:
    if isinstance(err, ProfileNotFound):
        profile = err.kwargs.get("profile", "")
        return AwsUnusable(f"the AWS profile {profile} (AWS_PROFILE) is not in ~/.aws/config or "
                           "~/.aws/credentials: aws configure list-profiles, then set AWS_PROFILE to one of them")
    return AwsUnusable(f"the AWS configuration cannot be used ({one_line(err)}): check ~/.aws/config and AWS_* "
                       "variables")


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
        try:
            self.session = session or boto3.Session(region_name=region)
            self.region = region or self.session.region_name
        except BotoCoreError as err:
            raise _unusable(err) from None
        self._clients: dict[str, Any] = {}
        #: Why the credentials cannot be used, once a call found out (every later call skips with it).
        self.credentials_problem: str | None = None
        self._config = Config(region_name=self.region, connect_timeout=5, read_timeout=20,
                              retries={"mode": "standard", "max_attempts": 3})

    def client(self, service: str) -> Any:
        if service not in self._clients:
            try:
                self._clients[service] = self.session.client(service, config=self._config)
            except BotoCoreError as err:
                raise _unusable(err) from None
        return self._clients[service]

    def _credentials(self, problem: str) -> CredentialsSkip:
        self.credentials_problem = self.credentials_problem or problem
        return CredentialsSkip(problem)

    def call(self, service: str, operation: str, *, missing: tuple[str, ...] = (), **params: Any) -> dict | None:
        """``operation`` (e.g. ``DescribeCluster``) with ``params``. None when the error code (or HTTP status, as a
        string) is one of ``missing`` (the resource does not exist); :class:`Skip` for throttling and access denied.
        """
        if not is_read_operation(operation):
            raise ValueError(f"{service} {operation} is not a read operation")
        if self.credentials_problem:
            raise CredentialsSkip("not checked: the AWS credentials cannot be used (the first call that found out "
                                  "says why)")
        method = getattr(self.client(service), _snake(operation))
        try:
            return method(**params)
        except ClientError as err:
            error = err.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = str(err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            message = one_line(error.get("Message", ""), 160)
            if code in missing or status in missing:
                return None
            if operation.startswith("Head") and status in ("403", "404"):
                raise _Status(int(status)) from None
            if code in EXPIRED_CODES:
                raise self._credentials(f"the AWS credentials have expired ({service} {operation}: {code}): "
                                        f"{CREDENTIALS_FIX}") from None
            if code in INVALID_CREDENTIALS_CODES:
                raise self._credentials(f"the AWS credentials are not valid ({service} {operation}: {code}): "
                                        f"{CREDENTIALS_FIX}") from None
            if code in THROTTLING_CODES:
                raise Skip(f"{service} {operation} was throttled ({code}); run doctor again") from None
            if code in ACCESS_DENIED_CODES or status == "403":
                raise Skip(f"the caller may not call {service}:{operation} ({one_line(code or status, 60)})") \
                    from None
            if not code or code == status:  # no AWS error in the body: a proxy's or a fake's page
                raise Skip(f"{service} {operation} answered HTTP {status}: {message}".strip().rstrip(":")) from None
            raise Skip(f"{service} {operation} failed: {one_line(code, 60)} {message}".strip()) from None
        except (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError, SSOError,
                TokenRetrievalError) as err:
            raise self._credentials(f"no usable AWS credentials ({one_line(err, 160)}): {CREDENTIALS_FIX}") from None
        except BotoCoreError as err:
            raise Skip(f"{service} {operation} failed: {one_line(err, 200)}") from None

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
