"""The rule functions of the facts layer: S3's real bucket naming rules, ARN shapes, versions compared as versions."""

from __future__ import annotations

import pytest

from hyperpod_inference.facts import operator, rules
from hyperpod_inference.facts.versions import Version, version_key


@pytest.mark.parametrize("name", ["my-bucket", "a.b.c", "abc", "a" * 63, "hyperpod-tls-111122223333-us-west-2",
                                  "1-2-3", "my.bucket-s3alias2", "192.168.1.1a"])
def test_bucket_names_s3_accepts_have_no_problem(name):
    # GIVEN a name S3 allows for a general purpose bucket / WHEN checked / THEN no problem
    assert rules.bucket_name_problem(name) is None


@pytest.mark.parametrize(("name", "words"), [
    ("my..bucket", "'..'"),
    ("192.168.1.1", "IP address"),
    ("abc.mrap", "'.mrap'"),
    ("xn--abc", "'xn--'"),
    ("sthree-abc", "'sthree-'"),
    ("amzn-s3-demo-bucket", "'amzn-s3-demo-'"),
    ("abc-s3alias", "'-s3alias'"),
    ("abc--ol-s3", "'--ol-s3'"),
    ("abc--x-s3", "'--x-s3'"),
    ("abc--table-s3", "'--table-s3'"),
    ("ab", "3-63"),
    ("a" * 64, "3-63"),
    ("My-Bucket", "lowercase"),
    ("-abc", "starting and ending"),
    ("abc.", "starting and ending"),
    ("s3://abc", "lowercase"),
])
def test_bucket_names_s3_refuses_are_refused_with_the_rule(name, words):
    # GIVEN a name S3 refuses / WHEN checked / THEN the reason names the rule it breaks
    problem = rules.bucket_name_problem(name)
    assert problem is not None and words in problem


@pytest.mark.parametrize(("arn", "good"), [
    ("arn:aws:kms:us-west-2:111122223333:key/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", True),
    ("arn:aws:kms:us-west-2:111122223333:key/mrk-0123456789abcdef0123456789abcdef", True),
    ("arn:aws-cn:kms:cn-north-1:111122223333:key/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", True),
    ("arn:aws:kms:us-west-2:111122223333:alias/my-key", False),
    ("arn:aws:kms:us-west-2:111122223333:key/------------------------------------", False),
    ("arn:aws:kms:us-west-2:1111:key/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", False),
])
def test_one_kms_key_arn_rule_takes_key_ids_and_multi_region_keys_not_aliases(arn, good):
    assert (rules.kms_key_arn_problem(arn) is None) is good


@pytest.mark.parametrize(("arn", "good"), [
    ("arn:aws:sagemaker:us-west-2:111122223333:cluster/abcd1234efgh", True),
    ("arn:aws-us-gov:sagemaker:us-gov-west-1:111122223333:cluster/abcd1234efgh", True),
    ("arn:aws:sagemaker:us-west-2:111122223333:cluster/abcd", False),
    ("arn:aws:sagemaker:us-west-2:111122223333:cluster/ABCD1234EFGH", False),
    ("arn:aws:eks:us-west-2:111122223333:cluster/abcd1234efgh", False),
])
def test_one_hyperpod_cluster_arn_rule(arn, good):
    assert (rules.hyperpod_cluster_arn_problem(arn) is None) is good


def test_partition_and_arn_parts_read_an_arn_and_a_region():
    assert rules.arn_parts("arn:aws-cn:kms:cn-north-1:111122223333:key/x") == ("aws-cn", "kms", "cn-north-1",
                                                                                "111122223333")
    assert [rules.partition_of_region(r) for r in ("us-west-2", "cn-north-1", "us-gov-east-1", "us-isob-east-1")] == [
        "aws", "aws-cn", "aws-us-gov", "aws-iso-b"]


def test_versions_compare_as_versions_not_strings():
    # GIVEN versions whose string order differs from their version order
    # THEN they compare as versions, against each other and against strings
    assert "v3.10" < "v3.3"  # the trap
    assert Version("v3.10") > Version("v3.3")
    assert Version("v3.10") > "v3.3"
    assert Version("v3.3") == "v3.3.0"
    assert Version("v1.4.0-eksbuild.2") > "v1.4.0-eksbuild.1"
    assert sorted(["v3.10", "v3.3", "v3.2"], key=version_key) == ["v3.2", "v3.3", "v3.10"]
    assert Version("v3.10") >= "v3.3" and not Version("v3.2") >= "v3.3"
    with pytest.raises(ValueError, match="not a version"):
        Version("latest")


def test_a_field_is_in_every_version_from_the_one_that_adds_it():
    # GIVEN modelCacheConfig arrives with v3.3 / THEN v3.2 lacks it and later versions (v3.10 included) have it
    assert not operator.has_field("v3.2", "spec.modelCacheConfig")
    assert operator.has_field("v3.3", "spec.modelCacheConfig")
    assert operator.has_field("v3.10", "spec.modelCacheConfig")
    assert operator.has_field("v3.2", "spec.worker")  # not listed: in every supported version


def test_operator_versions_are_the_release_table_oldest_first():
    assert operator.OPERATOR_VERSIONS == tuple(sorted((r.version for r in operator.RELEASES), key=version_key))
    assert operator.DEFAULT_OPERATOR_VERSION in operator.OPERATOR_VERSIONS
    with pytest.raises(ValueError, match="supported: v3.2, v3.3"):
        operator.release("v9.9")


def test_the_config_takes_exactly_the_operator_versions_of_the_release_table():
    from hyperpod_inference.config import config_json_schema

    # GIVEN the JSON Schema of the config / THEN operator.version lists the release table's versions
    schema = config_json_schema()
    version = schema["$defs"]["Operator"]["properties"]["version"]
    assert tuple(version["enum"]) == operator.OPERATOR_VERSIONS
    assert version["default"] == operator.DEFAULT_OPERATOR_VERSION


def test_a_version_equals_no_string_that_is_not_a_version():
    assert Version("v3.3") != "latest"
    with pytest.raises(ValueError, match="not a version"):
        assert Version("v3.3") < "latest"


def test_the_verify_body_is_built_in_one_place_from_the_payload_or_the_runtimes_default():
    # GIVEN payloads as the config and the construct take them
    from hyperpod_inference.facts.runtimes import FALLBACK_PAYLOAD, PRESETS, default_payload
    from hyperpod_inference.facts.safety import verify_body

    # THEN a string goes as it is, a mapping as compact JSON, none (or empty) as the default
    assert verify_body("hi", "text/plain", "d") == "hi"
    assert verify_body({"a": [1, "é"]}, "application/vnd.x+json", "d") == '{"a":[1,"é"]}'
    assert verify_body(None, None, "d") == "d" and verify_body("", "application/json", "d") == "d"
    # AND a mapping with a content type that is not JSON, or a number, is refused with the reason
    with pytest.raises(ValueError, match="needs a JSON content type"):
        verify_body({"a": 1}, "text/plain", "d")
    with pytest.raises(ValueError, match="must be a string, a mapping or a list"):
        verify_body(3, "application/json", "d")
    # AND the default is the runtime preset's payload, else the fallback
    assert default_payload("vllm") == PRESETS["vllm"].default_payload
    assert default_payload("custom") == default_payload(None) == FALLBACK_PAYLOAD
