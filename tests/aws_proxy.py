"""A loopback proxy in front of a moto server that gives, on the wire, the answers of a :class:`tests.fake_aws.Account`
(where moto differs from AWS) to any AWS client: the AWS CLI, the CDK CLI, or ``init`` and ``doctor`` run as
subprocesses, which in-process botocore hooks cannot reach.

Each request is read as botocore's service model describes it: the service from the SigV4 credential scope, the
operation from ``X-Amz-Target`` (JSON protocols), ``Action`` (query protocols) or the HTTP method and request URI
(REST protocols), and its API parameters. Then, in order:
- a fault set with :meth:`AwsProxy.fail` (an AWS error in the protocol's own shape, or any page, such as a proxy's
  HTML) answers it; a request signed with a key in :attr:`AwsProxy.expired_keys` gets ``ExpiredToken``;
- :meth:`~tests.fake_aws.Account.answer` answers what moto cannot (EKS add-ons and access entries);
- otherwise it goes to moto, with the parameters :meth:`~tests.fake_aws.Account.request_params` maps back (the
  request serialized again by botocore's own serializer), and :meth:`~tests.fake_aws.Account.patch` makes moto's
  answer the real one.
Every answer the proxy writes or changes is parsed back with botocore's parser for the protocol and must equal what
was meant (an error: its code), so a client sees exactly the response the fixture validated. Every request is
recorded (service, operation, access key). The proxy listens on 127.0.0.1; every read and forward is bounded by a
timeout."""

from __future__ import annotations

import base64
import copy
import datetime
import functools
import http.client
import json
import re
import threading
import urllib.parse
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from xml.sax.saxutils import escape

import botocore.session
from botocore.awsrequest import HeadersDict
from botocore.exceptions import UnknownServiceError
from botocore.parsers import create_parser
from botocore.serialize import create_serializer

from tests.fake_aws import Account

TIMEOUT_SECONDS = 60
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/[^/]+/([^/]+)/aws4_request")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server"}
_JSON_TYPES = {"json": "application/x-amz-json-1.1", "rest-json": "application/json"}


@dataclass(frozen=True)
class Fault:
    """An answer instead of moto's: an AWS error (``code``, ``message``) in the protocol's shape, or ``page`` (any
    body, e.g. a proxy's HTML error page) with ``content_type``."""

    status: int
    code: str = ""
    message: str = ""
    page: str | None = None
    content_type: str = "text/html"


@dataclass
class Request:
    method: str
    path: str  # with the query string
    headers: dict[str, str]
    body: bytes

    @property
    def split(self) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.path)


@dataclass(frozen=True)
class Call:
    service: str
    operation: str
    params: dict[str, Any]
    key: str  # the access key the request was signed with


# ------------------------------------------------------------------------------------------- reading a request
@functools.cache
def _session() -> botocore.session.Session:
    """A session of its own: the service models as published. A client changes its model (botocore strips
    ``/{Bucket}`` from every S3 request URI when it makes an S3 client), and clients share a session's models."""
    return botocore.session.Session()


@functools.cache
def service_model(name: str) -> Any:
    return _session().get_service_model(name)


def _signed_by(headers: dict[str, str]) -> tuple[str, str] | None:
    """(access key, signing name) of a SigV4 request."""
    found = _CREDENTIAL.search(headers.get("authorization", ""))
    return (found.group(1), found.group(2)) if found else None


def _uri_pattern(request_uri: str) -> tuple[re.Pattern[str], list[str], list[str], int]:
    """(regex of the path, its labels, the query keys the URI requires, how many literal characters it has)."""
    path, _, query = request_uri.partition("?")
    labels: list[str] = []

    def label(match: re.Match[str]) -> str:
        labels.append(match.group(1))
        return f"(?P<l{len(labels) - 1}>{'.+' if match.group(2) else '[^/]+'})"
    literal = re.sub(r"\{([^}+]+)(\+?)\}", "", path)
    pattern = re.sub(r"\{([^}+]+)(\+?)\}", label, re.escape(path).replace(r"\{", "{").replace(r"\}", "}"))
    keys = [k.split("=", 1)[0] for k in query.split("&") if k]
    return re.compile(f"^{pattern}/?$"), labels, keys, len(literal)


