"""One entry of ``endpoints``: the model server, its placement, resources, cache, capture and checks."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..facts import instances as instance_table
from ..facts import metrics as metric_facts
from ..facts import production as prod_facts
from ..facts import rules
from ..facts.runtimes import PRESETS
from ..facts.safety import payload_problem
from . import safety
from .base import (
    AbsolutePath,
    ContentType,
    DnsLabel,
    DnsSubdomain,
    DomainName,
    Loc,
    Strict,
    _at,
    _err,
    _raise_all,
    _rule,
    _safe_host_path,
)
from .capture import DataCapture
from .model_source import ModelSource
from .observability import EndpointAlarms
from .production import (
    AutoScalingSpec,
    CloudWatchTrigger,
    CrdPaths,
    EnvValue,
    ImageCache,
    IntelligentRoutingSpec,
    JsmRoleArn,
    KvCacheSpec,
    LoadBalancerSpec,
    Metrics,
    MigProfile,
    NoCrd,
    NodeAffinity,
    PdSpec,
    Probes,
    Quantity,
    RequestLimits,
    ResourceName,
    Tag,
    crd,
    resource_problems,
    trigger_locations,
)


class WeightCache(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "mode": NoCrd("not verbatim: the library derives spec.modelCacheConfig.weightsCache from it"),
        "host_path": NoCrd("not verbatim: the library derives spec.modelCacheConfig.weightsCache.hostPath from it"),
        "volume_name": NoCrd("not verbatim: the library derives spec.worker.modelVolumeMount.name from it"),
        "agent_image": NoCrd("the NVMe agent DaemonSet and init container image"),
        "min_free_percent": NoCrd("the NVMe agent's eviction threshold"),
        "share_across_namespaces": NoCrd("the NVMe agent's cache layout"),
        "lease_sidecar": NoCrd("not verbatim: the library makes the NVMe agent's init container in "
                               "spec.kubernetes.initContainers a native sidecar"),
        "evict_legacy_layout": NoCrd("the NVMe agent's warm DaemonSet (a one-time eviction of the previous layout)"),
    }
    mode: Literal["off", "operator", "daemonset"] = "off"
    """off; operator (the operator's weights cache, v3.3); daemonset (the NVMe agent warms every GPU node, an init
    container falls back to the source)."""
    host_path: AbsolutePath = "/opt/dlami/nvme"
    """The node's NVMe mount the cache lives under."""
    volume_name: DnsLabel = "nvme-model"
    """The name of the model volume in the worker pod."""
    agent_image: Annotated[str, StringConstraints(min_length=1, max_length=512)] | None = None
    """daemonset: the image that runs the NVMe agent; default the endpoint's model server image (already on the
    node; the agent needs its Python with botocore or huggingface_hub)."""
    min_free_percent: Annotated[int, Field(ge=0, le=90)] = 10
    """daemonset: evict least-recently-used models to keep this share of the disk free."""
    share_across_namespaces: bool = Field(
        default=False, description="daemonset: one cache root for every namespace instead of "
                                   "<hostPath>/<namespace>/ (warned: the namespaces' pods then mount each other's models)")
    lease_sidecar: bool = True
    """daemonset: the agent's init container is a native sidecar (restartPolicy Always and a startup probe;
    Kubernetes 1.29+) that keeps the pod's lease on its model for the pod's whole life. false: a plain init
    container, whose lease lasts 600 s after the pod starts; the warm DaemonSet's lease keeps the model then. Turn it
    off where restartPolicy does not reach the pod: Kubernetes refuses the startup probe of a plain init container."""
    evict_legacy_layout: bool = False
    """daemonset: a one-time opt-in, for nodes that still hold models cached directly under hostPath by releases
    before the per-namespace roots: the warm DaemonSet's pods first evict those (unleased) models. Its init container
    mounts the whole hostPath, every namespace's folder: set it for one deploy, then remove it."""

    _safe_host_path = field_validator("host_path")(_safe_host_path)

    @field_validator("volume_name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v in rules.RESERVED_VOLUME_NAMES:
            raise PydanticCustomError("reserved", "'{v}' is reserved by the operator (reserved: {r})",
                                      {"v": v, "r": ", ".join(sorted(rules.RESERVED_VOLUME_NAMES))})
        return v




class Verify(Strict):
    """The post-deploy check. ``payload``: a string sent as given, or a YAML mapping or list sent as JSON (JSON content
    types only); None = the runtime's default. ``showResponse``: also report the answer's first bytes."""

    crd_paths: ClassVar[CrdPaths] = {
        "payload": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's resource"),
        "content_type": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's resource"),
        "fail_deployment": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                                 "resource"),
        "show_response": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                               "resource"),
        "timeout_minutes": NoCrd("the post-deploy check (a Lambda-backed custom resource), not the operator's "
                                 "resource"),
    }
    payload: str | dict[str, Any] | list[Any] | None = None
    """The request body: a string sent as given, or a mapping or list sent as JSON; default the runtime's."""
    content_type: ContentType = "application/json"
    """The request's content type."""
    fail_deployment: bool = False
    """Fail (and roll back) the deployment when the endpoint does not answer."""
    show_response: bool = False
    """Report the first bytes of the answer."""
    timeout_minutes: Annotated[int, Field(ge=5, le=60)] = 60
    """How long to wait for the endpoint (5-60)."""

    @model_validator(mode="after")
    def _json_payload(self) -> Verify:
        problem = payload_problem(self.payload, self.content_type) if self.payload is not None else None
        if problem:
            _raise_all(type(self), [_err(("payload",), problem)])
        return self


