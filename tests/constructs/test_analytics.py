"""CaptureAnalytics: the Glue database and tables, the Athena workgroup, the queries and the query grant."""

from __future__ import annotations

import copy
import json
import re
import shlex
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import sqlglot
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from hyperpod_inference.constructs.analytics import CaptureAnalytics
from hyperpod_inference.constructs.data_capture import DataCaptureStorage
from hyperpod_inference.facts import analytics as facts
from tests.synth_helpers import DEFAULT_CONFIG, load_yaml, synth_config
from tests.template_lint import cfn_lint_errors

ACCOUNT = "111122223333"
REGION = "us-west-2"
BUCKET = "hyperpodinference-capture-111122223333-us-west-2"
IMPORTED_BUCKET = "team-capture-bucket"
IMPORTED_KEY_ARN = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"

#: The fields of an ALB access-log entry in the order AWS documents them ("Access log entries",
#: https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-access-logs.html), with
#: client:port, target:port and "request" split into their parts.
DOCUMENTED_ALB_FIELDS = [
    "type", "time", "elb", "client_ip", "client_port", "target_ip", "target_port", "request_processing_time",
    "target_processing_time", "response_processing_time", "elb_status_code", "target_status_code", "received_bytes",
    "sent_bytes", "request_verb", "request_url", "request_proto", "user_agent", "ssl_cipher", "ssl_protocol",
    "target_group_arn", "trace_id", "domain_name", "chosen_cert_arn", "matched_rule_priority", "request_creation_time",
    "actions_executed", "redirect_url", "error_reason", "target_port_list", "target_status_code_list",
    "classification", "classification_reason", "conn_trace_id", "transformed_host", "transformed_uri",
    "request_transform_status",
]


def _stack(app: cdk.App | None = None) -> cdk.Stack:
    return cdk.Stack(app or cdk.App(), "HyperPodInference", env=cdk.Environment(account=ACCOUNT, region=REGION))


def _build(outdir: Path, **capture_props: Any) -> dict[str, Any]:
    app = cdk.App(outdir=str(outdir))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = _stack(app)
    capture = DataCaptureStorage(stack, "DataCapture", **capture_props)
    analytics = CaptureAnalytics(stack, "CaptureAnalytics", capture=capture)
    analyst = iam.Role(stack, "Analyst", assumed_by=iam.AccountRootPrincipal())
    grant = analytics.grant_capture_query(analyst)
    # WHEN synthesized with the AwsSolutions pack (this raises when a finding is not acknowledged)
    assembly = app.synth()
    template_path = Path(assembly.get_stack_by_name(stack.stack_name).template_full_path)
    return {"stack": stack, "capture": capture, "analytics": analytics, "outdir": outdir, "grant": grant,
            "template": Template.from_json(json.loads(template_path.read_text())), "template_path": template_path,
            "analyst_id": stack.get_logical_id(analyst.node.default_child)}


@pytest.fixture(scope="module")
def created(tmp_path_factory) -> dict[str, Any]:
    """GIVEN a created capture bucket and key, analytics over it, and an analyst role granted to query."""
    return _build(tmp_path_factory.mktemp("created"))


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> dict[str, Any]:
    """GIVEN an imported capture bucket and key."""
    return _build(tmp_path_factory.mktemp("imported"), bucket_name=IMPORTED_BUCKET, kms=IMPORTED_KEY_ARN)


def _one(template: Template, rtype: str, props: dict | None = None) -> dict[str, Any]:
    found = template.find_resources(rtype, {"Properties": props} if props else None)
    assert len(found) == 1, list(found)
    return next(iter(found.values()))["Properties"]


def _table(template: Template, name: str) -> dict[str, Any]:
    return _one(template, "AWS::Glue::Table", {"TableInput": {"Name": name}})["TableInput"]


def _bucket_id(template: Template) -> str:
    found = template.find_resources("AWS::S3::Bucket", {"Properties": {"BucketName": BUCKET}})
    return next(iter(found))


# ------------------------------------------------------------------------------------------- database, tables
def test_the_database_and_both_tables_are_in_the_stack_account_catalog(created):
    # WHEN synthesized THEN one database named from the stack, and the two tables in it
    template = created["template"]
    db = _one(template, "AWS::Glue::Database")
    assert db["CatalogId"] == ACCOUNT
    assert db["DatabaseInput"]["Name"] == "hyperpodinference_capture"
    tables = template.find_resources("AWS::Glue::Table")
    assert sorted(t["Properties"]["TableInput"]["Name"] for t in tables.values()) == ["alb_access_logs",
                                                                                   "sme_capture"]
    assert all(t["Properties"]["DatabaseName"] == "hyperpodinference_capture" for t in tables.values())


