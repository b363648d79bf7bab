"""The HyperPod Inference Gateway (FACTS.md section 13): the ``InferenceGatewayConfig`` custom resource, its limits and
defaults, what it needs of the operator, the add-on and the model servers, and the names its controller chooses.

The CRD's text is not public: every fact here is read from AWS's gateway documentation
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-inference-gateway.html) and the
lab pages of awslabs/ai-on-sagemaker-hyperpod (``website/docs/00-eks-orchestration/inference/inference-gateway/``,
commits e53295231ea5 and 141076d5ea89). The gateway publishes Prometheus metrics, but neither source names one, so
no dashboard panel or rule reads them (docs/inference-gateway.md).
"""

from __future__ import annotations

import re

from .operator import API_GROUP, OPERATOR_NAMESPACE

#: The gateway's custom resource: its API version (same group as the operator's, version v1alpha1), kind
#: and short name.
API_VERSION = f"{API_GROUP}/v1alpha1"
KIND = "InferenceGatewayConfig"
SHORT_NAME = "igwc"
#: The kind's plural: its CRD is ``<PLURAL>.<API_GROUP>``, served at ``v1alpha1`` (FACTS.md section 13).
PLURAL = "inferencegatewayconfigs"
CRD_VERSION = "v1alpha1"

#: The operator field a gateway needs: the endpoints' ``spec.inferenceGateway`` (the release table says from which
#: operator version).
OPERATOR_FIELD = "spec.inferenceGateway"
#: The first ``amazon-sagemaker-hyperpod-inference`` add-on version that installs the gateway.
MIN_ADDON_VERSION = "v2.0.0-eksbuild.2"

#: ``schedulers[].scheduler``: the endpoint picker implementation (image ``llm-d-epp`` / ``inference-gateway-epp``).
SCHEDULERS = ("llm-d", "epp")
DEFAULT_SCHEDULER = "llm-d"
#: ``schedulers[].engineType``: which model server's metric names the endpoint picker scrapes.
ENGINE_TYPES = ("vllm", "sglang")
#: ``schedulers[].appProtocol``.
APP_PROTOCOLS = ("http", "kubernetes.io/h2c")
#: Weights (of queue, kvCache, prefix, runningRequests, loraAffinity, predictedLatency, lru) only the ``llm-d`` scheduler takes.
LLM_D_ONLY_WEIGHTS = ("lru",)
#: ``requiredClaims[].valueType``.
CLAIM_VALUE_TYPES = ("String", "StringArray")

#: Limits the documentation states.
SCHEDULERS_MIN, SCHEDULERS_MAX = 1, 100
SCHEDULER_NAME_MAX = 63
MODEL_NAME_MAX = 253
LORA_ADAPTERS_MAX, LORA_ADAPTER_NAME_MAX = 50, 253
LOG_LEVEL_MAX = 5
BBR_MAX_REQUEST_BODY_BYTES = 268_435_456
JWT_AUDIENCES_MAX, JWT_REQUIRED_CLAIMS_MAX = 8, 16
CLAIM_VALUES_MAX, CLAIM_VALUE_LENGTH_MAX = 128, 1024
#: A Gateway API duration (``30s``, ``5m``, ``1h30m``, ``0s``), as ``routeTimeout`` takes it.
DURATION = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"

#: The admission messages the documentation and the lab quote (the library refuses the same configs first).
BBR_REQUIRED_MESSAGE = "bbr must be enabled when more than one scheduler is defined"

#: The operator labels the pods of an InferenceEndpointConfig ``app=<metadata.name>``: what a scheduler selects.
POD_APP_LABEL = "app"

#: The status condition that says the gateway serves.
READY_CONDITION = "Ready"
#: The controller puts each gateway's ``Gateway`` (class ``inference-gateway``, named after the
#: InferenceGatewayConfig) and its Envoy Service in the operator's namespace; the Service is found by this label.
GATEWAY_NAMESPACE = OPERATOR_NAMESPACE
OWNING_GATEWAY_LABEL = "gateway.envoyproxy.io/owning-gateway-name"

#: The oldest model-server versions the gateway works with (older vLLM publishes the KV cache metric under another
#: name; older SGLang lacks ``--enable-metrics``).
RUNTIME_MINIMUMS = {"vllm": "0.9.2", "sglang": "0.3.5.post1"}

_TAG_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?(?=$|[-_+])")


def runtime_version(image: str) -> tuple[int, int, int, int] | None:
    """The model-server version an image's tag names (``vllm/vllm-openai:v0.9.2`` -> (0, 9, 2, 0); a DLC tag
    ``0.14.0-gpu-py312`` -> (0, 14, 0, 0); ``...:v0.3.5.post1`` -> (0, 3, 5, 1)); None when the tag names none (a
    digest, ``latest``)."""
    tag = image.rpartition("@")[0] if "@" in image else image
    last = tag.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    match = _TAG_VERSION.match(last.split(":", 1)[1])
    return None if match is None else tuple(int(g or 0) for g in match.groups())  # type: ignore[return-value]


def engine_of(runtime: str | None, image: str | None) -> str | None:
    """The model server an endpoint runs: its runtime preset, else (``custom``) the image repository's name when it
    names vLLM or SGLang."""
    if runtime in RUNTIME_MINIMUMS:
        return runtime
    repository = (image or "").split("@")[0].rsplit("/", 1)[-1].split(":")[0].lower()
    return next((engine for engine in RUNTIME_MINIMUMS if engine in repository), None)


def runtime_problem(engine: str | None, image: str) -> str | None:
    """Why the gateway cannot use a ``engine`` server from ``image``, or None (also when the version is unknown)."""
    if engine not in RUNTIME_MINIMUMS:
        return None
    found = runtime_version(image)
    minimum = runtime_version(f"x:{RUNTIME_MINIMUMS[engine]}")
    if found is None or minimum is None or found >= minimum:
        return None
    return (f"the Inference Gateway needs {engine} {RUNTIME_MINIMUMS[engine]} or later; the image {image} is "
            f"{'.'.join(map(str, found[:3]))}{f'.post{found[3]}' if found[3] else ''}")


def status_command(name: str, namespace: str) -> str:
    """The command that prints whether gateway ``name`` is Ready (``True``)."""
    return (f"kubectl get {SHORT_NAME} {name} -n {namespace} -o jsonpath="
            f"'{{.status.conditions[?(@.type==\"{READY_CONDITION}\")].status}}'")


def address_command(name: str) -> str:
    """The command that prints the internal load balancer address of gateway ``name`` (its Envoy Service in the
    operator's namespace, found by the owning-gateway label)."""
    return (f"kubectl get svc -n {GATEWAY_NAMESPACE} -l {OWNING_GATEWAY_LABEL}={name} -o jsonpath="
            "'{.items[0].status.loadBalancer.ingress[0].hostname}'")