def _rest_operation(model: Any, request: Request) -> tuple[str, dict[str, Any]] | None:
    split = request.split
    path = split.path  # each label is unquoted on its own (an ARN's slash is %2F in one)
    host = request.headers.get("host", "")
    if model.service_name == "s3" and ".localhost" in host:  # virtual-hosted style: the bucket is in the host name
        path = "/" + host.split(".localhost", 1)[0] + path
    query = dict(urllib.parse.parse_qsl(split.query, keep_blank_values=True))
    best: tuple[tuple[int, int], str, dict[str, Any]] | None = None
    for name in model.operation_names:
        op = model.operation_model(name)
        if op.http.get("method") != request.method:
            continue
        pattern, labels, keys, literal = _uri_pattern(op.http.get("requestUri", "/"))
        found = pattern.match(path)
        if not found or not all(k in query for k in keys):
            continue
        members = op.input_shape.members if op.input_shape is not None else {}
        by_location = {(m.serialization.get("location"), m.serialization.get("name", n)): n for n, m in members.items()}
        params = {by_location[("uri", label)]: urllib.parse.unquote(found.group(f"l{i}"))
                  for i, label in enumerate(labels) if ("uri", label) in by_location}
        params.update({by_location[("querystring", k)]: v for k, v in query.items() if ("querystring", k) in by_location})
        if model.protocol == "rest-json" and request.body:
            try:
                params.update(json.loads(request.body))
            except ValueError:
                pass
        score = (len(keys), literal)
        if best is None or score > best[0]:
            best = (score, name, params)
    return (best[1], best[2]) if best else None


def operation_of(model: Any, request: Request) -> tuple[str, dict[str, Any]] | None:
    """The operation a request calls and its API parameters, as the service model describes the protocol."""
    if model.protocol == "json":
        target = request.headers.get("x-amz-target", "")
        return (target.rsplit(".", 1)[-1], json.loads(request.body or b"{}")) if target else None
    if model.protocol in ("query", "ec2"):
        form = dict(urllib.parse.parse_qsl(request.body.decode() if request.method == "POST" else request.split.query))
        action = form.pop("Action", None)
        return (action, form) if action else None
    return _rest_operation(model, request)


# ------------------------------------------------------------------------------------------- writing an answer
def _to_json(shape: Any, value: Any) -> Any:
    kind = shape.type_name
    if kind == "structure":
        return {m.serialization.get("name", n): _to_json(m, value[n]) for n, m in shape.members.items()
                if n in value and not m.serialization.get("location")}
    if kind == "list":
        return [_to_json(shape.member, v) for v in value]
    if kind == "map":
        return {k: _to_json(shape.value, v) for k, v in value.items()}
    if kind == "timestamp":
        return value.timestamp() if isinstance(value, datetime.datetime) else value
    if kind == "blob":
        return base64.b64encode(value).decode()
    return value


def _to_xml(shape: Any, value: Any, name: str) -> str:
    kind = shape.type_name
    if kind == "structure":
        inner = "".join(_to_xml(m, value[n], m.serialization.get("name", n)) for n, m in shape.members.items()
                        if n in value)
    elif kind == "list":
        member = shape.member.serialization.get("name", "member")
        items = [_to_xml(shape.member, v, name if shape.serialization.get("flattened") else member) for v in value]
        return "".join(items) if shape.serialization.get("flattened") else f"<{name}>{''.join(items)}</{name}>"
    elif kind == "map":
        inner = "".join(f"<entry>{_to_xml(shape.key, k, 'key')}{_to_xml(shape.value, v, 'value')}</entry>"
                        for k, v in value.items())
    elif kind == "timestamp":
        inner = value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    elif kind == "boolean":
        inner = "true" if value else "false"
    else:
        inner = escape(str(value))
    return f"<{name}>{inner}</{name}>"


