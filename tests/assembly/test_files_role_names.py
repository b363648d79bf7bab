"""manifests.delivery: files: every role the manifests name has a deterministic name, so the GitOps manifests carry
its real ARN; a deploy-time value left in a files-mode manifest fails the synth naming it."""

from __future__ import annotations

import json

import aws_cdk as cdk
import cdk8s
import pytest

from tests.synth_helpers import FILES_CONFIG, load_yaml, synth_config

ACCOUNT = "111122223333"


@pytest.fixture(scope="module")
def files_with_roles(tmp_path_factory: pytest.TempPathFactory):
    data = load_yaml(FILES_CONFIG)
    data["endpoints"] += [
        {"name": "gated", "namespace": "inference", "instanceType": "ml.g5.8xlarge", "runtime": "vllm",
         "model": {"huggingface": {"modelId": "meta-llama/Llama-3.1-8B-Instruct",
                                   "commitSHA": "0123456789abcdef0123456789abcdef01234567",
                                   "token": {"secretsManagerArn": f"arn:aws:secretsmanager:us-west-2:{ACCOUNT}:"
                                                                  "secret:hf-token-AbCdEf"}}}},
        {"name": "cached", "namespace": "inference", "instanceType": "ml.g5.8xlarge", "runtime": "vllm",
         "model": {"s3": {"bucket": "my-models", "prefix": "cached/"}}, "weightCache": {"mode": "daemonset"}}]
    return synth_config(data, tmp_path_factory.mktemp("files-roles"), nag=False)


def test_service_account_annotations_carry_the_real_role_arns(files_with_roles) -> None:
    names = {r["Properties"]["RoleName"] for r in files_with_roles.resources("AWS::IAM::Role").values()
             if isinstance(r["Properties"].get("RoleName"), str)}
    annotated = [o["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] for o in files_with_roles.objects()
                 if o["kind"] == "ServiceAccount" and "eks.amazonaws.com/role-arn" in
                 (o["metadata"].get("annotations") or {})]
    # THEN each annotation is the literal ARN of a role the template names exactly so
    assert len(annotated) >= 2
    for arn in annotated:
        assert arn.startswith(f"arn:aws:iam::{ACCOUNT}:role/") and arn.rsplit("/", 1)[1] in names, arn
    assert "<" not in json.dumps(files_with_roles.objects())


def test_a_deploy_time_value_in_a_files_manifest_fails_the_synth_naming_it(files_with_roles) -> None:
    # GIVEN a files-mode construct and a chart that carries a deploy-time value
    inference = files_with_roles.stack.inference
    chart = inference.delivery.chart("leaky")
    cdk8s.ApiObject(chart, "cm", api_version="v1", kind="ConfigMap",
                    metadata=cdk8s.ApiObjectMetadata(name="leaky", namespace="inference")).add_json_patch(
        cdk8s.JsonPatch.add("/data", {"arn": inference.execution_role.role_arn}))
    inference.delivery.deliver(inference, "leaky", chart)
    try:
        problems = inference.node.validate()
    finally:
        del inference.delivery.units["leaky"]
    # THEN the validation names the manifest and the value's source
    assert len(problems) == 1 and "manifest 'leaky'" in problems[0] and "ExecutionRole" in problems[0]
    assert cdk.Token.is_unresolved(inference.execution_role.role_arn)


def test_chart_install_with_files_delivery_names_its_roles_literally(tmp_path) -> None:
    # GIVEN the operator as a chart, delivered as files (GitOps applies the operator too)
    from tests.k8s_validation import require_crds

    crds = require_crds() / "v3.3"
    data = load_yaml(FILES_CONFIG)
    data["operator"] = {"install": "chart", "version": "v3.3", "dependencies": "create", "crdSource": str(crds)}
    synth = synth_config(data, tmp_path, nag=True)
    names = {r["Properties"]["RoleName"] for r in synth.resources("AWS::IAM::Role").values()
             if isinstance(r["Properties"].get("RoleName"), str)}
    env = {e["name"]: e.get("value") for o in synth.manifests["operator"] if o["kind"] == "Deployment"
           for c in o["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
    # THEN the operator's role ARNs are the literal ARNs of roles the template names exactly so
    for key in ("EXECUTION_ROLE_ARN", "JUMPSTART_GATED_MODEL_DOWNLOAD_ARN"):
        assert env[key].startswith(f"arn:aws:iam::{ACCOUNT}:role/") and env[key].rsplit("/", 1)[1] in names, key
