"""The operator's custom resources (InferenceEndpointConfig, JumpStartModel) built from the typed config.

``build_custom_resource`` is a pure function: config endpoint + the few values the AWS side hands over
(``EndpointWiring``) -> one Kubernetes object as a dict. ``EndpointChart`` wraps it (and any supporting objects) in a
cdk8s chart with an explicit name. The mapping follows DESIGN.md's table; field names are the CRD's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cdk8s
from constructs import Construct

from ..config.models import DataCapture, Endpoint, ModelPodCapture, SagemakerEndpointCapture
from .runtimes import MODEL_MOUNT, PRESETS, gpus_for_instance, runtime_args, runtime_env

API_VERSION = "inference.sagemaker.aws.amazon.com/v1"
MANAGED_BY = {"app.kubernetes.io/managed-by": "hyperpod-inference-cdk"}
DEFAULT_MODEL_VOLUME = "model-weights"


@dataclass(frozen=True)
class SecretRef:
    name: str
    key: str


@dataclass(frozen=True)
class EndpointWiring:
    """Values from the AWS side (and from the NVMe / token features) that one custom resource needs.
    Strings may be CDK tokens with ``manifests.delivery: kubectl``."""

    region: str
    capture_s3_uri: str | None = None
    capture_kms_key_id: str | None = None
    tls_output_s3_uri: str | None = None
    certificate_arn: str | None = None
    hosted_zone_id: str | None = None
    token_secret: SecretRef | None = None  # default: the endpoint's own token Secret (hf_token.token_secret_ref)
    service_account_name: str | None = None
    kubernetes_volumes: tuple[dict, ...] = ()
    init_containers: tuple[dict, ...] = ()
    model_volume_name: str | None = None  # daemonset cache: the hostPath volume the worker mounts
    extra_labels: dict[str, str] = field(default_factory=dict)


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# ------------------------------------------------------------------------------------------------------ data capture
def _content_types(header: Any) -> dict | None:
    if header is None:
        return None
    out = _drop_none({"csvContentTypes": header.csv_content_types, "jsonContentTypes": header.json_content_types})
    return out or None


def _tier_common(tier: SagemakerEndpointCapture | ModelPodCapture, kms_key_id: str | None) -> dict[str, Any]:
    return _drop_none({
        "enabled": True,
        "initialSamplingPercentage": tier.initial_sampling_percentage,
        "captureOptions": [{"captureMode": m} for m in tier.capture_modes],
        "kmsKeyId": kms_key_id,
        "captureContentTypeHeader": _content_types(tier.capture_content_type_header),
    })


def data_capture_spec(dc: DataCapture, *, s3_uri: str | None, kms_key_id: str | None) -> dict[str, Any]:
    """``spec.dataCapture``: s3Uri plus exactly the CRD's fields per tier (a disabled tier is ``{enabled: false}``)."""
    out: dict[str, Any] = {}
    if s3_uri:
        out["s3Uri"] = s3_uri
    t1 = dc.sagemaker_endpoint
    if t1 is not None:
        out["sagemakerEndpoint"] = _tier_common(t1, kms_key_id) if t1.enabled else {"enabled": False}
    t2 = dc.load_balancer
    if t2 is not None:
        out["loadBalancer"] = {"enabled": t2.enabled}
    t3 = dc.model_pod
    if t3 is not None:
        if t3.enabled:
            pod = _tier_common(t3, kms_key_id)
            buffer = _drop_none({"batchSize": t3.batch_size, "flushIntervalSeconds": t3.flush_interval_seconds})
            if buffer:
                pod["bufferConfig"] = buffer
            if t3.max_payload_size_kb is not None:
                pod["payloadConfig"] = {"maxPayloadSizeKB": t3.max_payload_size_kb}
            out["modelPod"] = pod
        else:
            out["modelPod"] = {"enabled": False}
    return out