def _content_type(protocol: str) -> str:
    return _JSON_TYPES.get(protocol, "text/xml")


def serialize(model: Any, operation: str, status: int, parsed: dict) -> tuple[int, dict[str, str], bytes]:
    """``parsed`` (a response, or ``Error``) on the wire in the service's protocol."""
    protocol = model.protocol
    request_id = str(uuid.uuid4())
    if "Error" in parsed:
        code, message = parsed["Error"].get("Code", ""), parsed["Error"].get("Message", "")
        if protocol in _JSON_TYPES:
            return status, {"Content-Type": _content_type(protocol), "x-amzn-ErrorType": code,
                            "x-amzn-RequestId": request_id}, json.dumps({"__type": code, "message": message}).encode()
        body = f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message>"
        if protocol == "rest-xml":
            return status, {"Content-Type": "application/xml"}, f"<Error>{body}<RequestId>{request_id}</RequestId>" \
                "</Error>".encode()
        return status, {"Content-Type": "text/xml"}, (f"<ErrorResponse><Error><Type>Sender</Type>{body}</Error>"
                                                      f"<RequestId>{request_id}</RequestId></ErrorResponse>").encode()
    shape = model.operation_model(operation).output_shape
    if protocol in _JSON_TYPES:
        data = _to_json(shape, parsed) if shape is not None else {}
        return status, {"Content-Type": _content_type(protocol), "x-amzn-RequestId": request_id}, \
            json.dumps(data).encode()
    if protocol == "query":
        wrapper = shape.serialization.get("resultWrapper", f"{operation}Result")
        result = _to_xml(shape, parsed, wrapper)
        namespace = model.metadata.get("xmlNamespace", "")
        return status, {"Content-Type": "text/xml"}, (
            f'<{operation}Response xmlns="{namespace}">{result}<ResponseMetadata><RequestId>{request_id}</RequestId>'
            f"</ResponseMetadata></{operation}Response>").encode()
    raise NotImplementedError(f"the proxy writes no {protocol} answer ({model.service_name} {operation})")


def parse(model: Any, operation: str, status: int, headers: dict[str, str], body: bytes) -> dict:
    """What a botocore client reads from this answer."""
    op = model.operation_model(operation)
    return create_parser(model.protocol).parse(
        {"status_code": status, "headers": HeadersDict(headers), "body": body}, op.output_shape)


def _without_metadata(parsed: dict) -> dict:
    return {k: v for k, v in parsed.items() if k != "ResponseMetadata"}


def written(model: Any, operation: str, status: int, parsed: dict) -> tuple[int, dict[str, str], bytes]:
    """``parsed`` on the wire, checked: botocore's parser reads it back as ``parsed`` (an error: as its code)."""
    answer = serialize(model, operation, status, parsed)
    back = parse(model, operation, *answer)
    if "Error" in parsed:
        assert back["Error"]["Code"] == parsed["Error"]["Code"], (back, parsed)
    else:
        assert _without_metadata(back) == _without_metadata(parsed), (back, parsed)
    return answer


