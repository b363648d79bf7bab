"""The real ``cdk bootstrap`` / ``cdk deploy`` / ``cdk destroy`` of the app against moto on loopback.

Config: tests/fixtures/files.yaml with moto's account (files delivery, imported zone and certificate, no verify), so
the template holds no custom resource and no Lambda. Nothing is turned off: every resource type in it is either
created by moto or skipped by moto as unsupported (AWS::EKS::Addon, AWS::S3::BucketPolicy, AWS::CDK::Metadata, and
the Glue and Athena resources of capture.analytics).

What is checked against the synthesized template (intrinsics resolved with the physical ids moto reports): the
capture bucket and its access-log bucket, the KMS key and alias, the TLS bucket and its log bucket, the operator
execution role (name, ARN, trust policy with the exact OIDC sub), every IRSA role's trust policy and every inline
policy document; the stack outputs the CLI wrote. After ``cdk destroy`` the retained buckets, key and alias are still
there while the roles (DeletionPolicy Delete) are gone.

Deploys with ``--method=direct`` (CreateStack): moto returns no Outputs for a stack created through a change set (it
builds the output map from the empty template of the REVIEW_IN_PROGRESS stack and does not rebuild it on
ExecuteChangeSet), and the outputs are part of what this test checks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hyperpod_inference.facts import naming
from tests.cfn_intrinsics import resolve

from .conftest import MOTO_ACCOUNT, MOTO_REGION, REPO, STACK_NAME, MotoServer, run_cdk

#: The Kubernetes scope of the deployed stack's names (its construct is ``Default``).
SCOPE = naming.kubernetes_scope(STACK_NAME, STACK_NAME, "Default")

pytestmark = [pytest.mark.e2e, pytest.mark.deploy]

FIXTURE = REPO / "tests" / "fixtures" / "files.yaml"
FIXTURE_ACCOUNT = "111122223333"
OIDC_ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
OPERATOR_SUB = "system:serviceaccount:hyperpod-inference-system:hyperpod-inference-controller-manager"
RETAINED_BUCKETS = ("DataCaptureBucketA9343715", "DataCaptureAccessLogsBucketF9EE319D", "TlsBucketEF8951C2",
                    "TlsBucketAccessLogs2AE68F2F")
KEY, ALIAS = "DataCaptureKeyFF692E0C", "DataCaptureKeyAlias8F0F8BBF"
#: Resource types moto's CloudFormation does not model: it logs a warning, skips them and completes the stack.
MOTO_SKIPS = {"AWS::EKS::Addon", "AWS::S3::BucketPolicy", "AWS::CDK::Metadata",
              # capture.analytics: moto models no Glue table or Athena resource in CloudFormation
              "AWS::Glue::Database", "AWS::Glue::Table", "AWS::Athena::WorkGroup", "AWS::Athena::NamedQuery",
              "AWS::Athena::PreparedStatement"}


def moto_config(tmp_path: Path) -> Path:
    text = FIXTURE.read_text()
    assert FIXTURE_ACCOUNT in text
    path = tmp_path / "moto.yaml"
    path.write_text(text.replace(FIXTURE_ACCOUNT, MOTO_ACCOUNT))
    return path


class Resolver:
    """Resolves the template's intrinsics the way CloudFormation would, from moto's physical ids."""

    def __init__(self, template: dict[str, Any], physical: dict[str, str]) -> None:
        self.resources = template["Resources"]
        self.physical = physical

    def arn(self, logical_id: str) -> str:
        kind, pid = self.resources[logical_id]["Type"], self.physical[logical_id]
        if kind == "AWS::IAM::Role":
            return f"arn:aws:iam::{MOTO_ACCOUNT}:role/{pid}"
        if kind == "AWS::S3::Bucket":
            return f"arn:aws:s3:::{pid}"
        if kind == "AWS::KMS::Key":
            return f"arn:aws:kms:{MOTO_REGION}:{MOTO_ACCOUNT}:key/{pid}"
        raise AssertionError(f"no ARN rule for {kind} ({logical_id})")

    def __call__(self, value: Any) -> Any:
        return resolve(value, self._ref, self._get_att)

    def _ref(self, ref: str) -> str:
        pseudo = {"AWS::Partition": "aws", "AWS::Region": MOTO_REGION, "AWS::AccountId": MOTO_ACCOUNT,
                  "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": STACK_NAME}
        return pseudo[ref] if ref in pseudo else self.physical[ref]

    def _get_att(self, logical_id: str, attr: str) -> str:
        assert attr == "Arn", (logical_id, attr)
        return self.arn(logical_id)


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _bucket_exists(s3, name: str) -> bool:  # noqa: ANN001
    try:
        s3.head_bucket(Bucket=name)
        return True
    except ClientError:
        return False


def _role_exists(iam, name: str) -> bool:  # noqa: ANN001
    try:
        iam.get_role(RoleName=name)
        return True
    except iam.exceptions.NoSuchEntityException:
        return False


@pytest.fixture(scope="module")
def deployment(moto_server: MotoServer, cdk_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Bootstrap, deploy, snapshot what moto holds, destroy, snapshot again."""
    tmp = tmp_path_factory.mktemp("deploy")
    env = moto_server.env(tmp)
    config, outdir, outputs_file = moto_config(tmp), tmp / "cdk.out", tmp / "outputs.json"
    # Bootstrap from an empty directory: an explicit environment needs no app, so nothing is synthesized.
    run_cdk(["bootstrap", f"aws://{MOTO_ACCOUNT}/{MOTO_REGION}"], env=env, cwd=tmp)
    run_cdk(["deploy", STACK_NAME, "--require-approval", "never", "--method=direct", "-o", str(outdir),
             "-c", f"config={config}", "--outputs-file", str(outputs_file)], env=env)

    template = json.loads((outdir / f"{STACK_NAME}.template.json").read_text())
    cfn, s3, iam, kms = (moto_server.client(s) for s in ("cloudformation", "s3", "iam", "kms"))
    stack = cfn.describe_stacks(StackName=STACK_NAME)["Stacks"][0]
    summaries = cfn.list_stack_resources(StackName=STACK_NAME)["StackResourceSummaries"]
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in summaries if r.get("LogicalResourceId")}
    resolve = Resolver(template, physical)

    roles = {}
    for logical_id in _of_type(template, "AWS::IAM::Role"):
        name = physical[logical_id]
        roles[logical_id] = {
            "role": iam.get_role(RoleName=name)["Role"],
            "attached": [p["PolicyArn"] for p in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]],
            "inline": {p: iam.get_role_policy(RoleName=name, PolicyName=p)["PolicyDocument"]
                       for p in iam.list_role_policies(RoleName=name)["PolicyNames"]},
        }
    aliases = {a["AliasName"]: a.get("TargetKeyId") for a in kms.list_aliases()["Aliases"]}
    before = {
        "stack": stack,
        "outputs": json.loads(outputs_file.read_text()).get(STACK_NAME, {}),
        "physical": physical,
        "buckets": {lid: {"exists": _bucket_exists(s3, physical[lid]),
                          "encryption": s3.get_bucket_encryption(Bucket=physical[lid])
                          ["ServerSideEncryptionConfiguration"]["Rules"]}
                    for lid in _of_type(template, "AWS::S3::Bucket")},
        "roles": roles,
        "aliases": aliases,
        "keys": {k["KeyId"] for k in kms.list_keys()["Keys"]},
        "rotation": kms.get_key_rotation_status(KeyId=physical[KEY])["KeyRotationEnabled"],
    }

    run_cdk(["destroy", STACK_NAME, "--force", "-o", str(outdir), "-c", f"config={config}"], env=env)
    after = {
        "stack_status": {s["StackName"]: s["StackStatus"] for s in cfn.list_stacks()["StackSummaries"]}[STACK_NAME],
        "buckets": {lid: _bucket_exists(s3, physical[lid]) for lid in _of_type(template, "AWS::S3::Bucket")},
        "roles": {lid: _role_exists(iam, physical[lid]) for lid in _of_type(template, "AWS::IAM::Role")},
        "aliases": {a["AliasName"]: a.get("TargetKeyId") for a in kms.list_aliases()["Aliases"]},
        "keys": {k["KeyId"] for k in kms.list_keys()["Keys"]},
    }
    return {"template": template, "resolve": resolve, "before": before, "after": after,
            "moto_log": moto_server.log.read_text()}


