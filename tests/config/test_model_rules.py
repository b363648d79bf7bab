"""The offline rules about the model an endpoint serves (issue #42): a GPU preset on an instance without a GPU, a
tensor-parallel size the runtimes refuse for most models, TGI asked to serve embeddings, a token secret in another
region than the stack, capture enabled with 0% sampling. Each a failing and a passing case, through ``validate
--strict`` as a user runs it."""

from __future__ import annotations

import pytest
import yaml

from hyperpod_inference.__main__ import main as cli_main
from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.config.warnings import endpoint_warnings
from tests.config.test_production_config import config

CPU_CUSTOM = {"runtime": "custom", "image": "my/cpu-server:1", "port": 8080}
SECRET = "arn:aws:secretsmanager:{region}:111122223333:secret:hf-token-AbCdEf"


def _problems(data) -> list[tuple[str, str]]:
    try:
        parse_config(data)
    except ConfigError as err:
        return list(err.problems)
    return []


def _warnings(data) -> dict[str, tuple[str, str]]:
    parsed = parse_config(data)
    return {w.id: (w.path, w.message) for w in endpoint_warnings(parsed.endpoints[0], parsed)}


@pytest.mark.parametrize("changes", [
    {"instanceType": "ml.m5.xlarge"},
    {"instanceType": "ml.m5.xlarge", "resources": {"gpus": 0}},  # the old message's advice, which then passed
    {"instanceType": "ml.c5.4xlarge", "runtime": "tgi"},
    {"instanceType": None, "instanceTypes": ["ml.m5.xlarge", "ml.c5.xlarge"], "runtime": "sglang",
     "sagemakerEndpointName": None, "verify": None, "dataCapture": None},
], ids=["vllm-m5", "vllm-m5-gpus-0", "tgi-c5", "sglang-cpu-types"])
def test_a_gpu_preset_on_an_instance_without_a_gpu_is_refused_naming_gpu_types_or_a_cpu_image(changes):
    problems = _problems(config(**changes))
    # THEN one problem, on runtime, naming the endpoint, GPU instance types and the CPU image way; never gpus: 0
    assert [p for p, _ in problems] == ["endpoints[0].runtime"], problems
    message = problems[0][1]
    assert message.startswith("endpoint qwen-chat: the ") and "is a CUDA (GPU) image" in message
    assert "instanceType: ml.g5.xlarge / ml.g6.xlarge / ml.g6e.xlarge" in message
    assert "runtime: custom, a CPU build of the server as image" in message
    assert "give the accelerator count (0 for none)" not in message


def test_a_cpu_instance_with_a_custom_cpu_image_passes_and_a_gpu_preset_on_a_gpu_passes():
    assert _problems(config(instanceType="ml.m5.xlarge", resources={"gpus": 0}, **CPU_CUSTOM)) == []
    assert _problems(config(instanceType="ml.g5.xlarge")) == []


def test_zero_gpus_for_a_gpu_preset_on_a_gpu_instance_is_refused():
    assert _problems(config(resources={"gpus": 0})) == [(
        "endpoints[0].resources.gpus", "endpoint qwen-chat: 0 GPUs with the vllm preset, a CUDA image that needs at "
                                       "least one: leave resources.gpus out (the instance's 1) or give at least 1")]
    assert _problems(config(resources={"gpus": 1})) == []


def test_a_tensor_parallel_size_that_is_not_a_power_of_two_is_warned_and_strict_fails():
    path, message = _warnings(config(instanceType="ml.g5.12xlarge", resources={"gpus": 3}))["tensorParallelSize"]
    assert path == "resources.gpus"
    assert message.startswith("endpoint qwen-chat: the vllm preset shards the model over the 3 GPUs "
                              "(tensor-parallel size 3)")
    assert "give a power of two (resources.gpus: 2)" in message and "model.tensor-parallel" in message
    # TGI does not replicate key-value heads: its rule says so
    tgi = _warnings(config(instanceType="ml.g5.48xlarge", resources={"gpus": 6}, runtime="tgi"))
    assert "its key-value heads divide by it;" in tgi["tensorParallelSize"][1]


@pytest.mark.parametrize("gpus", [None, 1, 2, 4])
def test_a_power_of_two_tensor_parallel_size_is_not_warned(gpus):
    resources = {"gpus": gpus} if gpus else None
    assert "tensorParallelSize" not in _warnings(config(instanceType="ml.g5.12xlarge", resources=resources))


