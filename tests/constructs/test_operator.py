"""The operator's AWS side: execution role, TLS bucket, dependency IRSA roles and EKS add-ons."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from hyperpod_inference.constructs import operator
from hyperpod_inference.constructs.operator import (
    ADDON_SERVICE_ACCOUNT,
    CHART_SERVICE_ACCOUNT,
    DEPENDENCY_ADDON_VERSIONS,
    OPERATOR_ADDON_VERSIONS,
    OPERATOR_NAMESPACE,
    DependencyAddons,
    OperatorAddon,
    OperatorDependencyRoles,
    OperatorExecutionRole,
    TlsBucket,
)
from tests.template_lint import cfn_lint_errors

ACCOUNT = "111122223333"
REGION = "us-west-2"
ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
OIDC_ARN = f"arn:aws:iam::{ACCOUNT}:oidc-provider/{ISSUER}"
HYPERPOD_CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcd1234efgh"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/"
PARTITION_JOIN = ["arn:", {"Ref": "AWS::Partition"}]
SAME_ACCOUNT = {"aws:ResourceAccount": "${aws:PrincipalAccount}"}


def new_stack(name: str = "HyperPodOperator", *, env: bool = True, app: cdk.App | None = None) -> cdk.Stack:
    app = app or cdk.App()
    return cdk.Stack(app, name, env=cdk.Environment(account=ACCOUNT, region=REGION) if env else None)


def roles_by_description(template: Template) -> dict[str, dict]:
    return {r["Properties"].get("Description", ""): r for r in template.find_resources("AWS::IAM::Role").values()}


def role_statements(template: Template, role_logical_id: str) -> list[dict]:
    """Every permission statement of the inline policies attached to one role."""
    statements = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role_logical_id} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def logical_id(construct) -> str:
    node = construct.node.default_child if not isinstance(construct, cdk.CfnElement) else construct
    return cdk.Stack.of(construct).get_logical_id(node)


def json_with_placeholders(value) -> dict:
    """Parse a template JSON string (a literal or an Fn::Join) into a dict; token pieces become
    ``<GetAtt:Logical.Attr>`` / ``<Ref:Logical>`` placeholders."""
    if isinstance(value, str):
        return json.loads(value)
    delimiter, pieces = value["Fn::Join"]
    text = []
    for piece in pieces:
        if isinstance(piece, str):
            text.append(piece)
        elif "Fn::GetAtt" in piece:
            text.append("<GetAtt:{}.{}>".format(*piece["Fn::GetAtt"]))
        elif "Ref" in piece:
            text.append(f"<Ref:{piece['Ref']}>")
        else:
            raise AssertionError(f"unexpected token piece {piece!r}")
    return json.loads(delimiter.join(text))


def federated_statement(role: dict) -> dict:
    (statement,) = [s for s in role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
                    if "Federated" in s["Principal"]]
    return statement


# --- execution role -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, service_account", [("addon", ADDON_SERVICE_ACCOUNT), ("chart", CHART_SERVICE_ACCOUNT)])
def test_execution_role_trusts_sagemaker_and_exactly_the_install_modes_service_account(mode, service_account):
    # GIVEN a stack
    stack = new_stack()
    # WHEN the execution role is created for an install mode
    OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode=mode)
    # THEN the trust policy is exactly SageMaker plus the mode's service account through the parsed OIDC issuer
    Template.from_stack(stack).has_resource_properties("AWS::IAM::Role", {
        "AssumeRolePolicyDocument": {
            "Version": "2012-10-17",
            "Statement": [
                {"Action": "sts:AssumeRole", "Effect": "Allow",
                 "Principal": {"Service": "sagemaker.amazonaws.com"},
                 "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}}},
                {"Action": "sts:AssumeRoleWithWebIdentity", "Effect": "Allow",
                 "Principal": {"Federated": OIDC_ARN},
                 "Condition": {"StringEquals": {
                     f"{ISSUER}:aud": "sts.amazonaws.com",
                     f"{ISSUER}:sub": f"system:serviceaccount:{OPERATOR_NAMESPACE}:{service_account}",
                 }}},
            ],
        },
    })


def test_service_account_constants_match_the_operator_facts():
    assert (ADDON_SERVICE_ACCOUNT, CHART_SERVICE_ACCOUNT, OPERATOR_NAMESPACE) == (
        "hyperpod-inference-controller-manager",
        "hyperpod-inference-operator-controller-manager",
        "hyperpod-inference-system",
    )


def test_execution_role_for_an_existing_operator_trusts_both_operator_service_accounts_and_nothing_broader():
    # GIVEN an operator installed outside the stack (install method unknown)
    stack = new_stack()
    # WHEN the role is created in existing mode
    OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="existing")
    # THEN sub is an exact list of the two operator service accounts (StringEquals, no wildcard)
    (role,) = Template.from_stack(stack).find_resources("AWS::IAM::Role").values()
    assert federated_statement(role)["Condition"] == {"StringEquals": {
        f"{ISSUER}:aud": "sts.amazonaws.com",
        f"{ISSUER}:sub": [f"system:serviceaccount:hyperpod-inference-system:{ADDON_SERVICE_ACCOUNT}",
                          f"system:serviceaccount:hyperpod-inference-system:{CHART_SERVICE_ACCOUNT}"],
    }}


def test_execution_role_attaches_the_managed_policy_and_no_feature_statements():
    # GIVEN / WHEN an execution role on its own
    stack = new_stack()
    OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    template = Template.from_stack(stack)
    # THEN the AWS managed policy is attached and the role has no inline statements of its own
    template.has_resource_properties("AWS::IAM::Role", {"ManagedPolicyArns": [
        {"Fn::Join": ["", [*PARTITION_JOIN, ":iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess"]]}]})
    template.resource_count_is("AWS::IAM::Policy", 0)


def test_execution_role_default_name_is_prefixed_stack_and_region():
    stack = new_stack("HpInference")
    OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    Template.from_stack(stack).has_resource_properties(
        "AWS::IAM::Role", {"RoleName": "SageMakerHyperPodInference-HpInference-us-west-2"})


def test_execution_role_default_name_fits_iam_limit_and_stays_distinct_for_long_stack_names():
    # GIVEN two long stack names that share their first 100 characters
    names = []
    for suffix in ("a", "b"):
        stack = new_stack("Hp" + "x" * 98 + suffix)
        # WHEN the default role name is derived
        OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
        (role,) = Template.from_stack(stack).find_resources("AWS::IAM::Role").values()
        names.append(role["Properties"]["RoleName"])
    # THEN each is prefixed, at most 64 characters of IAM's alphabet, and they differ
    for name in names:
        assert name.startswith("SageMakerHyperPodInference-") and len(name) <= 64
        assert all(c.isalnum() or c in "+=,.@_-" for c in name)
    assert names[0] != names[1]


def test_execution_role_default_name_in_an_environment_agnostic_stack_leaves_room_for_any_region():
    # GIVEN a stack without account/region and a long name
    stack = new_stack("Hp" + "y" * 100, env=False)
    # WHEN the role is created
    OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    (role,) = Template.from_stack(stack).find_resources("AWS::IAM::Role").values()
    # THEN the name is joined with the deploy-time Region and the literal part leaves 16 characters for it
    delimiter, pieces = role["Properties"]["RoleName"]["Fn::Join"]
    literal = "".join(p for p in pieces if isinstance(p, str))
    assert {"Ref": "AWS::Region"} in pieces
    assert literal.startswith("SageMakerHyperPodInference-") and len(literal) + 16 <= 64


@pytest.mark.parametrize("bad", ["HyperPodOperatorRole", "SageMakerHyperPodInference" + "z" * 40,
                                 "SageMakerHyperPodInference:bad"])
def test_execution_role_refuses_a_name_the_add_on_or_iam_would_refuse(bad):
    with pytest.raises(ValueError, match="role_name"):
        OperatorExecutionRole(new_stack(), "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon",
                              role_name=bad)


def test_execution_role_refuses_an_unknown_install_mode():
    with pytest.raises(ValueError, match="install_mode"):
        OperatorExecutionRole(new_stack(), "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="helm")


# --- TLS bucket -----------------------------------------------------------------------------------------------------

def test_tls_bucket_is_created_named_retained_tls_only_private_encrypted_versioned_and_logged():
    # GIVEN / WHEN no bucket name is given
    stack = new_stack()
    tls = TlsBucket(stack, "Tls")
    template = Template.from_stack(stack)
    # THEN hyperpod-tls-<stack>-<account>-<region> is created with the secure defaults and retained
    name = f"hyperpod-tls-{stack.stack_name.lower()}-{ACCOUNT}-{REGION}"
    assert (tls.bucket_name, tls.s3_uri, tls.managed_policy_covers, tls.created) == (
        name, f"s3://{name}", True, True)
    template.has_resource("AWS::S3::Bucket", {
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "BucketName": name,
            "BucketEncryption": {"ServerSideEncryptionConfiguration": [
                {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
            "PublicAccessBlockConfiguration": {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                               "IgnorePublicAcls": True, "RestrictPublicBuckets": True},
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            "VersioningConfiguration": {"Status": "Enabled"},
            "LoggingConfiguration": {"DestinationBucketName": {"Ref": logical_id(tls.access_log_bucket)}},
        },
    })
    # AND both buckets (and their TLS-only policies) are retained, the log bucket private and ACL-free
    for bucket in template.find_resources("AWS::S3::Bucket").values():
        assert bucket["DeletionPolicy"] == "Retain"
        assert bucket["Properties"]["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
        assert bucket["Properties"]["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    policies = template.find_resources("AWS::S3::BucketPolicy")
    assert sorted(p["Properties"]["Bucket"]["Ref"] for p in policies.values()) == sorted(
        [logical_id(tls.bucket), logical_id(tls.access_log_bucket)])
    for policy in policies.values():
        assert policy["DeletionPolicy"] == "Retain"
        deny = policy["Properties"]["PolicyDocument"]["Statement"][0]
        assert (deny["Effect"], deny["Action"], deny["Principal"], deny["Condition"]) == (
            "Deny", "s3:*", {"AWS": "*"}, {"Bool": {"aws:SecureTransport": "false"}})


@pytest.mark.parametrize("name", ["hyperpod-tls-shared", "team-certificates"])
def test_imported_tls_bucket_creates_nothing(name):
    # GIVEN / WHEN an existing bucket is named
    stack = new_stack()
    tls = TlsBucket(stack, "Tls", bucket_name=name)
    # THEN nothing is created and the name is used as is
    assert Template.from_stack(stack).to_json().get("Resources", {}) == {}
    assert (tls.bucket_name, tls.created) == (name, False)
    assert tls.managed_policy_covers is name.startswith("hyperpod-tls")


@pytest.mark.parametrize("name, prefix, uri", [
    # outside hyperpod-tls*: this stack's folder, named by the stack (HyperPodOperator)
    ("my-certs", "hyperpod-inference/hyperpodoperator", "s3://my-certs/hyperpod-inference/hyperpodoperator/"),
    # covered by the managed policy: exactly today's URI, no folder
    ("hyperpod-tls-x", None, "s3://hyperpod-tls-x"),
])
def test_imported_tls_bucket_outside_hyperpod_tls_gets_a_per_stack_folder_in_its_uri(name, prefix, uri):
    # GIVEN / WHEN an existing bucket is named
    tls = TlsBucket(new_stack(), "Tls", bucket_name=name)
    # THEN a bucket the managed policy does not cover gets the stack's folder; a hyperpod-tls* one keeps its URI
    assert (tls.object_prefix, tls.s3_uri) == (prefix, uri)


def test_a_bucket_object_the_managed_policy_does_not_cover_gets_the_folder_too():
    # GIVEN a bucket of the user's own stack (its name a deploy-time token)
    stack = new_stack()
    bucket = cdk.aws_s3.Bucket(stack, "Mine")
    # WHEN it is the TLS bucket
    tls = TlsBucket(stack, "Tls", bucket=bucket, name_scope="Team-A")
    # THEN the certificates go under the scope's folder of that bucket
    assert tls.object_prefix == "hyperpod-inference/team-a"
    assert stack.resolve(tls.s3_uri) == {"Fn::Join": ["", [
        "s3://", {"Ref": logical_id(bucket)}, "/hyperpod-inference/team-a/"]]}


def test_two_stacks_importing_one_bucket_outside_hyperpod_tls_get_disjoint_folders_and_grants():
    # GIVEN two stacks in one app, each importing the same non-hyperpod-tls bucket
    app = cdk.App()
    built = {}
    for name in ("TeamA", "TeamB"):
        stack = new_stack(name, app=app)
        role = OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
        tls = TlsBucket(stack, "Tls", bucket_name="my-certs")
        # WHEN each grants its operator access
        tls.grant_operator_access(role)
        built[name] = (stack, role, tls)
    found = {}
    for name, (stack, role, tls) in built.items():
        objects = {json.dumps(s["Resource"]) for s in role_statements(Template.from_stack(stack), logical_id(role))
                   if s["Action"] != "s3:ListBucket"}
        found[name] = (tls.s3_uri, objects)
    # THEN the URIs and the object grants differ: neither operator can write, read or delete the other's objects
    (uri_a, objects_a), (uri_b, objects_b) = found["TeamA"], found["TeamB"]
    assert (uri_a, uri_b) == ("s3://my-certs/hyperpod-inference/teama/", "s3://my-certs/hyperpod-inference/teamb/")
    assert objects_a == {json.dumps({"Fn::Join": ["", [*PARTITION_JOIN, ":s3:::my-certs/hyperpod-inference/teama/*"]]})}
    assert objects_b == {json.dumps({"Fn::Join": ["", [*PARTITION_JOIN, ":s3:::my-certs/hyperpod-inference/teamb/*"]]})}


def test_custom_named_tls_bucket_grants_the_managed_policys_s3_statements_on_the_stacks_folder_only():
    # GIVEN an imported bucket outside hyperpod-tls* and an execution role
    stack = new_stack()
    role = OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    tls = TlsBucket(stack, "Tls", bucket_name="team-certificates")
    # WHEN the operator is granted access
    grant = tls.grant_operator_access(role)
    # THEN the role gets the managed policy's statements with the same conditions; DeleteObject, GetObject and
    # PutObject name only the stack's folder (S3 cannot condition DeleteObject on an existing tag); ListBucket stays on
    # the bucket (no evidence the operator lists with a prefix)
    assert grant.success
    objects = {"Fn::Join": ["", [*PARTITION_JOIN, ":s3:::team-certificates/hyperpod-inference/hyperpodoperator/*"]]}
    bucket = {"Fn::Join": ["", [*PARTITION_JOIN, ":s3:::team-certificates"]]}
    assert role_statements(Template.from_stack(stack), logical_id(role)) == [
        {"Action": "s3:DeleteObject", "Effect": "Allow", "Resource": objects,
         "Condition": {"StringEquals": SAME_ACCOUNT}},
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": objects,
         "Condition": {"StringEquals": {**SAME_ACCOUNT, "s3:ExistingObjectTag/CreatedBy": "HyperPodInference"}}},
        {"Action": ["s3:PutObject", "s3:PutObjectTagging"], "Effect": "Allow", "Resource": objects,
         "Condition": {"StringEquals": {**SAME_ACCOUNT, "s3:RequestObjectTag/CreatedBy": "HyperPodInference"}}},
        {"Action": "s3:ListBucket", "Effect": "Allow", "Resource": bucket,
         "Condition": {"StringEquals": SAME_ACCOUNT}},
    ]


def test_the_grant_mirrors_the_managed_policy_json_conditions():
    # GIVEN the managed policy v4 statements for hyperpod-tls* (reference copy, when present)
    reference = (Path(__file__).resolve().parents[3] / "shared" / "reference" / "hyperpod-operator" / "iam"
                 / "AmazonSageMakerHyperPodInferenceAccess_v4.json")
    if not reference.exists():
        pytest.skip("managed policy reference copy not available in this checkout")
    managed = {s["Sid"]: s for s in json.loads(reference.read_text())["Statement"]}
    # WHEN the custom bucket grant is synthesized
    stack = new_stack()
    role = OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    TlsBucket(stack, "Tls", bucket_name="team-certificates").grant_operator_access(role)
    ours = {json.dumps(s["Action"] if isinstance(s["Action"], list) else [s["Action"]]): s["Condition"]
            for s in role_statements(Template.from_stack(stack), logical_id(role))}
    # THEN each action set carries the managed policy's condition for it
    for sid in ("DeleteObjectsPermission", "S3GetObjectAccess", "S3PutObjectAccess", "S3ListBucketAccess"):
        assert ours[json.dumps(managed[sid]["Action"])] == managed[sid]["Condition"]


@pytest.mark.parametrize("name", [None, "hyperpod-tls-shared"])
def test_tls_bucket_covered_by_the_managed_policy_grants_nothing(name):
    # GIVEN a created bucket or an imported hyperpod-tls* bucket
    stack = new_stack()
    role = OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    tls = TlsBucket(stack, "Tls", bucket_name=name)
    # WHEN access is granted
    grant = tls.grant_operator_access(role)
    # THEN no statement is added
    assert grant.principal_statements == []
    Template.from_stack(stack).resource_count_is("AWS::IAM::Policy", 0)


@pytest.mark.parametrize("bad", ["s3://hyperpod-tls-x", "Bad_Bucket"])
def test_tls_bucket_refuses_a_uri_or_invalid_name(bad):
    with pytest.raises(ValueError, match="bucket_name"):
        TlsBucket(new_stack(), "Tls", bucket_name=bad)


# --- dependency roles -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dependency_roles():
    stack = new_stack()
    roles = OperatorDependencyRoles(stack, "Deps", oidc_provider_arn=OIDC_ARN,
                                    namespaces_for_gated=["inference", "research"])
    return stack, roles, Template.from_stack(stack)


@pytest.mark.parametrize("attribute, subject", [
    ("alb_role", "system:serviceaccount:hyperpod-inference-system:aws-load-balancer-controller"),
    ("keda_role", "system:serviceaccount:hyperpod-inference-system:keda-operator"),
    ("s3_csi_role", "system:serviceaccount:kube-system:s3-csi-driver-sa"),
])
def test_dependency_irsa_roles_trust_exactly_their_service_account(dependency_roles, attribute, subject):
    # GIVEN the dependency roles
    stack, roles, template = dependency_roles
    # WHEN reading the role's trust policy
    role = template.to_json()["Resources"][logical_id(getattr(roles, attribute))]
    # THEN only the OIDC provider may assume it, for exactly that service account
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [{
        "Action": "sts:AssumeRoleWithWebIdentity", "Effect": "Allow", "Principal": {"Federated": OIDC_ARN},
        "Condition": {"StringEquals": {f"{ISSUER}:aud": "sts.amazonaws.com", f"{ISSUER}:sub": subject}},
    }]


def test_gated_model_role_uses_string_like_only_for_the_per_endpoint_service_account_prefix(dependency_roles):
    # GIVEN the dependency roles with two namespaces for gated models
    stack, roles, template = dependency_roles
    role = template.to_json()["Resources"][logical_id(roles.jumpstart_gated_role)]
    statements = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    # THEN SageMaker may assume it, and pods may only through the operator's per-endpoint service accounts
    assert {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}}} in statements
    assert federated_statement(role)["Condition"] == {
        "StringEquals": {f"{ISSUER}:aud": "sts.amazonaws.com"},
        "StringLike": {f"{ISSUER}:sub": [
            "system:serviceaccount:inference:hyperpod-inference-service-account*",
            "system:serviceaccount:research:hyperpod-inference-service-account*",
        ]},
    }
    # AND it carries the AWS managed gated-model policy
    assert role["Properties"]["ManagedPolicyArns"] == [
        {"Fn::Join": ["", [*PARTITION_JOIN, ":iam::aws:policy/AmazonSageMakerHyperPodGatedModelAccess"]]}]


def test_keda_role_starts_with_no_permissions(dependency_roles):
    # GIVEN the dependency roles alone WHEN reading KEDA's statements THEN there are none: what KEDA may read follows
    # the endpoints' triggers (constructs/autoscaling.py, tests/constructs/test_autoscaling.py)
    stack, roles, template = dependency_roles
    assert role_statements(template, logical_id(roles.keda_role)) == []


def test_s3_csi_role_starts_with_no_permissions(dependency_roles):
    stack, roles, template = dependency_roles
    assert role_statements(template, logical_id(roles.s3_csi_role)) == []
    assert "ManagedPolicyArns" not in template.to_json()["Resources"][logical_id(roles.s3_csi_role)]["Properties"]


def test_alb_controller_role_carries_the_upstream_policy_in_the_stacks_partition(dependency_roles):
    # GIVEN the upstream policy data file
    stack, roles, template = dependency_roles
    upstream = json.loads(Path(operator.__file__).with_name("alb_controller_policy.json").read_text())
    # WHEN reading the ALB role's statements
    statements = role_statements(template, logical_id(roles.alb_role))
    # THEN they are upstream's, in order, with the same actions and conditions (tag conditions kept)
    assert len(statements) == len(upstream["Statement"]) == 16
    for ours, theirs in zip(statements, upstream["Statement"], strict=True):
        actions = theirs["Action"] if len(theirs["Action"]) > 1 else theirs["Action"][0]
        assert (ours["Action"], ours.get("Condition")) == (actions, theirs.get("Condition"))
    tag_conditioned = [s for s in statements if "elbv2.k8s.aws/cluster" in json.dumps(s.get("Condition", {}))]
    assert len(tag_conditioned) == 7
    # AND no resource hard-codes the aws partition
    assert '"arn:aws:' not in json.dumps(statements)


def test_dependency_roles_given_by_arn_are_imported_not_created():
    stack = new_stack()
    roles = OperatorDependencyRoles(
        stack, "Deps", oidc_provider_arn=OIDC_ARN, namespaces_for_gated=[],
        alb_role_arn=ROLE + "alb", keda_role_arn=ROLE + "keda", s3_csi_role_arn=ROLE + "s3-csi",
        jumpstart_gated_role_arn=ROLE + "gated")
    assert Template.from_stack(stack).to_json().get("Resources", {}) == {}
    assert [r.role_arn for r in (roles.alb_role, roles.keda_role, roles.s3_csi_role, roles.jumpstart_gated_role)] == [
        ROLE + "alb", ROLE + "keda", ROLE + "s3-csi", ROLE + "gated"]


def test_dependency_roles_report_every_problem_at_once():
    with pytest.raises(ValueError) as raised:
        OperatorDependencyRoles(new_stack(), "Deps", oidc_provider_arn=OIDC_ARN, namespaces_for_gated=["Bad_NS"],
                                alb_role_arn="not-an-arn")
    assert "alb_role_arn" in str(raised.value) and "namespaces_for_gated[0]" in str(raised.value)


# --- operator add-on ------------------------------------------------------------------------------------------------

def addon_stack(**overrides):
    stack = new_stack()
    role = OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    tls = TlsBucket(stack, "Tls")
    deps = OperatorDependencyRoles(stack, "Deps", oidc_provider_arn=OIDC_ARN, namespaces_for_gated=["inference"])
    props = dict(cluster_name="hp-eks", version="v3.3", execution_role_arn=role.role_arn,
                 tls_bucket_name=tls.bucket_name, hyperpod_cluster_arn=HYPERPOD_CLUSTER_ARN,
                 enable_custom_service_accounts=True,
                 jumpstart_gated_model_download_role_arn=deps.jumpstart_gated_role.role_arn,
                 alb_role_arn=deps.alb_role.role_arn, keda_role_arn=deps.keda_role.role_arn)
    props.update(overrides)
    addon = OperatorAddon(stack, "OperatorAddon", **props)
    return stack, role, tls, deps, addon


def test_addon_configuration_values_are_json_with_exactly_the_documented_keys_and_the_right_roles():
    # GIVEN the execution role, TLS bucket and dependency roles created in the same stack
    stack, role, tls, deps, addon = addon_stack()
    # WHEN the add-on is synthesized
    (resource,) = Template.from_stack(stack).find_resources("AWS::EKS::Addon").values()
    values = json_with_placeholders(resource["Properties"]["ConfigurationValues"])
    # THEN configurationValues parses as JSON whose role ARNs are the created roles' Arn attributes
    assert values == {
        "executionRoleArn": f"<GetAtt:{logical_id(role)}.Arn>",
        "tlsCertificateS3Bucket": tls.bucket_name,
        "hyperpodClusterArn": HYPERPOD_CLUSTER_ARN,
        "enableCustomServiceAccounts": True,
        "jumpstartGatedModelDownloadRoleArn": f"<GetAtt:{logical_id(deps.jumpstart_gated_role)}.Arn>",
        "alb": {"enabled": True,
                "serviceAccount": {"create": True, "roleArn": f"<GetAtt:{logical_id(deps.alb_role)}.Arn>"}},
        "keda": {"enabled": True, "auth": {"aws": {"irsa": {
            "enabled": True, "roleArn": f"<GetAtt:{logical_id(deps.keda_role)}.Arn>"}}}},
    }
    assert resource["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference"
    assert resource["Properties"]["ClusterName"] == "hp-eks"
    assert resource["Properties"]["ResolveConflicts"] == "OVERWRITE"


def test_addon_configuration_dict_omits_the_hyperpod_cluster_arn_when_none():
    # GIVEN literal role ARNs and no HyperPod cluster ARN
    values = OperatorAddon.configuration(
        execution_role_arn=ROLE + "SageMakerHyperPodInference-x", tls_bucket_name="hyperpod-tls-x",
        hyperpod_cluster_arn=None, enable_custom_service_accounts=False,
        jumpstart_gated_model_download_role_arn=ROLE + "gated", alb_role_arn=ROLE + "alb",
        keda_role_arn=ROLE + "keda")
    # THEN the key is absent and the rest is exactly as documented
    assert values == {
        "executionRoleArn": ROLE + "SageMakerHyperPodInference-x",
        "tlsCertificateS3Bucket": "hyperpod-tls-x",
        "enableCustomServiceAccounts": False,
        "jumpstartGatedModelDownloadRoleArn": ROLE + "gated",
        "alb": {"enabled": True, "serviceAccount": {"create": True, "roleArn": ROLE + "alb"}},
        "keda": {"enabled": True, "auth": {"aws": {"irsa": {"enabled": True, "roleArn": ROLE + "keda"}}}},
    }


def test_addon_configuration_refuses_an_s3_uri_a_wrongly_named_execution_role_and_a_bad_cluster_arn():
    with pytest.raises(ValueError) as raised:
        OperatorAddon.configuration(
            execution_role_arn=ROLE + "OperatorRole", tls_bucket_name="s3://hyperpod-tls-x",
            hyperpod_cluster_arn="arn:aws:eks:us-west-2:111122223333:cluster/x",
            enable_custom_service_accounts=True, jumpstart_gated_model_download_role_arn=ROLE + "gated",
            alb_role_arn=ROLE + "alb", keda_role_arn=ROLE + "keda")
    message = str(raised.value)
    assert "tls_bucket_name" in message and "SageMakerHyperPodInference" in message
    assert "hyperpod_cluster_arn" in message


@pytest.mark.parametrize("version, pinned, expected", [
    ("v3.2", None, "v1.3.0-eksbuild.1"),
    ("v3.3", None, "v1.4.0-eksbuild.1"),
    ("v3.3", "v1.4.1-eksbuild.2", "v1.4.1-eksbuild.2"),
])
def test_addon_version_comes_from_the_operator_version_table_unless_pinned(version, pinned, expected):
    stack, *_ = addon_stack(version=version, addon_version=pinned)
    Template.from_stack(stack).has_resource_properties("AWS::EKS::Addon", {"AddonVersion": expected})
    assert {v: OPERATOR_ADDON_VERSIONS[v] for v in ("v3.2", "v3.3")} == {"v3.2": "v1.3.0-eksbuild.1",
                                                                        "v3.3": "v1.4.0-eksbuild.1"}


@pytest.mark.parametrize("preserve", [False, True])
def test_addon_preserve_on_delete_follows_the_flag(preserve):
    stack, *_ = addon_stack(preserve_on_delete=preserve)
    Template.from_stack(stack).has_resource_properties("AWS::EKS::Addon", {"PreserveOnDelete": preserve})


def test_addon_version_prop_is_typed_by_the_release_table():
    # GIVEN the add-on construct THEN its version prop is the release table's Literal, not a copy of the versions
    from hyperpod_inference.constructs.operator import addon
    from hyperpod_inference.facts.operator import OperatorVersion

    assert OperatorAddon.__init__.__annotations__["version"] == "OperatorVersion"
    assert addon.OperatorVersion is OperatorVersion


def test_addon_refuses_an_unknown_operator_version():
    with pytest.raises(ValueError, match="version"):
        addon_stack(version="v3.9")


# --- dependency add-ons ---------------------------------------------------------------------------------------------

def test_dependency_addons_install_the_minimum_versions_kept_on_delete_with_the_s3_csi_role():
    # GIVEN the S3 CSI role
    stack = new_stack()
    deps = OperatorDependencyRoles(stack, "Deps", oidc_provider_arn=OIDC_ARN, namespaces_for_gated=["inference"])
    # WHEN the dependency add-ons are created
    addons = DependencyAddons(stack, "DependencyAddons", cluster_name="hp-eks",
                              s3_csi_role_arn=deps.s3_csi_role.role_arn)
    template = Template.from_stack(stack)
    # THEN each exists at its minimum version, overwrites conflicts, survives deletion; only S3 CSI has a role
    assert len(addons.addons) == 4
    found = {a["Properties"]["AddonName"]: a["Properties"]
             for a in template.find_resources("AWS::EKS::Addon").values()}
    assert {name: p["AddonVersion"] for name, p in found.items()} == {
        "aws-mountpoint-s3-csi-driver": "v1.14.1-eksbuild.1",
        "aws-fsx-csi-driver": "v1.6.0-eksbuild.1",
        "metrics-server": "v0.7.2-eksbuild.4",
        "cert-manager": "v1.18.2-eksbuild.2",
    } == dict(DEPENDENCY_ADDON_VERSIONS)
    for name, props in found.items():
        assert (props["ClusterName"], props["ResolveConflicts"], props["PreserveOnDelete"]) == (
            "hp-eks", "OVERWRITE", True)
        expected_role = ({"Fn::GetAtt": [logical_id(deps.s3_csi_role), "Arn"]}
                         if name == "aws-mountpoint-s3-csi-driver" else None)
        assert props.get("ServiceAccountRoleArn") == expected_role


def test_dependency_addon_versions_can_be_pinned_and_unknown_names_are_refused():
    stack = new_stack()
    DependencyAddons(stack, "DependencyAddons", cluster_name="hp-eks", s3_csi_role_arn=ROLE + "s3",
                     addon_versions={"cert-manager": "v1.19.0-eksbuild.1"})
    Template.from_stack(stack).has_resource_properties(
        "AWS::EKS::Addon", {"AddonName": "cert-manager", "AddonVersion": "v1.19.0-eksbuild.1"})
    with pytest.raises(ValueError, match="addon_versions.karpenter"):
        DependencyAddons(new_stack(), "D", cluster_name="hp-eks", s3_csi_role_arn=ROLE + "s3",
                         addon_versions={"karpenter": "v1.0.0-eksbuild.1"})


# --- the whole operator AWS side: cdk-nag, cfn-lint, wildcard inventory ---------------------------------------------

def build_operator_side(app: cdk.App, *, tls_bucket_name: str | None, env: bool = True) -> cdk.Stack:
    stack = new_stack("HyperPodOperator", env=env, app=app)
    role = OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    tls = TlsBucket(stack, "Tls", bucket_name=tls_bucket_name)
    tls.grant_operator_access(role)
    deps = OperatorDependencyRoles(stack, "Deps", oidc_provider_arn=OIDC_ARN, namespaces_for_gated=["inference"])
    dependencies = DependencyAddons(stack, "DependencyAddons", cluster_name="hp-eks",
                                    s3_csi_role_arn=deps.s3_csi_role.role_arn)
    addon = OperatorAddon(stack, "OperatorAddon", cluster_name="hp-eks", version="v3.3",
                          execution_role_arn=role.role_arn, tls_bucket_name=tls.bucket_name,
                          hyperpod_cluster_arn=HYPERPOD_CLUSTER_ARN, enable_custom_service_accounts=True,
                          jumpstart_gated_model_download_role_arn=deps.jumpstart_gated_role.role_arn,
                          alb_role_arn=deps.alb_role.role_arn, keda_role_arn=deps.keda_role.role_arn)
    addon.node.add_dependency(dependencies, tls)
    return stack


@pytest.fixture(scope="module", params=[
    pytest.param((None, True), id="created-bucket"),
    pytest.param(("team-certificates", True), id="custom-bucket"),
    pytest.param((None, False), id="environment-agnostic"),
])
def nag_synth(request, tmp_path_factory):
    tls_bucket_name, env = request.param
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(outdir))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    stack = build_operator_side(app, tls_bucket_name=tls_bucket_name, env=env)
    app.synth()  # raises ValidationFailed on any unacknowledged finding
    return outdir, stack


def test_cdk_nag_finds_nothing_unacknowledged_and_every_acknowledgment_has_a_reason(nag_synth):
    # GIVEN the whole operator AWS side synthesized with the AwsSolutions pack (synth succeeded)
    outdir, _ = nag_synth
    report = json.loads((outdir / "validation-report.json").read_text())
    # THEN no violation is left and every suppressed one names its rule exactly and gives a reason
    (plugin,) = report["pluginReports"]
    assert plugin["violations"] == []
    assert plugin["suppressedViolations"]
    for suppressed in plugin["suppressedViolations"]:
        assert suppressed["acknowledgedId"] == f"AwsSolutions::{suppressed['ruleName']}"
        assert len(suppressed["reason"]) > 40


def test_cfn_lint_reports_no_errors(nag_synth):
    outdir, _ = nag_synth
    templates = sorted(outdir.glob("*.template.json"))
    assert cfn_lint_errors(templates) == []


#: Every statement with Resource "*" the operator's AWS side produces (the project's allow-list).
EXPECTED_STAR_STATEMENTS = {
    ("AlbControllerPolicy", ("iam:CreateServiceLinkedRole",)),
    ("AlbControllerPolicy", ("ec2:DescribeAccountAttributes",)),          # Describe*/Get*: first action shown
    ("AlbControllerPolicy", ("cognito-idp:DescribeUserPoolClient",)),
    ("AlbControllerPolicy", ("ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress")),
    ("AlbControllerPolicy", ("ec2:CreateSecurityGroup",)),
    ("AlbControllerPolicy", ("ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress",
                             "ec2:DeleteSecurityGroup")),
    ("AlbControllerPolicy", ("elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup")),
    ("AlbControllerPolicy", ("elasticloadbalancing:CreateListener",)),
    ("AlbControllerPolicy", ("elasticloadbalancing:ModifyLoadBalancerAttributes",)),
    ("AlbControllerPolicy", ("elasticloadbalancing:SetWebAcl",)),
}


def test_resource_star_statements_are_exactly_the_allow_listed_ones():
    # GIVEN the whole operator AWS side
    stack = build_operator_side(cdk.App(), tls_bucket_name="team-certificates")
    # WHEN collecting every statement whose Resource is "*"
    found = set()
    for logical, policy in Template.from_stack(stack).find_resources("AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Resource"] == "*" or "*" in (statement["Resource"] if isinstance(statement["Resource"], list)
                                                       else []):
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                owner = next(n for n in ("AlbControllerPolicy",) if n in logical)
                key = tuple(actions) if len(actions) <= 3 else (actions[0],)
                found.add((owner, key))
    # THEN they are exactly the upstream ALB controller's (KEDA's CloudWatch reads come with a trigger only)
    assert found == EXPECTED_STAR_STATEMENTS


def test_execution_role_is_an_iam_role_usable_by_feature_grants():
    stack = new_stack()
    role = OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    assert isinstance(role, iam.Role)
    role.add_to_principal_policy(iam.PolicyStatement(actions=["acm:DescribeCertificate"],
                                                     resources=[f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/x"]))
    assert role_statements(Template.from_stack(stack), logical_id(role))[0]["Action"] == "acm:DescribeCertificate"


# --- SageMaker trusts: aws:SourceAccount ----------------------------------------------------------------------------

def _sagemaker_trusts(template: Template) -> list[dict]:
    return [s for r in template.find_resources("AWS::IAM::Role").values()
            for s in r["Properties"]["AssumeRolePolicyDocument"]["Statement"]
            if s["Principal"].get("Service") == "sagemaker.amazonaws.com"]


def test_every_sagemaker_trust_requires_the_stacks_account_as_source():
    # GIVEN the execution role and the dependency roles (the gated JumpStart role trusts SageMaker too)
    stack = new_stack()
    OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon")
    OperatorDependencyRoles(stack, "Deps", oidc_provider_arn=OIDC_ARN, namespaces_for_gated=["inference"])
    # WHEN synthesized
    trusts = _sagemaker_trusts(Template.from_stack(stack))
    # THEN both SageMaker trusts hold aws:SourceAccount = the stack's account (confused-deputy guard)
    assert len(trusts) == 2
    assert all(t["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT}} for t in trusts)


def test_the_source_account_condition_can_be_switched_off():
    # GIVEN both roles built with sagemaker_source_account=False
    stack = new_stack()
    OperatorExecutionRole(stack, "ExecutionRole", oidc_provider_arn=OIDC_ARN, install_mode="addon",
                          sagemaker_source_account=False)
    OperatorDependencyRoles(stack, "Deps", oidc_provider_arn=OIDC_ARN, namespaces_for_gated=["inference"],
                            sagemaker_source_account=False)
    # THEN the SageMaker trusts carry no condition
    trusts = _sagemaker_trusts(Template.from_stack(stack))
    assert len(trusts) == 2 and all("Condition" not in t for t in trusts)


def test_addon_configuration_overrides_reach_the_configuration_values_beside_synth_time_values():
    # GIVEN the add-on as the stack builds it: synth-time (lazy) values among the library's keys, and an override
    # patch for a key of a newer add-on version (operator.addonConfigurationOverrides)
    from hyperpod_inference.constructs.lazy import lazy

    stack, role, _tls, deps, _addon = addon_stack(
        enable_custom_service_accounts=lazy(lambda: True),
        jumpstart_gated_model_download_role_arn=lazy(lambda: ROLE + "gated"),
        configuration_overrides={"keda": {"resources": {"limits": {"memory": "1Gi"}}}, "logLevel": "debug"})
    # WHEN it is synthesized
    (resource,) = Template.from_stack(stack).find_resources("AWS::EKS::Addon").values()
    values = json_with_placeholders(resource["Properties"]["ConfigurationValues"])
    # THEN the patch is merged into configurationValues and the library's keys keep their values
    assert values["logLevel"] == "debug"
    assert values["keda"] == {"enabled": True, "resources": {"limits": {"memory": "1Gi"}}, "auth": {"aws": {"irsa": {
        "enabled": True, "roleArn": f"<GetAtt:{logical_id(deps.keda_role)}.Arn>"}}}}
    assert values["enableCustomServiceAccounts"] is True
    assert values["jumpstartGatedModelDownloadRoleArn"] == ROLE + "gated"
    assert values["executionRoleArn"] == f"<GetAtt:{logical_id(role)}.Arn>"