def test_stack_created_and_only_known_types_skipped(deployment: dict[str, Any]) -> None:
    template, before = deployment["template"], deployment["before"]
    assert before["stack"]["StackStatus"] == "CREATE_COMPLETE"
    kinds = {r["Type"] for r in template["Resources"].values()}
    # files delivery: no kubectl provider, no custom resource, no Lambda, no nested stack
    assert not {k for k in kinds if k.startswith(("Custom::", "AWS::Lambda::", "AWS::CloudFormation::"))}
    modelled = kinds - MOTO_SKIPS
    assert {template["Resources"][lid]["Type"] for lid in before["physical"]} == modelled
    for kind in kinds & MOTO_SKIPS:
        assert f"No Moto CloudFormation support for {kind}" in deployment["moto_log"]


def test_outputs_match_deployed_resources(deployment: dict[str, Any]) -> None:
    before = deployment["before"]
    outputs, physical = before["outputs"], before["physical"]
    stack_outputs = {o["OutputKey"]: o["OutputValue"] for o in before["stack"]["Outputs"]}
    assert outputs == stack_outputs
    assert set(outputs) == set(deployment["template"]["Outputs"])
    assert outputs["CaptureBucket"] == physical["DataCaptureBucketA9343715"] == \
        f"hyperpodinference-capture-{MOTO_ACCOUNT}-{MOTO_REGION}"
    assert outputs["TlsBucketName"] == physical["TlsBucketEF8951C2"] == \
        f"hyperpod-tls-hyperpodinference-{MOTO_ACCOUNT}-{MOTO_REGION}"
    execution = before["roles"]["ExecutionRole605A040B"]["role"]
    assert outputs["OperatorExecutionRoleArn"] == execution["Arn"]
    assert f"s3://{outputs['CaptureBucket']}/data-capture/<hash>/pod/" in outputs["CapturePrefixes"]


