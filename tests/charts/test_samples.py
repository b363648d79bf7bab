"""The operator's upstream samples (aws/sagemaker-hyperpod-cli PR #413: what users write by hand today), each
expressed as a config endpoint and built with ``build_custom_resource``: the spec equals the sample's on every field
except those in the reviewed allowed-difference table below (field -> reason). A sample the config cannot express
fails here (it is not skipped)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from hyperpod_inference.charts.endpoint import EndpointWiring, SecretRef, build_custom_resource
from hyperpod_inference.config import parse_config
from tests.k8s_validation import crd_errors, require_crds
from tests.synth_helpers import DEFAULT_CONFIG

BASE = yaml.safe_load(DEFAULT_CONFIG.read_text())
BASE["endpoints"][0].pop("autoScalingSpec")  # the default config's own trigger: each test sets what it tests

# Placeholders in the samples, replaced (in the sample and the config alike) by values the config accepts.
PLACEHOLDERS = {
    "<ACCOUNT_ID>.dkr.ecr.<REGION>.amazonaws.com/<YOUR_LMCACHE_IMAGE>":
        "111122223333.dkr.ecr.us-east-2.amazonaws.com/lmcache-vllm:1",
    "<YOUR_MODEL_BUCKET>": "my-models",
    "<YOUR_TLS_BUCKET>": "my-tls-bucket",
    "<YOUR_HYPERPOD_NODE>": "hyperpod-i-0123456789abcdef0",
}
MIB = {"memory": "96Gi", "cpu": "16"}
G4 = {"nvidia.com/gpu": "4"}
HF_MISTRAL = {"huggingface": {"modelId": "mistralai/Mistral-7B-Instruct-v0.3",
                              "token": {"kubernetesSecret": {"name": "token-test", "key": "token"}}}}
TGI_ENV = {"PORT": "8080", "MAX_INPUT_LENGTH": "4096", "MAX_TOTAL_TOKENS": "8192"}
LMCACHE_ENV = {"PYTHONHASHSEED": "123", "PROMETHEUS_MULTIPROC_DIR": "/tmp", "VLLM_REQUEST_TIMEOUT": "600"}
DJL_ENV = {"OPTION_ROLLING_BATCH": "vllm", "SERVING_CHUNKED_READ_TIMEOUT": "480", "DJL_OFFLINE": "true",
           "NUM_SHARD": "1"}
DJL_ENV_TAIL = {"MODEL_CACHE_ROOT": "/opt/ml/model", "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
                "SAGEMAKER_MODEL_SERVER_TIMEOUT": "3600", "OPTION_TRUST_REMOTE_CODE": "true"}
REASONING_ENV = {"PYTHONHASHSEED": "123", **DJL_ENV, "SAGEMAKER_PROGRAM": "inference.py",
                 "SAGEMAKER_SUBMIT_DIRECTORY": "/opt/ml/model/code", **DJL_ENV_TAIL, "OPTION_ENABLE_REASONING": "true",
                 "OPTION_REASONING_PARSER": "deepseek_r1", "SAGEMAKER_CONTAINER_LOG_LEVEL": "20", "SAGEMAKER_ENV": "1"}
QWEN_VL_ARGS = ["/opt/ml/model", "--max-model-len", "15000", "--tensor-parallel-size", "1"]
QWEN_VL_RES = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "6", "memory": "30Gi", "nvidia.com/gpu": "1"}}
HOST_AFFINITY = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["hyperpod-i-0123456789abcdef0"]}]}]}}
LMCACHE_KV = {"enableL1Cache": True, "enableL2Cache": False,
              "l2CacheSpec": {"l2CacheBackend": "redis", "l2CacheLocalUrl": "redis://redis.default.svc.cluster.local:6379"}}


def probe(delay: int, period: int, timeout: int, failures: int, successes: int | None = None) -> dict:
    out = {"httpGet": {"path": "/health", "port": 8000}, "initialDelaySeconds": delay, "periodSeconds": period,
           "timeoutSeconds": timeout, "failureThreshold": failures}
    if successes is not None:
        out["successThreshold"] = successes
    return out


PROBES = {"livenessProbe": probe(60, 15, 5, 3), "readinessProbe": probe(30, 10, 3, 3, 1),
          "startupProbe": probe(0, 20, 5, 30)}


def custom(image: str, port: int, **more: Any) -> dict:
    return {"runtime": "custom", "image": image, "port": port, **more}


def qwen_vl(**more: Any) -> dict:
    """The six NVMe samples: Qwen2.5-VL on one node, weights on its instance store (weightCache: daemonset)."""
    return {"instanceType": None, "nodeAffinity": HOST_AFFINITY, "replicas": 1,
            "invocationEndpoint": "v1/chat/completions", "healthCheckPath": "/health",
            **custom("lmcache/vllm-openai:latest", 8000, args=QWEN_VL_ARGS, resources=QWEN_VL_RES,
                     env={"PYTHONHASHSEED": "123", "VLLM_REQUEST_TIMEOUT": "600"}),
            "weightCache": {"mode": "daemonset"}, **more}


def qwen_vl_s3(prefetch: bool | None) -> dict:
    s3 = {"bucket": "my-models", "prefix": "Qwen2.5-VL-7B-Instruct/", "region": "us-east-2"}
    return {"s3": s3 if prefetch is None else {**s3, "prefetch": prefetch}}


# sample file -> (endpoint keys on top of the default endpoint, wiring changes)
FIXTURES: dict[str, tuple[dict, dict]] = {
    "v1_huggingface_mistral7b.yaml": ({
        "name": "mistral-7b", "instanceType": "ml.g5.24xlarge", "invocationEndpoint": "v1/chat/completions",
        "model": {"huggingface": {**HF_MISTRAL["huggingface"], "prefetch": True}},
        **custom("ghcr.io/huggingface/text-generation-inference:2.4.1", 8080, env=TGI_ENV,
                 resources={"requests": {**G4, **MIB}, "limits": {**G4, **MIB}})}, {}),
    "v1_huggingface_mistral7b_noprefetch.yaml": ({
        "name": "mistral-7b", "instanceType": "ml.g5.24xlarge", "invocationEndpoint": "v1/chat/completions",
        "model": {"huggingface": {**HF_MISTRAL["huggingface"], "prefetch": False}},
        **custom("ghcr.io/huggingface/text-generation-inference:2.4.1", 8080, env=TGI_ENV,
                 resources={"requests": {**G4, **MIB}, "limits": {**G4, **MIB}})}, {}),
    "v1_huggingface_mistral7b_sglang.yaml": ({
        "name": "mistral-7b", "instanceType": "ml.g5.24xlarge", "invocationEndpoint": "v1/chat/completions",
        "model": {"huggingface": {**HF_MISTRAL["huggingface"], "prefetch": False}},
        **custom("lmsysorg/sglang:latest", 30000, resources={"requests": {**G4, **MIB}, "limits": {**G4, **MIB}},
                 args=["python3", "-m", "sglang.launch_server", "--port", "30000", "--host", "0.0.0.0", "--tp", "4"])},
        {}),
    "v1_huggingface_mistral7b_sglang_prefetch.yaml": ({
        "name": "mistral-7b", "instanceType": "ml.g5.24xlarge", "invocationEndpoint": "v1/chat/completions",
        "model": {"huggingface": {**HF_MISTRAL["huggingface"], "prefetch": True}},
        **custom("lmsysorg/sglang:latest", 30000, resources={"requests": {**G4, **MIB}, "limits": {**G4, **MIB}},
                 args=["python3", "-m", "sglang.launch_server", "--model-path", "/opt/ml/model", "--port", "30000",
                       "--host", "0.0.0.0", "--tp", "4", "--served-model-name", "mistralai/Mistral-7B-Instruct-v0.3"])},
        {}),
    "v1_huggingface_mistral7b_vllm.yaml": ({
        "name": "mistral-7b", "instanceType": "ml.g5.24xlarge", "invocationEndpoint": "v1/chat/completions",
        "model": {"huggingface": {**HF_MISTRAL["huggingface"], "prefetch": False}},
        **custom("vllm/vllm-openai:v0.8.4", 8000, env={"VLLM_REQUEST_TIMEOUT": "600"},
                 resources={"requests": {**G4, **MIB}, "limits": {**G4, **MIB}},
                 args=["--port", "8000", "--tensor-parallel-size", "4", "--download-dir", "/opt/ml/model"])}, {}),
    "v1_huggingface_mistral7b_vllm_prefetch.yaml": ({
        "name": "mistral-7b", "instanceType": "ml.g5.24xlarge", "invocationEndpoint": "v1/chat/completions",
        "model": {"huggingface": {**HF_MISTRAL["huggingface"], "prefetch": True}},
        **custom("vllm/vllm-openai:v0.8.4", 8000, env={"VLLM_REQUEST_TIMEOUT": "600"},
                 resources={"requests": {**G4, **MIB}, "limits": {**G4, **MIB}},
                 args=["--model", "/opt/ml/model", "--port", "8000", "--tensor-parallel-size", "4",
                       "--served-model-name", "mistralai/Mistral-7B-Instruct-v0.3"])}, {}),
    "v1_huggingface_qwen_1.5b.yaml": ({
        "name": "qwen-1-5b", "sagemakerEndpointName": "hf-qwen-1-5b-endpoint-test", "instanceType": "ml.g5.8xlarge",
        "invocationEndpoint": "v1/chat/completions",
        "model": {"huggingface": {"modelId": "Qwen/Qwen2.5-1.5B-Instruct", "prefetch": False}},
        **custom("ghcr.io/huggingface/text-generation-inference:2.4.1", 8080,
                 env={"PORT": "8080", "MAX_INPUT_LENGTH": "2048", "MAX_TOTAL_TOKENS": "4096"},
                 resources={"requests": {"nvidia.com/gpu": "1", "memory": "16Gi", "cpu": "4"},
                            "limits": {"nvidia.com/gpu": "1", "memory": "16Gi", "cpu": "4"}})},
        {"token_secret": None}),
    "v1_iec_byo_certificate.yaml": ({
        "name": "test-model", "sagemakerEndpointName": "byo-cert-test-endpoint", "instanceType": "ml.g5.2xlarge",
        "replicas": 1, "invocationEndpoint": "invocations", "domainName": "api.example.com",
        "model": {"s3": {"bucket": "my-hyperpod-tls-bucket", "prefix": "models/tinyllama", "region": "us-east-2",
                         "prefetch": True}},
        "metrics": {"enabled": True}, "healthCheckPath": "/ping",
        **custom("763104351884.dkr.ecr.us-east-2.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124", 8080,
                 env={**DJL_ENV, **DJL_ENV_TAIL},
                 resources={"requests": {"cpu": "6", "memory": "24Gi", "nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}})},
        {"certificate_arn": "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012",
         "tls_output_s3_uri": "s3://my-hyperpod-tls-bucket/certs/", "hosted_zone_id": None}),
    "v1_iec_deepseek1.5b_with_probes.yaml": ({
        "name": "deepseek-15b", "sagemakerEndpointName": "deepseek-15b", "instanceType": "ml.p4d.24xlarge",
        "replicas": 1, "invocationEndpoint": "v1/chat/completions",
        "model": {"s3": {"bucket": "my-models", "prefix": "deepseek-15b", "region": "us-west-2", "prefetch": True}},
        "metrics": {"enabled": True, "modelMetrics": {"port": 8000}}, "healthCheckPath": "/health",
        **custom("lmcache/vllm-openai:v0.3.7", 8000, env={**LMCACHE_ENV, "MODEL_PORT": "8000"},
                 args=["/opt/ml/model", "--port", "8000", "--max-model-len", "8000"],
                 resources={"requests": {"cpu": "11000m", "memory": "15Gi", "nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}},
                 probes=PROBES)}, {}),
    "v1_iec_llama70b_with_probes.yaml": ({
        "name": "llama-70b", "sagemakerEndpointName": "llama-70b", "instanceType": "ml.p4d.24xlarge", "replicas": 1,
        "invocationEndpoint": "v1/chat/completions",
        "model": {"s3": {"bucket": "my-models", "prefix": "llama-70b", "region": "us-west-2", "prefetch": True}},
        "metrics": {"enabled": True, "modelMetrics": {"port": 8000}}, "healthCheckPath": "/health",
        **custom("lmcache/vllm-openai:v0.3.7", 8000, env={**LMCACHE_ENV, "MODEL_PORT": "8000"},
                 args=["/opt/ml/model", "--port", "8000", "--max-model-len", "4096", "--tensor-parallel-size", "4"],
                 resources={"requests": {"cpu": "11000m", "memory": "150Gi", "nvidia.com/gpu": 4},
                            "limits": {"nvidia.com/gpu": 4}},
                 probes=PROBES)}, {}),
    "v1_qwen3_8b_multi_node_instance.yaml": ({
        "name": "llama-3-1-8b-instruct", "instanceType": None, "instanceTypes": ["ml.p4d.24xlarge", "ml.g5.12xlarge"],
        "replicas": 10, "invocationEndpoint": "v1/chat/completions",
        "intelligentRoutingSpec": {"enabled": False, "routingStrategy": "prefixaware"},
        "model": {"s3": {"bucket": "my-models", "prefix": "Llama-3.1-8B-Instruct", "region": "us-west-2",
                         "prefetch": False}},
        "kvCacheSpec": LMCACHE_KV, "metrics": {"enabled": True, "modelMetrics": {"port": 8000}},
        "healthCheckPath": "/health",
        **custom("lmcache/vllm-openai:latest", 8000, env=LMCACHE_ENV,
                 args=["/opt/ml/model", "--max-model-len", "15000", "--tensor-parallel-size", "1"],
                 resources={"limits": {"nvidia.com/gpu": "1"},
                            "requests": {"cpu": "6", "memory": "30Gi", "nvidia.com/gpu": "1"}})},
        {"tls_output_s3_uri": "s3://my-tls-bucket"}),
    "v1_qwen3_8b_node_affnity.yaml": ({
        "name": "llama-3-1-8b-instruct", "instanceType": None, "replicas": 6, "invocationEndpoint": "v1/chat/completions",
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In",
                 "values": ["ml.g5.16xlarge", "ml.g5.12xlarge", "ml.g5.8xlarge"]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-2a", "us-east-2b"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["ml.g5.8xlarge"]}]}},
                {"weight": 50, "preference": {"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-2a"]}]}}]},
        "intelligentRoutingSpec": {"enabled": False, "routingStrategy": "prefixaware"},
        "model": {"s3": {"bucket": "my-models", "prefix": "Llama-3.1-8B-Instruct", "region": "us-east-2",
                         "prefetch": False}},
        "kvCacheSpec": LMCACHE_KV, "metrics": {"enabled": True, "modelMetrics": {"port": 8000}},
        "healthCheckPath": "/health",
        **custom("lmcache/vllm-openai:latest", 8000, env=LMCACHE_ENV,
                 args=["/opt/ml/model", "--max-model-len", "15000", "--tensor-parallel-size", "1"],
                 resources={"limits": {"nvidia.com/gpu": "1"},
                            "requests": {"cpu": "6", "memory": "30Gi", "nvidia.com/gpu": "1"}})},
        {"tls_output_s3_uri": "s3://my-tls-bucket"}),
    "v1_s3_llama70b_IR_L1_L2_membrain.yaml": ({
        "name": "llama-3-1-8b-instruct", "instanceType": "ml.p5.48xlarge", "replicas": 7,
        "invocationEndpoint": "v1/chat/completions",
        "model": {"s3": {"bucket": "my-models", "prefix": "models/Llama-3.1-70B-Instruct", "region": "us-east-2",
                         "prefetch": False}},
        "kvCacheSpec": {"enableL1Cache": True, "enableL2Cache": True, "l2CacheSpec": {"l2CacheBackend": "tieredstorage"}},
        "intelligentRoutingSpec": {"enabled": True, "routingStrategy": "prefixaware"},
        "metrics": {"enabled": True, "modelMetrics": {"port": 8000}}, "healthCheckPath": "/health",
        **custom(PLACEHOLDERS["<ACCOUNT_ID>.dkr.ecr.<REGION>.amazonaws.com/<YOUR_LMCACHE_IMAGE>"], 8000,
                 args=["/opt/ml/model", "--max-model-len", "12000"], env=REASONING_ENV,
                 resources={"limits": {"nvidia.com/gpu": "8", "cpu": "48", "memory": "100Gi"},
                            "requests": {"cpu": "48", "memory": "100Gi", "nvidia.com/gpu": "8"}})},
        {"tls_output_s3_uri": "s3://my-tls-bucket/certificates"}),
    "v1_s3_llama8b_IR_L1Cache.yaml": ({
        "name": "llama-3-1-8b-instruct", "instanceType": "ml.g5.48xlarge", "replicas": 3,
        "invocationEndpoint": "v1/chat/completions",
        "model": {"s3": {"bucket": "my-models", "prefix": "models/Llama-3.1-8B-Instruct", "region": "us-east-2",
                         "prefetch": False}},
        "kvCacheSpec": {"enableL1Cache": True},
        "intelligentRoutingSpec": {"enabled": True, "routingStrategy": "prefixaware"},
        "metrics": {"enabled": True, "modelMetrics": {"port": 8000}}, "healthCheckPath": "/health",
        **custom("lmcache/vllm-openai:v0.3.7", 8000, args=["/opt/ml/model", "--max-model-len", "12000"],
                 env=REASONING_ENV,
                 resources={"limits": {"nvidia.com/gpu": "4"},
                            "requests": {"cpu": "6", "memory": "30Gi", "nvidia.com/gpu": "4"}})},
        {"tls_output_s3_uri": "s3://my-tls-bucket/certificates"}),
    "v1_nvme_k8s_volume.yaml": (qwen_vl(name="case1-3-k8s-volume", sagemakerEndpointName="case1-3-k8s-volume",
                                        model=qwen_vl_s3(None)), {}),
    "v1_nvme_k8s_volume_service_account.yaml": (qwen_vl(name="case2-3-k8s-volume-sa",
                                                        sagemakerEndpointName="case2-3-k8s-volume-sa",
                                                        model=qwen_vl_s3(None)), {}),
    "v1_nvme_s3_prefetch_off.yaml": (qwen_vl(name="case1-1-s3-prefetch-off", sagemakerEndpointName="case1-1-s3-prefetch-off",
                                             model=qwen_vl_s3(False)), {}),
    "v1_nvme_s3_prefetch_off_fallback.yaml": (qwen_vl(name="case2-1-s3-prefetch-off-fallback",
                                                      sagemakerEndpointName="case2-1-s3-prefetch-off-fallback",
                                                      model=qwen_vl_s3(False)), {}),
    "v1_nvme_s3_prefetch_on.yaml": (qwen_vl(name="case1-2-s3-prefetch-on", sagemakerEndpointName="case1-2-s3-prefetch-on",
                                            model=qwen_vl_s3(True)), {}),
    "v1_nvme_s3_prefetch_on_fallback.yaml": (qwen_vl(name="case2-2-s3-prefetch-on-fallback",
                                                     sagemakerEndpointName="case2-2-s3-prefetch-on-fallback",
                                                     model=qwen_vl_s3(True)), {}),
}
NVME = {name for name in FIXTURES if name.startswith("v1_nvme_")}
# The NVMe samples hand-write what weightCache: daemonset generates (hostPath volume, init container, service
# account), so these are compared everywhere else.
NVME_EXCLUDED = ("spec.kubernetes", "spec.modelSourceConfig.modelSourceType", "spec.worker.modelVolumeMount.name")

_MODEL_NAME = "the library writes the endpoint's name as modelName (one name for the resource and the SageMaker " \
              "model); the sample's is not a Kubernetes name"
_TLS = "tlsConfig is derived: the library writes it only with a custom domain (the operator's own TLS bucket " \
       "serves the rest)"
_EMPTY = "an empty list is not written (same meaning: no variables)"
_DAEMONSET_S3 = "with weightCache: daemonset the weights reach the pod as kubernetesVolume; the node agent reads the " \
                "bucket (the NVMe samples keep s3Storage beside their hand-written volume)"
_OPERATOR_TLS = "not expressible per endpoint without a custom domain: the operator add-on's TLS bucket " \
                "(operator.tlsBucketName) is used instead"
# (sample or "*", spec path) -> reason. Every entry must be used by at least one sample.
ALLOWED: dict[tuple[str, str], str] = {
    ("*", "spec.replicas"): "the library always writes replicas (the config's default 1 is the CRD's default)",
    ("v1_qwen3_8b_multi_node_instance.yaml", "spec.modelName"): _MODEL_NAME,
    ("v1_qwen3_8b_node_affnity.yaml", "spec.modelName"): _MODEL_NAME,
    ("v1_s3_llama70b_IR_L1_L2_membrain.yaml", "spec.modelName"): _MODEL_NAME,
    ("v1_s3_llama8b_IR_L1Cache.yaml", "spec.modelName"): _MODEL_NAME,
    **{(n, "spec.modelName"): _MODEL_NAME for n in NVME},
    ("v1_qwen3_8b_multi_node_instance.yaml", "spec.tlsConfig"): _OPERATOR_TLS,
    ("v1_qwen3_8b_node_affnity.yaml", "spec.tlsConfig"): _OPERATOR_TLS,
    ("v1_s3_llama70b_IR_L1_L2_membrain.yaml", "spec.tlsConfig"): _OPERATOR_TLS,
    ("v1_s3_llama8b_IR_L1Cache.yaml", "spec.tlsConfig"): _OPERATOR_TLS,
    ("v1_huggingface_mistral7b_sglang.yaml", "spec.worker.environmentVariables"): _EMPTY,
    ("v1_huggingface_mistral7b_sglang_prefetch.yaml", "spec.worker.environmentVariables"): _EMPTY,
    **{(n, "spec.modelSourceConfig.s3Storage"): _DAEMONSET_S3 for n in NVME if "_s3_" in n},
    # corrections of defects the rules refuse (samples/README.md)
    ("v1_qwen3_8b_node_affnity.yaml",
     "spec.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key"):
        "corrected: the sample's label node.kubernetes.io/instanceType does not exist (the config refuses it); "
        "node.kubernetes.io/instance-type",
    ("v1_s3_llama70b_IR_L1_L2_membrain.yaml", "spec.worker.resources.requests.memory"):
        "corrected: the sample requests 512Gi above its 100Gi limit (Kubernetes refuses the pod); requested 100Gi",
    ("v1_s3_llama70b_IR_L1_L2_membrain.yaml", "spec.worker.resources.requests.nvidia.com/gpu"):
        "corrected: the sample requests 4 GPUs against a limit of 8 (an extended resource needs request = limit); "
        "requested 8, all of ml.p5.48xlarge",
}


def samples_dir() -> Path:
    return require_crds().parent / "samples" / "pr413"


def load_sample(name: str) -> dict:
    text = (samples_dir() / name).read_text()
    if text.startswith("@@"):  # the byo-certificate sample starts with a stray diff header line
        text = text.split("\n", 1)[1]
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    return yaml.safe_load(text)


def build(name: str) -> dict:
    changes, wiring_changes = FIXTURES[name]
    data = copy.deepcopy(BASE)
    ep = data["endpoints"][0]
    for key in ("dataCapture", "domainName", "verify", "weightCache", "sagemakerEndpointName"):
        ep.pop(key, None)
    ep["namespace"] = "inference"
    for key, value in changes.items():
        if value is None:
            ep.pop(key, None)
        else:
            ep[key] = copy.deepcopy(value)
    data["domain"] = {"zoneName": "example.com"}
    endpoint = parse_config(data).endpoints[0]
    wiring = {"region": "us-west-2", "token_secret": SecretRef("token-test", "token")}
    wiring.update(wiring_changes)
    return build_custom_resource(endpoint, EndpointWiring(**wiring))


def flatten(node: Any, prefix: str) -> dict[str, Any]:
    """Leaves by dotted path (list items by index; an empty list or map is a leaf)."""
    if isinstance(node, dict) and node:
        return {k: v for key, value in node.items() for k, v in flatten(value, f"{prefix}.{key}").items()}
    if isinstance(node, list) and node and isinstance(node[0], dict):
        return {k: v for i, value in enumerate(node) for k, v in flatten(value, f"{prefix}[{i}]").items()}
    return {prefix: node}


def differences(name: str) -> dict[str, tuple[Any, Any]]:
    ours, theirs = flatten(build(name)["spec"], "spec"), flatten(load_sample(name)["spec"], "spec")
    out = {}
    for path in sorted(set(ours) | set(theirs)):
        if ours.get(path, "<absent>") != theirs.get(path, "<absent>"):
            if name in NVME and any(path == p or path.startswith(p + ".") or path.startswith(p + "[")
                                    for p in NVME_EXCLUDED):
                continue
            out[path] = (ours.get(path, "<absent>"), theirs.get(path, "<absent>"))
    return out


def _allowed(name: str, path: str) -> bool:
    return any((n in (name, "*")) and (path == p or path.startswith(p + ".") or path.startswith(p + "["))
               for n, p in ALLOWED)


def test_every_upstream_sample_has_a_fixture():
    assert sorted(FIXTURES) == sorted(p.name for p in samples_dir().glob("v1_*.yaml"))
    assert len(FIXTURES) == 20 and len(NVME) == 6


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_config_expresses_the_sample_up_to_the_reviewed_differences(name):
    # GIVEN the sample's fixture WHEN built THEN its spec equals the sample's outside the allowed-difference table
    unexplained = {p: d for p, d in differences(name).items() if not _allowed(name, p)}
    assert unexplained == {}


@pytest.mark.parametrize("name", sorted(FIXTURES))
@pytest.mark.parametrize("version", ["v3.2", "v3.3"])
def test_each_sample_fixture_validates_strictly(name, version):
    assert crd_errors(build(name), version) == []


def test_every_allowed_difference_is_used_and_has_a_reason():
    # GIVEN the table WHEN every sample is compared THEN each entry explains a real difference (no stale entries)
    diffs = {name: differences(name) for name in FIXTURES}
    used = {(n, p) for n, p in ALLOWED for name in (FIXTURES if n == "*" else [n]) for path in diffs[name]
            if path == p or path.startswith(p + ".") or path.startswith(p + "[")}
    assert set(ALLOWED) - used == set()
    assert all(len(reason) > 20 for reason in ALLOWED.values())
