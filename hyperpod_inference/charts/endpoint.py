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

from ..config.base import dump
from ..config.models import DataCapture, Endpoint, ModelPodCapture, SagemakerEndpointCapture
from ..config.worker_env import EnvFrom
from ..facts.naming import MANAGED_BY
from ..facts.operator import API_VERSION
from ..facts.production import NVIDIA_GPU
from ..plan.cache import SecretRef
from ..plan.endpoints import token_secret_ref
from .overrides import apply_spec_overrides
from .runtimes import MODEL_MOUNT, PRESETS, runtime_args, runtime_env

DEFAULT_MODEL_VOLUME = "model-weights"


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
    return ep.served_model_name or ep.name


def _model_path(ep: Endpoint) -> str | None:
    """Where the runtime should load from, or None when the runtime downloads natively (HF without prefetch)."""
    hf = ep.model.huggingface
    if hf is not None and not hf.prefetch and ep.weight_cache.mode != "daemonset":
        return None
    return MODEL_MOUNT


def _env_item(name: str, value: str | EnvFrom) -> dict[str, Any]:
    if isinstance(value, EnvFrom):
        return {"name": name, "valueFrom": dump(value.value_from)}
    return {"name": name, "value": value}


def _resources(ep: Endpoint) -> dict[str, Any]:
    """requests / limits: the shorthand gives request = limit; the detailed form is taken as written. The
    accelerators the instance table implies are added to both unless the config names them."""
    resource, count = ep.accelerators
    res = ep.resources
    if res is not None and res.detailed:
        requests, limits = dict(res.requests or {}), dict(res.limits or {})
        named = set(requests) | set(limits)
        if count and resource not in named:
            requests[resource] = limits[resource] = str(count)
        return {"requests": requests, "limits": limits}
    quantities: dict[str, str] = {}
    if count:
        quantities[resource] = str(count)
    if res and res.cpu:
        quantities["cpu"] = res.cpu
    if res and res.memory:
        quantities["memory"] = res.memory
    return {"requests": dict(quantities), "limits": dict(quantities)}


def worker_spec(ep: Endpoint, w: EndpointWiring) -> dict[str, Any]:
    runtime = ep.effective_runtime or "custom"
    preset = PRESETS.get(runtime)
    resource, count = ep.accelerators
    gpus = count if resource == NVIDIA_GPU else 0
    port = ep.port or (preset.port if preset else 8080)
    image = ep.image or (preset.image(w.region) if preset else None)
    assert image, "config validation guarantees an image for runtime: custom"
    model_path = _model_path(ep)
    args: list[str] = []
    env: dict[str, Any] = {}
    command: list[str] | None = list(ep.command) if ep.command else None
    if preset is not None:
        served = _served_model_name(ep) if preset.serves_model_name else None
        args = runtime_args(runtime, model_path=model_path, served_model_name=served, gpus=gpus, port=port)
        env = dict(runtime_env(runtime, model_path=model_path, gpus=gpus, port=port))
        command = list(preset.command) or None
    args += list(ep.args or [])
    env.update(ep.env or {})
    return _drop_none({
        "image": image,
        "command": command,
        "args": args or None,
        "workingDir": ep.working_dir,
        "environmentVariables": [_env_item(k, v) for k, v in env.items()] or None,
        "modelInvocationPort": {"containerPort": port, "name": ep.port_name or "http"},
        "modelVolumeMount": {"name": w.model_volume_name or DEFAULT_MODEL_VOLUME, "mountPath": MODEL_MOUNT},
        "resources": _resources(ep),
        "probes": dump(ep.probes),
        "requestLimits": dump(ep.request_limits),
    })


# -------------------------------------------------------------------------------------------------------- model source
def model_source_spec(ep: Endpoint, w: EndpointWiring) -> dict[str, Any]:
    src = ep.model
    if ep.weight_cache.mode == "daemonset":
        # The node-local cache wins over the remote source: the init container fills the hostPath volume.
        prefetch = src.s3.prefetch if src.s3 else src.fsx.prefetch if src.fsx else None
        return _drop_none({"modelSourceType": "kubernetesVolume", "prefetchEnabled": prefetch})
    if src.s3 is not None:
        return _drop_none({"modelSourceType": "s3",
                           "s3Storage": {"bucketName": src.s3.bucket, "region": src.s3.region or w.region},
                           "modelLocation": src.s3.prefix, "prefetchEnabled": src.s3.prefetch})
    if src.fsx is not None:
        return _drop_none({"modelSourceType": "fsx", "fsxStorage": {"fileSystemId": src.fsx.file_system_id},
                           "modelLocation": src.fsx.path, "prefetchEnabled": src.fsx.prefetch})
    hf = src.huggingface
    assert hf is not None
    model: dict[str, Any] = {"modelId": hf.model_id}
    if hf.commit_sha:
        model["commitSHA"] = hf.commit_sha
    # The endpoint's own token (an existing Secret, or the one its Secrets Manager sync writes) unless the wiring
    # names another: a token in the config is never dropped.
    token = w.token_secret or token_secret_ref(ep)
    if token is not None:
        model["tokenSecretRef"] = {"name": token.name, "key": token.key}
    return {"modelSourceType": "huggingface", "huggingFaceModel": model, "prefetchEnabled": hf.prefetch}


def _model_cache(ep: Endpoint) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if ep.weight_cache.mode == "operator":
        out["weightsCache"] = {"enabled": True, "hostPath": ep.weight_cache.host_path}
    if ep.image_cache is not None:
        out["imageCache"] = dump(ep.image_cache)
    return out or None


