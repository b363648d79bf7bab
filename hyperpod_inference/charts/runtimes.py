"""Model-server runtime presets: one table of images, ports, health paths, routes and how each runtime is pointed at
the weights. ``custom`` takes everything from the config."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

# AWS Deep Learning Containers registry account per region (763104351884 everywhere else).
DLC_ACCOUNTS: dict[str, str] = {
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ca-west-1": "204538143572",
    "eu-central-2": "380420809688",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
}
DLC_DEFAULT_ACCOUNT = "763104351884"

MODEL_MOUNT = "/opt/ml/model"  # spec.worker.modelVolumeMount.mountPath (operator default)


@dataclass(frozen=True)
class RuntimePreset:
    name: str
    repository: str  # DLC repository
    tag: str
    port: int
    health_path: str
    invocation_endpoint: str  # spec.invocationEndpoint: the route the SageMaker endpoint / ALB forwards to
    command: tuple[str, ...] = ()
    default_payload: str = ""
    serves_model_name: bool = True  # takes --served-model-name
    env: dict[str, str] = field(default_factory=dict)

    def image(self, region: str) -> str:
        account = DLC_ACCOUNTS.get(region, DLC_DEFAULT_ACCOUNT)
        return f"{account}.dkr.ecr.{region}.amazonaws.com/{self.repository}:{self.tag}"


_CHAT = json.dumps({"messages": [{"role": "user", "content": "Say hello in one word."}], "max_tokens": 16})

PRESETS: dict[str, RuntimePreset] = {
    "vllm": RuntimePreset(
        name="vllm", repository="vllm", tag="0.14.0-gpu-py312-cu129-ubuntu22.04-ec2", port=8000, health_path="/health",
        invocation_endpoint="v1/chat/completions",
        command=("python3", "-m", "vllm.entrypoints.openai.api_server"), default_payload=_CHAT),
    "sglang": RuntimePreset(
        name="sglang", repository="sglang", tag="0.5.8-gpu-py312", port=8000, health_path="/health",
        invocation_endpoint="v1/chat/completions",
        command=("python3", "-m", "sglang.launch_server"), default_payload=_CHAT),
    "tgi": RuntimePreset(
        name="tgi", repository="huggingface-pytorch-tgi-inference", tag="2.7.0-tgi3.3.4-gpu-py311-cu124-ubuntu22.04",
        port=8080, health_path="/health", invocation_endpoint="generate", serves_model_name=False,
        default_payload=json.dumps({"inputs": "What is Amazon SageMaker?", "parameters": {"max_new_tokens": 16}})),
}

def runtime_args(runtime: str, *, model_path: str | None, served_model_name: str | None, gpus: int, port: int) -> list[str]:
    """Args that point the runtime at the mounted weights (model_path) and serve under the Hub model ID.
    model_path None: the runtime downloads natively and the operator injects --model/--model-path itself."""
    args: list[str] = []
    if runtime == "vllm":
        if model_path:
            args += ["--model", model_path]
        if served_model_name:
            args += ["--served-model-name", served_model_name]
        args += ["--host", "0.0.0.0", "--port", str(port)]
        if gpus > 1:
            args += ["--tensor-parallel-size", str(gpus)]
    elif runtime == "sglang":
        if model_path:
            args += ["--model-path", model_path]
        if served_model_name:
            args += ["--served-model-name", served_model_name]
        args += ["--host", "0.0.0.0", "--port", str(port)]
        if gpus > 1:
            args += ["--tp", str(gpus)]
    return args


def runtime_env(runtime: str, *, model_path: str | None, gpus: int, port: int) -> dict[str, str]:
    """Environment for runtimes configured through env (TGI): MODEL_ID is the mounted path with prefetch."""
    if runtime != "tgi":
        return {}
    env = {"PORT": str(port), "NUM_SHARD": str(max(gpus, 1))}
    if model_path:
        env["MODEL_ID"] = model_path
        env["HF_MODEL_ID"] = model_path
    return env
