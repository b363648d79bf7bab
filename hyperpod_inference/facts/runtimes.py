"""Model-server runtime presets (images, ports, health paths, routes) and the AWS Deep Learning Containers (DLC)
registry accounts the preset images come from. ``custom`` takes everything from the config.

The DLC table is a snapshot: a test checks it against aws-cdk-lib's ``region_info`` wherever that has a value. A region
with no known account is an error (give the endpoint an ``image``), never a silent default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .rules import domain_suffix

#: AWS Deep Learning Containers registry account per region.
DLC_ACCOUNTS: Mapping[str, str] = MappingProxyType({
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-1": "763104351884",
    "ap-northeast-2": "763104351884",
    "ap-south-1": "763104351884",
    "ap-south-2": "772153158452",
    "ap-southeast-1": "763104351884",
    "ap-southeast-2": "763104351884",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-6": "633930458069",
    "ca-central-1": "763104351884",
    "ca-west-1": "204538143572",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "eu-central-1": "763104351884",
    "eu-central-2": "380420809688",
    "eu-north-1": "763104351884",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "eu-west-1": "763104351884",
    "eu-west-2": "763104351884",
    "eu-west-3": "763104351884",
    "eusc-de-east-1": "204133271717",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "sa-east-1": "763104351884",
    "us-east-1": "763104351884",
    "us-east-2": "763104351884",
    "us-isof-east-1": "303241398832",
    "us-isof-south-1": "454834333376",
    "us-west-1": "763104351884",
    "us-west-2": "763104351884",
})

MODEL_MOUNT = "/opt/ml/model"  # spec.worker.modelVolumeMount.mountPath (operator default)


def dlc_registry_problem(region: str) -> str | None:
    """Why no preset image can be named in ``region`` (no known DLC registry account), or None."""
    if region in DLC_ACCOUNTS:
        return None
    return (f"no AWS Deep Learning Containers registry is known for region {region}; give the endpoint an image "
            "(or use a region that has one)")


def dlc_registry(region: str) -> str:
    """``<account>.dkr.ecr.<region>.<domain suffix>``; ValueError for a region with no known account."""
    problem = dlc_registry_problem(region)
    if problem:
        raise ValueError(problem)
    return f"{DLC_ACCOUNTS[region]}.dkr.ecr.{region}.{domain_suffix(region)}"


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
        """The preset's DLC image in ``region``; ValueError for a region with no known DLC registry."""
        return f"{dlc_registry(region)}/{self.repository}:{self.tag}"


_CHAT = json.dumps({"messages": [{"role": "user", "content": "Say hello in one word."}], "max_tokens": 16},
                   separators=(",", ":"))

PRESETS: Mapping[str, RuntimePreset] = MappingProxyType({
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
        default_payload=json.dumps({"inputs": "What is Amazon SageMaker?", "parameters": {"max_new_tokens": 16}},
                                   separators=(",", ":"))),
})
"""Runtime name (the config's ``runtime``) -> preset."""

#: The presets whose image is a CUDA build (its tag says ``gpu``): each needs at least one NVIDIA GPU in the pod.
GPU_PRESETS: frozenset[str] = frozenset(name for name, preset in PRESETS.items() if "-gpu-" in f"-{preset.tag}-")

#: Invocation routes that serve embeddings, not text generation (vLLM's and TEI's OpenAI-compatible and native
#: routes); the TGI preset serves ``generate`` and has none of them.
EMBEDDING_ROUTES: frozenset[str] = frozenset({"v1/embeddings", "embeddings", "embed", "embed_all", "pooling"})

#: Hub organisations every model of which is an embedding model (the Sentence Transformers models).
EMBEDDING_ORGS: frozenset[str] = frozenset({"sentence-transformers"})

#: The verification request body of an endpoint whose runtime has no preset payload (``runtime: custom``).
FALLBACK_PAYLOAD = '{"inputs": "Hello"}'


def default_payload(runtime: str | None) -> str:
    """The request body the post-deploy check and the invoke command send when ``verify.payload`` is not set: the
    runtime preset's payload, else :data:`FALLBACK_PAYLOAD`."""
    preset = PRESETS.get(runtime or "")
    return preset.default_payload if preset is not None and preset.default_payload else FALLBACK_PAYLOAD
