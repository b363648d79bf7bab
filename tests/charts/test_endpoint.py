"""The custom-resource builder: data capture tiers, runtimes and model sources map exactly onto the CRD (v3.2, v3.3)."""

from __future__ import annotations

import copy

import pytest
import yaml

from hyperpod_inference.charts.endpoint import EndpointWiring, SecretRef, build_custom_resource
from hyperpod_inference.charts.runtimes import PRESETS
from hyperpod_inference.config import parse_config
from tests.k8s_validation import crd_errors
from tests.synth_helpers import DEFAULT_CONFIG, with_endpoint_changes

BASE = yaml.safe_load(DEFAULT_CONFIG.read_text())
WIRING = EndpointWiring(region="us-west-2", capture_s3_uri="s3://cap-bucket/data-capture",
                        capture_kms_key_id="arn:aws:kms:us-west-2:111122223333:alias/cap",
                        tls_output_s3_uri="s3://hyperpod-tls-111122223333-us-west-2",
                        certificate_arn="arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000",
                        hosted_zone_id="Z0123ABC", token_secret=SecretRef("hf-token", "token"))


def endpoint(**changes):
    return parse_config(with_endpoint_changes(BASE, **changes)).endpoints[0]


TIER1 = {"sagemakerEndpoint": {"enabled": True, "initialSamplingPercentage": 20, "captureModes": ["Input"],
                               "captureContentTypeHeader": {"csvContentTypes": ["text/csv"]}}}
TIER2 = {"loadBalancer": {"enabled": True}}
TIER3 = {"modelPod": {"enabled": True, "initialSamplingPercentage": 7, "captureModes": ["Output", "Input"],
                      "batchSize": 500, "flushIntervalSeconds": 300, "maxPayloadSizeKB": 10240,
                      "captureContentTypeHeader": {"jsonContentTypes": ["application/json", "application/x-ndjson"]}}}

CASES = {
    "tier1-only": (TIER1, {"s3Uri": "s3://cap-bucket/data-capture", "sagemakerEndpoint": {
        "enabled": True, "initialSamplingPercentage": 20, "captureOptions": [{"captureMode": "Input"}],
        "kmsKeyId": "arn:aws:kms:us-west-2:111122223333:alias/cap",
        "captureContentTypeHeader": {"csvContentTypes": ["text/csv"]}}}),
    "tier2-only": (TIER2, {"s3Uri": "s3://cap-bucket/data-capture", "loadBalancer": {"enabled": True}}),
    "tier3-only": (TIER3, {"s3Uri": "s3://cap-bucket/data-capture", "modelPod": {
        "enabled": True, "initialSamplingPercentage": 7,
        "captureOptions": [{"captureMode": "Output"}, {"captureMode": "Input"}],
        "kmsKeyId": "arn:aws:kms:us-west-2:111122223333:alias/cap",
        "captureContentTypeHeader": {"jsonContentTypes": ["application/json", "application/x-ndjson"]},
        "bufferConfig": {"batchSize": 500, "flushIntervalSeconds": 300},
        "payloadConfig": {"maxPayloadSizeKB": 10240}}}),
}


