"""Querying captured data: the Glue table definitions and the Athena SQL over the capture tiers (stdlib only).

Tier 2 (ALB access logs) follows the format AWS documents for Application Load Balancer access logs
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-access-logs.html), every field
including the newer trailing ones (``conn_trace_id``, ``transformed_host``, ``transformed_uri``,
``request_transform_status``); the regex is the one Athena documents for these logs, extended by the trailing fields,
and tolerates lines that end earlier (older load balancers) or later (fields AWS adds in the future). Objects sit under
``<s3Uri>/<hash>/alb/AWSLogs/<account>/elasticloadbalancing/<region>/yyyy/mm/dd/``.

Tier 1 (SageMaker endpoint capture) follows SageMaker Data Capture's JSON-lines format (``captureData.endpointInput``
/ ``endpointOutput`` with ``observedContentType``, ``mode``, ``data``, ``encoding``; ``eventMetadata``;
``eventVersion``). The layout below ``<s3Uri>/<hash>/sme/`` is *inferred* from SageMaker's documented
``<destination>/<endpoint>/<variant>/yyyy/mm/dd/hh/`` (the operator does not document it).

The operator's per-endpoint hash algorithm is not documented, so the hash is an ``injected`` partition: every query
gives it (and, for tier 1, the SageMaker endpoint and variant names). Tier 3 (model pod) has no table: its object
format is not documented.

Queries are written once, in Athena (Trino) SQL with ``?`` parameters, and become both a named query and a prepared
statement of the workgroup. ``{database}`` in a query is replaced by the Glue database name.
"""

from __future__ import annotations

from dataclasses import dataclass

ALB_TABLE = "alb_access_logs"
SME_TABLE = "sme_capture"

ALB_SERDE = "org.apache.hadoop.hive.serde2.RegexSerDe"
JSON_SERDE = "org.openx.data.jsonserde.JsonSerDe"
TEXT_INPUT_FORMAT = "org.apache.hadoop.mapred.TextInputFormat"
TEXT_OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"

#: Every field of an ALB access-log entry, in order, as (column, Hive type). ``client:port``, ``target:port`` and
#: ``"request"`` are split into their parts, as Athena's documented table does.
ALB_COLUMNS: tuple[tuple[str, str], ...] = (
    ("type", "string"),
    ("time", "string"),
    ("elb", "string"),
    ("client_ip", "string"),
    ("client_port", "int"),
    ("target_ip", "string"),
    ("target_port", "int"),
    ("request_processing_time", "double"),
    ("target_processing_time", "double"),
    ("response_processing_time", "double"),
    ("elb_status_code", "int"),
    ("target_status_code", "string"),
    ("received_bytes", "bigint"),
    ("sent_bytes", "bigint"),
    ("request_verb", "string"),
    ("request_url", "string"),
    ("request_proto", "string"),
    ("user_agent", "string"),
    ("ssl_cipher", "string"),
    ("ssl_protocol", "string"),
    ("target_group_arn", "string"),
    ("trace_id", "string"),
    ("domain_name", "string"),
    ("chosen_cert_arn", "string"),
    ("matched_rule_priority", "string"),
    ("request_creation_time", "string"),
    ("actions_executed", "string"),
    ("redirect_url", "string"),
    ("error_reason", "string"),
    ("target_port_list", "string"),
    ("target_status_code_list", "string"),
    ("classification", "string"),
    ("classification_reason", "string"),
    ("conn_trace_id", "string"),
    ("transformed_host", "string"),
    ("transformed_uri", "string"),
    ("request_transform_status", "string"),
)

#: One capturing group per column of :data:`ALB_COLUMNS` (the RegexSerDe matches the whole line). The trailing
#: transform fields are optional (older entries end at ``conn_trace_id``); ``(?: .*)?`` takes fields added later.
ALB_REGEX = (
    r'([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*):([0-9]*) ([^ ]*)[:-]([0-9]*) ([-.0-9]*) ([-.0-9]*) ([-.0-9]*) (|[-0-9]*) '
    r'(-|[-0-9]*) ([-0-9]*) ([-0-9]*) "([^ ]*) (.*) (- |[^ ]*)" "([^"]*)" ([A-Z0-9-_]+) ([A-Za-z0-9.-]*) ([^ ]*) '
    r'"([^"]*)" "([^"]*)" "([^"]*)" ([-.0-9]*) ([^ ]*) "([^"]*)" "([^"]*)" "([^ ]*)" "([^\s]+?)" "([^\s]+)" '
    r'"([^ ]*)" "([^ ]*)" ?([^ ]*)?(?: "([^"]*)" "([^"]*)" "([^"]*)")?(?: .*)?'
)

_PAYLOAD = "struct<observedcontenttype:string,mode:string,data:string,encoding:string>"
#: SageMaker Data Capture's JSON-lines record. Column and field names are lowercase: the JSON SerDe matches keys
#: case-insensitively (``captureData`` -> ``capturedata``).
SME_COLUMNS: tuple[tuple[str, str], ...] = (
    ("capturedata", f"struct<endpointinput:{_PAYLOAD},endpointoutput:{_PAYLOAD}>"),
    ("eventmetadata", "struct<eventid:string,inferenceid:string,inferencetime:string,customattributes:array<string>>"),
    ("eventversion", "string"),
)

