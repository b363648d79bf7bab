"""The commands the stack prints in its outputs, each built with ``shlex.join`` so a value from the config (a payload
with ``'``, ``;``, ``$(...)`` or a newline, a name) is always one shell word, never shell syntax.

An output that holds several commands joins them with `` ; ``; splitting it with
``shlex.shlex(text, posix=True, punctuation_chars=True)`` (``whitespace_split=True``) gives each command's argv.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..config import Endpoint
from ..facts.runtimes import default_payload as default_runtime_payload
from ..facts.safety import verify_body

#: Between the commands of one output.
COMMAND_SEPARATOR = " ; "
#: kubectl's JSONPath template printing the DNS status, a newline, then the TLS certificate status.
DNS_TLS_JSONPATH = 'jsonpath={.status.dnsStatus}{"\\n"}{.status.tlsCertificate}'


def join_commands(argvs: Sequence[Sequence[str]]) -> str:
    """Several commands, each ``shlex.join``-ed, separated by `` ; ``."""
    return COMMAND_SEPARATOR.join(shlex.join(list(argv)) for argv in argvs)


def default_payload(endpoint: Endpoint) -> str:
    """The request body the check and the invoke command send: ``verify.payload`` (a mapping or list as JSON), else
    the runtime preset's payload, else ``facts.runtimes.FALLBACK_PAYLOAD`` (:func:`facts.safety.verify_body`)."""
    verify = endpoint.verify
    return verify_body(verify.payload if verify else None, verify.content_type if verify else None,
                       default_runtime_payload(endpoint.effective_runtime))


def content_type(endpoint: Endpoint) -> str:
    return endpoint.verify.content_type if endpoint.verify else "application/json"


# ------------------------------------------------------------------------------------------------------ commands
def status_argvs(endpoint: Endpoint) -> list[list[str]]:
    """``kubectl describe`` and ``kubectl get events`` for the endpoint's custom resource, plus the DNS/TLS status
    when it has a domain name."""
    kind = endpoint.kind.lower()
    argvs = [
        ["kubectl", "describe", kind, endpoint.name, "-n", endpoint.namespace],
        ["kubectl", "get", "events", "-n", endpoint.namespace,
         "--field-selector", f"involvedObject.name={endpoint.name}"],
    ]
    if endpoint.domain_name:
        argvs.append(["kubectl", "get", kind, endpoint.name, "-n", endpoint.namespace, "-o", DNS_TLS_JSONPATH])
    return argvs


def status_command(endpoint: Endpoint) -> str:
    """The ``…Status`` output: the commands of :func:`status_argvs`, joined."""
    return join_commands(status_argvs(endpoint))


def invoke_argv(*, endpoint_name: str, payload: str, content_type: str, region: str) -> list[str]:
    """``aws sagemaker-runtime invoke-endpoint`` with the payload as one argument, the answer on stdout."""
    return ["aws", "sagemaker-runtime", "invoke-endpoint", "--endpoint-name", endpoint_name,
            "--content-type", content_type, "--body", payload, "--region", region,
            "--cli-binary-format", "raw-in-base64-out", "/dev/stdout"]


def invoke_command(*, endpoint_name: str, payload: str, content_type: str, region: str) -> str:
    return shlex.join(invoke_argv(endpoint_name=endpoint_name, payload=payload, content_type=content_type,
                                  region=region))


def invoke_output(endpoint: Endpoint, *, region: str) -> str | None:
    """The ``…Invoke`` output: the endpoint's URL (with a domain name) and the invoke command (with a SageMaker
    endpoint), joined; None when the endpoint has neither."""
    parts: list[str] = []
    if endpoint.domain_name:
        parts.append(shlex.join([f"https://{endpoint.domain_name}/"]))
    if endpoint.sagemaker_endpoint_name:
        parts.append(invoke_command(endpoint_name=endpoint.sagemaker_endpoint_name, payload=default_payload(endpoint),
                                    content_type=content_type(endpoint), region=region))
    return COMMAND_SEPARATOR.join(parts) if parts else None


def subscribe_argv(*, topic_arn: str, region: str, protocol: str = "email",
                   endpoint: str = "<you@example.com>") -> list[str]:
    """``aws sns subscribe`` to the alarm topic (the output shows an e-mail placeholder to fill in)."""
    return ["aws", "sns", "subscribe", "--topic-arn", topic_arn, "--protocol", protocol,
            "--notification-endpoint", endpoint, "--region", region]


def capture_list_command(s3_uri: str) -> str:
    """``aws s3 ls <s3Uri>/ --recursive``: every captured object."""
    return shlex.join(["aws", "s3", "ls", f"{s3_uri.rstrip('/')}/", "--recursive"])


# ------------------------------------------------------------------------------------------- querying capture
def capture_hash_folders_argv(s3_uri: str) -> list[str]:
    """``aws s3api list-objects-v2 … --delimiter /``: the per-endpoint hash folders under ``s3://<bucket>/<prefix>``.
    """
    bucket, _, prefix = s3_uri.removeprefix("s3://").partition("/")
    return ["aws", "s3api", "list-objects-v2", "--bucket", bucket, "--prefix", f"{prefix.rstrip('/')}/",
            "--delimiter", "/", "--query", "CommonPrefixes[].Prefix", "--output", "text"]


def athena_start_query_argv(*, work_group: str, query_string: str, region: str) -> list[str]:
    """``aws athena start-query-execution`` in the workgroup; prints the query execution ID."""
    return ["aws", "athena", "start-query-execution", "--work-group", work_group, "--query-string", query_string,
            "--region", region, "--query", "QueryExecutionId", "--output", "text"]


def athena_results_argv(*, region: str, execution_id: str = "<QueryExecutionId>") -> list[str]:
    """``aws athena get-query-results`` of one execution (once it has succeeded)."""
    return ["aws", "athena", "get-query-results", "--query-execution-id", execution_id, "--region", region,
            "--output", "text"]


def capture_find_hash_command(*, s3_uri: str, work_group: str, load_balancers_sql: str, region: str) -> str:
    """The ways to find an endpoint's hash: list the hash folders; tier 1: list ``<hash>/sme/`` (its folders are
    SageMaker endpoint names); tier 2: the load balancer (named after the Ingress) that wrote under a hash."""
    return join_commands([
        capture_hash_folders_argv(s3_uri),
        ["aws", "s3", "ls", f"{s3_uri.rstrip('/')}/<hash>/sme/"],
        athena_start_query_argv(work_group=work_group, query_string=load_balancers_sql, region=region),
    ])


def capture_latency_command(*, work_group: str, latency_sql: str, region: str) -> str:
    """Latency percentiles per hour of one endpoint: start the prepared statement, then read its results."""
    return join_commands([athena_start_query_argv(work_group=work_group, query_string=latency_sql, region=region),
                          athena_results_argv(region=region)])