def _load_balancer(ep: Endpoint, default_health: str | None) -> dict[str, Any] | None:
    out = dump(ep.load_balancer) or {}
    health = ep.health_check_path or out.get("healthCheckPath") or default_health
    if health:
        out = {"healthCheckPath": health, **{k: v for k, v in out.items() if k != "healthCheckPath"}}
    return out or None


def _metrics(ep: Endpoint, port: int | None) -> dict[str, Any] | None:
    """``metrics`` as given; enabled without ``modelMetrics.port`` gets the runtime's port (the CRD's default 8080
    is not where vLLM and SGLang serve their metrics)."""
    out = dump(ep.metrics)
    if out is None or ep.metrics is None:
        return None
    if ep.metrics.enabled is not False and port is not None and (
            ep.metrics.model_metrics is None or ep.metrics.model_metrics.port is None):
        out["modelMetrics"] = {**out.get("modelMetrics", {}), "port": port}
    return out


def _production_common(ep: Endpoint) -> dict[str, Any]:
    """Fields both kinds share, each written only when the config sets it."""
    return _drop_none({
        "autoScalingSpec": dump(ep.auto_scaling_spec),
        "intelligentRoutingSpec": dump(ep.intelligent_routing_spec),
        "kvCacheSpec": dump(ep.kv_cache_spec),
        "maxDeployTimeInSeconds": ep.max_deploy_time_in_seconds,
        "inferenceGateway": dump(ep.inference_gateway),
    })


# ------------------------------------------------------------------------------------------------------ the resource
def build_custom_resource(ep: Endpoint, w: EndpointWiring) -> dict[str, Any]:
    """One InferenceEndpointConfig or JumpStartModel as a plain dict (``specOverrides`` merged in last)."""
    metadata = {"name": ep.name, "namespace": ep.namespace, "labels": {**MANAGED_BY, **w.extra_labels}}
    capture = None
    if ep.data_capture is not None and ep.data_capture.any_enabled:
        capture = data_capture_spec(ep.data_capture, s3_uri=w.capture_s3_uri, kms_key_id=w.capture_kms_key_id)
    if ep.is_jumpstart:
        js = ep.model.jumpstart
        assert js is not None
        validations = None
        if ep.accelerator_partition_validation is not None:
            validations = {"acceleratorPartitionValidation": ep.accelerator_partition_validation}
        spec: dict[str, Any] = {
            "model": _drop_none({"modelId": js.model_id, "acceptEula": js.accept_eula, "modelHubName": js.model_hub_name,
                                 "modelVersion": js.model_version,
                                 "additionalConfigs": [dump(c) for c in js.additional_configs]
                                 if js.additional_configs is not None else None,
                                 "gatedModelDownloadRole": js.gated_model_download_role}),
            "server": _drop_none({"instanceType": ep.instance_type,
                                  "acceleratorPartitionType": ep.accelerator_partition_type,
                                  "executionRole": ep.execution_role, "validations": validations}),
            "replicas": ep.replicas,
        }
        if ep.sagemaker_endpoint_name:
            spec["sageMakerEndpoint"] = {"name": ep.sagemaker_endpoint_name}
        if ep.env:
            spec["environmentVariables"] = [{"name": k, "value": v} for k, v in ep.env.items()]
        lb = _load_balancer(ep, None)
        if lb:
            spec["loadBalancer"] = lb
        spec.update(_production_common(ep))
        metrics = _metrics(ep, None)
        if metrics is not None:
            spec["metrics"] = metrics
    else:
        preset = PRESETS.get(ep.effective_runtime or "")
        worker = worker_spec(ep, w)
        spec = _drop_none({
            "modelName": ep.name,
            "endpointName": ep.sagemaker_endpoint_name,
            "instanceType": ep.instance_type,
            "instanceTypes": list(ep.instance_types) if ep.instance_types else None,
            "nodeAffinity": dump(ep.node_affinity),
            "replicas": ep.replicas,
            "invocationEndpoint": ep.invocation_endpoint or (preset.invocation_endpoint if preset else None),
            "modelSourceConfig": model_source_spec(ep, w),
            "worker": worker,
        })
        lb = _load_balancer(ep, preset.health_path if preset else None)
        if lb:
            spec["loadBalancer"] = lb
        spec.update(_production_common(ep))
        metrics = _metrics(ep, worker["modelInvocationPort"]["containerPort"] if preset else None)
        spec.update(_drop_none({
            "metrics": metrics,
            "pdSpec": dump(ep.pd_spec),
            "tags": [dump(t) for t in ep.tags] if ep.tags is not None else None,
            "modelVersion": ep.model_version,
        }))
        kubernetes = _drop_none({
            "serviceAccountName": w.service_account_name,
            "schedulerName": ep.scheduler_name,
            "podTemplateAnnotations": dict(ep.pod_template_annotations) if ep.pod_template_annotations else None,
            "volumes": list(w.kubernetes_volumes) or None,
            "initContainers": list(w.init_containers) or None,
        })
        if kubernetes:
            spec["kubernetes"] = kubernetes
    cache = _model_cache(ep)
    if cache:
        spec["modelCacheConfig"] = cache
    if capture:
        spec["dataCapture"] = capture
    spec.update(tls_dns_spec(ep, w))
    resource = {"apiVersion": API_VERSION, "kind": ep.kind, "metadata": metadata, "spec": spec}
    return apply_spec_overrides(resource, ep.spec_overrides)


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