def test_the_alb_table_has_every_documented_field_in_order_and_the_regex_has_one_group_each(created):
    table = _table(created["template"], "alb_access_logs")
    sd = table["StorageDescriptor"]
    # THEN the columns are the documented fields, in the documented order
    assert [c["Name"] for c in sd["Columns"]] == DOCUMENTED_ALB_FIELDS
    # AND the regex SerDe reads them with one capturing group per column
    serde = sd["SerdeInfo"]
    assert serde["SerializationLibrary"] == "org.apache.hadoop.hive.serde2.RegexSerDe"
    assert re.compile(serde["Parameters"]["input.regex"]).groups == len(DOCUMENTED_ALB_FIELDS)
    assert sd["InputFormat"] == "org.apache.hadoop.mapred.TextInputFormat"


def test_the_alb_table_projects_the_day_and_injects_the_hash_under_the_operator_layout(created):
    capture, template = created["capture"], created["template"]
    table = _table(template, "alb_access_logs")
    params = table["Parameters"]
    # THEN the hash is injected (every query gives it) and the day is a date projection over the capture retention
    assert [k["Name"] for k in table["PartitionKeys"]] == ["hash", "day"]
    assert params["projection.enabled"] == "true"
    assert params["projection.hash.type"] == "injected"
    assert (params["projection.day.type"], params["projection.day.format"]) == ("date", "yyyy/MM/dd")
    assert params["projection.day.range"] == "NOW-365DAYS,NOW"
    # AND the location template is the tier's {s3Uri}/{hash}/alb/ folder (FACTS §2.2) followed by ELB's own layout
    tier_folder = capture.tier_prefixes("${hash}")["loadBalancer"]
    assert tier_folder == f"s3://{BUCKET}/data-capture/${{hash}}/alb/"
    assert params["storage.location.template"] == (
        f"{tier_folder}AWSLogs/{ACCOUNT}/elasticloadbalancing/{REGION}/${{day}}/")
    assert table["StorageDescriptor"]["Location"] == f"s3://{BUCKET}/data-capture/"


def test_the_sagemaker_table_reads_capture_json_under_the_sme_folder_with_hash_endpoint_variant_injected(created):
    capture, template = created["capture"], created["template"]
    table = _table(template, "sme_capture")
    params, sd = table["Parameters"], table["StorageDescriptor"]
    assert sd["SerdeInfo"]["SerializationLibrary"] == "org.openx.data.jsonserde.JsonSerDe"
    assert [c["Name"] for c in sd["Columns"]] == ["capturedata", "eventmetadata", "eventversion"]
    payload = "struct<observedcontenttype:string,mode:string,data:string,encoding:string>"
    assert sd["Columns"][0]["Type"] == f"struct<endpointinput:{payload},endpointoutput:{payload}>"
    assert [k["Name"] for k in table["PartitionKeys"]] == ["hash", "endpoint", "variant", "hour"]
    assert [params[f"projection.{k}.type"] for k in ("hash", "endpoint", "variant", "hour")] == [
        "injected", "injected", "injected", "date"]
    assert (params["projection.hour.format"], params["projection.hour.interval.unit"]) == ("yyyy/MM/dd/HH", "HOURS")
    tier_folder = capture.tier_prefixes("${hash}")["sagemakerEndpoint"]
    assert params["storage.location.template"] == f"{tier_folder}${{endpoint}}/${{variant}}/${{hour}}/"


# ------------------------------------------------------------------------------------------------- workgroup
def test_the_workgroup_enforces_its_results_location_encryption_and_scan_limit(created):
    template, stack = created["template"], created["stack"]
    wg = _one(template, "AWS::Athena::WorkGroup")
    assert wg["Name"] == "hyperpodinference-capture"
    conf = wg["WorkGroupConfiguration"]
    assert conf["EnforceWorkGroupConfiguration"] is True
    assert conf["BytesScannedCutoffPerQuery"] == 1000 * 1_000_000
    results = conf["ResultConfiguration"]
    assert results["OutputLocation"] == f"s3://{BUCKET}/athena-results/"
    assert results["ExpectedBucketOwner"] == ACCOUNT
    # THEN results are encrypted with the capture key, by its ARN
    key_id = next(iter(template.find_resources("AWS::KMS::Key")))
    assert results["EncryptionConfiguration"] == {"EncryptionOption": "SSE_KMS",
                                                  "KmsKey": {"Fn::GetAtt": [key_id, "Arn"]}}
    assert stack.resolve(created["analytics"].results_location) == f"s3://{BUCKET}/athena-results/"


