"""DataCaptureStorage: the bucket, key and grants behind the operator's three-tier data capture."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Annotations, Match, Template
from cdk_nag import AwsSolutionsChecks

from hyperpod_inference.constructs.data_capture import DataCaptureStorage
from tests.template_lint import cfn_lint_errors

ACCOUNT = "111122223333"
REGION = "us-west-2"
LEGACY_ELB_ACCOUNT_US_WEST_2 = "797873946194"
REGION_WITHOUT_LEGACY_ELB_ACCOUNT = "ap-southeast-5"
IMPORTED_KEY_ARN = "arn:aws:kms:us-west-2:444455556666:key/1234abcd-12ab-34cd-56ef-1234567890ab"
BUCKET = "hyperpodinference-capture-111122223333-us-west-2"
LOG_BUCKET = "hyperpodinference-capture-logs-111122223333-us-west-2"
ALB_SERVICE = "logdelivery.elasticloadbalancing.amazonaws.com"


def _stack(app: cdk.App | None = None, *, stack_id: str = "HyperPodInference", region: str | None = REGION,
           account: str | None = ACCOUNT) -> cdk.Stack:
    env = cdk.Environment(account=account, region=region) if region else None
    return cdk.Stack(app or cdk.App(), stack_id, env=env)


def _role(stack: cdk.Stack, role_id: str) -> iam.Role:
    return iam.Role(stack, role_id, assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))


def _logical_id(template: Template, resource_type: str, bucket_name: str) -> str:
    found = template.find_resources(resource_type, {"Properties": {"BucketName": bucket_name}})
    assert len(found) == 1, found
    return next(iter(found))


def _arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def _arn_plus(logical_id: str, suffix: str) -> dict[str, Any]:
    return {"Fn::Join": ["", [_arn(logical_id), suffix]]}


def _statements(template: Template, resource_type: str, document_key: str) -> list[dict[str, Any]]:
    statements = []
    for resource in template.find_resources(resource_type).values():
        statement = resource["Properties"][document_key]["Statement"]
        statements += statement if isinstance(statement, list) else [statement]
    return statements


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


@pytest.fixture(scope="module")
def created() -> dict[str, Any]:
    """GIVEN a stack with a created bucket and key, tier 2 on, and two writers (execution role, S3 CSI role)."""
    stack = _stack()
    storage = DataCaptureStorage(stack, "Capture", retention_days=30)
    execution_role, csi_role = _role(stack, "ExecutionRole"), _role(stack, "CsiRole")
    grants = [storage.grant_capture_write(execution_role), storage.grant_capture_write(csi_role, multipart=True)]
    template = Template.from_stack(stack)
    bucket_id = _logical_id(template, "AWS::S3::Bucket", BUCKET)
    return {"stack": stack, "storage": storage, "template": template, "grants": grants, "bucket_id": bucket_id,
            "log_bucket_id": _logical_id(template, "AWS::S3::Bucket", LOG_BUCKET),
            "execution_role_id": stack.get_logical_id(execution_role.node.default_child),
            "csi_role_id": stack.get_logical_id(csi_role.node.default_child)}


# ------------------------------------------------------------------------------------------------ created bucket
def test_created_bucket_blocks_public_access_is_versioned_sse_s3_owner_enforced_and_logs_to_log_bucket(created):
    # WHEN the template is synthesized  THEN the capture bucket has every protection and SSE-S3 default encryption
    created["template"].has_resource_properties("AWS::S3::Bucket", {
        "BucketName": BUCKET,
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
        "VersioningConfiguration": {"Status": "Enabled"},
        "BucketEncryption": {"ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
        "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
        "LoggingConfiguration": {"DestinationBucketName": {"Ref": created["log_bucket_id"]},
                                 "LogFilePrefix": f"{BUCKET}/"},
    })


def test_log_bucket_is_private_sse_s3_owner_enforced_and_written_by_s3_logging_through_its_policy(created):
    template, log_id = created["template"], created["log_bucket_id"]
    # THEN the log bucket is SSE-S3 (server access logs cannot target an SSE-KMS-default bucket) and has no ACLs
    template.has_resource_properties("AWS::S3::Bucket", {
        "BucketName": LOG_BUCKET,
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                           "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
        "BucketEncryption": {"ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
        "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
        "AccessControl": Match.absent(),
    })
    # AND S3 logging may write only the capture bucket's log prefix, only for that source bucket and account
    template.has_resource_properties("AWS::S3::BucketPolicy", {
        "Bucket": {"Ref": log_id},
        "PolicyDocument": {"Statement": Match.array_with([
            {"Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"}, "Action": "s3:PutObject",
             "Resource": _arn_plus(log_id, f"/{BUCKET}/*"),
             "Condition": {"ArnLike": {"aws:SourceArn": _arn(created["bucket_id"])},
                           "StringEquals": {"aws:SourceAccount": ACCOUNT}}},
        ])},
    })


def test_buckets_key_and_alias_are_retained_by_default(created):
    template = created["template"]
    for resource_type, expected in (("AWS::S3::Bucket", 2), ("AWS::KMS::Key", 1), ("AWS::KMS::Alias", 1)):
        resources = template.find_resources(resource_type)
        assert len(resources) == expected
        for resource in resources.values():
            assert resource["DeletionPolicy"] == "Retain"
            assert resource["UpdateReplacePolicy"] == "Retain"


def test_removal_policy_destroy_applies_to_buckets_and_key():
    stack = _stack()
    DataCaptureStorage(stack, "Capture", removal_policy=cdk.RemovalPolicy.DESTROY)
    template = Template.from_stack(stack)
    for resource_type in ("AWS::S3::Bucket", "AWS::KMS::Key"):
        for resource in template.find_resources(resource_type).values():
            assert resource["DeletionPolicy"] == "Delete"


def test_lifecycle_expires_current_and_noncurrent_versions_after_retention_and_aborts_uploads_after_7_days(created):
    # GIVEN retention_days=30  THEN the capture bucket and the log bucket expire after exactly 30 days
    created["template"].has_resource_properties("AWS::S3::Bucket", {
        "BucketName": BUCKET,
        "LifecycleConfiguration": {"Rules": [{
            "Id": "expire-data-capture", "Status": "Enabled", "ExpirationInDays": 30,
            "NoncurrentVersionExpiration": {"NoncurrentDays": 30},
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}}]},
    })
    created["template"].has_resource_properties("AWS::S3::Bucket", {
        "BucketName": LOG_BUCKET,
        "LifecycleConfiguration": {"Rules": [{
            "Id": "expire-access-logs", "Status": "Enabled", "ExpirationInDays": 30,
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}}]},
    })


def test_both_buckets_deny_every_request_without_tls(created):
    template = created["template"]
    for bucket_id in (created["bucket_id"], created["log_bucket_id"]):
        template.has_resource_properties("AWS::S3::BucketPolicy", {
            "Bucket": {"Ref": bucket_id},
            "PolicyDocument": {"Statement": Match.array_with([
                {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
                 "Resource": [_arn(bucket_id), _arn_plus(bucket_id, "/*")],
                 "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
            ])},
        })


def test_alb_log_delivery_may_put_only_alb_logs_of_this_account_under_the_prefix(created):
    bucket_id = created["bucket_id"]
    created["template"].has_resource_properties("AWS::S3::BucketPolicy", {
        "Bucket": {"Ref": bucket_id},
        "PolicyDocument": {"Statement": Match.array_with([
            {"Sid": "AllowAlbAccessLogDelivery", "Effect": "Allow", "Principal": {"Service": ALB_SERVICE},
             "Action": "s3:PutObject",
             "Resource": _arn_plus(bucket_id, f"/data-capture/*/alb/AWSLogs/{ACCOUNT}/*"),
             "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}}},
        ])},
    })


def test_region_with_legacy_elb_account_also_allows_that_account_without_source_account_condition(created):
    # GIVEN us-west-2, which still delivers ALB logs with its regional ELB account
    bucket_id = created["bucket_id"]
    statement = {"Sid": "AllowAlbAccessLogDeliveryLegacyElbAccount", "Effect": "Allow",
                 "Principal": {"AWS": f"arn:aws:iam::{LEGACY_ELB_ACCOUNT_US_WEST_2}:root"},
                 "Action": "s3:PutObject",
                 "Resource": _arn_plus(bucket_id, f"/data-capture/*/alb/AWSLogs/{ACCOUNT}/*")}
    # THEN the bucket policy has exactly this statement (no Condition key at all)
    policies = created["template"].find_resources("AWS::S3::BucketPolicy", {"Properties": {"Bucket": {"Ref": bucket_id}}})
    (policy,) = policies.values()
    assert statement in policy["Properties"]["PolicyDocument"]["Statement"]


def test_region_without_legacy_elb_account_allows_only_the_log_delivery_service_principal():
    # GIVEN a region that region-info lists without an ELB account
    stack = _stack(region=REGION_WITHOUT_LEGACY_ELB_ACCOUNT)
    DataCaptureStorage(stack, "Capture")
    # WHEN synthesized
    statements = _statements(Template.from_stack(stack), "AWS::S3::BucketPolicy", "PolicyDocument")
    # THEN the only ALB statement is the service principal one, and no IAM account principal is allowed
    sids = [s.get("Sid") for s in statements]
    assert "AllowAlbAccessLogDelivery" in sids
    assert "AllowAlbAccessLogDeliveryLegacyElbAccount" not in sids
    assert not [s for s in statements if s["Effect"] == "Allow" and "AWS" in s["Principal"]]


def test_alb_logs_off_adds_no_log_delivery_statement():
    stack = _stack()
    DataCaptureStorage(stack, "Capture", alb_logs=False)
    statements = _statements(Template.from_stack(stack), "AWS::S3::BucketPolicy", "PolicyDocument")
    assert not [s for s in statements if s.get("Sid", "").startswith("AllowAlbAccessLogDelivery")]
    assert not [s for s in statements if s["Principal"] == {"Service": ALB_SERVICE}]


# ---------------------------------------------------------------------------------------------------------- names
def test_names_uri_alias_and_tier_prefixes_are_literal_when_the_stack_has_an_env(created):
    storage = created["storage"]
    assert storage.bucket_name == BUCKET
    assert storage.s3_uri == f"s3://{BUCKET}/data-capture"
    assert storage.key_alias_arn == f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/hyperpodinference-data-capture"
    assert storage.kms_key_id == storage.key_alias_arn
    # the CRD's kmsKeyId pattern accepts the alias ARN
    assert re.fullmatch(r"^[a-zA-Z0-9:/_-]*$", storage.key_alias_arn)
    assert storage.tier_prefixes() == {
        "sagemakerEndpoint": f"s3://{BUCKET}/data-capture/<hash>/sme/",
        "loadBalancer": f"s3://{BUCKET}/data-capture/<hash>/alb/",
        "modelPod": f"s3://{BUCKET}/data-capture/<hash>/pod/",
    }
    assert storage.tier_prefixes("abc123")["modelPod"] == f"s3://{BUCKET}/data-capture/abc123/pod/"
    created["template"].has_resource_properties("AWS::KMS::Alias", {
        "AliasName": "alias/hyperpodinference-data-capture"})


def test_physical_name_prefix_replaces_the_stack_name_in_every_name():
    stack = _stack()
    storage = DataCaptureStorage(stack, "Capture", physical_name_prefix="team-a", prefix="capture/v1")
    assert storage.bucket_name == f"team-a-capture-{ACCOUNT}-{REGION}"
    assert storage.s3_uri == f"s3://team-a-capture-{ACCOUNT}-{REGION}/capture/v1"
    assert storage.key_alias_arn.endswith(":alias/team-a-data-capture")
    Template.from_stack(stack).has_resource_properties(
        "AWS::S3::Bucket", {"BucketName": f"team-a-capture-logs-{ACCOUNT}-{REGION}"})


def test_long_mixed_case_stack_name_gives_valid_deterministic_bucket_names_of_at_most_63_characters():
    # GIVEN a stack name that is long, mixed case, and would overflow the S3 limit
    long_name = "My-Very-Long-HyperPod-Inference-Stack-Name-For-Production-Workloads"
    names = []
    for _ in range(2):
        stack = _stack(stack_id=long_name, region="ap-southeast-5")
        storage = DataCaptureStorage(stack, "Capture")
        log_name = Template.from_stack(stack).find_resources(
            "AWS::S3::Bucket", {"Properties": {"LoggingConfiguration": Match.absent()}})
        (log_bucket,) = log_name.values()
        names.append((storage.bucket_name, log_bucket["Properties"]["BucketName"]))
    # THEN both names are valid S3 names, lowercase, <= 63, and the same on every synth
    assert names[0] == names[1]
    for name in names[0]:
        assert len(name) <= 63
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]*[a-z0-9]", name) and "--" not in name
        assert name.startswith("my-very-long-")
        assert name.endswith(f"-{ACCOUNT}-ap-southeast-5")


def test_environment_agnostic_stack_builds_names_with_fn_join_and_warns_about_the_legacy_elb_account():
    # GIVEN a stack without env (account and region are deploy-time tokens)
    stack = _stack(region=None)
    DataCaptureStorage(stack, "Capture", physical_name_prefix="team-a")
    template = Template.from_stack(stack)
    # THEN the bucket name is joined from the pseudo parameters
    template.has_resource_properties("AWS::S3::Bucket", {"BucketName": {"Fn::Join": ["", [
        "team-a-capture-", {"Ref": "AWS::AccountId"}, "-", {"Ref": "AWS::Region"}]]}})
    # AND only the service-principal ALB statement exists, with a warning that says why
    sids = [s.get("Sid") for s in _statements(template, "AWS::S3::BucketPolicy", "PolicyDocument")]
    assert "AllowAlbAccessLogDelivery" in sids and "AllowAlbAccessLogDeliveryLegacyElbAccount" not in sids
    Annotations.from_stack(stack).has_warning("/HyperPodInference/Capture", Match.string_like_regexp("legacy ELB account"))


# ------------------------------------------------------------------------------------------------------------ key
def test_created_key_rotates_and_lets_each_writer_use_it_only_through_s3_for_the_capture_prefix(created):
    template, bucket_id = created["template"], created["bucket_id"]
    conditions = {
        "StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"},
        "StringLike": {"kms:EncryptionContext:aws:s3:arn": [_arn(bucket_id),
                                                             _arn_plus(bucket_id, "/data-capture/*")]},
    }
    template.has_resource_properties("AWS::KMS::Key", {
        "EnableKeyRotation": True,
        "KeyPolicy": {"Statement": Match.array_with([
            {"Effect": "Allow", "Principal": {"AWS": _arn(created[role])},
             "Action": ["kms:Decrypt", "kms:GenerateDataKey"], "Resource": "*", "Condition": conditions}
            for role in ("execution_role_id", "csi_role_id")
        ])},
    })


def test_key_policy_allows_nothing_unconditionally_except_cdks_account_root_statement(created):
    # Resource "*" in a key policy means "this key"; the only other statements are the scoped writer grants.
    statements = _statements(created["template"], "AWS::KMS::Key", "KeyPolicy")
    assert len(statements) == 3
    root = [s for s in statements if "Condition" not in s]
    assert len(root) == 1 and root[0]["Principal"]["AWS"]["Fn::Join"][1][-1] == f":iam::{ACCOUNT}:root"
    for statement in statements:
        assert statement["Resource"] == "*"


def test_principal_of_another_stack_gets_the_iam_grant_but_no_key_policy_statement():
    app = cdk.App()
    storage_stack, role_stack = _stack(app, stack_id="Storage"), _stack(app, stack_id="Roles")
    storage = DataCaptureStorage(storage_stack, "Capture")
    storage.grant_capture_write(_role(role_stack, "Writer"))
    key_statements = _statements(Template.from_stack(storage_stack), "AWS::KMS::Key", "KeyPolicy")
    assert len(key_statements) == 1  # CDK's account-root statement only
    role_actions = [s["Action"] for s in _statements(Template.from_stack(role_stack), "AWS::IAM::Policy",
                                                     "PolicyDocument")]
    assert ["kms:Decrypt", "kms:GenerateDataKey"] in role_actions


# ---------------------------------------------------------------------------------------------------------- grants
def test_grant_capture_write_allows_put_object_on_the_prefix_and_the_key_through_s3(created):
    template, bucket_id = created["template"], created["bucket_id"]
    kms_statement = {
        "Effect": "Allow", "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
        "Resource": _arn(template.find_resources("AWS::KMS::Key").popitem()[0]),
        "Condition": {
            "StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"},
            "StringLike": {"kms:EncryptionContext:aws:s3:arn": [_arn(bucket_id),
                                                                 _arn_plus(bucket_id, "/data-capture/*")]}},
    }
    template.has_resource_properties("AWS::IAM::Policy", {
        "Roles": [{"Ref": created["execution_role_id"]}],
        "PolicyDocument": {"Statement": [
            {"Effect": "Allow", "Action": "s3:PutObject", "Resource": _arn_plus(bucket_id, "/data-capture/*")},
            kms_statement,
        ]},
    })
    # AND the multipart variant (S3 CSI driver role) also may abort multipart uploads, on the same prefix only
    template.has_resource_properties("AWS::IAM::Policy", {
        "Roles": [{"Ref": created["csi_role_id"]}],
        "PolicyDocument": {"Statement": [
            {"Effect": "Allow", "Action": ["s3:PutObject", "s3:AbortMultipartUpload"],
             "Resource": _arn_plus(bucket_id, "/data-capture/*")},
            kms_statement,
        ]},
    })
    assert all(grant.success for grant in created["grants"])


def test_no_iam_or_bucket_policy_statement_names_resource_star(created):
    template = created["template"]
    statements = (_statements(template, "AWS::IAM::Policy", "PolicyDocument")
                  + _statements(template, "AWS::S3::BucketPolicy", "PolicyDocument"))
    assert statements
    for statement in statements:
        assert "*" not in _as_list(statement["Resource"]), statement


def test_kms_none_creates_no_key_and_grants_s3_only():
    stack = _stack()
    storage = DataCaptureStorage(stack, "Capture", kms="none")
    storage.grant_capture_write(_role(stack, "Writer"))
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::KMS::Key", 0)
    assert storage.key is None and storage.key_alias_arn is None and storage.kms_key_id is None
    actions = [s["Action"] for s in _statements(template, "AWS::IAM::Policy", "PolicyDocument")]
    assert actions == ["s3:PutObject"]


# -------------------------------------------------------------------------------------------------------- imports
@pytest.fixture(scope="module")
def imported() -> dict[str, Any]:
    """GIVEN a fresh stack importing an existing bucket and an existing (cross-account) key."""
    stack = _stack()
    storage = DataCaptureStorage(stack, "Capture", bucket_name="existing-capture", bucket_account=ACCOUNT,
                                 kms=IMPORTED_KEY_ARN)
    storage.grant_capture_write(_role(stack, "Writer"), multipart=True)
    return {"stack": stack, "storage": storage, "template": Template.from_stack(stack)}


def test_imported_bucket_and_key_are_never_re_policied(imported):
    template = imported["template"]
    for resource_type in ("AWS::S3::Bucket", "AWS::S3::BucketPolicy", "AWS::KMS::Key", "AWS::KMS::Alias"):
        template.resource_count_is(resource_type, 0)


def test_imported_bucket_and_key_get_iam_side_grants_with_literal_arns(imported):
    imported["template"].has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": [
        {"Effect": "Allow", "Action": ["s3:PutObject", "s3:AbortMultipartUpload"],
         "Resource": "arn:aws:s3:::existing-capture/data-capture/*"},
        {"Effect": "Allow", "Action": ["kms:Decrypt", "kms:GenerateDataKey"], "Resource": IMPORTED_KEY_ARN,
         "Condition": {"StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"},
                       "StringLike": {"kms:EncryptionContext:aws:s3:arn": [
                           "arn:aws:s3:::existing-capture", "arn:aws:s3:::existing-capture/data-capture/*"]}}},
    ]}})
    storage = imported["storage"]
    assert storage.s3_uri == "s3://existing-capture/data-capture"
    assert storage.key_alias_arn is None and storage.kms_key_id == IMPORTED_KEY_ARN


def test_imported_bucket_owner_statements_are_tls_deny_and_alb_delivery_as_plain_json(imported):
    statements = imported["storage"].owner_bucket_policy_statements()
    # plain, literal JSON that an owner can paste (no CDK tokens)
    assert "${Token" not in json.dumps(statements)
    assert statements == [
        {"Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
         "Resource": ["arn:aws:s3:::existing-capture", "arn:aws:s3:::existing-capture/*"],
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
        {"Sid": "AllowAlbAccessLogDelivery", "Effect": "Allow", "Principal": {"Service": ALB_SERVICE},
         "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::existing-capture/data-capture/*/alb/AWSLogs/{ACCOUNT}/*",
         "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}}},
        {"Sid": "AllowAlbAccessLogDeliveryLegacyElbAccount", "Effect": "Allow",
         "Principal": {"AWS": f"arn:aws:iam::{LEGACY_ELB_ACCOUNT_US_WEST_2}:root"}, "Action": "s3:PutObject",
         "Resource": f"arn:aws:s3:::existing-capture/data-capture/*/alb/AWSLogs/{ACCOUNT}/*"},
    ]


def test_imported_key_owner_statement_names_the_principals_and_the_s3_conditions(imported):
    role_arn = f"arn:aws:iam::{ACCOUNT}:role/SageMakerHyperPodInference-exec"
    assert imported["storage"].owner_key_policy_statements([role_arn]) == [{
        "Sid": "AllowHyperPodDataCaptureViaS3", "Effect": "Allow", "Principal": {"AWS": [role_arn]},
        "Action": ["kms:Decrypt", "kms:GenerateDataKey"], "Resource": "*",
        "Condition": {"StringEquals": {"kms:ViaService": f"s3.{REGION}.amazonaws.com"},
                      "StringLike": {"kms:EncryptionContext:aws:s3:arn": [
                          "arn:aws:s3:::existing-capture", "arn:aws:s3:::existing-capture/data-capture/*"]}},
    }]


def test_owner_statements_are_empty_for_created_resources_and_tls_only_without_alb_logs(created):
    assert created["storage"].owner_bucket_policy_statements() == []
    assert created["storage"].owner_key_policy_statements(["arn:aws:iam::111122223333:role/x"]) == []
    storage = DataCaptureStorage(_stack(), "Capture", bucket_name="existing-capture", alb_logs=False, kms="none")
    assert [s["Sid"] for s in storage.owner_bucket_policy_statements()] == ["DenyInsecureTransport"]


def test_imported_kms_default_bucket_without_alb_logs_is_accepted():
    storage = DataCaptureStorage(_stack(), "Capture", bucket_name="existing-capture", bucket_default_kms=True,
                                 alb_logs=False)
    assert storage.imported_bucket


# ----------------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(("props", "prop_named"), [
    ({"retention_days": 0}, "retention_days"),
    ({"retention_days": True}, "retention_days"),
    ({"prefix": "/data-capture"}, "prefix"),
    ({"prefix": "data-capture/"}, "prefix"),
    ({"prefix": "data,capture"}, "prefix"),
    ({"prefix": ""}, "prefix"),
    ({"prefix": None}, "prefix"),
    ({"kms": "yes"}, "kms"),
    ({"kms": "arn:aws:kms:us-west-2:111122223333:alias/my-key"}, "kms"),
    ({"kms": "arn:aws-cn:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"}, "kms"),
    ({"kms": "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"}, "kms"),
    ({"bucket_name": "existing", "bucket_default_kms": True}, "bucket_default_kms"),
    ({"bucket_default_kms": True, "alb_logs": False}, "bucket_default_kms"),
    ({"bucket_name": "existing", "bucket_account": "444455556666"}, "bucket_account"),
    ({"bucket_name": "existing", "bucket_account": "12345"}, "bucket_account"),
    ({"bucket_name": "Not_A_Bucket"}, "bucket_name"),
    ({"physical_name_prefix": "Team_A"}, "physical_name_prefix"),
    ({"physical_name_prefix": "a" * 30}, "physical_name_prefix"),
])
def test_each_invalid_prop_is_rejected_with_a_message_naming_it(props, prop_named):
    with pytest.raises(ValueError, match=rf"(?m)^  - {prop_named}: "):
        DataCaptureStorage(_stack(), "Capture", **props)


def test_all_problems_are_reported_in_one_error():
    with pytest.raises(ValueError) as error:
        DataCaptureStorage(_stack(), "Capture", retention_days=-1, prefix="/x/", kms="alias/mine")
    message = str(error.value)
    assert "HyperPodInference/Capture" in message
    for prop in ("retention_days", "prefix", "kms"):
        assert f"  - {prop}: " in message


def test_unresolved_tokens_are_not_validated():
    stack = _stack()
    key_arn = cdk.CfnParameter(stack, "KeyArn").value_as_string
    account = cdk.CfnParameter(stack, "BucketAccount").value_as_string
    storage = DataCaptureStorage(stack, "Capture", bucket_name="existing-capture", bucket_account=account,
                                 kms=key_arn)
    assert storage.kms_key_id is not None


# ----------------------------------------------------------------------------------------------- cdk-nag, cfn-lint
@pytest.fixture(scope="module")
def nag_app(tmp_path_factory) -> dict[str, Any]:
    """GIVEN an app with the AwsSolutions pack and a stack with a created bucket, created key, tier 2 and grants."""
    outdir = tmp_path_factory.mktemp("cdk-out")
    app = cdk.App(outdir=str(outdir))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = _stack(app)
    storage = DataCaptureStorage(stack, "Capture")
    storage.grant_capture_write(_role(stack, "ExecutionRole"))
    storage.grant_capture_write(_role(stack, "CsiRole"), multipart=True)
    # WHEN synthesized (this raises when a finding is not acknowledged)
    assembly = app.synth()
    return {"outdir": outdir, "bucket_id": stack.get_logical_id(storage.bucket.node.default_child),
            "template_path": Path(assembly.get_stack_by_name(stack.stack_name).template_full_path)}


def test_cdk_nag_aws_solutions_has_no_unacknowledged_findings_and_every_acknowledgment_has_a_reason(nag_app):
    report = json.loads((nag_app["outdir"] / "validation-report.json").read_text())
    (aws_solutions,) = [p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    # THEN nothing is left unacknowledged (the log bucket's own access logs are not a finding: cdk-nag recognises it
    # as the target of the capture bucket's server access logs)
    assert aws_solutions["conclusion"] == "success"
    assert aws_solutions["violations"] == []
    # AND the only acknowledgments are the capture-prefix wildcard of each writer's policy, each with a reason
    acknowledged = {(v["acknowledgedId"], c["constructPath"]) for v in aws_solutions["suppressedViolations"]
                    for c in v["violatingConstructs"]}
    wildcard_id = f"AwsSolutions::AwsSolutions-IAM5[Resource::<{nag_app['bucket_id']}.Arn>/data-capture/*]"
    assert acknowledged == {(wildcard_id, f"HyperPodInference/{role}/DefaultPolicy/Resource")
                            for role in ("ExecutionRole", "CsiRole")}
    assert all("capture prefix" in v["reason"] for v in aws_solutions["suppressedViolations"])


def test_cfn_lint_reports_no_errors_on_the_synthesized_template(nag_app, tmp_path):
    template_file = tmp_path / "data-capture.template.json"
    template_file.write_text(nag_app["template_path"].read_text())
    assert cfn_lint_errors([template_file]) == []