ALB_DAY_FORMAT = "yyyy/MM/dd"
SME_HOUR_FORMAT = "yyyy/MM/dd/HH"


def alb_location_template(capture_root: str, account: str, region: str) -> str:
    """``storage.location.template`` of tier 2; ``capture_root`` is ``s3://<bucket>/<prefix>``."""
    return f"{capture_root}/${{hash}}/alb/AWSLogs/{account}/elasticloadbalancing/{region}/${{day}}/"


def sme_location_template(capture_root: str) -> str:
    """``storage.location.template`` of tier 1 (layout below ``sme/`` inferred from SageMaker's)."""
    return f"{capture_root}/${{hash}}/sme/${{endpoint}}/${{variant}}/${{hour}}/"


def alb_projection(location_template: str, range_days: int) -> dict[str, str]:
    """Table parameters: the day (date) and the hash (injected) projected, nothing stored in the catalog."""
    return {
        "EXTERNAL": "TRUE",
        "projection.enabled": "true",
        "projection.hash.type": "injected",
        "projection.day.type": "date",
        "projection.day.format": ALB_DAY_FORMAT,
        "projection.day.range": f"NOW-{range_days}DAYS,NOW",
        "projection.day.interval": "1",
        "projection.day.interval.unit": "DAYS",
        "storage.location.template": location_template,
    }


def sme_projection(location_template: str, range_days: int) -> dict[str, str]:
    """Table parameters: the hour (date) projected; the hash, endpoint and variant injected."""
    return {
        "EXTERNAL": "TRUE",
        "projection.enabled": "true",
        "projection.hash.type": "injected",
        "projection.endpoint.type": "injected",
        "projection.variant.type": "injected",
        "projection.hour.type": "date",
        "projection.hour.format": SME_HOUR_FORMAT,
        "projection.hour.range": f"NOW-{range_days}DAYS,NOW",
        "projection.hour.interval": "1",
        "projection.hour.interval.unit": "HOURS",
        "storage.location.template": location_template,
    }


ALB_PARTITIONS: tuple[tuple[str, str, str], ...] = (
    ("hash", "string", "the operator's per-endpoint hash directory (injected: every query gives it)"),
    ("day", "string", "delivery day of the log file, yyyy/MM/dd (UTC)"),
)
SME_PARTITIONS: tuple[tuple[str, str, str], ...] = (
    ("hash", "string", "the operator's per-endpoint hash directory (injected: every query gives it)"),
    ("endpoint", "string", "SageMaker endpoint name (injected)"),
    ("variant", "string", "production variant name (injected)"),
    ("hour", "string", "capture hour, yyyy/MM/dd/HH (UTC)"),
)


@dataclass(frozen=True)
class Query:
    """One query over one table: a named query and a prepared statement with the same text."""

    name: str
    """Named query name and prepared statement name."""
    table: str
    description: str
    parameters: tuple[str, ...]
    """What each ``?`` is, in order."""
    sql: str

    def text(self, database: str) -> str:
        return self.sql.replace("{database}", database)


_ALB_FROM = '"{database}".' + ALB_TABLE
_ALB_WHERE = "hash = ? AND day BETWEEN ? AND ?"
_ALB_PARAMS = ("hash", "first day yyyy/mm/dd", "last day yyyy/mm/dd")
_SME_FROM = '"{database}".' + SME_TABLE
_SME_WHERE = "hash = ? AND endpoint = ? AND variant = ? AND hour BETWEEN ? AND ?"
_SME_PARAMS = ("hash", "SageMaker endpoint name", "variant name", "first hour yyyy/mm/dd/hh", "last hour yyyy/mm/dd/hh")


def _decoded(field: str) -> str:
    return (f"CASE WHEN capturedata.{field}.encoding = 'BASE64' THEN from_utf8(from_base64(capturedata.{field}.data)) "
            f"ELSE capturedata.{field}.data END")


# Bytes of a BASE64 payload from its text (length/4*3 minus the '=' padding); characters for CSV / JSON text.
_INPUT_DATA = "capturedata.endpointinput.data"
_INPUT_SIZE = (f"CASE WHEN capturedata.endpointinput.encoding = 'BASE64' THEN length({_INPUT_DATA}) / 4 * 3 "
               f"- (length({_INPUT_DATA}) - length(replace({_INPUT_DATA}, '=', ''))) ELSE length({_INPUT_DATA}) END")