# ------------------------------------------------------------------------------------------------- the proxy
class AwsProxy:
    """The proxy on 127.0.0.1 (``url``), in front of the moto server of ``account``."""

    def __init__(self, account: Account) -> None:
        self.account = account
        self.upstream = urllib.parse.urlsplit(account.url)
        self.faults: dict[tuple[str, str], Fault] = {}
        self.expired_keys: set[str] = set()
        self.calls: list[Call] = []
        #: the proxy's own failures (answered HTTP 599): a test that sees one fails with it
        self.errors: list[str] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = TIMEOUT_SECONDS

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = Request(self.command, self.path, headers, self._body(headers))
                try:
                    status, out_headers, body = proxy.handle(request)
                except Exception as err:  # noqa: BLE001 - the fixture's own failure, kept for the test to report
                    proxy.errors.append(f"{request.method} {request.path}: {err!r}")
                    status, out_headers, body = 599, {"Content-Type": "text/plain"}, repr(err).encode()
                self.send_response(status)
                for key, value in out_headers.items():
                    if key.lower() not in _HOP_BY_HOP:
                        self.send_header(key, value)
                length = out_headers.get("content-length") if self.command == "HEAD" else None
                self.send_header("Content-Length", str(length if length is not None else len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _body(self, headers: dict[str, str]) -> bytes:
                if "chunked" in headers.get("transfer-encoding", ""):
                    chunks = []
                    for _ in range(1_000_000):  # bounded: a request body of at most a million chunks
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                return self.rfile.read(int(headers.get("content-length") or 0))

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.port = self.server.server_address[1]
        #: localhost, not 127.0.0.1: the CDK CLI's S3 client then reaches buckets by path on this host
        self.url = f"http://localhost:{self.port}"

    def fail(self, service: str, operation: str, fault: Fault) -> None:
        self.faults[(service, operation)] = fault

    def handle(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        signed = _signed_by(request.headers)
        try:
            model = service_model(signed[1]) if signed else None
        except UnknownServiceError:
            model = None
        found = operation_of(model, request) if model is not None else None
        if model is None or found is None or signed is None:
            return self._forward(request)
        operation, params = found
        with self.lock:
            self.calls.append(Call(model.service_name, operation, params, signed[0]))
        if signed[0] in self.expired_keys:
            code = "ExpiredTokenException" if model.protocol in _JSON_TYPES else "ExpiredToken"
            return written(model, operation, 400, {"Error": {
                "Code": code, "Message": "The security token included in the request is expired"}})
        fault = self.faults.get((model.service_name, operation))
        if fault is not None and fault.page is not None:
            return fault.status, {"Content-Type": fault.content_type}, fault.page.encode()
        if fault is not None:
            return written(model, operation, fault.status, {"Error": {"Code": fault.code, "Message": fault.message}})
        answered = self.account.answer(model.service_name, operation, params)
        if answered is not None:
            return written(model, operation, answered[0], _without_metadata(answered[1]))
        mapped = self.account.request_params(model.service_name, operation, params)
        status, headers, body = self._forward(self._rewritten(model, operation, request, mapped)
                                              if mapped != params else request)
        if status >= 300 or request.method == "HEAD":
            return status, headers, body
        parsed = _without_metadata(parse(model, operation, status, headers, body))
        patched = copy.deepcopy(parsed)
        self.account.patch(model.service_name, operation, patched)
        return (status, headers, body) if patched == parsed else written(model, operation, status, patched)

    @staticmethod
    def _rewritten(model: Any, operation: str, request: Request, params: dict) -> Request:
        """The request with ``params``, serialized by botocore's own serializer for the protocol."""
        built = create_serializer(model.protocol, include_validation=False).serialize_to_request(
            params, model.operation_model(operation))
        query = urllib.parse.urlencode(built["query_string"], doseq=True) if built["query_string"] else ""
        body = built["body"] if isinstance(built["body"], bytes) else str(built["body"]).encode()
        return Request(request.method, built["url_path"] + (f"?{query}" if query else ""), request.headers, body)

    def _forward(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=TIMEOUT_SECONDS)
        try:
            headers = {k: v for k, v in request.headers.items() if k not in _HOP_BY_HOP}
            conn.request(request.method, request.path, body=request.body or None,
                         headers={**headers, "Content-Length": str(len(request.body))})
            response = conn.getresponse()
            body = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, body
        finally:
            conn.close()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
