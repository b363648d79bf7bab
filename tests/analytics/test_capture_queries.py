"""The capture queries really run: DuckDB tables from the synthesized Glue tables, sample objects under the tables'
location templates, and the synthesized named queries transpiled from Athena SQL by sqlglot."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import aws_cdk as cdk
import pytest

from hyperpod_inference.constructs.analytics import CaptureAnalytics
from hyperpod_inference.constructs.data_capture import DataCaptureStorage
from tests.analytics.glue_duckdb import Catalog, glue_tables, regex_rows, run_named_query

ACCOUNT, REGION = "111122223333", "us-west-2"
HASH, OTHER_HASH = "3f9a1c2b7d", "9e8d7c6b5a"
DB = "hyperpodinference_capture"

# Copied verbatim from "Example log entries" of "Access logs for your Application Load Balancer", Elastic Load
# Balancing User Guide for Application Load Balancers: the HTTP, HTTPS, HTTP/2, WebSockets, secured WebSockets,
# Lambda success and Lambda failure entries.
# https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-access-logs.html
#   #access-log-entry-examples
DOC_HTTP = 'http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_1234abcd5678ef90 "-" "-" "-"'  # noqa: E501
DOC_HTTPS = 'https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/ HTTP/1.1" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2018-07-02T22:22:48.364000Z "authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_1234abcd5678ef90 "m.example.com" "-" "TransformSuccess"'  # noqa: E501
DOC_H2 = 'h2 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 10.0.1.252:48160 10.0.0.66:9000 0.000 0.002 0.000 200 200 5 257 "GET https://10.0.2.105:773/ HTTP/2.0" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337327-72bd00b0343d75b906739c42" "-" "-" 1 2018-07-02T22:22:48.364000Z "redirect" "https://example.com:80/" "-" "10.0.0.66:9000" "200" "-" "-" TID_1234abcd5678ef90 "-" "-" "-"'  # noqa: E501
DOC_WS = 'ws 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 10.0.0.140:40914 10.0.1.192:8010 0.001 0.003 0.000 101 101 218 587 "GET http://10.0.0.30:80/ HTTP/1.1" "-" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337364-23a8c76965a2ef7629b185e3" "-" "-" 1 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.1.192:8010" "101" "-" "-" TID_1234abcd5678ef90 "-" "-" "-"'  # noqa: E501
DOC_WSS = 'wss 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 10.0.0.140:44244 10.0.0.171:8010 0.000 0.001 0.000 101 101 218 786 "GET https://10.0.0.30:443/ HTTP/1.1" "-" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337364-23a8c76965a2ef7629b185e3" "-" "-" 1 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.0.171:8010" "101" "-" "-" TID_1234abcd5678ef90 "-" "-" "-"'  # noqa: E501
DOC_LAMBDA_OK = 'http 2018-11-30T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 - 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337364-23a8c76965a2ef7629b185e3" "-" "-" 0 2018-11-30T22:22:48.364000Z "forward" "-" "-" "-" "-" "-" "-" TID_1234abcd5678ef90 "-" "-" "-"'  # noqa: E501
DOC_LAMBDA_FAILED = 'http 2018-11-30T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 - 0.000 0.001 0.000 502 - 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337364-23a8c76965a2ef7629b185e3" "-" "-" 0 2018-11-30T22:22:48.364000Z "forward" "-" "LambdaInvalidResponse" "-" "-" "-" "-" TID_1234abcd5678ef90 "-" "-" "-"'  # noqa: E501
DOC_LINES = [DOC_HTTP, DOC_HTTPS, DOC_H2, DOC_WS, DOC_WSS, DOC_LAMBDA_OK, DOC_LAMBDA_FAILED]

# Derived (not in the documentation): the documented HTTP entry as the load balancer writes it when it cannot dispatch
# the request to a target: the three processing times are -1 (the documented value for that case), status 503/-.
DERIVED_NO_TARGET = DOC_HTTP.replace(" 0.000 0.001 0.000 200 200 ", " -1 -1 -1 503 - ")


def _capture_line(event_id: str, time: str, request: tuple[str, str, str], response: tuple[str, str, str]) -> str:
    """One record in SageMaker Data Capture's JSON-lines format; (content type, encoding, payload text) each; a
    BASE64 payload is encoded here."""
    def payload(mode: str, spec: tuple[str, str, str]) -> dict[str, str]:
        content_type, encoding, text = spec
        data = base64.b64encode(text.encode()).decode() if encoding == "BASE64" else text
        return {"observedContentType": content_type, "mode": mode, "data": data, "encoding": encoding}
    return json.dumps({"captureData": {"endpointInput": payload("INPUT", request),
                                       "endpointOutput": payload("OUTPUT", response)},
                       "eventMetadata": {"eventId": event_id, "inferenceTime": time}, "eventVersion": "0"})


JSON = "application/json"
E1 = ("0c2d6f9e-0001-4a1b-9c3d-000000000001", "2026-12-01T09:15:00Z",
      (JSON, "JSON", '{"inputs": "Hello"}'), (JSON, "BASE64", '{"generated_text": "Hi"}'))
E2 = ("0c2d6f9e-0002-4a1b-9c3d-000000000002", "2026-12-01T09:45:00Z",
      (JSON, "BASE64", '{"inputs": "What is 2+2?"}'), (JSON, "JSON", '{"generated_text": "4"}'))
E3 = ("0c2d6f9e-0003-4a1b-9c3d-000000000003", "2026-12-01T10:05:00Z",
      (JSON, "JSON", '{"inputs": "Bye"}'), ("text/csv", "CSV", "0.25"))
E_OTHER = ("0c2d6f9e-0004-4a1b-9c3d-000000000004", "2026-12-01T10:30:00Z",
           (JSON, "JSON", '{"inputs": "another endpoint, a much longer request"}'), (JSON, "JSON", "{}"))


@pytest.fixture(scope="module")
def synthesized() -> dict[str, Any]:
    """GIVEN the capture analytics of a stack, synthesized."""
    stack = cdk.Stack(cdk.App(), "HyperPodInference", env=cdk.Environment(account=ACCOUNT, region=REGION))
    CaptureAnalytics(stack, "CaptureAnalytics", capture=DataCaptureStorage(stack, "DataCapture"))
    template = cdk.assertions.Template.from_stack(stack).to_json()
    named = {r["Properties"]["Name"]: r["Properties"]["QueryString"]
             for r in template["Resources"].values() if r["Type"] == "AWS::Athena::NamedQuery"}
    return {"tables": glue_tables(template), "queries": named}


@pytest.fixture(scope="module")
def catalog(synthesized, tmp_path_factory) -> Catalog:
    """GIVEN objects of both tiers under the keys the location templates give, for two hashes."""
    cat = Catalog(synthesized["tables"], tmp_path_factory.mktemp("json"))
    alb_file = f"{ACCOUNT}_elasticloadbalancing_{REGION}_app.my-loadbalancer.50dc6c495c0c9188_{{}}_10.0.0.1_x1.log.gz"
    july = "\n".join([DOC_HTTP, DOC_HTTPS, DOC_H2, DOC_WS, DOC_WSS, DERIVED_NO_TARGET]) + "\n"
    november = "\n".join([DOC_LAMBDA_OK, DOC_LAMBDA_FAILED]) + "\n"
    cat.put("alb_access_logs", {"hash": HASH, "day": "2018/07/02"}, alb_file.format("20180702T2225Z"),
            gzip.compress(july.encode()))
    cat.put("alb_access_logs", {"hash": HASH, "day": "2018/11/30"}, alb_file.format("20181130T2225Z"),
            gzip.compress(november.encode()))
    # another endpoint's logs (another hash) on the same days: never counted for HASH
    cat.put("alb_access_logs", {"hash": OTHER_HASH, "day": "2018/07/02"}, alb_file.format("20180702T2230Z"),
            gzip.compress(july.encode()))
    sme = {"hash": HASH, "endpoint": "qwen-chat", "variant": "AllTraffic"}
    cat.put("sme_capture", {**sme, "hour": "2026/12/01/09"}, "15-00-000-a1.jsonl",
            "\n".join(_capture_line(*e) for e in (E1, E2)).encode())
    cat.put("sme_capture", {**sme, "hour": "2026/12/01/10"}, "05-00-000-b2.jsonl", _capture_line(*E3).encode())
    cat.put("sme_capture", {**sme, "endpoint": "other-endpoint", "hour": "2026/12/01/10"}, "30-00-000-c3.jsonl",
            _capture_line(*E_OTHER).encode())
    return cat


@pytest.fixture(scope="module")
def con(catalog):
    return catalog.connect()


def run(con, synthesized, name: str, *params: Any) -> list[tuple]:
    return run_named_query(con, synthesized["queries"][name], list(params))


ALB_RANGE = (HASH, "2018/07/01", "2018/12/31")
SME_RANGE = (HASH, "qwen-chat", "AllTraffic", "2026/12/01/00", "2026/12/01/23")


# ------------------------------------------------------------------------------------------- layout and regex
def test_keys_made_from_the_location_templates_read_back_their_partition_values(catalog):
    # GIVEN the objects placed above WHEN their URIs are matched against the templates THEN the values come back
    alb, sme = catalog.tables["alb_access_logs"], catalog.tables["sme_capture"]
    uris = sorted(catalog.objects)
    assert [alb.partition_values(u) for u in uris if "/alb/" in u] == [
        {"hash": HASH, "day": "2018/07/02"}, {"hash": HASH, "day": "2018/11/30"},
        {"hash": OTHER_HASH, "day": "2018/07/02"}]
    assert uris[0].startswith(f"s3://hyperpodinference-capture-{ACCOUNT}-{REGION}/data-capture/{HASH}/alb/AWSLogs/"
                              f"{ACCOUNT}/elasticloadbalancing/{REGION}/2018/07/02/")
    assert sme.partition_values([u for u in uris if "/sme/" in u][0]) == {
        "hash": HASH, "endpoint": "other-endpoint", "variant": "AllTraffic", "hour": "2026/12/01/10"}
    # AND neither table reads the other tier's objects
    assert all(sme.partition_values(u) is None for u in uris if "/alb/" in u)
    assert all(alb.partition_values(u) is None for u in uris if "/sme/" in u)


def test_the_regex_matches_every_documented_entry_as_a_whole_line(synthesized):
    table = synthesized["tables"]["alb_access_logs"]
    names = [n for n, _ in table.columns]
    rows = [dict(zip(names, r, strict=True)) for r in regex_rows(table, DOC_LINES)]
    # THEN no documented line is a row of NULLs, and the fields land where the documentation puts them
    assert all(r["type"] is not None for r in rows)
    https = rows[1]
    assert (https["client_ip"], https["client_port"], https["target_ip"], https["target_port"]) == (
        "192.168.131.39", 2817, "10.0.0.1", 80)
    assert (https["request_verb"], https["request_url"], https["request_proto"]) == (
        "GET", "https://www.example.com:443/", "HTTP/1.1")
    assert (https["ssl_cipher"], https["domain_name"], https["actions_executed"]) == (
        "ECDHE-RSA-AES128-GCM-SHA256", "www.example.com", "authenticate,forward")
    assert (https["conn_trace_id"], https["transformed_host"], https["transformed_uri"],
            https["request_transform_status"]) == ("TID_1234abcd5678ef90", "m.example.com", "-", "TransformSuccess")
    assert rows[2]["redirect_url"] == "https://example.com:80/"
    failed = rows[6]
    assert (failed["elb_status_code"], failed["target_status_code"], failed["error_reason"]) == (
        502, "-", "LambdaInvalidResponse")
    assert failed["target_port"] is None  # target "-" (a Lambda target)


def test_the_regex_also_takes_entries_that_end_before_the_newer_fields_and_ones_with_more(synthesized):
    table = synthesized["tables"]["alb_access_logs"]
    names = [n for n, _ in table.columns]
    older = DOC_HTTP.removesuffix(' "-" "-" "-"')             # an entry written before the transform fields
    oldest = older.removesuffix(" TID_1234abcd5678ef90")     # ... and before conn_trace_id
    newer = DOC_HTTPS + ' "a-future-field"'                  # a field added after these
    rows = [dict(zip(names, r, strict=True)) for r in regex_rows(table, [older, oldest, newer, "not an entry"])]
    assert (rows[0]["conn_trace_id"], rows[0]["transformed_host"]) == ("TID_1234abcd5678ef90", None)
    assert rows[1]["classification_reason"] == "-" and rows[1]["conn_trace_id"] in ("", None)
    assert rows[2]["request_transform_status"] == "TransformSuccess"
    assert set(rows[3].values()) == {None}  # a line that does not match is a row of NULLs, as in the RegexSerDe


# ------------------------------------------------------------------------------------------ tier 2 queries
def test_latency_percentiles_per_hour_exclude_minus_one_and_other_hashes(con, synthesized):
    rows = run(con, synthesized, "alb_latency", *ALB_RANGE)
    hours = [(r[0].strftime("%Y-%m-%d %H"), *r[1:]) for r in rows]
    # THEN 22:00 on 2 July: 5 answered requests, target times sorted 0.001 0.001 0.002 0.003 0.048 (the -1 entry is
    # left out): p50 = the 3rd = 0.002, p90 = p99 = the 5th = 0.048; 30 November: 0.001 twice
    assert len(hours) == 2
    (h1, n1, *p1), (h2, n2, *p2) = hours
    assert (h1, n1, h2, n2) == ("2018-07-02 22", 5, "2018-11-30 22", 2)
    # (DuckDB's t-digest keeps its centroids in single precision: 0.048 reads back as 0.04799999…; the log's times
    # have millisecond resolution, so a micro-second tolerance still tells every rank apart)
    assert p1 == pytest.approx([0.002, 0.048, 0.048], abs=1e-6)
    assert p2 == pytest.approx([0.001, 0.001, 0.001], abs=1e-6)


def test_status_code_counts(con, synthesized):
    assert run(con, synthesized, "alb_status_codes", *ALB_RANGE) == [
        (200, "200", 4), (101, "101", 2), (502, "-", 1), (503, "-", 1)]


def test_error_rate_per_hour(con, synthesized):
    rows = run(con, synthesized, "alb_error_rate", *ALB_RANGE)
    # THEN 2 July: 6 requests, one 503 -> 1/6; 30 November: 2 requests, one 502 -> 1/2
    assert [(r[0].strftime("%m-%d"), r[1], r[2], r[3]) for r in rows] == [("07-02", 6, 0, 1), ("11-30", 2, 0, 1)]
    assert [r[4] for r in rows] == pytest.approx([1 / 6, 1 / 2])


def test_top_clients_and_paths(con, synthesized):
    assert run(con, synthesized, "alb_top_clients", *ALB_RANGE) == [
        ("192.168.131.39", 5), ("10.0.0.140", 2), ("10.0.1.252", 1)]
    assert run(con, synthesized, "alb_top_paths", *ALB_RANGE) == [("GET", "/", 8)]


def test_requests_over_a_size(con, synthesized):
    rows = run(con, synthesized, "alb_over_size", *ALB_RANGE, 200)
    assert [(r[3], r[4]) for r in rows] == [("http://10.0.0.30:80/", 218), ("https://10.0.0.30:443/", 218)]
    assert run(con, synthesized, "alb_over_size", *ALB_RANGE, 218) == []


def test_the_day_range_limits_the_rows(con, synthesized):
    rows = run(con, synthesized, "alb_status_codes", HASH, "2018/11/01", "2018/11/30")
    assert rows == [(200, "200", 1), (502, "-", 1)]


def test_the_load_balancer_of_a_hash(con, synthesized):
    rows = run(con, synthesized, "alb_load_balancer", *ALB_RANGE)
    assert [r[:4] for r in rows] == [(HASH, "app/my-loadbalancer/50dc6c495c0c9188", "-", 7),
                                     (HASH, "app/my-loadbalancer/50dc6c495c0c9188", "www.example.com", 1)]


# ------------------------------------------------------------------------------------------ tier 1 queries
def test_the_latest_pairs_with_event_ids_and_decoded_payloads(con, synthesized):
    rows = run(con, synthesized, "sme_latest_pairs", *SME_RANGE, 2)
    # THEN the two latest of the endpoint (not the other endpoint's later record), newest first, BASE64 decoded
    assert rows == [
        (E3[0], E3[1], JSON, '{"inputs": "Bye"}', "text/csv", "0.25"),
        (E2[0], E2[1], JSON, '{"inputs": "What is 2+2?"}', JSON, '{"generated_text": "4"}'),
    ]
    all_rows = run(con, synthesized, "sme_latest_pairs", *SME_RANGE, 10)
    assert [r[0] for r in all_rows] == [E3[0], E2[0], E1[0]]
    assert all_rows[2][5] == '{"generated_text": "Hi"}'


def test_captured_requests_over_a_size(con, synthesized):
    # GIVEN request sizes: E1 19 characters (JSON), E2 26 bytes (BASE64, 36 characters encoded), E3 17 characters
    rows = run(con, synthesized, "sme_over_size", *SME_RANGE, 18)
    assert [(r[0], r[3]) for r in rows] == [(E2[0], 26), (E1[0], 19)]


def test_the_hour_range_limits_the_capture_rows(con, synthesized):
    rows = run(con, synthesized, "sme_latest_pairs", HASH, "qwen-chat", "AllTraffic", "2026/12/01/10",
               "2026/12/01/10", 10)
    assert [r[0] for r in rows] == [E3[0]]


def test_the_helper_reads_the_json_table_from_the_glue_definition(catalog):
    # the JSON table's columns come from the synthesized definition (not from the sample): a struct path works
    con = catalog.connect()
    got = con.execute(f'SELECT capturedata.endpointinput.encoding FROM "{DB}".sme_capture ORDER BY 1').fetchall()
    assert got == [("BASE64",), ("JSON",), ("JSON",), ("JSON",)]
