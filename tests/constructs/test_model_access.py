"""grant_model_read / grant_secret_read: a prefix is granted as a literal folder, a partial secret ARN with AWS's
six-character suffix pattern, and cdk-nag accepts only the literal grant."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from hyperpod_inference.constructs.model_access import grant_model_read, grant_secret_read

ENV = cdk.Environment(account="111122223333", region="us-west-2")
SECRET = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-token"


def _role(app: cdk.App | None = None) -> tuple[cdk.Stack, iam.Role]:
    stack = cdk.Stack(app or cdk.App(), "ModelAccess", env=ENV)
    return stack, iam.Role(stack, "Reader", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))


def _statements(stack: cdk.Stack) -> list[dict]:
    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]]


@pytest.mark.parametrize("prefix, objects, listed", [
    ("qwen", "arn:aws:s3:::my-models/qwen/*", ["qwen/*"]),
    ("qwen/", "arn:aws:s3:::my-models/qwen/*", ["qwen/*"]),
    ("org/qwen-7b", "arn:aws:s3:::my-models/org/qwen-7b/*", ["org/qwen-7b/*"]),
])
def test_a_prefix_is_granted_as_its_folder_never_its_siblings(prefix, objects, listed):
    # GIVEN a reader of one model prefix
    stack, role = _role()
    # WHEN it is granted
    grant_model_read(role, bucket="my-models", prefix=prefix)
    statements = _statements(stack)
    # THEN GetObject and the listing condition name the folder (qwen/ not qwen*, which would reach qwen-other/)
    get = next(s for s in statements if s["Action"] == "s3:GetObject")
    listing = next(s for s in statements if s["Action"] == "s3:ListBucket")
    assert get["Resource"] == objects
    assert listing["Condition"] == {"StringLike": {"s3:prefix": listed}}


@pytest.mark.parametrize("prefix", ["*", "a/*", "qwen?"])
def test_a_wildcard_prefix_is_refused_before_anything_is_granted(prefix):
    # GIVEN a prefix holding an IAM wildcard
    stack, role = _role()
    # WHEN / THEN the grant refuses it, and the role has no policy
    with pytest.raises(ValueError, match="must be a literal prefix"):
        grant_model_read(role, bucket="my-models", prefix=prefix)
    assert Template.from_stack(stack).find_resources("AWS::IAM::Policy") == {}


def test_cdk_nag_accepts_the_literal_folder_grant_and_nothing_else():
    # GIVEN cdk-nag on an app whose role reads one folder and, separately, has a broader wildcard of its own
    app = cdk.App()
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack, role = _role(app)
    grant_model_read(role, bucket="my-models", prefix="qwen")
    # WHEN synthesized THEN the folder grant is acknowledged (no finding) ...
    assert app.synth().get_stack_by_name("ModelAccess").template["Resources"]
    # ... AND a wildcard the acknowledgment does not name exactly still fails
    app2 = cdk.App()
    cdk.Validations.of(app2).add_plugins(AwsSolutionsChecks(app2))
    _, role2 = _role(app2)
    grant_model_read(role2, bucket="my-models", prefix="qwen")
    role2.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["arn:aws:s3:::my-models/qwen*"]))
    with pytest.raises(Exception, match="IAM5"):
        app2.synth()


def test_a_partial_secret_arn_is_granted_with_the_six_character_suffix_pattern():
    # GIVEN a Secrets Manager ARN without its random suffix
    stack, role = _role()
    # WHEN the token reader is granted
    grant_secret_read(role, secret_arn=SECRET)
    # THEN the policy names <name>-?????? (AWS's documented pattern), not the partial ARN that matches no secret
    read = next(s for s in _statements(stack) if "secretsmanager:GetSecretValue" in s["Action"])
    assert read["Resource"] == f"{SECRET}-??????"


def test_a_complete_secret_arn_is_granted_exactly():
    stack, role = _role()
    grant_secret_read(role, secret_arn=f"{SECRET}-AbCdEf")
    read = next(s for s in _statements(stack) if "secretsmanager:GetSecretValue" in s["Action"])
    assert read["Resource"] == f"{SECRET}-AbCdEf"


@pytest.mark.parametrize(("region", "partition", "suffix"), [("cn-north-1", "aws-cn", "amazonaws.com.cn"),
                                                              ("us-gov-west-1", "aws-us-gov", "amazonaws.com"),
                                                              ("us-west-2", "aws", "amazonaws.com")])
def test_the_grants_are_in_the_partition_of_the_stacks_region(region, partition, suffix):
    # GIVEN a model reader and a token reader in a stack of a China, GovCloud or commercial Region, with their keys
    stack = cdk.Stack(cdk.App(), "ModelAccess", env=cdk.Environment(account="111122223333", region=region))
    role = iam.Role(stack, "Reader", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    key = f"arn:{partition}:kms:{region}:111122223333:key/0a1b2c3d-0000-1111-2222-333344445555"
    # WHEN both are granted
    grant_model_read(role, bucket="my-models", prefix="qwen", kms_key_arn=key)
    grant_secret_read(role, secret_arn=f"arn:{partition}:secretsmanager:{region}:111122223333:secret:hf-token-AbCdEf",
                      kms_key_arn=key)
    statements = {s["Action"] if isinstance(s["Action"], str) else s["Action"][0]: s for s in _statements(stack)}
    # THEN the bucket ARNs name the Region's partition (literal), and KMS is reached through the Region's endpoints
    assert statements["s3:GetObject"]["Resource"] == f"arn:{partition}:s3:::my-models/qwen/*"
    assert statements["s3:ListBucket"]["Resource"] == f"arn:{partition}:s3:::my-models"
    decrypt = [s for s in _statements(stack) if s["Action"] == "kms:Decrypt"]
    assert {s["Condition"]["StringEquals"]["kms:ViaService"] for s in decrypt} == {
        f"s3.{region}.{suffix}", f"secretsmanager.{region}.{suffix}"}


def test_a_stack_without_a_region_grants_in_the_deploy_time_partition():
    # GIVEN an environment-agnostic stack / WHEN a model is granted / THEN the partition is AWS::Partition
    stack = cdk.Stack(cdk.App(), "Agnostic")
    role = iam.Role(stack, "Reader", assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    grant_model_read(role, bucket="my-models", prefix="qwen")
    get = next(s for s in _statements(stack) if s["Action"] == "s3:GetObject")
    assert get["Resource"] == {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::my-models/qwen/*"]]}
