"""Parity table: for each rule shared by the config and the constructs, good and bad values go through both the config
field (``parse_config``) and the construct prop, and the config accepts exactly what the construct accepts.

A config that validates therefore never fails a construct's prop check on these values, and a value the construct
refuses is refused earlier, by the config, with its YAML path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.constructs.data_capture import DataCaptureStorage
from hyperpod_inference.constructs.domain import CustomDomain
from hyperpod_inference.constructs.endpoint_verification import EndpointVerification
from hyperpod_inference.constructs.operator import (
    OperatorAddon,
    OperatorDependencyRoles,
    OperatorExecutionRole,
    TlsBucket,
)

ACCOUNT, REGION = "111122223333", "us-west-2"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/r"
EXEC_ROLE = f"arn:aws:iam::{ACCOUNT}:role/SageMakerHyperPodInference-x"
CLUSTER_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcd1234efgh"
OIDC = f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.{REGION}.amazonaws.com/id/EXAMPLE"
KEY_ID = "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
CERT = f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/0a1b2c3d-0000-1111-2222-333344445555"

MINIMAL: dict[str, Any] = {
    "apiVersion": "hyperpod-inference/v1",
    "env": {"account": ACCOUNT, "region": REGION},
    "cluster": {"eksClusterName": "my-hp-eks", "hyperpodClusterArn": CLUSTER_ARN,
                "kubectlRoleArn": f"arn:aws:iam::{ACCOUNT}:role/hp-eks-admin", "oidcProviderArn": OIDC,
                "vpcId": "vpc-0abc1234"},
}
ENDPOINT: dict[str, Any] = {"name": "chat", "namespace": "inference", "instanceType": "ml.g5.8xlarge",
                            "model": {"s3": {"bucket": "my-models", "prefix": "chat/"}}}


def config(*sections: tuple[str, Any], endpoint: dict[str, Any] | None = None) -> dict[str, Any]:
    cfg = copy.deepcopy(MINIMAL)
    for key, value in sections:
        cfg[key] = value
    if endpoint is not None:
        cfg["endpoints"] = [{**copy.deepcopy(ENDPOINT), **endpoint}]
    return cfg


def _stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Parity", env=cdk.Environment(account=ACCOUNT, region=REGION))


def _addon(**props: Any) -> None:
    kwargs: dict[str, Any] = dict(cluster_name="my-hp-eks", version="v3.3", execution_role_arn=EXEC_ROLE,
                                  tls_bucket_name="hyperpod-tls-x", hyperpod_cluster_arn=CLUSTER_ARN,
                                  enable_custom_service_accounts=False, jumpstart_gated_model_download_role_arn=ROLE,
                                  alb_role_arn=ROLE, keda_role_arn=ROLE)
    OperatorAddon(_stack(), "Addon", **{**kwargs, **props})


def _domain(**props: Any) -> None:
    CustomDomain(_stack(), "Domain", **{"zone_name": "example.com", "domain_names": ["chat.example.com"], **props})


@dataclass(frozen=True)
class Rule:
    name: str
    path: str  # the YAML path the config reports
    to_config: Callable[[str], dict[str, Any]]
    to_construct: Callable[[str], None]
    prop: str  # the construct prop its error names
    values: tuple[tuple[str, bool], ...]  # (value, what S3 / IAM / the operator accepts)


BUCKETS = (("my-bucket", True), ("a.b.c", True), ("abc", True), ("a" * 63, True), ("my..bucket", False),
           ("192.168.1.1", False), ("abc.mrap", False), ("xn--abc", False), ("sthree-abc", False),
           ("amzn-s3-demo-x", False), ("abc-s3alias", False), ("abc--ol-s3", False), ("abc--x-s3", False),
           ("abc--table-s3", False), ("ab", False), ("a" * 64, False), ("Upper", False), ("s3://abc", False))

RULES = [
    Rule("capture bucket name", "capture.bucketName",
         lambda v: config(("capture", {"bucketName": v})),
         lambda v: DataCaptureStorage(_stack(), "Capture", bucket_name=v), "bucket_name", BUCKETS),
    Rule("TLS bucket name", "operator.tlsBucketName",
         lambda v: config(("operator", {"tlsBucketName": v})),
         lambda v: TlsBucket(_stack(), "Tls", bucket_name=v), "bucket_name", BUCKETS),
    Rule("TLS bucket name given to the add-on", "operator.tlsBucketName",
         lambda v: config(("operator", {"tlsBucketName": v})),
         lambda v: _addon(tls_bucket_name=v), "tls_bucket_name", BUCKETS),
    Rule("capture KMS key ARN", "capture.kms",
         lambda v: config(("capture", {"kms": v})),
         lambda v: DataCaptureStorage(_stack(), "Capture", kms=v), "kms", (
             ("create", True), ("none", True),
             (f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{KEY_ID}", True),
             (f"arn:aws:kms:{REGION}:{ACCOUNT}:key/mrk-0123456789abcdef0123456789abcdef", True),
             (f"arn:aws:kms:{REGION}:{ACCOUNT}:alias/my-key", False),
             (f"arn:aws:kms:{REGION}:{ACCOUNT}:key/{'-' * 36}", False),
             (f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/{KEY_ID}", False),
             (f"arn:aws-cn:kms:{REGION}:{ACCOUNT}:key/{KEY_ID}", False),
             ("yes please", False))),
    Rule("capture prefix", "capture.prefix",
         lambda v: config(("capture", {"prefix": v})),
         lambda v: DataCaptureStorage(_stack(), "Capture", prefix=v), "prefix", (
             ("data-capture", True), ("team/a.b_c-d", True), ("a" * 256, True), ("a" * 257, False),
             ("/lead", False), ("trail/", False), ("a//b", False), ("star*", False), ("q?", False), ("(x)", False),
             ("", False))),
    Rule("capture bucket account", "capture.bucketAccount",
         lambda v: config(("capture", {"bucketName": "their-bucket", "bucketAccount": v})),
         lambda v: DataCaptureStorage(_stack(), "Capture", bucket_name="their-bucket", bucket_account=v),
         "bucket_account", ((ACCOUNT, True), ("999999999999", False), ("1234", False), ("11112222333a", False))),
    Rule("namespace of gated-model endpoints", "endpoints[0].namespace",
         lambda v: config(endpoint={"namespace": v}),
         lambda v: OperatorDependencyRoles(_stack(), "Deps", oidc_provider_arn=OIDC, namespaces_for_gated=[v]),
         "namespaces_for_gated[0]", (
             ("inference", True), ("a" * 63, True), ("team-1", True), ("a" * 64, False), ("Team", False),
             ("-x", False), ("a.b", False), ("a_b", False))),
    Rule("HyperPod cluster ARN", "cluster.hyperpodClusterArn",
         lambda v: config(("cluster", {**MINIMAL["cluster"], "hyperpodClusterArn": v})),
         lambda v: _addon(hyperpod_cluster_arn=v), "hyperpod_cluster_arn", (
             (CLUSTER_ARN, True), (f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/0123456789ab", True),
             (f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcd", False),
             (f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/ABCD1234EFGH", False),
             (f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/{'a' * 13}", False),
             (f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/abcd1234efgh", False),
             ("abcd1234efgh", False))),
    Rule("EKS cluster name", "cluster.eksClusterName",
         lambda v: config(("cluster", {**MINIMAL["cluster"], "eksClusterName": v})),
         lambda v: _addon(cluster_name=v), "cluster_name", (
             ("my-hp-eks", True), ("A_1", True), ("a" * 100, True), ("a" * 101, False), ("-x", False),
             ("my cluster", False), ("", False))),
    Rule("dependency role ARN", "operator.albControllerRoleArn",
         lambda v: config(("operator", {"albControllerRoleArn": v})),
         lambda v: OperatorDependencyRoles(_stack(), "Deps", oidc_provider_arn=OIDC, namespaces_for_gated=["inference"],
                                           alb_role_arn=v), "alb_role_arn", (
             (ROLE, True), (f"arn:aws:iam::{ACCOUNT}:role/path/to/r", True),
             (f"arn:aws:iam::{ACCOUNT}:role/{'r' * 64}", True),
             (f"arn:aws:iam::{ACCOUNT}:user/bob", False), ("arn:aws:iam::1111:role/r", False),
             (f"arn:aws:iam::{ACCOUNT}:role/", False), (f"arn:aws:iam::{ACCOUNT}:role/r r", False), ("r", False))),
    Rule("execution role ARN (name prefix)", "operator.executionRoleArn",
         lambda v: config(("operator", {"install": "existing", "dependencies": "existing", "executionRoleArn": v})),
         lambda v: _addon(execution_role_arn=v), "execution_role_arn", (
             (EXEC_ROLE, True), (f"arn:aws:iam::{ACCOUNT}:role/team/SageMakerHyperPodInferenceX", True),
             (f"arn:aws:iam::{ACCOUNT}:role/MyOperatorRole", False),
             (f"arn:aws:iam::{ACCOUNT}:role/SageMakerHyperPodInference{'x' * 40}", False),
             (f"arn:aws:iam::{ACCOUNT}:user/SageMakerHyperPodInference", False))),
    Rule("OIDC provider ARN", "cluster.oidcProviderArn",
         lambda v: config(("cluster", {**MINIMAL["cluster"], "oidcProviderArn": v})),
         lambda v: OperatorExecutionRole(_stack(), "Role", oidc_provider_arn=v, install_mode="addon"),
         "oidcProviderArn", (
             (OIDC, True),
             (f"arn:aws:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com", False),
             (f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.{REGION}.amazonaws.com/id/", False),
             (f"arn:aws:iam::{ACCOUNT}:role/oidc.eks.{REGION}.amazonaws.com/id/X", False))),
    Rule("add-on version", "operator.addonVersion",
         lambda v: config(("operator", {"addonVersion": v})),
         lambda v: _addon(addon_version=v), "addon_version", (
             ("v1.4.0-eksbuild.1", True), ("v10.20.30-eksbuild.12", True), ("1.4.0-eksbuild.1", False),
             ("v1.4-eksbuild.1", False), ("v1.4.0", False), ("latest", False))),
    Rule("endpoint domain name", "endpoints[0].domainName",
         lambda v: config(("domain", {"zoneName": "example.com"}), endpoint={"domainName": v}),
         lambda v: _domain(domain_names=[v]), "domain_names[0]", (
             ("chat.example.com", True), ("example.com", True), ("a.b.example.com", True),
             ("Chat.example.com", False), ("*.example.com", False), ("-bad.example.com", False),
             ("x" * 64 + ".example.com", False), (("a" * 60 + ".") * 4 + "example.com", False),
             ("chat.example.com.", False), ("chat_1.example.com", False))),
    Rule("zone name", "domain.zoneName",
         lambda v: config(("domain", {"zoneName": v}), endpoint={"domainName": f"chat.{v}"}),
         lambda v: _domain(zone_name=v, domain_names=[f"chat.{v}"]), "zone_name", (
             ("example.com", True), ("a-b.example.co.uk", True), ("Example.com", False), ("example..com", False),
             ("-example.com", False), ("exa_mple.com", False))),
    Rule("hosted zone ID", "domain.hostedZoneId",
         lambda v: config(("domain", {"zoneName": "example.com", "hostedZoneId": v}),
                          endpoint={"domainName": "chat.example.com"}),
         lambda v: _domain(hosted_zone_id=v), "hosted_zone_id", (
             ("Z0123ABC", True), ("Z1", True), ("z0123abc", False), ("/hostedzone/Z0123ABC", False),
             ("X0123", False))),
    Rule("certificate ARN", "domain.certificateArn",
         lambda v: config(("domain", {"zoneName": "example.com", "certificateArn": v}),
                          endpoint={"domainName": "chat.example.com"}),
         lambda v: _domain(certificate_arn=v), "certificate_arn", (
             (CERT, True), (f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/abc-123", True),
             (f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/not_hex!", False),
             (f"arn:aws:acm:us-east-1:{ACCOUNT}:certificate/0a1b2c", False),
             (f"arn:aws-cn:acm:cn-north-1:{ACCOUNT}:certificate/0a1b2c", False),
             (f"arn:aws:acm:{REGION}:{ACCOUNT}:cert/0a1b2c", False))),
    Rule("SageMaker endpoint name", "endpoints[0].sagemakerEndpointName",
         lambda v: config(endpoint={"sagemakerEndpointName": v}),
         lambda v: EndpointVerification(_stack(), "Verify", endpoint_name=v, payload="{}",
                                        content_type="application/json"), "endpoint_name", (
             ("qwen-chat", True), ("A1", True), ("a" * 63, True), ("a-" * 31 + "a", True), ("a" * 64, False),
             ("a" + "-" * 62 + "b", False), ("-chat", False), ("chat-", False), ("chat_1", False),
             ("chat.v1", False))),
]

CASES = [pytest.param(rule, value, accepted, id=f"{rule.name}: {value[:40]!r}")
         for rule in RULES for value, accepted in rule.values]


def _config_accepts(rule: Rule, value: str) -> bool:
    try:
        parse_config(rule.to_config(value))
    except ConfigError as err:
        paths = [path for path, _ in err.problems]
        assert any(p == rule.path or p.startswith(rule.path + ".") for p in paths), (
            f"refused, but not at {rule.path}: {err}")
        return False
    return True


def _construct_accepts(rule: Rule, value: str) -> bool:
    try:
        rule.to_construct(value)
    except ValueError as err:
        assert rule.prop in str(err), f"refused, but without naming {rule.prop}: {err}"
        return False
    return True


@pytest.mark.parametrize(("rule", "value", "accepted"), CASES)
def test_the_config_accepts_exactly_what_the_construct_accepts(rule, value, accepted):
    # GIVEN a value for a field the config and a construct both check
    # WHEN it goes through the config field and through the construct prop
    by_config, by_construct = _config_accepts(rule, value), _construct_accepts(rule, value)
    # THEN both give the answer of the service's own rules (so they agree)
    assert (by_config, by_construct) == (accepted, accepted)


def test_every_rule_of_the_table_has_good_and_bad_values():
    for rule in RULES:
        assert {accepted for _, accepted in rule.values} == {True, False}, rule.name