def test_a_created_bucket_expires_query_results_after_the_results_retention(created):
    bucket = created["template"].find_resources("AWS::S3::Bucket")[_bucket_id(created["template"])]
    rules = bucket["Properties"]["LifecycleConfiguration"]["Rules"]
    results_rule = next(r for r in rules if r.get("Prefix") == "athena-results/")
    assert results_rule["ExpirationInDays"] == 30
    assert results_rule["Status"] == "Enabled"
    # AND the capture rule stays as it was (whole bucket, capture retention)
    assert any(r["Id"] == "expire-data-capture" and r["ExpirationInDays"] == 365 for r in rules)
    assert created["analytics"].results_lifecycle_to_add is None


def test_without_a_key_results_are_encrypted_with_s3_managed_keys(tmp_path):
    built = _build(tmp_path, kms="none")
    conf = _one(built["template"], "AWS::Athena::WorkGroup")["WorkGroupConfiguration"]
    assert conf["ResultConfiguration"]["EncryptionConfiguration"] == {"EncryptionOption": "SSE_S3"}
    assert not any(s["Action"] in ("kms:Decrypt", ["kms:Decrypt", "kms:GenerateDataKey"])
                   for s in _analyst_statements(built))


def test_an_imported_bucket_gets_the_tables_but_is_not_changed_and_the_lifecycle_rule_is_reported(imported):
    template = imported["template"]
    # THEN the tables read the imported bucket
    table = _table(template, "alb_access_logs")
    assert table["Parameters"]["storage.location.template"].startswith(f"s3://{IMPORTED_BUCKET}/data-capture/")
    # AND the stack creates no bucket and no bucket policy
    assert not template.find_resources("AWS::S3::Bucket")
    assert not template.find_resources("AWS::S3::BucketPolicy")
    # AND the results encryption names the imported key by ARN; the lifecycle rule to add is spelled out
    conf = _one(template, "AWS::Athena::WorkGroup")["WorkGroupConfiguration"]
    assert conf["ResultConfiguration"]["EncryptionConfiguration"] == {"EncryptionOption": "SSE_KMS",
                                                                      "KmsKey": IMPORTED_KEY_ARN}
    todo = imported["analytics"].results_lifecycle_to_add
    assert IMPORTED_BUCKET in todo and "athena-results/" in todo and "30 days" in todo


@pytest.mark.parametrize("props, field", [
    ({"bytes_scanned_cutoff_mb": 9}, "bytes_scanned_cutoff_mb"),
    ({"bytes_scanned_cutoff_mb": True}, "bytes_scanned_cutoff_mb"),
    ({"results_retention_days": 0}, "results_retention_days"),
])
def test_bad_props_are_refused_naming_the_prop(props, field):
    stack = _stack()
    capture = DataCaptureStorage(stack, "DataCapture")
    with pytest.raises(ValueError, match=rf"{field}: must be"):
        CaptureAnalytics(stack, "CaptureAnalytics", capture=capture, **props)


def test_a_capture_prefix_under_the_results_prefix_is_refused():
    stack = _stack()
    capture = DataCaptureStorage(stack, "DataCapture", prefix="athena-results/capture")
    with pytest.raises(ValueError, match="athena-results/ holds the query results"):
        CaptureAnalytics(stack, "CaptureAnalytics", capture=capture)


