"""Physical names survive any scope: inside a NestedStack or a Stage every name the library makes is literal and
within its service's rules (a nested stack's own name is known only at deploy, so names carry the top-level stack's
name and the nested stacks' ids); an environment-agnostic stack is refused naming what to set; and every name under
the construct is checked at synth, so one the service would refuse fails the synth instead of the deploy."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer

from hyperpod_inference import HyperPodInference, parse_config
from hyperpod_inference.assembly.limits import physical_name_problems
from hyperpod_inference.facts.naming import PHYSICAL_NAME_RULES

ACCOUNT, REGION = "111122223333", "us-west-2"
ENV = cdk.Environment(account=ACCOUNT, region=REGION)
CONFIG = {
    "apiVersion": "hyperpod-inference/v1",
    "cluster": {"hyperpodClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcd1234efgh"},
    "namespaces": ["inference"], "capture": {"retentionDays": 90},
    "endpoints": [{"name": "qwen", "namespace": "inference", "instanceType": "ml.g5.8xlarge", "runtime": "vllm",
                   "sagemakerEndpointName": "qwen", "model": {"s3": {"bucket": "my-models", "prefix": "qwen/"}},
                   "dataCapture": {"sagemakerEndpoint": {"enabled": True}, "modelPod": {"enabled": True}}}]}


def _inference(scope: cdk.Stack | cdk.NestedStack, cluster_stack: cdk.Stack) -> HyperPodInference:
    oidc = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
        cluster_stack, "Oidc", f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.{REGION}.amazonaws.com/id/EXAMPLE")
    cluster = eks.Cluster.from_cluster_attributes(
        cluster_stack, "Cluster", cluster_name="my-hp-eks", kubectl_role_arn=f"arn:aws:iam::{ACCOUNT}:role/hp-eks-admin",
        kubectl_layer=KubectlV33Layer(cluster_stack, "KubectlLayer"), open_id_connect_provider=oidc)
    return HyperPodInference(scope, "Inference", config=parse_config(CONFIG), cluster=cluster)


_NAME_KEYS = {prop.split(".")[0] for _, prop in PHYSICAL_NAME_RULES}


def physical_names(outdir: Path) -> dict[str, Any]:
    """``<template>:<logical id>:<property>`` -> the value, for every name property of every template (nested
    stacks' included), Glue's ``DatabaseInput.Name`` as ``DatabaseInput``."""
    out = {}
    for path in sorted(outdir.rglob("*.template.json")):
        for logical_id, res in json.loads(path.read_text())["Resources"].items():
            for key in _NAME_KEYS & set(res.get("Properties", {})):
                if (res["Type"], key) in PHYSICAL_NAME_RULES or res["Type"] == "AWS::Glue::Database":
                    value = res["Properties"][key]
                    out[f"{path.name}:{logical_id}:{key}"] = value.get("Name", value) \
                        if key == "DatabaseInput" else value
    return out


def _synth(app: cdk.App, tmp_path: Path) -> dict[str, Any]:
    app.synth()
    return physical_names(tmp_path)


def _assert_literal_and_valid(names: dict[str, Any]) -> None:
    assert names
    for where, value in names.items():
        assert isinstance(value, str), f"{where}: {value} is a deploy-time value"
        assert not re.search(r"token[^a-z0-9]+token", value, re.I), f"{where}: {value}"


def test_inside_a_nested_stack_every_name_is_literal_and_carries_the_top_level_stack(tmp_path: Path) -> None:
    # GIVEN the construct inside a NestedStack of stack Platform
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Platform", env=ENV)
    _inference(cdk.NestedStack(stack, "Serving"), stack)
    # WHEN synthesized THEN it succeeds and every physical name is a literal built from Platform and Serving
    names = _synth(app, tmp_path)
    _assert_literal_and_valid(names)
    values = set(names.values())
    assert "SageMakerHyperPodInference-Platform-Serving-Inference-us-west-2" in values
    assert f"hyperpod-tls-platform-serving-inference-{ACCOUNT}-{REGION}" in values
    assert f"platform-serving-inference-capture-{ACCOUNT}-{REGION}" in values
    assert "alias/platform-serving-inference-data-capture" in values
    assert "Platform-Serving-Inference-us-west-2-inference" in values  # the dashboard


def test_inside_a_stage_names_carry_the_stage_qualified_stack_name(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(cdk.Stage(app, "Prod", env=ENV), "Platform")
    _inference(stack, stack)
    names = _synth(app, tmp_path)
    _assert_literal_and_valid(names)
    assert "SageMakerHyperPodInference-Prod-Platform-Inference-us-west-2" in set(names.values())
    assert f"hyperpod-tls-prod-platform-inference-{ACCOUNT}-{REGION}" in set(names.values())


def test_an_environment_agnostic_stack_is_refused_naming_the_env_to_set() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Platform")
    with pytest.raises(ValueError, match=r"Platform/Inference: the enclosing stack needs a literal env"):
        _inference(stack, stack)


# ----------------------------------------------------------------------------------------------- the synth check
def test_the_check_names_a_deploy_time_name_a_long_one_and_one_made_of_placeholder_text() -> None:
    # GIVEN a deploy-time bucket name, a role name over 64 characters, a dashboard named from a token's text, and a
    # bucket without a name
    stack = cdk.Stack(cdk.App(), "S", env=ENV)
    s3.Bucket(stack, "TokenBucket", bucket_name=cdk.Fn.join("-", ["capture", cdk.Aws.STACK_NAME]))
    iam.CfnRole(stack, "LongRole", role_name="r" * 65, assume_role_policy_document={})
    cw.CfnDashboard(stack, "Dashboard", dashboard_body="{}", dashboard_name="--Token-TOKEN-184---Inference")
    s3.Bucket(stack, "Unnamed")
    # WHEN checked
    problems = physical_name_problems(stack)
    # THEN each named one is reported with its path and the way out; CloudFormation names the unnamed one
    assert len(problems) == 3, problems
    bucket, role, dashboard = (next(p for p in problems if p.startswith(f"S/{name}")) for name in
                               ("TokenBucket", "LongRole", "Dashboard"))
    assert "(AWS::S3::Bucket BucketName)" in bucket and "known only at deploy" in bucket
    assert "operator.tlsBucketName" in bucket
    assert "IAM role names are at most 64 characters" in role
    assert "placeholder text" in dashboard


def test_the_construct_fails_its_synth_validation_on_a_name_the_service_refuses() -> None:
    # GIVEN the construct, and a role under it whose name IAM refuses
    stack = cdk.Stack(cdk.App(), "Platform", env=ENV)
    inference = _inference(stack, stack)
    iam.CfnRole(inference, "Extra", role_name="extra role", assume_role_policy_document={})
    # WHEN validated (as synth does) THEN the name is reported, and only it
    problems = [p for p in inference.node.validate() if "RoleName" in p]
    assert problems == [
        "Platform/Inference/Extra (AWS::IAM::Role RoleName): IAM role names take only "
        "[A-Za-z0-9_+=,.@-] ('extra role'); a shorter stack name or construct id (names carry them; inside a "
        "NestedStack, the top-level stack's name and the nested stacks' ids)"]