# -------------------------------------------------------------------------------------------------------- tls / dns
def tls_dns_spec(ep: Endpoint, w: EndpointWiring) -> dict[str, Any]:
    if ep.domain_name is None:
        return {}
    if not w.certificate_arn:
        raise ValueError(f"endpoint {ep.namespace}/{ep.name}: domainName needs a certificate ARN")
    tls: dict[str, Any] = {"customCertificateConfig": {"acmArn": w.certificate_arn, "domainName": ep.domain_name}}
    if w.tls_output_s3_uri:
        tls["tlsCertificateOutputS3Uri"] = w.tls_output_s3_uri
    out: dict[str, Any] = {"tlsConfig": tls}
    if w.hosted_zone_id:
        out["dnsConfig"] = {"hostedZoneId": w.hosted_zone_id}
    return out


# ------------------------------------------------------------------------------------------------------------ worker
def _served_model_name(ep: Endpoint) -> str:
    return ep.model.huggingface.model_id if ep.model.huggingface else ep.name


def _model_path(ep: Endpoint) -> str | None:
    """Where the runtime should load from, or None when the runtime downloads natively (HF without prefetch)."""
    hf = ep.model.huggingface
    if hf is not None and not hf.prefetch and ep.weight_cache.mode != "daemonset":
        return None
    return MODEL_MOUNT


def worker_spec(ep: Endpoint, w: EndpointWiring) -> dict[str, Any]:
    runtime = ep.effective_runtime or "custom"
    preset = PRESETS.get(runtime)
    gpus = ep.resources.gpus if ep.resources and ep.resources.gpus is not None else gpus_for_instance(ep.instance_type)
    port = ep.port or (preset.port if preset else 8080)
    image = ep.image or (preset.image(w.region) if preset else None)
    assert image, "config validation guarantees an image for runtime: custom"
    model_path = _model_path(ep)
    args: list[str] = []
    env: dict[str, str] = {}
    command: list[str] | None = None
    if preset is not None:
        served = _served_model_name(ep) if preset.serves_model_name else None
        args = runtime_args(runtime, model_path=model_path, served_model_name=served, gpus=gpus, port=port)
        env = runtime_env(runtime, model_path=model_path, gpus=gpus, port=port)
        command = list(preset.command) or None
    args += list(ep.args or [])
    env.update(ep.env or {})
    quantities: dict[str, str] = {}
    if gpus:
        quantities["nvidia.com/gpu"] = str(gpus)
    if ep.resources and ep.resources.cpu:
        quantities["cpu"] = ep.resources.cpu
    if ep.resources and ep.resources.memory:
        quantities["memory"] = ep.resources.memory
    return _drop_none({
        "image": image,
        "command": command,
        "args": args or None,
        "environmentVariables": [{"name": k, "value": v} for k, v in env.items()] or None,
        "modelInvocationPort": {"containerPort": port, "name": "http"},
        "modelVolumeMount": {"name": w.model_volume_name or DEFAULT_MODEL_VOLUME, "mountPath": MODEL_MOUNT},
        "resources": {"requests": dict(quantities), "limits": dict(quantities)},
    })


# -------------------------------------------------------------------------------------------------------- model source
def model_source_spec(ep: Endpoint, w: EndpointWiring) -> dict[str, Any]:
    src = ep.model
    if ep.weight_cache.mode == "daemonset":
        # The node-local cache wins over the remote source: the init container fills the hostPath volume.
        return {"modelSourceType": "kubernetesVolume"}
    if src.s3 is not None:
        return {"modelSourceType": "s3",
                "s3Storage": {"bucketName": src.s3.bucket, "region": src.s3.region or w.region},
                "modelLocation": src.s3.prefix}
    if src.fsx is not None:
        return {"modelSourceType": "fsx", "fsxStorage": {"fileSystemId": src.fsx.file_system_id},
                "modelLocation": src.fsx.path}
    hf = src.huggingface
    assert hf is not None
    model: dict[str, Any] = {"modelId": hf.model_id}
    if hf.commit_sha:
        model["commitSHA"] = hf.commit_sha
    # The endpoint's own token (an existing Secret, or the one its Secrets Manager sync writes) unless the wiring
    # names another: a token in the config is never dropped.
    from .hf_token import token_secret_ref

    token = w.token_secret or token_secret_ref(ep)
    if token is not None:
        model["tokenSecretRef"] = {"name": token.name, "key": token.key}
    return {"modelSourceType": "huggingface", "huggingFaceModel": model, "prefetchEnabled": hf.prefetch}