def test_buckets_exist_as_synthesized(deployment: dict[str, Any]) -> None:
    template, before = deployment["template"], deployment["before"]
    buckets = _of_type(template, "AWS::S3::Bucket")
    assert set(RETAINED_BUCKETS) == set(buckets)
    for lid, res in buckets.items():
        name = before["physical"][lid]
        if "BucketName" in res["Properties"]:
            assert name == res["Properties"]["BucketName"]
        assert before["buckets"][lid]["exists"], name
        sse = [r["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] for r in before["buckets"][lid]["encryption"]]
        assert sse == ["AES256"], (name, sse)  # SSE-S3: ALB and S3 access logs cannot use SSE-KMS defaults
    assert before["physical"]["DataCaptureAccessLogsBucketF9EE319D"] == \
        f"hyperpodinference-capture-logs-{MOTO_ACCOUNT}-{MOTO_REGION}"


def test_kms_key_and_alias(deployment: dict[str, Any]) -> None:
    template, before = deployment["template"], deployment["before"]
    key_id = before["physical"][KEY]
    alias_name = template["Resources"][ALIAS]["Properties"]["AliasName"]
    assert alias_name == "alias/hyperpodinference-data-capture"
    assert before["aliases"][alias_name] == key_id
    assert key_id in before["keys"]
    assert before["rotation"] is True


def test_execution_role(deployment: dict[str, Any]) -> None:
    template, before, resolve = deployment["template"], deployment["before"], deployment["resolve"]
    role = before["roles"]["ExecutionRole605A040B"]["role"]
    assert role["RoleName"] == template["Resources"]["ExecutionRole605A040B"]["Properties"]["RoleName"]
    assert role["RoleName"].startswith("SageMakerHyperPodInference")
    assert role["Arn"] == f"arn:aws:iam::{MOTO_ACCOUNT}:role/{role['RoleName']}"
    web_identity = [s for s in role["AssumeRolePolicyDocument"]["Statement"]
                    if s["Action"] == "sts:AssumeRoleWithWebIdentity"]
    assert web_identity == [{
        "Action": "sts:AssumeRoleWithWebIdentity", "Effect": "Allow",
        "Principal": {"Federated": f"arn:aws:iam::{MOTO_ACCOUNT}:oidc-provider/{OIDC_ISSUER}"},
        "Condition": {"StringEquals": {f"{OIDC_ISSUER}:aud": "sts.amazonaws.com", f"{OIDC_ISSUER}:sub": OPERATOR_SUB}},
    }]
    # moto's AWS::IAM::Role ignores ManagedPolicyArns, so the managed policy is checked in the template only.
    managed = resolve(template["Resources"]["ExecutionRole605A040B"]["Properties"]["ManagedPolicyArns"])
    assert managed == ["arn:aws:iam::aws:policy/AmazonSageMakerHyperPodInferenceAccess"]
    # The capture grant reached the deployed inline policy with the real key ARN.
    inline = before["roles"]["ExecutionRole605A040B"]["inline"]["ExecutionRoleDefaultPolicyA5B92313"]
    key_arn = f"arn:aws:kms:{MOTO_REGION}:{MOTO_ACCOUNT}:key/{before['physical'][KEY]}"
    assert any(s["Resource"] == key_arn and "kms:GenerateDataKey" in s["Action"] for s in inline["Statement"])


def test_every_role_trust_and_inline_policy_as_synthesized(deployment: dict[str, Any]) -> None:
    template, before, resolve = deployment["template"], deployment["before"], deployment["resolve"]
    roles = _of_type(template, "AWS::IAM::Role")
    assert len(roles) == 7  # execution, ALB, KEDA, S3 CSI, JumpStart gated, HF token sync, NVMe model reader
    subjects = set()
    for lid, res in roles.items():
        deployed = before["roles"][lid]["role"]
        assert deployed["RoleName"] == before["physical"][lid]
        assert deployed["AssumeRolePolicyDocument"] == resolve(res["Properties"]["AssumeRolePolicyDocument"]), lid
        for st in deployed["AssumeRolePolicyDocument"]["Statement"]:
            cond = st.get("Condition", {})
            subjects |= {s for op in cond.values() for k, v in op.items() if k.endswith(":sub")
                         for s in ([v] if isinstance(v, str) else v)}
    token_readers = {s for s in subjects if re.fullmatch(rf"system:serviceaccount:inference:{SCOPE}-hf-token-[0-9a-f]{{10}}-reader", s)}
    assert len(token_readers) == 1  # the namespace's one sync of the endpoint's Secrets Manager token
    assert subjects - token_readers == {
        OPERATOR_SUB,
        "system:serviceaccount:hyperpod-inference-system:aws-load-balancer-controller",
        "system:serviceaccount:hyperpod-inference-system:keda-operator",
        "system:serviceaccount:kube-system:s3-csi-driver-sa",
        "system:serviceaccount:research:hyperpod-inference-service-account*",  # StringLike: per-endpoint SAs
        f"system:serviceaccount:research:{SCOPE}-llama-nvme-model-reader",
    }
    policies = _of_type(template, "AWS::IAM::Policy")
    assert policies
    for lid, res in policies.items():
        props = res["Properties"]
        for role_ref in props["Roles"]:
            role_lid = role_ref["Ref"]
            deployed = before["roles"][role_lid]["inline"]
            assert deployed.get(props["PolicyName"]) == resolve(props["PolicyDocument"]), (lid, role_lid)
    for lid in roles:  # nothing inline that the template does not declare
        declared = {p["Properties"]["PolicyName"] for p in policies.values()
                    if {"Ref": lid} in p["Properties"]["Roles"]}
        assert set(before["roles"][lid]["inline"]) == declared, lid


def test_destroy_keeps_retained_storage_and_removes_roles(deployment: dict[str, Any]) -> None:
    template, before, after = deployment["template"], deployment["before"], deployment["after"]
    assert after["stack_status"] == "DELETE_COMPLETE"
    for lid in (*RETAINED_BUCKETS, KEY, ALIAS):
        assert template["Resources"][lid]["DeletionPolicy"] == "Retain", lid
    assert all(after["buckets"][lid] for lid in RETAINED_BUCKETS), after["buckets"]
    key_id = before["physical"][KEY]
    assert key_id in after["keys"]
    assert after["aliases"]["alias/hyperpodinference-data-capture"] == key_id
    # Resources without Retain were deleted, so what is left is left because of the DeletionPolicy.
    assert not any(after["roles"].values()), after["roles"]