def test_tgi_on_an_embeddings_route_or_a_sentence_transformers_model_is_refused():
    fix = ("serve an embedding model with runtime: custom and an embedding server's image (Text Embeddings "
           "Inference), or give the tgi preset a text-generation model")
    assert _problems(config(runtime="tgi", invocationEndpoint="v1/embeddings")) == [(
        "endpoints[0].invocationEndpoint", "endpoint qwen-chat: v1/embeddings is an embeddings route, and the tgi "
        f"preset (text-generation-inference) serves text generation only (generate): {fix}")]
    model = {"huggingface": {"modelId": "sentence-transformers/all-MiniLM-L6-v2",
                             "commitSHA": "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"}}
    assert _problems(config(runtime="tgi", model=model)) == [(
        "endpoints[0].model.huggingface.modelId", "endpoint qwen-chat: sentence-transformers/all-MiniLM-L6-v2 is a "
        "Sentence Transformers embedding model, and the tgi preset (text-generation-inference) serves text "
        f"generation only: {fix}")]
    # THEN a generation route and model on TGI pass, and vLLM is not judged by TGI's routes
    assert _problems(config(runtime="tgi", invocationEndpoint="generate")) == []
    assert _problems(config(runtime="tgi")) == []


def test_a_token_secret_in_another_region_than_the_stack_is_refused():
    token = {"secretsManagerArn": SECRET.format(region="eu-west-1")}
    model = {"huggingface": {"modelId": "meta-llama/Llama-3.1-8B-Instruct",
                             "commitSHA": "0e9e39f249a16976918f6564b8830bc894c89659", "token": token}}
    assert _problems(config(model=model)) == [(
        "endpoints[0].model.huggingface.token.secretsManagerArn",
        "endpoint qwen-chat: the secret is in eu-west-1, and the stack's SecretStore reads Secrets Manager in "
        "env.region (us-west-2), so the token never syncs: replicate the secret to us-west-2 (Secrets Manager "
        "replication) and give the replica's ARN")]
    token["secretsManagerArn"] = SECRET.format(region="us-west-2")
    assert _problems(config(model=model)) == []


@pytest.mark.parametrize(("tier", "capture"), [
    ("modelPod", {"modelPod": {"enabled": True, "initialSamplingPercentage": 0}}),
    ("sagemakerEndpoint", {"sagemakerEndpoint": {"enabled": True, "initialSamplingPercentage": 0}}),
])
def test_capture_enabled_with_zero_sampling_is_warned(tier, capture):
    path, message = _warnings(config(dataCapture=capture))["captureSamplingZero"]
    assert path == f"dataCapture.{tier}.initialSamplingPercentage"
    assert message == (f"endpoint qwen-chat: {tier} capture is enabled with a sampling percentage of 0: it captures "
                       "nothing while its resources are created; give a percentage from 1 to 100, or set "
                       f"dataCapture.{tier}.enabled: false")
    capture[tier]["initialSamplingPercentage"] = 5
    assert "captureSamplingZero" not in _warnings(config(dataCapture=capture))
    capture[tier] = {"enabled": False, "initialSamplingPercentage": 0}
    assert "captureSamplingZero" not in _warnings(config(dataCapture=capture))


@pytest.mark.parametrize(("changes", "status", "words"), [
    ({"instanceType": "ml.g5.12xlarge", "resources": {"gpus": 3}}, 1, "warning tensorParallelSize"),
    ({"dataCapture": {"modelPod": {"enabled": True, "initialSamplingPercentage": 0}}}, 1,
     "warning captureSamplingZero"),
    ({"instanceType": "ml.m5.xlarge", "resources": {"gpus": 0}}, 1, "endpoints[0].runtime: endpoint qwen-chat"),
    ({}, 0, ""),
], ids=["tp-3", "capture-0", "vllm-on-cpu", "good"])
def test_validate_strict_refuses_each_mistake_and_passes_the_good_config(tmp_path, capsys, changes, status, words):
    path = tmp_path / "hyperpod.yaml"
    path.write_text(yaml.safe_dump(config(**changes)))
    assert cli_main(["validate", "--strict", str(path)]) == status
    out = capsys.readouterr()
    assert words in out.out + out.err and "Traceback" not in out.out + out.err