# ---------------------------------------------------------------------------------------------------- queries
def test_every_query_is_one_named_query_and_one_prepared_statement_of_the_workgroup(created):
    template = created["template"]
    named = {q["Properties"]["Name"]: q for q in template.find_resources("AWS::Athena::NamedQuery").values()}
    statements = {s["Properties"]["StatementName"]: s
                  for s in template.find_resources("AWS::Athena::PreparedStatement").values()}
    names = [q.name for q in facts.QUERIES]
    assert sorted(named) == sorted(statements) == sorted(names)
    for query in facts.QUERIES:
        n, s = named[query.name], statements[query.name]
        # THEN both carry the same SQL, over the fully qualified table, with one ? per documented parameter
        assert n["Properties"]["QueryString"] == s["Properties"]["QueryStatement"]
        sql = n["Properties"]["QueryString"]
        assert f'"hyperpodinference_capture".{query.table}' in sql
        placeholders = list(sqlglot.parse_one(sql, read="athena").find_all(sqlglot.exp.Placeholder))
        assert len(placeholders) == len(query.parameters)
        assert n["Properties"]["WorkGroup"] == s["Properties"]["WorkGroup"] == "hyperpodinference-capture"
        assert "Parameters: 1: hash" in n["Properties"]["Description"]
        # AND they wait for the workgroup (CloudFormation would otherwise create them first)
        wg_id = next(iter(template.find_resources("AWS::Athena::WorkGroup")))
        assert wg_id in n["DependsOn"] and wg_id in s["DependsOn"]


def test_each_table_has_the_queries_the_issue_lists():
    by_table: dict[str, set[str]] = {}
    for q in facts.QUERIES:
        by_table.setdefault(q.table, set()).add(q.name)
    assert by_table["alb_access_logs"] >= {"alb_latency", "alb_status_codes", "alb_error_rate",
                                           "alb_top_clients", "alb_top_paths", "alb_over_size"}
    assert by_table["sme_capture"] >= {"sme_latest_pairs", "sme_over_size"}
    # AND every tier-1 query names the endpoint (tier 1 has several endpoints per hash folder possible)
    assert all("endpoint = ?" in q.sql for q in facts.QUERIES if q.table == "sme_capture")


# ------------------------------------------------------------------------------------------------------ grant
def _analyst_statements(built: dict[str, Any]) -> list[dict[str, Any]]:
    policies = built["template"].find_resources("AWS::IAM::Policy")
    statements = []
    for p in policies.values():
        if {"Ref": built["analyst_id"]} in p["Properties"]["Roles"]:
            statements += p["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _by_action(statements: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for s in statements:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        out[",".join(actions)] = s
    return out


def _join(*parts: Any) -> dict[str, Any]:
    return {"Fn::Join": ["", list(parts)]}


def test_the_query_grant_names_the_workgroup_database_tables_and_prefixes_only(created):
    template = created["template"]
    bucket_arn = {"Fn::GetAtt": [_bucket_id(template), "Arn"]}
    statements = _analyst_statements(created)
    # THEN no statement has a bare "*" resource or a wildcard action
    for s in statements:
        resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        assert "*" not in resources
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        assert not any("*" in a for a in actions)
    by = _by_action(statements)
    athena = next(s for k, s in by.items() if k.startswith("athena:"))
    assert athena["Resource"] == _join("arn:", {"Ref": "AWS::Partition"},
                                       f":athena:{REGION}:{ACCOUNT}:workgroup/hyperpodinference-capture")
    glue = next(s for k, s in by.items() if k.startswith("glue:"))
    assert [r["Fn::Join"][1][2] for r in glue["Resource"]] == [
        f":glue:{REGION}:{ACCOUNT}:catalog", f":glue:{REGION}:{ACCOUNT}:database/hyperpodinference_capture",
        f":glue:{REGION}:{ACCOUNT}:table/hyperpodinference_capture/alb_access_logs",
        f":glue:{REGION}:{ACCOUNT}:table/hyperpodinference_capture/sme_capture"]
    assert not any(a.startswith(("glue:Create", "glue:Update", "glue:Delete")) for a in glue["Action"])
    # AND S3: list only under the two prefixes, read the capture prefix, write only the results prefix
    assert by["s3:ListBucket"] == {"Action": "s3:ListBucket", "Effect": "Allow", "Resource": bucket_arn,
                                   "Condition": {"StringLike": {"s3:prefix": ["data-capture/*",
                                                                              "athena-results/*"]}}}
    assert by["s3:GetBucketLocation"]["Resource"] == bucket_arn
    assert by["s3:GetObject"]["Resource"] == _join(bucket_arn, "/data-capture/*")
    writes = next(s for s in statements if "s3:PutObject" in s["Action"])
    assert writes["Resource"] == _join(bucket_arn, "/athena-results/*")
    # AND KMS only through S3, for objects of those prefixes
    for s in statements:
        if any(a.startswith("kms:") for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])):
            assert s["Condition"]["StringEquals"] == {"kms:ViaService": f"s3.{REGION}.amazonaws.com"}
            assert s["Condition"]["StringLike"]["kms:EncryptionContext:aws:s3:arn"][0] == bucket_arn
    assert isinstance(created["grant"], iam.Grant) and created["grant"].success