@pytest.mark.parametrize("version", ["v3.2", "v3.3"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_capture_tier_alone_maps_exactly_and_validates(case, version):
    config, expected = CASES[case]
    cr = build_custom_resource(endpoint(dataCapture=config), WIRING)
    assert cr["spec"]["dataCapture"] == expected
    assert crd_errors(cr, version) == []


@pytest.mark.parametrize("version", ["v3.2", "v3.3"])
def test_all_three_tiers_together_and_capture_off(version):
    cr = build_custom_resource(endpoint(dataCapture={**TIER1, **TIER2, **TIER3}), WIRING)
    assert set(cr["spec"]["dataCapture"]) == {"s3Uri", "sagemakerEndpoint", "loadBalancer", "modelPod"}
    assert crd_errors(cr, version) == []
    off = build_custom_resource(endpoint(dataCapture=None), WIRING)
    assert "dataCapture" not in off["spec"] and crd_errors(off, version) == []


def test_disabled_tier_is_written_as_enabled_false_only():
    cr = build_custom_resource(endpoint(dataCapture={**TIER2, "modelPod": {"enabled": False}}), WIRING)
    assert cr["spec"]["dataCapture"]["modelPod"] == {"enabled": False}


@pytest.mark.parametrize("runtime", ["vllm", "sglang", "tgi"])
@pytest.mark.parametrize("prefetch", [True, False])
def test_each_runtime_points_at_the_weights_and_validates(runtime, prefetch):
    model = copy.deepcopy(BASE["endpoints"][0]["model"])
    model["huggingface"]["prefetch"] = prefetch
    cr = build_custom_resource(endpoint(runtime=runtime, model=model), WIRING)
    worker = cr["spec"]["worker"]
    preset = PRESETS[runtime]
    assert worker["image"] == preset.image("us-west-2")
    assert worker["modelInvocationPort"]["containerPort"] == preset.port
    assert cr["spec"]["loadBalancer"]["healthCheckPath"] == preset.health_path
    args, env = worker.get("args", []), {e["name"]: e["value"] for e in worker.get("environmentVariables", [])}
    flag = {"vllm": "--model", "sglang": "--model-path"}.get(runtime)
    if flag:
        assert (flag in args) is prefetch
        assert args[args.index("--served-model-name") + 1] == "Qwen/Qwen2.5-7B-Instruct"
    else:
        assert (env.get("MODEL_ID") == "/opt/ml/model") is prefetch
    assert cr["spec"]["modelSourceConfig"]["prefetchEnabled"] is prefetch
    assert crd_errors(cr, "v3.3") == [] and crd_errors(cr, "v3.2") == []


def test_without_commit_sha_no_commit_is_written():
    model = copy.deepcopy(BASE["endpoints"][0]["model"])
    del model["huggingface"]["commitSHA"]
    cr = build_custom_resource(endpoint(model=model), WIRING)
    assert "commitSHA" not in cr["spec"]["modelSourceConfig"]["huggingFaceModel"]
    assert crd_errors(cr, "v3.3") == []


def test_custom_runtime_takes_image_port_and_args_verbatim():
    cr = build_custom_resource(endpoint(runtime="custom", image="my.registry/server:1", port=9000,
                                        args=["serve", "--port", "9000"], env={"A": "1"}), WIRING)
    worker = cr["spec"]["worker"]
    assert worker["image"] == "my.registry/server:1" and "command" not in worker
    assert worker["args"] == ["serve", "--port", "9000"]
    assert worker["environmentVariables"] == [{"name": "A", "value": "1"}]
    assert worker["modelInvocationPort"]["containerPort"] == 9000


def test_fsx_source_and_gpu_count_from_instance_type():
    cr = build_custom_resource(endpoint(model={"fsx": {"fileSystemId": "fs-0123456789abcdef0", "path": "/llama"}},
                                        instanceType="ml.p5.48xlarge"), WIRING)
    assert cr["spec"]["modelSourceConfig"] == {"modelSourceType": "fsx", "modelLocation": "/llama",
                                               "fsxStorage": {"fileSystemId": "fs-0123456789abcdef0"}}
    assert cr["spec"]["worker"]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert "--tensor-parallel-size" in cr["spec"]["worker"]["args"]
    assert crd_errors(cr, "v3.3") == []



def test_tls_and_dns_nest_as_the_crd_says_not_as_the_blog():
    cr = build_custom_resource(endpoint(), WIRING)
    tls = cr["spec"]["tlsConfig"]
    assert set(tls) == {"customCertificateConfig", "tlsCertificateOutputS3Uri"}
    assert "tlsCertificateOutputS3Uri" not in tls["customCertificateConfig"]
    assert cr["spec"]["dnsConfig"] == {"hostedZoneId": "Z0123ABC"}


def test_token_reaches_the_custom_resource_without_wiring_it() -> None:
    # GIVEN a Hugging Face endpoint with a token and wiring that names none (EndpointChart used on its own)
    from hyperpod_inference.charts.endpoint import EndpointWiring, build_custom_resource
    from hyperpod_inference.config.models import Endpoint

    base = {"name": "chat", "namespace": "inference", "instanceType": "ml.g5.8xlarge",
            "model": {"huggingface": {"modelId": "Qwen/Qwen2.5-7B-Instruct"}}}
    from hyperpod_inference.charts.hf_token import external_secret_objects

    sm_arn = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-AbCdEf"
    for token in ({"kubernetesSecret": {"name": "hf", "key": "t"}}, {"secretsManagerArn": sm_arn}):
        ep = Endpoint.model_validate({**base, "model": {"huggingface": {**base["model"]["huggingface"],
                                                                        "token": token}}})
        # the user's own Secret, or the one the namespace's sync of the secret writes
        synced = {o["kind"]: o for o in external_secret_objects(ep, region="us-west-2", role_arn="arn:role")}
        expected = ({"name": "hf", "key": "t"} if "kubernetesSecret" in token else
                    {"name": synced["ExternalSecret"]["spec"]["target"]["name"], "key": "token"})
        # WHEN the custom resource is built THEN it references the token's Secret (a gated model would 401 otherwise)
        cr = build_custom_resource(ep, EndpointWiring(region="us-west-2"))
        assert cr["spec"]["modelSourceConfig"]["huggingFaceModel"]["tokenSecretRef"] == expected