QUERIES: tuple[Query, ...] = (
    Query("alb_latency", ALB_TABLE,
          "Target processing time p50/p90/p99 (seconds) per hour; -1 (no response from the target) excluded",
          _ALB_PARAMS,
          "SELECT date_trunc('hour', from_iso8601_timestamp(time)) AS hour, count(*) AS requests, "
          "approx_percentile(target_processing_time, 0.5) AS p50_seconds, "
          "approx_percentile(target_processing_time, 0.9) AS p90_seconds, "
          "approx_percentile(target_processing_time, 0.99) AS p99_seconds "
          f"FROM {_ALB_FROM} WHERE {_ALB_WHERE} AND target_processing_time <> -1 "
          "GROUP BY 1 ORDER BY 1"),
    Query("alb_status_codes", ALB_TABLE, "Requests per load balancer and target status code", _ALB_PARAMS,
          "SELECT elb_status_code, target_status_code, count(*) AS requests "
          f"FROM {_ALB_FROM} WHERE {_ALB_WHERE} "
          "GROUP BY 1, 2 ORDER BY requests DESC, elb_status_code, target_status_code"),
    Query("alb_error_rate", ALB_TABLE, "Requests, 4xx, 5xx and the 5xx error rate per hour", _ALB_PARAMS,
          "SELECT date_trunc('hour', from_iso8601_timestamp(time)) AS hour, count(*) AS requests, "
          "count_if(elb_status_code BETWEEN 400 AND 499) AS client_errors, "
          "count_if(elb_status_code >= 500) AS server_errors, "
          "CAST(count_if(elb_status_code >= 500) AS DOUBLE) / count(*) AS error_rate "
          f"FROM {_ALB_FROM} WHERE {_ALB_WHERE} GROUP BY 1 ORDER BY 1"),
    Query("alb_top_clients", ALB_TABLE, "The 20 client addresses with the most requests", _ALB_PARAMS,
          "SELECT client_ip, count(*) AS requests "
          f"FROM {_ALB_FROM} WHERE {_ALB_WHERE} GROUP BY 1 ORDER BY requests DESC, client_ip LIMIT 20"),
    Query("alb_top_paths", ALB_TABLE, "The 20 request paths (method and path, no query string) with the most requests",
          _ALB_PARAMS,
          "SELECT request_verb, regexp_extract(request_url, '^[^:/]+://[^/]+(/[^?]*)', 1) AS path, "
          "count(*) AS requests "
          f"FROM {_ALB_FROM} WHERE {_ALB_WHERE} GROUP BY 1, 2 ORDER BY requests DESC, path, request_verb LIMIT 20"),
    Query("alb_over_size", ALB_TABLE, "The 100 largest requests over a size (received bytes)",
          (*_ALB_PARAMS, "minimum received bytes (exclusive)"),
          "SELECT time, client_ip, request_verb, request_url, received_bytes, sent_bytes, elb_status_code "
          f"FROM {_ALB_FROM} WHERE {_ALB_WHERE} AND received_bytes > ? "
          "ORDER BY received_bytes DESC, time, request_url LIMIT 100"),
    Query("alb_load_balancer", ALB_TABLE,
          "Which load balancer (its name carries the Ingress name) and host wrote under a hash", _ALB_PARAMS,
          "SELECT hash, elb, domain_name, count(*) AS requests, min(time) AS first_seen, max(time) AS last_seen "
          f"FROM {_ALB_FROM} WHERE {_ALB_WHERE} GROUP BY 1, 2, 3 ORDER BY requests DESC"),
    Query("sme_latest_pairs", SME_TABLE,
          "The latest N captured request/response pairs with their event IDs (BASE64 payloads decoded)",
          (*_SME_PARAMS, "N"),
          "SELECT event_id, inference_time, request_content_type, request, response_content_type, response FROM ("
          "SELECT eventmetadata.eventid AS event_id, eventmetadata.inferencetime AS inference_time, "
          "capturedata.endpointinput.observedcontenttype AS request_content_type, "
          f"{_decoded('endpointinput')} AS request, "
          "capturedata.endpointoutput.observedcontenttype AS response_content_type, "
          f"{_decoded('endpointoutput')} AS response, "
          "row_number() OVER (ORDER BY from_iso8601_timestamp(eventmetadata.inferencetime) DESC, "
          "eventmetadata.eventid) AS newest_first "
          f"FROM {_SME_FROM} WHERE {_SME_WHERE}) WHERE newest_first <= ? ORDER BY newest_first"),
    Query("sme_over_size", SME_TABLE,
          "Captured requests over a size (bytes of a BASE64 payload, characters of a text payload), largest first",
          (*_SME_PARAMS, "minimum size (exclusive)"),
          "SELECT event_id, inference_time, request_content_type, request_size FROM ("
          "SELECT eventmetadata.eventid AS event_id, eventmetadata.inferencetime AS inference_time, "
          "capturedata.endpointinput.observedcontenttype AS request_content_type, "
          f"{_INPUT_SIZE} AS request_size "
          f"FROM {_SME_FROM} WHERE {_SME_WHERE}) WHERE request_size > ? ORDER BY request_size DESC, event_id "
          "LIMIT 100"),
)

QUERIES_BY_NAME = {q.name: q for q in QUERIES}
LATENCY_STATEMENT = "alb_latency"
LOAD_BALANCERS_STATEMENT = "alb_load_balancer"

#: Athena's own lower bound of ``BytesScannedCutoffPerQuery`` (10 MB, in bytes).
MIN_BYTES_SCANNED_CUTOFF_MB = 10
BYTES_PER_MB = 1_000_000
RESULTS_PREFIX = "athena-results"