class Resources(Strict):
    """Worker resources beyond the accelerators the instance type implies (Kubernetes quantities).

    Either the shorthand ``cpu`` / ``memory`` (request = limit), or ``requests`` / ``limits`` as Kubernetes takes
    them; ``gpus`` goes with both and overrides the instance table's count."""

    crd_paths: ClassVar[CrdPaths] = {
        "cpu": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
        "memory": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
        "gpus": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
    }
    cpu: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?m?$")] | None = None
    """CPU request = limit, e.g. 8 or 500m. Refused above what the instance gives a pod after the node's reserve
    (the smallest candidate with instanceTypes / nodeAffinity), warned within 10% of it."""
    memory: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?$")] | None = None
    """Memory request = limit, e.g. 64Gi. Refused above the instance's memory less the node's reserve, warned
    within 10% of it."""
    gpus: Annotated[int, Field(ge=0, le=64)] | None = None
    """Accelerators per pod, overriding the instance table's count; refused above the instance's count (the
    smallest candidate's)."""
    requests: dict[ResourceName, Quantity] | None = crd("spec.worker.resources.requests")
    """Kubernetes resource requests (cpu, memory and accelerators checked against the instance as the shorthand
    is)."""
    limits: dict[ResourceName, Quantity] | None = crd("spec.worker.resources.limits")
    """Kubernetes resource limits (a limit without a request is the request)."""

    @model_validator(mode="after")
    def _one_form(self) -> Resources:
        e = []
        if (self.requests is not None or self.limits is not None) and (self.cpu or self.memory):
            e.append(_err(("cpu" if self.cpu else "memory",), "give either the shorthand cpu / memory (request = "
                          "limit) or requests / limits, not both"))
        for problem in resource_problems(self.requests or {}, self.limits or {}):
            e.append(_err(("requests",), problem))
        named = [k for k in {**(self.requests or {}), **(self.limits or {})} if k in prod_facts.EXTENDED_RESOURCES]
        if self.gpus is not None and named:
            e.append(_err(("gpus",), f"give the accelerator count once: gpus or {named[0]} in requests / limits"))
        _raise_all(type(self), e)
        return self

    @property
    def detailed(self) -> bool:
        return self.requests is not None or self.limits is not None


# ----------------------------------------------------------------------------------------------------------- endpoint
InstanceType = Annotated[str, StringConstraints(pattern=rules.INSTANCE_TYPE)]
EnvName = Annotated[str, StringConstraints(pattern=prod_facts.ENV_NAME)]

# Keys only one kind has (YAML names); the other kind refuses them, naming itself.
IEC_ONLY = ("runtime", "image", "port", "args", "resources", "invocationEndpoint", "pdSpec", "instanceTypes",
            "nodeAffinity", "tags", "modelVersion", "probes", "requestLimits", "command", "workingDir", "portName",
            "schedulerName")
JSM_ONLY = ("acceleratorPartitionType", "acceleratorPartitionValidation", "executionRole")