@pytest.mark.parametrize("built", ["created", "imported"])
def test_cdk_nag_finds_nothing_unacknowledged_and_only_the_two_prefix_wildcards_are_acknowledged(built, request):
    built = request.getfixturevalue(built)
    report = json.loads((built["outdir"] / "validation-report.json").read_text())
    (aws_solutions,) = [p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    assert aws_solutions["conclusion"] == "success"
    assert aws_solutions["violations"] == []
    # AND the analyst's acknowledgments are exactly the capture-prefix read and the results-prefix write
    policy = "HyperPodInference/Analyst/DefaultPolicy/Resource"
    analyst = {v["acknowledgedId"] for v in aws_solutions["suppressedViolations"]
               for c in v["violatingConstructs"] if c["constructPath"] == policy}
    assert len(analyst) == 2
    assert {i.rsplit("/", 2)[-2] for i in analyst} == {"data-capture", "athena-results"}
    assert all(v["reason"] for v in aws_solutions["suppressedViolations"])


def test_cfn_lint_reports_no_errors_on_the_template(created, tmp_path):
    template_file = tmp_path / "analytics.template.json"
    template_file.write_text(created["template_path"].read_text())
    assert cfn_lint_errors([template_file]) == []


# ------------------------------------------------------------------------------------------- the composition
def _config(**analytics: Any) -> dict[str, Any]:
    data = copy.deepcopy(load_yaml(DEFAULT_CONFIG))
    if analytics:
        data["capture"].update(analytics)
    return data


@pytest.fixture(scope="module")
def default_synth(tmp_path_factory):
    return synth_config(_config(), tmp_path_factory.mktemp("analytics-default"))


def test_the_default_config_creates_analytics_and_prints_a_ready_latency_query(default_synth):
    template = default_synth.template
    assert len(template_resources(template, "AWS::Athena::WorkGroup")) == 1
    outputs = template["Outputs"]
    workgroup = next(v["Value"] for k, v in outputs.items() if k.endswith("CaptureQueryWorkGroup"))
    latency = next(v["Value"] for k, v in outputs.items() if k.endswith("CaptureLatencyQuery"))
    find = next(v["Value"] for k, v in outputs.items() if k.endswith("CaptureFindHash"))
    # THEN the latency output is two shell commands: start the prepared statement in the workgroup, read results
    start, results = [shlex.split(c) for c in latency.split(" ; ")]
    assert start[:3] == ["aws", "athena", "start-query-execution"]
    assert start[start.index("--work-group") + 1] == workgroup
    assert start[start.index("--query-string") + 1] == (
        "EXECUTE alb_latency USING '<hash>', '<yyyy/mm/dd>', '<yyyy/mm/dd>'")
    assert results[:3] == ["aws", "athena", "get-query-results"]
    # AND the hash finder lists the hash folders, the tier-1 endpoint folders and runs the load-balancer query
    listing, sme, lbs = [shlex.split(c) for c in find.split(" ; ")]
    assert listing[listing.index("--delimiter") + 1] == "/"
    bucket = next(v["Value"] for k, v in outputs.items() if k.endswith("CaptureBucket"))
    assert sme == ["aws", "s3", "ls", f"s3://{bucket}/data-capture/<hash>/sme/"]
    assert "EXECUTE alb_load_balancer USING '<hash>'" in lbs[lbs.index("--query-string") + 1]


def template_resources(template: dict[str, Any], rtype: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == rtype}


def test_analytics_false_creates_no_glue_or_athena_resource_and_no_query_output(tmp_path):
    synth = synth_config(_config(analytics=False), tmp_path)
    types = {v["Type"] for v in synth.template["Resources"].values()}
    assert not {t for t in types if t.startswith(("AWS::Glue::", "AWS::Athena::"))}
    assert not [k for k in synth.template["Outputs"] if "CaptureQuery" in k or "CaptureLatency" in k
                or "CaptureFindHash" in k]
    # AND capture itself is still there
    assert "AWS::S3::Bucket" in types


def test_analytics_settings_reach_the_workgroup_and_lifecycle_rule(tmp_path):
    synth = synth_config(_config(analytics={"bytesScannedCutoffMB": 25, "resultsRetentionDays": 7}), tmp_path,
                         nag=False)
    (wg,) = template_resources(synth.template, "AWS::Athena::WorkGroup").values()
    assert wg["Properties"]["WorkGroupConfiguration"]["BytesScannedCutoffPerQuery"] == 25_000_000
    rules = [r for b in template_resources(synth.template, "AWS::S3::Bucket").values()
             for r in b["Properties"].get("LifecycleConfiguration", {}).get("Rules", [])]
    assert {"Prefix": "athena-results/", "ExpirationInDays": 7} .items() <= next(
        r for r in rules if r.get("Prefix") == "athena-results/").items()


def test_in_an_environment_agnostic_stack_the_templates_take_the_deploy_time_account_and_region():
    # GIVEN a stack without env WHEN analytics is added THEN names stay literal and the locations are joined at deploy
    stack = cdk.Stack(cdk.App(), "Agnostic")
    CaptureAnalytics(stack, "CaptureAnalytics", capture=DataCaptureStorage(stack, "DataCapture"))
    template = Template.from_stack(stack)
    assert _one(template, "AWS::Athena::WorkGroup")["Name"] == "agnostic-capture"
    alb = _table(template, "alb_access_logs")["Parameters"]["storage.location.template"]
    assert alb == {"Fn::Join": ["", [
        "s3://agnostic-capture-", {"Ref": "AWS::AccountId"}, "-", {"Ref": "AWS::Region"},
        "/data-capture/${hash}/alb/AWSLogs/", {"Ref": "AWS::AccountId"}, "/elasticloadbalancing/",
        {"Ref": "AWS::Region"}, "/${day}/"]]}


def test_an_imported_capture_bucket_still_gets_the_tables_and_an_output_names_the_lifecycle_rule_to_add(tmp_path):
    # GIVEN the default config with an imported capture bucket
    data = _config(bucketName=IMPORTED_BUCKET)
    synth = synth_config(data, tmp_path, nag=False)
    tables = template_resources(synth.template, "AWS::Glue::Table")
    assert len(tables) == 2
    # THEN the bucket is not created nor changed, and the results lifecycle rule is an instruction for its owner
    assert not [b for b in template_resources(synth.template, "AWS::S3::Bucket").values()
                if b["Properties"].get("BucketName") == IMPORTED_BUCKET]
    todo = next(v["Value"] for k, v in synth.template["Outputs"].items()
                if k.endswith("CaptureQueryResultsLifecycleToAdd"))
    assert IMPORTED_BUCKET in todo and "athena-results/" in todo


def test_the_query_commands_keep_each_value_one_shell_word():
    from hyperpod_inference.plan.commands import capture_find_hash_command, capture_latency_command

    # GIVEN a statement whose literal holds shell syntax (a quote, ;, $(...))
    sql = "EXECUTE alb_latency USING 'x''; $(reboot)', '2026/12/01', '2026/12/01'"
    latency = capture_latency_command(work_group="wg", latency_sql=sql, region=REGION)
    # WHEN split as a shell would THEN two commands, the SQL one argument of the first
    start, results = [shlex.split(c) for c in latency.split(" ; ")]
    assert start[start.index("--query-string") + 1] == sql
    assert results[results.index("--query-execution-id") + 1] == "<QueryExecutionId>"
    find = capture_find_hash_command(s3_uri="s3://b/data-capture", work_group="wg", load_balancers_sql=sql,
                                     region=REGION)
    listing, sme, lbs = [shlex.split(c) for c in find.split(" ; ")]
    assert listing[listing.index("--prefix") + 1] == "data-capture/"
    assert sme[-1] == "s3://b/data-capture/<hash>/sme/"
    assert lbs[lbs.index("--query-string") + 1] == sql


def test_execute_statement_quotes_its_arguments_as_sql_literals(created):
    assert created["analytics"].execute_statement("alb_latency", ["a'b", "2026/12/01"]) == (
        "EXECUTE alb_latency USING 'a''b', '2026/12/01'")
    assert created["analytics"].latency_query_string == (
        "EXECUTE alb_latency USING '<hash>', '<yyyy/mm/dd>', '<yyyy/mm/dd>'")
