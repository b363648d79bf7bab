"""The config contract: the default file loads; every invalid config fails with the field's path named."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.__main__ import main as cli_main
from hyperpod_inference.config import ConfigError, config_json_schema, load_config, parse_config

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
SHA = "0123456789abcdef0123456789abcdef01234567"


def with_changes(*changes):
    """A copy of the default config with (path, value) changes; value None deletes the key."""
    cfg = copy.deepcopy(DEFAULT)
    for path, value in changes:
        *parents, last = path
        node = cfg
        for p in parents:
            node = node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return cfg


def ep(**overrides):
    base = copy.deepcopy(DEFAULT["endpoints"][0])
    base.update(overrides)
    return base


def s3_model():
    return {"s3": {"bucket": "my-models", "prefix": "qwen/"}}


def test_default_config_loads_with_every_feature_on():
    cfg = load_config(REPO / "hyperpod.yaml")
    endpoint = cfg.endpoints[0]
    assert endpoint.model.huggingface.commit_sha
    assert endpoint.data_capture.sagemaker_endpoint.enabled
    assert endpoint.data_capture.load_balancer.enabled
    assert endpoint.data_capture.model_pod.enabled
    assert endpoint.domain_name == "chat.example.com" and cfg.domain.zone_name == "example.com"
    assert endpoint.weight_cache.mode == "daemonset"


def test_python_attributes_are_snake_case_and_yaml_keys_camel_case():
    cfg = load_config(REPO / "hyperpod.yaml")
    assert cfg.endpoints[0].sagemaker_endpoint_name == "qwen-chat"
    snake = with_changes((("endpoints", 0, "sagemaker_endpoint_name"), "x"))
    with pytest.raises(ConfigError) as err:
        parse_config(snake)
    assert "endpoints[0].sagemaker_endpoint_name: unknown key; did you mean sagemakerEndpointName?" in str(err.value)


# (id, config, expected path, expected words in the message)
INVALID = [
    ("unknown-top-level-key", with_changes((("colour",), "blue")), "colour", "unknown key"),
    ("wrong-api-version", with_changes((("apiVersion",), "v2")), "apiVersion", "hyperpod-inference/v1"),
    ("account-not-12-digits", with_changes((("env", "account"), "1234")), "env.account", "12-digit"),
    ("bad-region", with_changes((("env", "region"), "mars-1")), "env.region", "AWS region"),
    ("cluster-arn-other-account", with_changes((("cluster", "hyperpodClusterArn"),
                                                "arn:aws:sagemaker:us-west-2:999999999999:cluster/abcd1234efgh")),
     "cluster.hyperpodClusterArn", "env.account"),
    ("kubectl-role-not-a-role", with_changes((("cluster", "kubectlRoleArn"), "arn:aws:iam::111122223333:user/bob")),
     "cluster.kubectlRoleArn", "IAM role ARN"),
    ("oidc-other-region", with_changes((("cluster", "oidcProviderArn"),
                                        "arn:aws:iam::111122223333:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/AB12")),
     "cluster.oidcProviderArn", "us-west-2"),
    ("vpc-id-shape", with_changes((("cluster", "vpcId"), "vpc-XYZ")), "cluster.vpcId", "VPC ID"),
    ("subnet-id-shape", with_changes((("cluster", "kubectlSubnetIds"), ["subnet-1"])), "cluster.kubectlSubnetIds[0]", "subnet ID"),
    ("install-unknown", with_changes((("operator", "install"), "helm")), "operator.install", "addon"),
    ("version-unknown", with_changes((("operator", "version"), "v3.1")), "operator.version", "v3.2"),
    ("chart-without-crd-source", with_changes((("operator", "install"), "chart")), "operator.crdSource", "required"),
    ("existing-with-dependencies-create", with_changes((("operator", "install"), "existing")),
     "operator.dependencies", "existing"),
    ("chart-in-unsupported-region", with_changes((("operator", "install"), "chart"), (("operator", "crdSource"), "crds"),
                                                 (("env", "region"), "ca-central-1"),
                                                 (("cluster", "hyperpodClusterArn"), "arn:aws:sagemaker:ca-central-1:111122223333:cluster/abcd1234efgh"),
                                                 (("cluster", "oidcProviderArn"), "arn:aws:iam::111122223333:oidc-provider/oidc.eks.ca-central-1.amazonaws.com/id/AB12")),
     "env.region", "not published"),
    ("tls-bucket-name-shape", with_changes((("operator", "tlsBucketName"), "Bad_Bucket")), "operator.tlsBucketName", "S3 bucket name"),
    ("delivery-unknown", with_changes((("manifests", "delivery"), "helm")), "manifests.delivery", "kubectl"),
    ("gitops-with-kubectl-delivery", with_changes((("manifests", "gitops"), "argocd")), "manifests.gitops",
     "only used with delivery: files"),
    ("gitops-unknown", with_changes((("manifests", "gitops"), "spinnaker")), "manifests.gitops", "argocd"),
    ("namespace-not-dns", with_changes((("namespaces",), ["Inference"])), "namespaces[0]", "DNS-1123"),
    ("namespace-system-owned", with_changes((("namespaces",), ["inference", "kube-system"])), "namespaces[1]", "exists on every cluster"),
    ("retention-zero", with_changes((("capture", "retentionDays"), 0)), "capture.retentionDays", "greater than or equal to 1"),
    ("kms-garbage", with_changes((("capture", "kms"), "yes please")), "capture.kms", "create, none, or a KMS key ARN"),
    ("capture-bucket-other-account", with_changes((("capture", "bucketName"), "their-bucket"), (("capture", "bucketAccount"), "999999999999")),
     "capture.bucketAccount", "cluster's account"),
    ("alb-logs-to-kms-bucket", with_changes((("capture", "bucketName"), "their-bucket"), (("capture", "bucketEncryption"), "SSE-KMS")),
     "endpoints[0].dataCapture.loadBalancer", "SSE-KMS"),
    ("capture-on-without-capture-section", with_changes((("capture",), None)), "endpoints[0].dataCapture", "capture section is absent"),
    ("zone-id-shape", with_changes((("domain", "hostedZoneId"), "z123")), "domain.hostedZoneId", "hosted zone ID"),
    ("certificate-arn-shape", with_changes((("domain", "certificateArn"), "arn:aws:acm:us-west-2:111122223333:cert/x")),
     "domain.certificateArn", "ACM certificate ARN"),
    ("endpoint-name-uppercase", with_changes((("endpoints", 0, "name"), "Qwen")), "endpoints[0].name", "DNS-1123"),
    ("endpoint-namespace-missing", with_changes((("endpoints", 0, "namespace"), None)), "endpoints[0].namespace", "Field required"),
    ("instance-type-shape", with_changes((("endpoints", 0, "instanceType"), "g5.8xlarge")), "endpoints[0].instanceType", "instance type"),
    ("replicas-zero", with_changes((("endpoints", 0, "replicas"), 0)), "endpoints[0].replicas", "greater than or equal to 1"),
    ("runtime-unknown", with_changes((("endpoints", 0, "runtime"), "triton")), "endpoints[0].runtime", "vllm"),
    ("custom-runtime-without-image", with_changes((("endpoints", 0, "runtime"), "custom"), (("endpoints", 0, "port"), 8080)),
     "endpoints[0].image", "required with runtime: custom"),
    ("sagemaker-endpoint-name-shape", with_changes((("endpoints", 0, "sagemakerEndpointName"), "qwen_chat")),
     "endpoints[0].sagemakerEndpointName", "SageMaker endpoint name"),
    ("tier1-without-endpoint-name", with_changes((("endpoints", 0, "sagemakerEndpointName"), None), (("endpoints", 0, "verify"), None)),
     "endpoints[0].sagemakerEndpointName", "dataCapture.sagemakerEndpoint"),
    ("verify-without-endpoint-name", with_changes((("endpoints", 0, "sagemakerEndpointName"), None),
                                                  (("endpoints", 0, "dataCapture", "sagemakerEndpoint"), None)),
     "endpoints[0].sagemakerEndpointName", "verify"),
    ("two-model-sources", with_changes((("endpoints", 0, "model", "s3"), {"bucket": "my-models"})), "endpoints[0].model", "exactly one"),
    ("no-model-source", with_changes((("endpoints", 0, "model"), {})), "endpoints[0].model", "exactly one"),
    ("hf-model-id-not-org-model", with_changes((("endpoints", 0, "model", "huggingface", "modelId"), "qwen")),
     "endpoints[0].model.huggingface.modelId", "org/model"),
    ("hf-commit-sha-short", with_changes((("endpoints", 0, "model", "huggingface", "commitSHA"), "abc123")),
     "endpoints[0].model.huggingface.commitSHA", "40-character"),
    ("hf-commit-sha-uppercase", with_changes((("endpoints", 0, "model", "huggingface", "commitSHA"), SHA.upper())),
     "endpoints[0].model.huggingface.commitSHA", "lowercase hex"),
    ("hf-token-both-forms", with_changes((("endpoints", 0, "model", "huggingface", "token"),
                                          {"kubernetesSecret": {"name": "hf", "key": "token"},
                                           "secretsManagerArn": "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-AbCdEf"})),
     "endpoints[0].model.huggingface.token", "exactly one"),
    ("hf-token-secret-other-account", with_changes((("endpoints", 0, "model", "huggingface", "token"),
                                                    {"secretsManagerArn": "arn:aws:secretsmanager:us-west-2:999999999999:secret:hf-AbCdEf"})),
     "endpoints[0].model.huggingface.token.secretsManagerArn", "env.account"),
    ("jumpstart-kind-with-hf-source", with_changes((("endpoints", 0, "kind"), "JumpStartModel"), (("endpoints", 0, "runtime"), None),
                                                   (("endpoints", 0, "weightCache"), None)),
     "endpoints[0].model.huggingface", "JumpStartModel takes only a jumpstart source"),
    ("jumpstart-source-on-iec", with_changes((("endpoints", 0, "model"), {"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}}),
                                             (("endpoints", 0, "weightCache"), None)),
     "endpoints[0].model.jumpstart", "needs kind: JumpStartModel"),
    ("jumpstart-with-daemonset-cache", with_changes((("endpoints", 0, "kind"), "JumpStartModel"), (("endpoints", 0, "runtime"), None),
                                                    (("endpoints", 0, "model"), {"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}})),
     "endpoints[0].weightCache.mode", "JumpStartModel"),
    ("operator-cache-on-v3.2", with_changes((("operator", "version"), "v3.2"), (("endpoints", 0, "model"), s3_model()),
                                            (("endpoints", 0, "weightCache"), {"mode": "operator"})),
     "endpoints[0].weightCache.mode", "v3.3"),
    ("reserved-volume-name", with_changes((("endpoints", 0, "weightCache", "volumeName"), "model-weights-copy")),
     "endpoints[0].weightCache.volumeName", "reserved"),
    ("host-path-relative", with_changes((("endpoints", 0, "weightCache", "hostPath"), "opt/dlami/nvme")),
     "endpoints[0].weightCache.hostPath", "absolute path"),
    ("daemonset-fsx-without-node-path", with_changes((("endpoints", 0, "model"), {"fsx": {"fileSystemId": "fs-0123456789abcdef0"}})),
     "endpoints[0].model.fsx.nodePath", "daemonset"),
    ("sampling-over-100", with_changes((("endpoints", 0, "dataCapture", "modelPod", "initialSamplingPercentage"), 101)),
     "endpoints[0].dataCapture.modelPod.initialSamplingPercentage", "less than or equal to 100"),
    ("capture-modes-empty", with_changes((("endpoints", 0, "dataCapture", "sagemakerEndpoint", "captureModes"), [])),
     "endpoints[0].dataCapture.sagemakerEndpoint.captureModes", "at least 1"),
    ("capture-mode-unknown", with_changes((("endpoints", 0, "dataCapture", "modelPod", "captureModes"), ["Both"])),
     "endpoints[0].dataCapture.modelPod.captureModes[0]", "Input"),
    ("batch-size-zero", with_changes((("endpoints", 0, "dataCapture", "modelPod", "batchSize"), 0)),
     "endpoints[0].dataCapture.modelPod.batchSize", "greater than or equal to 1"),
    ("batch-size-over-1000", with_changes((("endpoints", 0, "dataCapture", "modelPod", "batchSize"), 1001)),
     "endpoints[0].dataCapture.modelPod.batchSize", "less than or equal to 1000"),
    ("flush-interval-under-10", with_changes((("endpoints", 0, "dataCapture", "modelPod", "flushIntervalSeconds"), 5)),
     "endpoints[0].dataCapture.modelPod.flushIntervalSeconds", "greater than or equal to 10"),
    ("flush-interval-over-300", with_changes((("endpoints", 0, "dataCapture", "modelPod", "flushIntervalSeconds"), 301)),
     "endpoints[0].dataCapture.modelPod.flushIntervalSeconds", "less than or equal to 300"),
    ("payload-cap-over-10240", with_changes((("endpoints", 0, "dataCapture", "modelPod", "maxPayloadSizeKB"), 10241)),
     "endpoints[0].dataCapture.modelPod.maxPayloadSizeKB", "less than or equal to 10240"),
    ("content-types-over-10", with_changes((("endpoints", 0, "dataCapture", "modelPod", "captureContentTypeHeader"),
                                            {"jsonContentTypes": [f"application/x{i}" for i in range(11)]})),
     "endpoints[0].dataCapture.modelPod.captureContentTypeHeader.jsonContentTypes", "at most 10"),
    ("content-type-shape", with_changes((("endpoints", 0, "dataCapture", "sagemakerEndpoint", "captureContentTypeHeader"),
                                         {"csvContentTypes": ["text csv"]})),
     "endpoints[0].dataCapture.sagemakerEndpoint.captureContentTypeHeader.csvContentTypes[0]", "content type"),
    ("domain-name-outside-zone", with_changes((("endpoints", 0, "domainName"), "chat.example.org")),
     "endpoints[0].domainName", "inside domain.zoneName"),
    ("domain-name-wildcard", with_changes((("endpoints", 0, "domainName"), "*.example.com")),
     "endpoints[0].domainName", "not a wildcard"),
    ("domain-name-uppercase", with_changes((("endpoints", 0, "domainName"), "Chat.example.com")),
     "endpoints[0].domainName", "lowercase DNS name"),
    ("domain-name-without-domain", with_changes((("domain",), None)), "endpoints[0].domainName", "domain section"),
    ("files-with-created-certificate", with_changes((("manifests", "delivery"), "files"), (("endpoints", 0, "verify"), None),
                                                    (("domain", "hostedZoneId"), "Z0123456789ABC")),
     "domain.certificateArn", "manifests.delivery: files"),
    ("files-with-created-zone", with_changes((("manifests", "delivery"), "files"), (("endpoints", 0, "verify"), None),
                                             (("domain", "certificateArn"), "arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000-1111-2222-333344445555")),
     "domain.hostedZoneId", "manifests.delivery: files"),
    ("files-with-verify", with_changes((("manifests", "delivery"), "files"), (("domain", "hostedZoneId"), "Z0123456789ABC"),
                                       (("domain", "certificateArn"), "arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000-1111-2222-333344445555")),
     "endpoints[0].verify", "nothing applies the resource"),
    ("duplicate-endpoint", with_changes((("endpoints",), [ep(), ep(sagemakerEndpointName="other", domainName="b.example.com")])),
     "endpoints[1].name", "duplicate endpoint"),
    ("duplicate-domain-name", with_changes((("endpoints",), [ep(), ep(name="second", sagemakerEndpointName="second")])),
     "endpoints[1].domainName", "already used by endpoints[0]"),
    ("duplicate-sagemaker-endpoint-name", with_changes((("endpoints",), [ep(), ep(name="second", domainName="b.example.com")])),
     "endpoints[1].sagemakerEndpointName", "duplicate SageMaker endpoint name"),
    ("verify-timeout-too-long", with_changes((("endpoints", 0, "verify", "timeoutMinutes"), 90)),
     "endpoints[0].verify.timeoutMinutes", "less than or equal to 60"),
]


@pytest.mark.parametrize("config,path,words", [pytest.param(c, p, w, id=i) for i, c, p, w in INVALID])
def test_invalid_config_names_the_field_and_the_rule(config, path, words):
    # GIVEN a config with one mistake  WHEN it is validated  THEN one of the problems names that path and rule
    with pytest.raises(ConfigError) as err:
        parse_config(config, "hyperpod.yaml")
    lines = str(err.value).splitlines()
    matching = [line for line in lines if line.startswith(f"hyperpod.yaml: {path}: ")]
    assert matching, f"no problem at {path}; got:\n" + "\n".join(lines)
    assert any(words in line for line in matching), "\n".join(lines)


def test_there_are_at_least_25_invalid_configs():
    assert len(INVALID) >= 25


def test_every_problem_is_reported_at_once_with_its_path():
    cfg = with_changes((("env", "account"), "12"), (("endpoints", 0, "replicas"), 0),
                       (("endpoints", 0, "model", "huggingface", "commitSHA"), "nope"))
    with pytest.raises(ConfigError) as err:
        parse_config(cfg, "x.yaml")
    paths = [p for p, _ in err.value.problems]
    assert "env.account" in paths
    assert "endpoints[0].replicas" in paths
    assert "endpoints[0].model.huggingface.commitSHA" in paths


def test_unquoted_numeric_sha_is_reported_as_not_a_string(tmp_path):
    text = (REPO / "hyperpod.yaml").read_text().replace('"a09a35458c702b33eeacc393d103063234e8bc28"', "1234567890" * 4)
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "endpoints[0].model.huggingface.commitSHA: Input should be a valid string" in str(err.value)


def test_broken_yaml_names_line_and_column(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("apiVersion: hyperpod-inference/v1\nenv: {account: [\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "line 3" in str(err.value) and "not valid YAML" in str(err.value)


def test_json_schema_uses_camel_case_keys_and_forbids_unknown_keys(capsys):
    schema = config_json_schema()
    endpoint = schema["$defs"]["Endpoint"]
    assert "sagemakerEndpointName" in endpoint["properties"]
    assert endpoint["additionalProperties"] is False
    assert cli_main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["properties"]["apiVersion"]["const"] == "hyperpod-inference/v1"


def test_validate_command_reports_problems(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(with_changes((("env", "region"), "nowhere"))))
    assert cli_main(["validate", str(bad)]) == 1
    assert "env.region" in capsys.readouterr().err
    assert cli_main(["validate", str(REPO / "hyperpod.yaml")]) == 0