class Endpoint(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "name": NoCrd("not verbatim: the library derives metadata.name, spec.modelName from it"),
        "namespace": NoCrd("not verbatim: the library derives metadata.namespace from it"),
        "kind": NoCrd("the resource's kind"),
        "sagemaker_endpoint_name": NoCrd("not verbatim: the library derives spec.endpointName, "
                                         "spec.sageMakerEndpoint.name from it"),
        "instance_type": NoCrd("not verbatim: the library derives spec.instanceType, spec.server.instanceType from "
                               "it"),
        "runtime": NoCrd("not verbatim: the library derives spec.worker from it"),
        "image": NoCrd("not verbatim: the library derives spec.worker.image from it"),
        "port": NoCrd("not verbatim: the library derives spec.worker.modelInvocationPort.containerPort from it"),
        "args": NoCrd("not verbatim: the library derives spec.worker.args from it"),
        "env": NoCrd("not verbatim: the library derives spec.worker.environmentVariables, spec.environmentVariables"
                     " from it"),
        "resources": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
        "model": NoCrd("not verbatim: the library derives spec.modelSourceConfig, spec.model from it"),
        "weight_cache": NoCrd("not verbatim: the library derives spec.modelCacheConfig from it"),
        "data_capture": NoCrd("not verbatim: the library derives spec.dataCapture from it"),
        "domain_name": NoCrd("not verbatim: the library derives spec.tlsConfig.customCertificateConfig.domainName "
                             "from it"),
        "verify": NoCrd("the post-deploy check (a Lambda-backed custom resource)"),
        "spec_overrides": NoCrd("merged last into the resource's spec as given (RFC 7386)"),
        "spec_overrides_unchecked": NoCrd("how the config checks specOverrides"),
        "stack_group": NoCrd("AWS side, not the custom resource (which nested stack holds the endpoint)"),
        "alarms": NoCrd("AWS side, not the custom resource (this endpoint's CloudWatch alarms and alerting rules)"),
    }
    name: Annotated[str, StringConstraints(pattern=rules.DNS1123_LABEL, max_length=63)] = Field(
        description="metadata.name and spec.modelName: a DNS-1123 label (stricter than the CRD's modelName pattern, "
                    "which has no end anchor)")
    namespace: DnsLabel
    """The namespace of the custom resource."""
    kind: Literal["InferenceEndpointConfig", "JumpStartModel"] = "InferenceEndpointConfig"
    """InferenceEndpointConfig or JumpStartModel."""
    sagemaker_endpoint_name: Annotated[str, StringConstraints(pattern=rules.ENDPOINT_NAME, max_length=63),
                                       _rule(rules.endpoint_name_problem)] | None = None
    """Register a SageMaker endpoint of this name (needed by tier-1 capture and verify)."""
    instance_type: InstanceType | None = None
    """The instance type the pods run on, e.g. ml.g5.12xlarge: a known HyperPod cluster instance type (a typo is
    refused here with the nearest known type)."""
    instance_types: Annotated[list[InstanceType], Field(min_length=1, max_length=20)] | None = crd(
        "spec.instanceTypes", description="Instance types in order of preference (exclusive with instanceType and "
                                          "nodeAffinity): each a known cluster instance type (a typo is refused with "
                                          "the nearest); requests must fit the smallest.")
    node_affinity: NodeAffinity | None = crd("spec.nodeAffinity")
    """Node affinity (exclusive with instanceType and instanceTypes). Values of node.kubernetes.io/instance-type
    must be known ml.* types (HyperPod labels its nodes so; a typo or a missing ml. is refused with the nearest)."""
    replicas: Annotated[int, Field(ge=1, le=1000)] = Field(1, **_at("spec.replicas"))
    """Number of model pods."""
    runtime: Literal["vllm", "tgi", "sglang", "custom"] | None = None
    """The serving preset (vllm, tgi, sglang) or custom (needs image and port); default vllm."""
    image: Annotated[str, StringConstraints(min_length=1, max_length=512)] | None = None
    """The worker image (custom, or overriding the preset's)."""
    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    """The container port the model answers on."""
    port_name: Literal[prod_facts.PORT_NAMES] | None = crd(  # type: ignore[valid-type]
        "spec.worker.modelInvocationPort.name")
    """The invocation port's name (http or grpc)."""
    command: Annotated[list[Annotated[str, StringConstraints(min_length=1)]], Field(min_length=1)] | None = crd(
        "spec.worker.command", description="runtime: custom only (the presets set their own).")
    args: list[str] | None = None
    """Extra worker arguments (not the flags the preset sets)."""
    working_dir: AbsolutePath | None = crd("spec.worker.workingDir")
    """The worker's working directory."""
    env: dict[EnvName, EnvValue] | None = None
    """Worker environment variables (a value, or valueFrom)."""
    resources: Resources | None = None
    """Worker CPU, memory and accelerators."""
    probes: Probes | None = crd("spec.worker.probes")
    """Worker liveness, readiness and startup probes; each probe's port must be the port the model server serves
    (port, or the preset's) or its name (portName, default http)."""
    request_limits: RequestLimits | None = crd("spec.worker.requestLimits")
    """Concurrency and queue limits of the worker."""
    invocation_endpoint: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._/-]+$", max_length=256)] | None = \
        Field(None, **_at("spec.invocationEndpoint"))
    """The route requests are sent to; default the preset's."""
    health_check_path: Annotated[str, StringConstraints(pattern=prod_facts.HEALTH_CHECK_PATH)] | None = Field(
        None, **_at("spec.loadBalancer.healthCheckPath"))
    """The ALB health check path; default the preset's."""
    load_balancer: LoadBalancerSpec | None = crd("spec.loadBalancer")
    """ALB settings."""
    auto_scaling_spec: AutoScalingSpec | None = crd("spec.autoScalingSpec")
    """KEDA autoscaling."""
    intelligent_routing_spec: IntelligentRoutingSpec | None = crd("spec.intelligentRoutingSpec")
    """The operator's intelligent routing."""
    kv_cache_spec: KvCacheSpec | None = crd("spec.kvCacheSpec")
    """The operator's KV cache (L1 / L2)."""
    metrics: Metrics | None = crd("spec.metrics")
    """Metrics scraping."""
    pd_spec: PdSpec | None = crd("spec.pdSpec")
    """Disaggregated prefill and decode."""
    tags: Annotated[list[Tag], Field(max_length=50)] | None = crd(
        "spec.tags", description="Tags of the SageMaker endpoint: at most 50, keys unique and not starting with aws: "
                                 "(SageMaker's tag rules).")
    max_deploy_time_in_seconds: Annotated[int, Field(ge=60, le=2**31 - 1)] | None = crd("spec.maxDeployTimeInSeconds")
    """How long the operator waits for the deployment."""
    model_version: Annotated[str, StringConstraints(min_length=1, max_length=256)] | None = crd("spec.modelVersion")
    """The model version recorded on the SageMaker endpoint."""
    scheduler_name: DnsSubdomain | None = crd("spec.kubernetes.schedulerName")
    """The Kubernetes scheduler of the pods."""
    image_cache: ImageCache | None = crd("spec.modelCacheConfig.imageCache", description="v3.3 and later")
    accelerator_partition_type: MigProfile | None = crd(
        "spec.server.acceleratorPartitionType", description="JumpStartModel: the MIG profile, e.g. mig-1g.10gb")
    accelerator_partition_validation: bool | None = crd("spec.server.validations.acceleratorPartitionValidation")
    """JumpStartModel: validate the MIG partition."""
    execution_role: JsmRoleArn | None = crd("spec.server.executionRole")
    """JumpStartModel: the role the server uses."""
    model: ModelSource
    """Where the weights come from: exactly one of huggingface, s3, fsx, jumpstart."""
    weight_cache: WeightCache = Field(default_factory=WeightCache)
    """Node-local weight cache."""
    data_capture: DataCapture | None = None
    """Which capture tiers are on (needs the top-level capture)."""
    domain_name: DomainName | None = None
    """A custom domain for the endpoint (needs the top-level domain)."""
    verify: Verify | None = None
    """A post-deploy check that invokes the endpoint (kubectl delivery only)."""
    stack_group: Annotated[str, StringConstraints(pattern=rules.DNS1123_LABEL, max_length=32)] | None = Field(
        default=None, description="With stackLayout: perNamespace, the nested stack of this namespace the endpoint "
                                  "goes to (endpoints of one namespace and group share one nested stack); splits a "
                                  "namespace that outgrows one template. Changing it moves (deletes and re-creates) "
                                  "the endpoint.")
    alarms: EndpointAlarms | None = None
    """This endpoint's alarm thresholds, or enabled: false to turn its alarms off (observability.alarms)."""
    spec_overrides: dict[str, Any] | None = Field(
        default=None, description="An RFC 7386 JSON merge patch applied last to the resource's spec, for fields the "
                                  "library does not model. Refused on paths it writes or models; every path is "
                                  "checked against the fields of operator.version's CRD: a path no known version "
                                  "has is refused with the nearest field, one only a later version has with that "
                                  "version (unless specOverridesUnchecked).")
    spec_overrides_unchecked: bool = Field(
        default=False, description="Merge specOverrides without checking its paths against operator.version's CRD "
                                   "(for a newer operator than the library validates; warned: "
                                   "specOverridesUnchecked). Paths the library writes stay refused.")

    @field_validator("domain_name", mode="before")
    @classmethod
    def _no_wildcard(cls, v: Any) -> Any:
        if isinstance(v, str) and "*" in v:
            raise PydanticCustomError("wildcard", "must be a specific domain, not a wildcard")
        return v

    @model_validator(mode="after")
    def _endpoint_rules(self) -> Endpoint:
        e: list[InitErrorDetails] = []
        jsm = self.kind == "JumpStartModel"
        source = self.model.kind
        e += [_err(loc, msg) for loc, msg in safety.token_shaped_values(self)]
        e += [_err(loc, msg) for loc, msg in safety.local_path_problems(self)]
        if jsm and source != "jumpstart":
            e.append(_err(("model", source), "kind: JumpStartModel takes only a jumpstart source"))
        if not jsm and source == "jumpstart":
            e.append(_err(("model", "jumpstart"), "a jumpstart source needs kind: JumpStartModel"))
        given = self.model_fields_set
        aliases = {name: (info.alias or name) for name, info in type(self).model_fields.items()}
        for name in sorted(given):
            alias = aliases[name]
            if getattr(self, name) is None:
                continue
            if jsm and alias in IEC_ONLY:
                e.append(_err((alias,), "not a field of kind: JumpStartModel (JumpStart picks the container and "
                              "places it on instanceType)"))
            if not jsm and alias in JSM_ONLY:
                e.append(_err((alias,), "not a field of kind: InferenceEndpointConfig (JumpStartModel only)"))
        if jsm:
            if self.weight_cache.mode == "daemonset":
                e.append(_err(("weightCache", "mode"),
                              "daemonset needs spec.kubernetes, which kind: JumpStartModel does not have"))
            for key, value in (self.env or {}).items():
                if not isinstance(value, str):
                    e.append(_err(("env", key), "kind: JumpStartModel takes only string values (no valueFrom)"))
            if len(self.env or {}) > prod_facts.JSM_ENV_MAX:
                e.append(_err(("env",), f"kind: JumpStartModel takes at most {prod_facts.JSM_ENV_MAX} variables"))
        e += self._placement_rules(jsm)
        e += [_err(loc, msg) for loc, msg in self.request_limit_findings(warn=False)]
        e += self._pod_rules(jsm)
        if self.runtime == "custom" and not self.image:
            e.append(_err(("image",), "required with runtime: custom"))
        if self.runtime == "custom" and not self.port:
            e.append(_err(("port",), "required with runtime: custom"))
        if self.command is not None and not jsm and self.runtime != "custom":
            e.append(_err(("command",), "only with runtime: custom (the runtime preset sets the command)"))
        if self.health_check_path is not None and self.load_balancer and self.load_balancer.health_check_path:
            e.append(_err(("loadBalancer", "healthCheckPath"), "give the health check path once: healthCheckPath or "
                          "loadBalancer.healthCheckPath"))
        e += self._trigger_rules()
        irs = self.intelligent_routing_spec
        if self.auto_scaling_spec is not None and irs is not None and irs.auto_scaling_spec is not None:
            e.append(_err(("intelligentRoutingSpec", "autoScalingSpec"),
                          "give autoscaling once: autoScalingSpec or intelligentRoutingSpec.autoScalingSpec"))
        runtime = self.effective_runtime
        if self.kv_cache_spec is not None and runtime in ("tgi", "sglang"):
            e.append(_err(("kvCacheSpec",), f"not supported with runtime: {runtime} (the operator's KV cache is "
                          "LMCache in vLLM)"))
        e += self._preset_conflicts(runtime)
        dc = self.data_capture
        if dc and dc.sagemaker_endpoint and dc.sagemaker_endpoint.enabled and not self.sagemaker_endpoint_name:
            e.append(_err(("sagemakerEndpointName",),
                          "required by dataCapture.sagemakerEndpoint (tier 1 captures at the SageMaker endpoint)"))
        if self.verify and not self.sagemaker_endpoint_name:
            e.append(_err(("sagemakerEndpointName",), "required by verify (it invokes the SageMaker endpoint)"))
        if self.weight_cache.mode == "daemonset" and source == "fsx" and not self.model.fsx.node_path:  # type: ignore[union-attr]
            e.append(_err(("model", "fsx", "nodePath"),
                          "required with weightCache.mode: daemonset (the agent copies from the node's FSx mount)"))
        if self.weight_cache.mode == "operator" and source == "huggingface":
            e.append(_err(("weightCache", "mode"),
                          "operator mode caches S3/FSx/JumpStart sources; for a Hugging Face model use daemonset"))
        if self.weight_cache.mode == "operator":
            facts = self.instance
            if facts is None or not facts.nvme:
                e.append(_err(("weightCache", "mode"), "operator mode needs instances with instance-store NVMe (the "
                              "operator's cache does not support EBS-only instances); "
                              f"{', '.join(self.placement_types() or ['the placement'])} is not known to have it"))
        if self.spec_overrides:
            for path, key in prod_facts.override_conflicts(self.spec_overrides, self.kind):
                e.append(_err(("specOverrides", *path),
                              f"spec.{prod_facts.dotted(path)} is written or modelled by the library; use {key}"))
        _raise_all(type(self), e)
        return self

    def _placement_rules(self, jsm: bool) -> list[InitErrorDetails]:
        e: list[InitErrorDetails] = []
        placed = [k for k, v in (("instanceType", self.instance_type), ("instanceTypes", self.instance_types),
                                 ("nodeAffinity", self.node_affinity)) if v is not None]
        if not placed:
            e.append(_err(("instanceType",), "give exactly one of instanceType, instanceTypes, nodeAffinity"
                          if not jsm else "required with kind: JumpStartModel"))
        for key in placed[1:]:
            e.append(_err((key,), f"exclusive with {placed[0]} (give exactly one of instanceType, instanceTypes, "
                          "nodeAffinity)"))
        unknown = list(self._unknown_instance_types())
        e += [_err(loc, msg, value) for loc, msg, value in unknown]
        if jsm or not placed:
            return e
        facts = self.instance
        res = self.resources
        gpus_given = res is not None and (res.gpus is not None or any(
            k in prod_facts.EXTENDED_RESOURCES for k in {**(res.requests or {}), **(res.limits or {})}))
        if facts is None and not gpus_given and not unknown:
            types = self.placement_types()
            why = (f"{types[0]} has no accelerator facts in the instance table" if types and len(types) == 1 else
                   "the candidate instance types do not all agree on their accelerators (or one has no facts)"
                   if types else "nodeAffinity does not restrict node.kubernetes.io/instance-type in every required "
                   "term")
            e.append(_err(("resources", "gpus"), f"required: {why}; give the accelerator count (0 for none)"))
        if facts is not None and facts.accelerator == "neuron" and self.effective_runtime != "custom":
            e.append(_err(("runtime",), "Neuron instances need runtime: custom with a Neuron image (the presets are "
                          "CUDA images)"))
        if facts is not None and res is not None and res.detailed:
            named = {**(res.requests or {}), **(res.limits or {})}
            wrong = prod_facts.NEURON if facts.accelerator == "nvidia" else prod_facts.NVIDIA_GPU
            if wrong in named:
                e.append(_err(("resources", "requests" if wrong in (res.requests or {}) else "limits"),
                              f"{wrong} does not exist on {', '.join(self.placement_types() or [])} "
                              f"({facts.accelerator} accelerators)"))
        return e

    def _preset_conflicts(self, runtime: str | None) -> list[InitErrorDetails]:
        e: list[InitErrorDetails] = []
        if runtime in ("vllm", "sglang"):
            for i, arg in enumerate(self.args or []):
                flag = prod_facts.preset_flag(arg)
                if flag:
                    e.append(_err(("args", i), f"{flag} is set by the {runtime} preset; use the config key "
                                  f"{prod_facts.PRESET_FLAGS[flag]} instead", arg))
        if runtime == "tgi":
            for key in self.env or {}:
                if key in prod_facts.TGI_PRESET_ENV:
                    e.append(_err(("env", key), f"{key} is set by the tgi preset; use the config key "
                                  f"{prod_facts.TGI_PRESET_ENV[key]} instead"))
        return e

    def _unknown_instance_types(self) -> list[tuple[Loc, str, str]]:
        """Placement values that are no known cluster instance type (HyperPod labels its nodes with the ``ml.*``
        type), each with its path and the nearest known type."""
        found: list[tuple[Loc, str]] = []
        if self.instance_type:
            found.append((("instanceType",), self.instance_type))
        for i, value in enumerate(self.instance_types or []):
            found.append((("instanceTypes", i), value))
        if self.node_affinity is not None:
            for loc, value in self.node_affinity.instance_type_values():
                found.append((("nodeAffinity", *loc), value))
        out = []
        for loc, value in found:
            if value in instance_table.KNOWN_TYPES:
                continue
            guess = instance_table.nearest_known(value)
            hint = f"; did you mean {guess}?" if guess else " (HyperPod nodes carry ml.* instance types)"
            out.append((loc, f"{value} is not a known HyperPod cluster instance type{hint}", value))
        return out

    def request_limit_findings(self, *, warn: bool) -> list[tuple[Loc, str]]:
        """Worker requests the instance cannot give (``warn=False``: refusals) or that come within 10% of it
        (``warn=True``). With several candidate types the smallest decides; the node keeps its reserve
        (``facts.instances.allocatable``)."""
        res = self.resources
        types = [t for t in self.placement_types() or [] if t in instance_table.INSTANCES]
        facts = instance_table.smallest(types) if not self.is_jumpstart else None
        if facts is None or (res is None and self.pd_spec is None):
            return []
        which = types[0] if len(types) == 1 else f"the smallest candidate ({', '.join(types)})"
        out: list[tuple[Loc, str]] = []
        resource, count = self.accelerators
        given = res is not None and (res.gpus is not None or any(
            k in prod_facts.EXTENDED_RESOURCES[:2] for k in {**(res.requests or {}), **(res.limits or {})}))
        if not warn and given and res is not None and count > facts.count:
            loc: Loc = ("resources", "gpus") if res.gpus is not None else (
                "resources", "limits" if resource in (res.limits or {}) else "requests", resource)
            out.append((loc, f"{count} {resource} requested, and {which} has {facts.count}: the pod never "
                             "schedules"))
        limits = instance_table.allocatable(facts)
        if limits is None:
            return out
        asked: list[tuple[str, tuple[Loc, str | int] | None]] = [(name, self._request(name))
                                                                  for name in ("cpu", "memory")]
        pd = self.pd_spec
        for role, spec in (("prefillSpec", pd.prefill_spec), ("decodingSpec", pd.decoding_spec)) if pd else ():
            rr = spec.resources
            for name in ("cpu", "memory", *prod_facts.EXTENDED_RESOURCES[:2]):
                for part, values in (("requests", rr.requests if rr else None), ("limits", rr.limits if rr else None)):
                    if values and name in values:
                        asked.append((name, (("pdSpec", role, "resources", part, name), values[name])))
                        break
        for name, found in asked:
            if found is None:
                continue
            loc, value = found
            if name in prod_facts.EXTENDED_RESOURCES:
                if not warn and prod_facts.quantity_value(value) > facts.count:
                    out.append((loc, f"{value} {name} requested, and {which} has {facts.count}: the pod never "
                                     "schedules"))
                continue
            limit = limits[0] if name == "cpu" else limits[1]
            amount = prod_facts.quantity_value(value)
            shown = f"{limit:.2f} CPUs" if name == "cpu" else f"{limit / 2**30:.1f}Gi"
            reserve = ("after the node's reserve (kube-reserved and the eviction threshold of the EKS AMI; "
                       "docs/safe-defaults.md)")
            if amount > limit and not warn:
                out.append((loc, f"{value} is more than {which} can give a pod: {shown} {reserve}"))
            elif warn and instance_table.NEAR_LIMIT_SHARE * limit < amount <= limit:
                out.append((loc, f"{value} is within 10% of what {which} can give a pod ({shown} {reserve}); "
                                 "DaemonSets on the node request from the same share, so the pod may not schedule"))
        return out

    def _request(self, name: str) -> tuple[Loc, str | int] | None:
        """The worker's request of ``cpu`` / ``memory`` and its path (a limit alone is the request)."""
        res = self.resources
        if res is None:
            return None
        short = res.cpu if name == "cpu" else res.memory
        if short is not None:
            return ("resources", name), short
        if name in (res.requests or {}):
            return ("resources", "requests", name), (res.requests or {})[name]
        if name in (res.limits or {}):
            return ("resources", "limits", name), (res.limits or {})[name]
        return None

    @property
    def served_port(self) -> int:
        """The container port the model server listens on (``port``, else the runtime preset's)."""
        preset = PRESETS.get(self.effective_runtime or "")
        return self.port or (preset.port if preset else 8080)

    def _trigger_rules(self) -> list[InitErrorDetails]:
        """A CloudWatch trigger on a namespace whose metrics exist only per dimensions must name them
        (``facts.metrics.TRIGGER_DIMENSIONS``): without, KEDA never gets a value and the endpoint never scales."""
        e: list[InitErrorDetails] = []
        for loc, trigger in trigger_locations(self):
            if isinstance(trigger, CloudWatchTrigger):
                problem = metric_facts.trigger_dimensions_problem(
                    trigger.namespace, [d.name for d in trigger.dimensions or ()],
                    endpoint_name=self.sagemaker_endpoint_name, namespace_k8s=self.namespace, name=self.name)
                if problem:
                    e.append(_err((*loc, "dimensions"), problem))
        return e

    def _pod_rules(self, jsm: bool) -> list[InitErrorDetails]:
        """Probe ports the container serves; SageMaker's tag rules."""
        e: list[InitErrorDetails] = []
        if self.probes is not None and not jsm:
            name = self.port_name or "http"
            for key, probe in (("livenessProbe", self.probes.liveness_probe),
                               ("readinessProbe", self.probes.readiness_probe),
                               ("startupProbe", self.probes.startup_probe)):
                if probe is None:
                    continue
                for handler, action in (("httpGet", probe.http_get), ("tcpSocket", probe.tcp_socket),
                                        ("grpc", probe.grpc)):
                    if action is None or action.port in (self.served_port, name):
                        continue
                    e.append(_err(("probes", key, handler, "port"), f"the container serves port {self.served_port} "
                                  f"(named {name}); a probe on {action.port!r} finds nothing there and never "
                                  "succeeds", action.port))
        seen: dict[str, int] = {}
        for i, tag in enumerate(self.tags or []):
            if tag.name in seen:
                e.append(_err(("tags", i, "name"), f"duplicate tag key {tag.name!r} (also tags[{seen[tag.name]}]); "
                              "SageMaker refuses repeated keys"))
            seen.setdefault(tag.name, i)
        return e

    def placement_types(self) -> list[str] | None:
        """The instance types the endpoint may land on, or None when the placement does not say."""
        if self.instance_type:
            return [self.instance_type]
        if self.instance_types:
            return list(self.instance_types)
        if self.node_affinity is not None:
            return self.node_affinity.instance_types()
        return None

    @property
    def instance(self) -> instance_table.InstanceFacts | None:
        """What every candidate instance type has in common (the instance table), or None."""
        types = self.placement_types()
        return instance_table.agreed_facts(types) if types else None

    @property
    def accelerators(self) -> tuple[str, int]:
        """(extended resource, count) for the worker: resources.gpus wins over the instance table."""
        facts = self.instance
        resource = facts.resource if facts else prod_facts.NVIDIA_GPU
        if self.resources is not None and self.resources.gpus is not None:
            return resource, self.resources.gpus
        if self.resources is not None and self.resources.detailed:
            for name in prod_facts.EXTENDED_RESOURCES[:2]:
                given = (self.resources.limits or {}).get(name, (self.resources.requests or {}).get(name))
                if given is not None:
                    return name, int(prod_facts.quantity_value(given))
        return resource, facts.count if facts else 0

    @property
    def is_jumpstart(self) -> bool:
        return self.kind == "JumpStartModel"

    @property
    def effective_runtime(self) -> str | None:
        return None if self.is_jumpstart else (self.runtime or "vllm")