def _weights_cache(ep: Endpoint) -> dict[str, Any] | None:
    if ep.weight_cache.mode != "operator":
        return None
    return {"weightsCache": {"enabled": True, "hostPath": ep.weight_cache.host_path}}


# ------------------------------------------------------------------------------------------------------ the resource
def build_custom_resource(ep: Endpoint, w: EndpointWiring) -> dict[str, Any]:
    """One InferenceEndpointConfig or JumpStartModel as a plain dict."""
    metadata = {"name": ep.name, "namespace": ep.namespace, "labels": {**MANAGED_BY, **w.extra_labels}}
    capture = None
    if ep.data_capture is not None and ep.data_capture.any_enabled:
        capture = data_capture_spec(ep.data_capture, s3_uri=w.capture_s3_uri, kms_key_id=w.capture_kms_key_id)
    if ep.is_jumpstart:
        js = ep.model.jumpstart
        assert js is not None
        spec: dict[str, Any] = {
            "model": _drop_none({"modelId": js.model_id, "acceptEula": js.accept_eula, "modelHubName": js.model_hub_name}),
            "server": {"instanceType": ep.instance_type},
            "replicas": ep.replicas,
        }
        if ep.sagemaker_endpoint_name:
            spec["sageMakerEndpoint"] = {"name": ep.sagemaker_endpoint_name}
    else:
        preset = PRESETS.get(ep.effective_runtime or "")
        spec = _drop_none({
            "modelName": ep.name,
            "endpointName": ep.sagemaker_endpoint_name,
            "instanceType": ep.instance_type,
            "replicas": ep.replicas,
            "invocationEndpoint": ep.invocation_endpoint or (preset.invocation_endpoint if preset else None),
            "modelSourceConfig": model_source_spec(ep, w),
            "worker": worker_spec(ep, w),
        })
        health = ep.health_check_path or (preset.health_path if preset else None)
        if health:
            spec["loadBalancer"] = {"healthCheckPath": health}
        kubernetes = _drop_none({
            "serviceAccountName": w.service_account_name,
            "volumes": list(w.kubernetes_volumes) or None,
            "initContainers": list(w.init_containers) or None,
        })
        if kubernetes:
            spec["kubernetes"] = kubernetes
    cache = _weights_cache(ep)
    if cache:
        spec["modelCacheConfig"] = cache
    if capture:
        spec["dataCapture"] = capture
    spec.update(tls_dns_spec(ep, w))
    return {"apiVersion": API_VERSION, "kind": ep.kind, "metadata": metadata, "spec": spec}


def add_object(chart: cdk8s.Chart, obj: dict[str, Any]) -> cdk8s.ApiObject:
    """A plain dict as a cdk8s ApiObject, name and namespace kept verbatim (cdk8s takes no ``spec=``)."""
    meta = obj["metadata"]
    api = cdk8s.ApiObject(
        chart, f"{obj['kind']}-{meta.get('namespace', '')}-{meta['name']}",
        api_version=obj["apiVersion"], kind=obj["kind"],
        metadata=cdk8s.ApiObjectMetadata(name=meta["name"], namespace=meta.get("namespace"),
                                         labels=meta.get("labels"), annotations=meta.get("annotations")),
    )
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata"):
            api.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
    return api


class EndpointChart(cdk8s.Chart):
    """The custom resource of one endpoint (supporting objects live in their own charts, applied first)."""

    def __init__(self, scope: Construct, construct_id: str, *, endpoint: Endpoint, wiring: EndpointWiring) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        self.endpoint = endpoint
        self.resource = build_custom_resource(endpoint, wiring)
        self.api_object = add_object(self, self.resource)


def add_objects(chart: cdk8s.Chart, objs: Sequence[dict[str, Any]]) -> list[cdk8s.ApiObject]:
    return [add_object(chart, o) for o in objs]
