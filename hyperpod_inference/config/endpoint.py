"""One entry of ``endpoints``: the model server, its placement, resources, cache, capture and checks, and the rules of
one endpoint.

The rules are named functions (:data:`ENDPOINT_RULES`, run in that order by the model's validator), each yielding
every problem it finds with its path relative to the endpoint, as the rules across sections do
(:mod:`.cross_rules`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..facts import instances as instance_table
from ..facts import metrics as metric_facts
from ..facts import production as prod_facts
from ..facts import rules
from ..facts.runtimes import EMBEDDING_ORGS, EMBEDDING_ROUTES, GPU_PRESETS, PRESETS
from . import safety
from .autoscaling import AutoScalingSpec, CloudWatchTrigger, trigger_locations
from .base import (
    AbsolutePath,
    CrdPaths,
    DnsLabel,
    DnsSubdomain,
    DomainName,
    JsmRoleArn,
    LabelKey,
    Loc,
    NoCrd,
    Problems,
    Strict,
    _at,
    _err,
    _raise_all,
    _rule,
    crd,
)
from .cache import ImageCache, WeightCache
from .capture import DataCapture
from .metrics_tags import Metrics, Tag
from .model_source import ModelSource
from .observability import EndpointAlarms
from .placement import InstanceType, NodeAffinity, unknown_instance_types
from .prefill_decode import PdSpec
from .probes import Probes, RequestLimits
from .resources import Resources, instance_fit_findings
from .routing import InferenceGateway, IntelligentRoutingSpec, KvCacheSpec, LoadBalancerSpec
from .verify import Verify
from .worker_env import EnvName, EnvValue

MigProfile = Annotated[str, StringConstraints(pattern=prod_facts.MIG_PROFILE, max_length=64)]

# Keys only one kind has (YAML names); the other kind refuses them, naming itself.
IEC_ONLY = ("runtime", "image", "port", "args", "resources", "invocationEndpoint", "pdSpec", "instanceTypes",
            "nodeAffinity", "tags", "modelVersion", "probes", "requestLimits", "command", "workingDir", "portName",
            "schedulerName", "podTemplateAnnotations")
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
    inference_gateway: InferenceGateway | None = crd(
        "spec.inferenceGateway", description="Operator v3.6 and later: serve the endpoint through an Inference "
                                             "Gateway (exclusive with intelligentRoutingSpec.enabled).")
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
    pod_template_annotations: dict[LabelKey, Annotated[str, StringConstraints(max_length=65536)]] | None = crd(
        "spec.kubernetes.podTemplateAnnotations", description="Operator v3.6 and later: annotations on the model "
                                                              "pods' template.")
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
        """Every rule of the endpoint (:data:`ENDPOINT_RULES`): all their problems in one error."""
        _raise_all(type(self), [problem for rule in ENDPOINT_RULES for problem in rule(self)])
        return self

    # what the rules, the warnings and the stack read -------------------------------------------------------------
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

    @property
    def served_port(self) -> int:
        """The container port the model server listens on (``port``, else the runtime preset's)."""
        preset = PRESETS.get(self.effective_runtime or "")
        return self.port or (preset.port if preset else 8080)

    @property
    def served_model_name(self) -> str | None:
        """The model name the server answers to (its runtime preset's ``--served-model-name``: the Hugging Face model
        ID, else the endpoint's name); None when the library does not set it (``tgi``, ``custom``, JumpStart)."""
        preset = PRESETS.get(self.effective_runtime or "")
        if preset is None or not preset.serves_model_name:
            return None
        return self.model.huggingface.model_id if self.model.huggingface else self.name

    def request_limit_findings(self, *, warn: bool) -> list[tuple[Loc, str]]:
        """Worker requests the instance cannot give (``warn=False``: refusals) or that come within 10% of it
        (``warn=True``), the worker's and the prefill / decode pods' (:func:`.resources.instance_fit_findings`)."""
        if self.is_jumpstart:
            return []
        pd = self.pd_spec
        roles = [("prefillSpec", pd.prefill_spec.resources), ("decodingSpec", pd.decoding_spec.resources)] if pd else []
        return instance_fit_findings(self.resources, roles, self.placement_types() or [], self.accelerators, warn=warn)


# -------------------------------------------------------------------------------------------- the rules of one endpoint
def values_hold_no_token(ep: Endpoint) -> Problems:
    """A value anywhere in the endpoint (``env``, ``args``, ``command``, ``specOverrides``, ``tags``,
    ``verify.payload``, annotations, labels, ... every string it holds) that looks like a Hugging Face token would
    land in the template, the manifests, a stack output or a handler's logs in clear text: refused, pointing at
    ``model.huggingface.token``. (The loader checks the whole file, every section, the same way.)"""
    for loc, message in safety.token_shaped(ep.model_dump(by_alias=True, exclude_none=True)):
        yield _err(loc, message)


def fsx_path_without_dot_segments(ep: Endpoint) -> Problems:
    """``model.fsx.path`` is the folder the NVMe agent copies from under ``nodePath`` (and the operator's
    ``modelLocation``): a ``.`` or ``..`` segment may spell the file system's root or a folder outside it (``/..``
    under ``/fsx`` is the node's root directory), so the path must be written without them. Repeated and trailing
    slashes are harmless and normalized where the path is used."""
    fsx = ep.model.fsx
    if fsx is not None and any(part in (".", "..") for part in fsx.path.split("/")):
        yield _err(("model", "fsx", "path"), "must not contain '.' or '..' segments (a folder of the file system, "
                                             "written as an absolute path from its root)")


def source_fits_the_kind(ep: Endpoint) -> Problems:
    """A JumpStartModel takes a jumpstart source, and only it takes one."""
    source = ep.model.kind
    if ep.is_jumpstart and source != "jumpstart":
        yield _err(("model", source), "kind: JumpStartModel takes only a jumpstart source")
    if not ep.is_jumpstart and source == "jumpstart":
        yield _err(("model", "jumpstart"), "a jumpstart source needs kind: JumpStartModel")


def fields_of_the_kind(ep: Endpoint) -> Problems:
    """Keys only the other kind has (:data:`IEC_ONLY`, :data:`JSM_ONLY`) are refused, naming the kind."""
    aliases = {name: (info.alias or name) for name, info in type(ep).model_fields.items()}
    for name in sorted(ep.model_fields_set):
        alias = aliases[name]
        if getattr(ep, name) is None:
            continue
        if ep.is_jumpstart and alias in IEC_ONLY:
            yield _err((alias,), "not a field of kind: JumpStartModel (JumpStart picks the container and places it on "
                                 "instanceType)")
        if not ep.is_jumpstart and alias in JSM_ONLY:
            yield _err((alias,), "not a field of kind: InferenceEndpointConfig (JumpStartModel only)")


def jumpstart_spec_limits(ep: Endpoint) -> Problems:
    """A JumpStartModel has no ``spec.kubernetes`` (so no daemonset cache) and takes a few plain environment
    variables."""
    if not ep.is_jumpstart:
        return
    if ep.weight_cache.mode == "daemonset":
        yield _err(("weightCache", "mode"), "daemonset needs spec.kubernetes, which kind: JumpStartModel does not have")
    for key, value in (ep.env or {}).items():
        if not isinstance(value, str):
            yield _err(("env", key), "kind: JumpStartModel takes only string values (no valueFrom)")
    if len(ep.env or {}) > prod_facts.JSM_ENV_MAX:
        yield _err(("env",), f"kind: JumpStartModel takes at most {prod_facts.JSM_ENV_MAX} variables")


def _placed(ep: Endpoint) -> list[str]:
    """The placement keys given, of instanceType, instanceTypes, nodeAffinity."""
    return [k for k, v in (("instanceType", ep.instance_type), ("instanceTypes", ep.instance_types),
                           ("nodeAffinity", ep.node_affinity)) if v is not None]


def one_placement(ep: Endpoint) -> Problems:
    """Exactly one of instanceType, instanceTypes, nodeAffinity (a JumpStartModel: instanceType)."""
    placed = _placed(ep)
    if not placed:
        yield _err(("instanceType",), "give exactly one of instanceType, instanceTypes, nodeAffinity"
                   if not ep.is_jumpstart else "required with kind: JumpStartModel")
    for key in placed[1:]:
        yield _err((key,), f"exclusive with {placed[0]} (give exactly one of instanceType, instanceTypes, "
                           "nodeAffinity)")


def known_instance_types(ep: Endpoint) -> Problems:
    """Every instance type of the placement is a known HyperPod cluster instance type (a typo gets the nearest)."""
    for loc, message, value in unknown_instance_types(ep.instance_type, ep.instance_types, ep.node_affinity):
        yield _err(loc, message, value)


def accelerators_known(ep: Endpoint) -> Problems:
    """The worker's accelerator count comes from the instance table, or from ``resources`` when the candidate types
    have no facts or disagree."""
    if ep.is_jumpstart or not _placed(ep):
        return
    res = ep.resources
    gpus_given = res is not None and (res.gpus is not None or any(
        k in prod_facts.EXTENDED_RESOURCES for k in {**(res.requests or {}), **(res.limits or {})}))
    if ep.instance is None and not gpus_given and not _gpu_preset_on_cpu_types(ep) \
            and not unknown_instance_types(ep.instance_type, ep.instance_types, ep.node_affinity):
        types = ep.placement_types()
        why = (f"{types[0]} has no accelerator facts in the instance table" if types and len(types) == 1 else
               "the candidate instance types do not all agree on their accelerators (or one has no facts)"
               if types else "nodeAffinity does not restrict node.kubernetes.io/instance-type in every required "
               "term")
        yield _err(("resources", "gpus"), f"required: {why}; give the accelerator count (0 for none)")


def _gpu_preset_on_cpu_types(ep: Endpoint) -> list[str]:
    """The placement's instance types when every one has no accelerator (``facts.instances.OTHER_TYPES``) and the
    endpoint runs a CUDA preset image; [] otherwise."""
    types = ep.placement_types() or []
    if ep.is_jumpstart or ep.image is not None or ep.effective_runtime not in GPU_PRESETS:
        return []
    return types if types and all(t in instance_table.OTHER_TYPES for t in types) else []


def gpu_preset_has_a_gpu(ep: Endpoint) -> Problems:
    """The vLLM, TGI and SGLang presets are CUDA images: they need an instance with NVIDIA GPUs, and at least one GPU
    in the pod. ``resources.gpus: 0`` does not make them run on a CPU."""
    if ep.is_jumpstart or not _placed(ep):
        return
    runtime = ep.effective_runtime
    cpu_types = _gpu_preset_on_cpu_types(ep)
    if cpu_types:
        which = cpu_types[0] if len(cpu_types) == 1 else f"none of {', '.join(cpu_types)}"
        has = "has no GPU" if len(cpu_types) == 1 else "has a GPU"
        yield _err(("runtime",), f"endpoint {ep.name}: the {runtime} preset is a CUDA (GPU) image, and {which} {has}: place the "
                   f"endpoint on a GPU instance type (instanceType: {' / '.join(instance_table.SMALL_GPU_TYPES)} or "
                   "larger, with an instance group of that type in the cluster), or keep the CPU instance with "
                   "runtime: custom, a CPU build of the server as image, and its port (resources.gpus: 0 does not "
                   "make a GPU image run on a CPU)")
        return
    res = ep.resources
    if res is None or ep.image is not None or runtime not in GPU_PRESETS:
        return
    facts = ep.instance
    if facts is not None and facts.accelerator == "neuron":
        return  # neuron_needs_custom_runtime speaks
    if res.gpus == 0:
        have = f"the instance's {facts.count}" if facts is not None else "the instance's count"
        yield _err(("resources", "gpus"), f"endpoint {ep.name}: 0 GPUs with the {runtime} preset, a CUDA image that needs at least one: "
                   f"leave resources.gpus out ({have}) or give at least 1")


def tgi_serves_text_generation(ep: Endpoint) -> Problems:
    """The TGI preset serves text generation (``generate``): an embeddings route, or a model of an organisation that
    publishes only embedding models, is refused when the config itself says so (the Hub's answer is doctor's
    ``model.task``)."""
    if ep.is_jumpstart or ep.effective_runtime != "tgi":
        return
    fix = ("serve an embedding model with runtime: custom and an embedding server's image (Text Embeddings "
           "Inference), or give the tgi preset a text-generation model")
    route = (ep.invocation_endpoint or "").strip("/")
    if route in EMBEDDING_ROUTES:
        yield _err(("invocationEndpoint",), f"endpoint {ep.name}: {route} is an embeddings route, and the tgi preset "
                   f"(text-generation-inference) serves text generation only (generate): {fix}", route)
    hf = ep.model.huggingface
    if hf is not None and hf.model_id.split("/", 1)[0] in EMBEDDING_ORGS:
        yield _err(("model", "huggingface", "modelId"), f"endpoint {ep.name}: {hf.model_id} is a Sentence Transformers embedding "
                   "model, "
                   f"and the tgi preset (text-generation-inference) serves text generation only: {fix}",
                   hf.model_id)


def neuron_needs_custom_runtime(ep: Endpoint) -> Problems:
    """The runtime presets are CUDA images: Neuron instances need a custom one."""
    if ep.is_jumpstart or not _placed(ep):
        return
    facts = ep.instance
    if facts is not None and facts.accelerator == "neuron" and ep.effective_runtime != "custom":
        yield _err(("runtime",), "Neuron instances need runtime: custom with a Neuron image (the presets are CUDA "
                                 "images)")


def accelerator_resource_exists(ep: Endpoint) -> Problems:
    """Requests and limits name the accelerator the instance has (no nvidia.com/gpu on Trainium, nor the reverse)."""
    if ep.is_jumpstart or not _placed(ep):
        return
    facts = ep.instance
    res = ep.resources
    if facts is not None and res is not None and res.detailed:
        named = {**(res.requests or {}), **(res.limits or {})}
        wrong = prod_facts.NEURON if facts.accelerator == "nvidia" else prod_facts.NVIDIA_GPU
        if wrong in named:
            yield _err(("resources", "requests" if wrong in (res.requests or {}) else "limits"),
                       f"{wrong} does not exist on {', '.join(ep.placement_types() or [])} "
                       f"({facts.accelerator} accelerators)")


def requests_fit_the_instance(ep: Endpoint) -> Problems:
    """Worker requests the instance cannot give a pod (:meth:`Endpoint.request_limit_findings`)."""
    for loc, message in ep.request_limit_findings(warn=False):
        yield _err(loc, message)


def probes_on_the_served_port(ep: Endpoint) -> Problems:
    """A probe's port is the port the model server serves, or its name."""
    if ep.probes is None or ep.is_jumpstart:
        return
    name = ep.port_name or "http"
    for key, probe in (("livenessProbe", ep.probes.liveness_probe), ("readinessProbe", ep.probes.readiness_probe),
                       ("startupProbe", ep.probes.startup_probe)):
        if probe is None:
            continue
        for handler, action in (("httpGet", probe.http_get), ("tcpSocket", probe.tcp_socket), ("grpc", probe.grpc)):
            if action is None or action.port in (ep.served_port, name):
                continue
            yield _err(("probes", key, handler, "port"), f"the container serves port {ep.served_port} (named {name}); "
                       f"a probe on {action.port!r} finds nothing there and never succeeds", action.port)


def tag_keys_unique(ep: Endpoint) -> Problems:
    """SageMaker refuses repeated tag keys."""
    seen: dict[str, int] = {}
    for i, tag in enumerate(ep.tags or []):
        if tag.name in seen:
            yield _err(("tags", i, "name"), f"duplicate tag key {tag.name!r} (also tags[{seen[tag.name]}]); "
                                            "SageMaker refuses repeated keys")
        seen.setdefault(tag.name, i)


def custom_runtime_complete(ep: Endpoint) -> Problems:
    """runtime: custom names its image and port; only it takes a command."""
    if ep.runtime == "custom" and not ep.image:
        yield _err(("image",), "required with runtime: custom")
    if ep.runtime == "custom" and not ep.port:
        yield _err(("port",), "required with runtime: custom")
    if ep.command is not None and not ep.is_jumpstart and ep.runtime != "custom":
        yield _err(("command",), "only with runtime: custom (the runtime preset sets the command)")


def gateway_or_intelligent_routing(ep: Endpoint) -> Problems:
    """The operator refuses an Inference Gateway and its intelligent routing on one endpoint (FACTS section 13)."""
    irs = ep.intelligent_routing_spec
    if ep.inference_gateway is not None and ep.inference_gateway.enabled and irs is not None and irs.enabled:
        yield _err(("inferenceGateway", "enabled"), "exclusive with intelligentRoutingSpec.enabled (the gateway "
                                                    "routes the requests; turn one of them off)")


def health_check_path_once(ep: Endpoint) -> Problems:
    if ep.health_check_path is not None and ep.load_balancer and ep.load_balancer.health_check_path:
        yield _err(("loadBalancer", "healthCheckPath"), "give the health check path once: healthCheckPath or "
                                                        "loadBalancer.healthCheckPath")


def triggers_name_their_dimensions(ep: Endpoint) -> Problems:
    """A CloudWatch trigger on a namespace whose metrics exist only per dimensions must name them
    (``facts.metrics.TRIGGER_DIMENSIONS``): without, KEDA never gets a value and the endpoint never scales."""
    for loc, trigger in trigger_locations(ep):
        if isinstance(trigger, CloudWatchTrigger):
            problem = metric_facts.trigger_dimensions_problem(
                trigger.namespace, [d.name for d in trigger.dimensions or ()],
                endpoint_name=ep.sagemaker_endpoint_name, namespace_k8s=ep.namespace, name=ep.name)
            if problem:
                yield _err((*loc, "dimensions"), problem)


def autoscaling_once(ep: Endpoint) -> Problems:
    irs = ep.intelligent_routing_spec
    if ep.auto_scaling_spec is not None and irs is not None and irs.auto_scaling_spec is not None:
        yield _err(("intelligentRoutingSpec", "autoScalingSpec"),
                   "give autoscaling once: autoScalingSpec or intelligentRoutingSpec.autoScalingSpec")


def kv_cache_with_vllm(ep: Endpoint) -> Problems:
    """The operator's KV cache is LMCache in vLLM."""
    runtime = ep.effective_runtime
    if ep.kv_cache_spec is not None and runtime in ("tgi", "sglang"):
        yield _err(("kvCacheSpec",), f"not supported with runtime: {runtime} (the operator's KV cache is LMCache in "
                                     "vLLM)")


def preset_settings_left_to_the_preset(ep: Endpoint) -> Problems:
    """Flags and variables a runtime preset sets are given by their config keys, not repeated in args / env."""
    runtime = ep.effective_runtime
    if runtime in ("vllm", "sglang"):
        for i, arg in enumerate(ep.args or []):
            flag = prod_facts.preset_flag(arg)
            if flag:
                yield _err(("args", i), f"{flag} is set by the {runtime} preset; use the config key "
                                        f"{prod_facts.PRESET_FLAGS[flag]} instead", arg)
    if runtime == "tgi":
        for key in ep.env or {}:
            if key in prod_facts.TGI_PRESET_ENV:
                yield _err(("env", key), f"{key} is set by the tgi preset; use the config key "
                                         f"{prod_facts.TGI_PRESET_ENV[key]} instead")


def sagemaker_endpoint_when_used(ep: Endpoint) -> Problems:
    """Tier-1 capture and verify go through the SageMaker endpoint: they need its name."""
    dc = ep.data_capture
    if dc and dc.sagemaker_endpoint and dc.sagemaker_endpoint.enabled and not ep.sagemaker_endpoint_name:
        yield _err(("sagemakerEndpointName",),
                   "required by dataCapture.sagemakerEndpoint (tier 1 captures at the SageMaker endpoint)")
    if ep.verify and not ep.sagemaker_endpoint_name:
        yield _err(("sagemakerEndpointName",), "required by verify (it invokes the SageMaker endpoint)")


def weight_cache_fits(ep: Endpoint) -> Problems:
    """The daemonset cache copies an FSx model from the node's mount; the operator's cache takes S3, FSx and
    JumpStart sources on instances with instance-store NVMe."""
    mode, source = ep.weight_cache.mode, ep.model.kind
    if mode == "daemonset" and source == "fsx" and not ep.model.fsx.node_path:  # type: ignore[union-attr]
        yield _err(("model", "fsx", "nodePath"),
                   "required with weightCache.mode: daemonset (the agent copies from the node's FSx mount)")
    if mode == "operator" and source == "huggingface":
        yield _err(("weightCache", "mode"),
                   "operator mode caches S3/FSx/JumpStart sources; for a Hugging Face model use daemonset")
    if mode == "operator":
        facts = ep.instance
        if facts is None or not facts.nvme:
            yield _err(("weightCache", "mode"), "operator mode needs instances with instance-store NVMe (the "
                       "operator's cache does not support EBS-only instances); "
                       f"{', '.join(ep.placement_types() or ['the placement'])} is not known to have it")


def spec_overrides_leave_library_paths(ep: Endpoint) -> Problems:
    """specOverrides may not write what the library writes or models."""
    for path, key in prod_facts.override_conflicts(ep.spec_overrides, ep.kind) if ep.spec_overrides else ():
        yield _err(("specOverrides", *path), f"spec.{prod_facts.dotted(path)} is written or modelled by the library; "
                                             f"use {key}")


#: Every rule of one endpoint, in the order its problems are reported.
ENDPOINT_RULES: tuple[Callable[[Endpoint], Problems], ...] = (
    values_hold_no_token, fsx_path_without_dot_segments, source_fits_the_kind, fields_of_the_kind,
    jumpstart_spec_limits, one_placement, known_instance_types, accelerators_known, gpu_preset_has_a_gpu,
    tgi_serves_text_generation, neuron_needs_custom_runtime,
    accelerator_resource_exists, requests_fit_the_instance, probes_on_the_served_port, tag_keys_unique,
    custom_runtime_complete, gateway_or_intelligent_routing, health_check_path_once,
    triggers_name_their_dimensions, autoscaling_once,
    kv_cache_with_vllm, preset_settings_left_to_the_preset, sagemaker_endpoint_when_used, weight_cache_fits,
    spec_overrides_leave_library_paths,
)
