"""doctor's S3 model checks against moto, with model buckets in two regions: the bucket's region against the config's,
the prefix's config.json and weights, and a bucket's customer-managed KMS key in the config."""

from __future__ import annotations

import boto3
import pytest
import yaml

from tests.fake_aws import Account
from tests.ops.conftest import full_config, run_doctor, run_init

OTHER_REGION = "eu-west-1"
FAR_BUCKET = "models-far-away"


@pytest.fixture
def data(account: Account) -> dict:
    status, path = run_init(account)
    assert status == 0
    s3 = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                       region_name=OTHER_REGION).client("s3", endpoint_url=account.url)
    s3.create_bucket(Bucket=FAR_BUCKET, CreateBucketConfiguration={"LocationConstraint": OTHER_REGION})
    for key in ("llama/config.json", "llama/model.safetensors", "nested/llama/config.json"):
        s3.put_object(Bucket=FAR_BUCKET, Key=key, Body=b"{}")
    return full_config(account, yaml.safe_load(path.read_text()))


def _model(account: Account, data: dict, **s3) -> dict[str, list[dict]]:
    data["endpoints"][0]["model"] = {"s3": s3}
    _, results = run_doctor(account, data, "--only", "model.s3-region,model.s3-files,model.s3-kms")
    out: dict[str, list[dict]] = {}
    for r in results:
        out.setdefault(r["check"], []).append(r)
    return out


def test_a_bucket_in_another_region_than_the_config_says_fails(account, data):
    region = _model(account, data, bucket=FAR_BUCKET, prefix="llama/")["model.s3-region"][0]
    assert region["status"] == "fail" and f"the bucket is in {OTHER_REGION}" in region["detail"]
    assert region["resource"].startswith("endpoint inference/qwen-s3: s3://models-far-away/llama/")
    assert "copy the weights to a bucket in us-west-2" in region["fix"]


def test_the_bucket_region_named_in_the_config_is_a_warning_for_the_gateway_endpoint(account, data):
    region = _model(account, data, bucket=FAR_BUCKET, prefix="llama/", region=OTHER_REGION)["model.s3-region"][0]
    assert region["status"] == "warn" and "NAT gateway" in region["detail"]


def test_a_wrong_region_on_a_bucket_of_the_stacks_region_fails_naming_the_right_one(account, data):
    bucket = data["endpoints"][0]["model"]["s3"]["bucket"]
    region = _model(account, data, bucket=bucket, prefix="qwen/", region=OTHER_REGION)["model.s3-region"][0]
    assert region["status"] == "fail" and region["fix"] == "set endpoints[0].model.s3.region: us-west-2"


def test_a_prefix_without_config_json_fails_naming_the_folder_that_has_one(account, data):
    files = _model(account, data, bucket=FAR_BUCKET, prefix="nested/", region=OTHER_REGION)["model.s3-files"][0]
    assert files["status"] == "fail" and "no config.json and weights" in files["detail"]
    assert "nested/llama/ holds a config.json" in files["fix"]
    good = _model(account, data, bucket=FAR_BUCKET, prefix="llama/", region=OTHER_REGION)["model.s3-files"][0]
    assert good["status"] == "pass"


def test_a_bucket_encrypted_with_a_customer_key_needs_the_key_in_the_config(account, data):
    key = account.client("kms").create_key()["KeyMetadata"]["Arn"]
    boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name=OTHER_REGION).client(
        "s3", endpoint_url=account.url).put_bucket_encryption(Bucket=FAR_BUCKET, ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}}]})
    kms = _model(account, data, bucket=FAR_BUCKET, prefix="llama/", region=OTHER_REGION)["model.s3-kms"][0]
    assert kms["status"] == "fail" and kms["fix"] == f"set endpoints[0].model.s3.kmsKeyArn: the key's ARN ({key})"
    kms = _model(account, data, bucket=FAR_BUCKET, prefix="llama/", region=OTHER_REGION,
                 kmsKeyArn=key)["model.s3-kms"][0]
    assert kms["status"] == "pass"
