"""The rule of each warning: a valid config that the operator allows but that is unwise.

A rule yields ``(path, message)`` for each finding and never raises (refusals are validation errors). An endpoint
rule reads one endpoint (paths relative to it) and the whole config, or None when the endpoint stands alone
(``add_endpoint`` on a construct without a config section for it); a config rule reads the whole config (paths from
the root). The registry (:mod:`.warnings`) gives each rule its ID."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from ..facts import operator as operator_facts
from ..facts import production as prod_facts
from ..facts import safety
from ..facts.model_support import TENSOR_PARALLEL
from .autoscaling import autoscaling_locations, trigger_locations
from .base import config_path
from .domain import Domain
from .endpoint import Endpoint
from .observability import Observability
from .operator import Manifests, Operator

Findings = Iterator[tuple[str, str]]


class WholeConfig(Protocol):
    """What the rules read of the whole config (a ``HyperPodConfig``, which stands above them: it validates the IDs
    it acknowledges against the registry)."""

    @property
    def operator(self) -> Operator: ...
    @property
    def manifests(self) -> Manifests: ...
    @property
    def domain(self) -> Domain | None: ...
    @property
    def observability(self) -> Observability: ...
    @property
    def endpoints(self) -> Sequence[Endpoint]: ...


# ------------------------------------------------------------------------------------------ the model and its secret
def unpinned(ep: Endpoint, config: WholeConfig | None) -> Findings:
    hf = ep.model.huggingface
    if hf is not None and hf.commit_sha is None:
        yield ("model.huggingface.commitSHA", "no commitSHA, so the deployment follows the Hub's main branch and is "
                                              "not reproducible; pin model.huggingface.commitSHA")


def token_in_runtime(ep: Endpoint, config: WholeConfig | None) -> Findings:
    hf = ep.model.huggingface
    if hf is not None and hf.token is not None and not hf.prefetch and ep.weight_cache.mode != "daemonset":
        yield ("model.huggingface.prefetch", "with prefetch: false the operator also gives the Hugging Face token to "
                                             "the model server container; set prefetch: true to keep it in the init "
                                             "container")


def whole_bucket(ep: Endpoint, config: WholeConfig | None) -> Findings:
    s3 = ep.model.s3
    if s3 is not None and not s3.prefix:
        yield ("model.s3.prefix", f"no prefix: the model's roles may read every object of s3://{s3.bucket} (the whole "
                                  "bucket); give the model's folder as prefix to grant only it")


def secret_arn_partial(ep: Endpoint, config: WholeConfig | None) -> Findings:
    hf = ep.model.huggingface
    arn = hf.token.secrets_manager_arn if hf and hf.token else None
    if arn and not safety.secret_arn_is_complete(arn):
        name = arn.rsplit(":secret:", 1)[-1]
        yield ("model.huggingface.token.secretsManagerArn",
               f"a partial ARN: '{name}' has no Secrets Manager suffix (- and six characters), so the token reader is "
               f"granted {name}-?????? (any secret of that name and a suffix); give the full ARN from the console or "
               "`aws secretsmanager describe-secret` to grant exactly one secret")


# ------------------------------------------------------------------------------------------------ capture and cache
def full_capture(ep: Endpoint, config: WholeConfig | None) -> Findings:
    pod = ep.data_capture.model_pod if ep.data_capture else None
    if pod is not None and pod.enabled and pod.initial_sampling_percentage in (None, 100) \
            and not pod.max_payload_size_kb:
        yield ("dataCapture.modelPod", "modelPod capture samples 100% of requests with no payload cap "
                                       "(maxPayloadSizeKB); every full request and response is stored")


def capture_sampling_zero(ep: Endpoint, config: WholeConfig | None) -> Findings:
    dc = ep.data_capture
    for key, tier in (("sagemakerEndpoint", dc.sagemaker_endpoint if dc else None),
                      ("modelPod", dc.model_pod if dc else None)):
        if tier is not None and tier.enabled and tier.initial_sampling_percentage == 0:
            yield (f"dataCapture.{key}.initialSamplingPercentage",
                   f"endpoint {ep.name}: {key} capture is enabled with a sampling percentage of 0: it captures nothing while its "
                   f"resources are created; give a percentage from 1 to 100, or set dataCapture.{key}.enabled: false")


def share_across_namespaces(ep: Endpoint, config: WholeConfig | None) -> Findings:
    cache = ep.weight_cache
    if cache.mode == "daemonset" and cache.share_across_namespaces:
        yield ("weightCache.shareAcrossNamespaces",
               f"every namespace's models share one cache root ({cache.host_path}): this endpoint's pods mount the "
               "models of other namespaces, and theirs mount this one's")


def weight_cache_without_nvme(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if ep.weight_cache.mode == "daemonset" and not ep.is_jumpstart:
        facts = ep.instance
        if facts is None or not facts.nvme:
            yield ("weightCache.mode", "the instance is not known to have instance-store NVMe: the cache lands on the "
                                       "root disk (within minFreePercent)")


# ---------------------------------------------------------------------------------------- placement and resources
def placement_registration(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if ep.sagemaker_endpoint_name and (ep.instance_types is not None or ep.node_affinity is not None):
        key = "instanceTypes" if ep.instance_types is not None else "nodeAffinity"
        yield (key, "with instanceTypes or nodeAffinity, how the operator fills the SageMaker endpoint "
                    "registration's instance type is not documented")


def request_near_instance_limit(ep: Endpoint, config: WholeConfig | None) -> Findings:
    for loc, message in ep.request_limit_findings(warn=True):
        yield (config_path(loc), message)


def tensor_parallel_size(ep: Endpoint, config: WholeConfig | None) -> Findings:
    runtime = ep.effective_runtime
    if ep.is_jumpstart or runtime not in TENSOR_PARALLEL:
        return
    tp = ep.accelerators[1]
    if tp > 1 and tp & (tp - 1):
        rule = TENSOR_PARALLEL[runtime]
        kv = ("its key-value heads divide by it, or it by them" if rule.replicates_kv_heads
              else "its key-value heads divide by it")
        given = ep.resources is not None and ep.resources.gpus is not None
        yield ("resources.gpus" if given else "resources",
               f"endpoint {ep.name}: the {runtime} preset shards the model over the {tp} GPUs (tensor-parallel size {tp}), and starts only "
               f"if the model's attention heads divide by {tp} and {kv}; head counts are almost always powers of "
               f"two, so {tp} is refused at start for most models: give a power of two (resources.gpus: "
               f"{1 << (tp.bit_length() - 1)}), or check this model's heads with doctor --only model "
               "(model.tensor-parallel) and acknowledge this warning")


# ---------------------------------------------------------------------------------------------------- autoscaling
def replicas_outside_autoscaling(ep: Endpoint, config: WholeConfig | None) -> Findings:
    for loc, spec in autoscaling_locations(ep):
        if loc in (("autoScalingSpec",), ("intelligentRoutingSpec", "autoScalingSpec")) \
                and not spec.min_replicas <= ep.replicas <= spec.max_replicas:
            yield ("replicas", f"replicas ({ep.replicas}) is outside {config_path(loc)}'s range [{spec.min_replicas}, "
                               f"{spec.max_replicas}]; KEDA will move it")


def trigger_single_and_list(ep: Endpoint, config: WholeConfig | None) -> Findings:
    for loc, spec in autoscaling_locations(ep):
        for single, many, kind in ((spec.cloud_watch_trigger, spec.cloud_watch_trigger_list, "cloudWatchTrigger"),
                                   (spec.prometheus_trigger, spec.prometheus_trigger_list, "prometheusTrigger")):
            if single is not None and many:
                yield (f"{config_path(loc)}.{kind}", f"both {kind} and {kind}List are set; the operator uses only "
                                                     f"{kind}List")


def activation_with_min_replicas(ep: Endpoint, config: WholeConfig | None) -> Findings:
    for loc, spec in autoscaling_locations(ep):
        if spec.min_replicas <= 0:
            continue
        for tloc, trig in trigger_locations(ep):
            if tloc[:len(loc)] == loc and len(tloc) > len(loc) and tloc[len(loc)] in (
                    "cloudWatchTrigger", "cloudWatchTriggerList", "prometheusTrigger", "prometheusTriggerList") \
                    and trig.activation_target_value is not None:
                yield (config_path(tloc) + ".activationTargetValue", f"activationTargetValue only matters when scaling "
                       f"from zero; {config_path(loc)}.minReplicaCount is {spec.min_replicas}")


def scale_to_zero_verify(ep: Endpoint, config: WholeConfig | None) -> Findings:
    for loc, spec in autoscaling_locations(ep):
        if spec.min_replicas == 0 and ep.verify is not None:
            yield (f"{config_path(loc)}.minReplicaCount", "minReplicaCount 0 with verify: the endpoint may have scaled "
                                                          "to zero when the check invokes it")


# ------------------------------------------------------------------------------------------------ routing, KV cache
def kv_cache_custom_runtime(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if ep.kv_cache_spec is not None and ep.effective_runtime == "custom":
        yield ("kvCacheSpec", "only vLLM / LMCache images are known to work with the operator's KV cache")


def l2_cache_redis_ignored(ep: Endpoint, config: WholeConfig | None) -> Findings:
    kv = ep.kv_cache_spec
    if kv is not None and kv.l2_cache_spec is not None and kv.l2_cache_spec.l2_cache_backend == "redis":
        yield ("kvCacheSpec.l2CacheSpec.l2CacheBackend", "the operator ignores the redis backend today "
                                                         "(aws/sagemaker-hyperpod-cli issue #431)")


def intelligent_routing(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if ep.intelligent_routing_spec is not None:
        yield ("intelligentRoutingSpec", "the operator refuses adding intelligentRoutingSpec to an existing "
                                         "deployment, and it moves the Ingress to hyperpod-inference-system")


def kvaware_without_kv_cache(ep: Endpoint, config: WholeConfig | None) -> Findings:
    irs = ep.intelligent_routing_spec
    kv = ep.kv_cache_spec
    if irs is not None and irs.routing_strategy == "kvaware" and (
            kv is None or not (kv.enable_l1_cache or kv.enable_l2_cache)):
        yield ("intelligentRoutingSpec.routingStrategy",
               "kvaware routes by the KV cache's contents, and kvCacheSpec turns on no cache "
               "(enableL1Cache / enableL2Cache): requests are routed as if no pod had cached anything")


# ------------------------------------------------------------------------------------ metrics, SageMaker, the CRD
def metrics_port_unserved(ep: Endpoint, config: WholeConfig | None) -> Findings:
    mm = ep.metrics.model_metrics if ep.metrics is not None else None
    if ep.is_jumpstart or mm is None or mm.port is None or ep.metrics.enabled is False:
        return
    served = ep.served_port
    if mm.port != served:
        yield ("metrics.modelMetrics.port", f"port {mm.port} is not the port the model server serves ({served}, where "
                                            "vLLM, SGLang and TGI serve /metrics); nothing else in the pod is known to "
                                            "serve it, so the scrape finds nothing")


def sagemaker_field_without_endpoint(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if not ep.sagemaker_endpoint_name:
        for key, value in (("tags", ep.tags), ("modelVersion", ep.model_version)):
            if value is not None:
                yield (key, f"{key} applies to the SageMaker endpoint, and sagemakerEndpointName is not set")


def deploy_time_beyond_verify(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if ep.max_deploy_time_in_seconds is not None and ep.verify is not None \
            and ep.max_deploy_time_in_seconds > ep.verify.timeout_minutes * 60:
        yield ("maxDeployTimeInSeconds", f"the deployment may take up to {ep.max_deploy_time_in_seconds} s, longer "
                                         f"than verify waits ({ep.verify.timeout_minutes} min)")


def health_taint_toleration(ep: Endpoint, config: WholeConfig | None) -> Findings:
    """A toleration of HyperPod's node-health taint not scoped to ``value: Schedulable`` (an ``Exists`` on the key,
    another value, or a toleration of every key)."""
    key, schedulable = operator_facts.NODE_HEALTH_TAINT_KEY, operator_facts.NODE_HEALTH_SCHEDULABLE
    for path, tolerations in prod_facts.lists_named("tolerations", ep.spec_overrides or {}, ("specOverrides",)):
        for i, t in enumerate(tolerations):
            if not isinstance(t, dict) or t.get("key") not in (key, None, ""):
                continue
            if t.get("operator") == "Exists" or t.get("value") != schedulable:
                yield (f"{'.'.join(path)}[{i}]",
                       f"tolerates the node-health taint {key} beyond value: {schedulable}: the pods may land on "
                       f"nodes HyperPod is draining or repairing; tolerate {{key: {key}, operator: Equal, value: "
                       f"{schedulable}}} only")


def spec_overrides_unchecked(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if ep.spec_overrides and ep.spec_overrides_unchecked:
        paths = ", ".join(f"spec.{prod_facts.dotted(p)}" for p in prod_facts.override_leaves(ep.spec_overrides))
        yield ("specOverridesUnchecked", "specOverrides merged into the resource without checking its paths against "
                                         f"the operator's fields: {paths}")


# ----------------------------------------------------------------------------------------------------------- alarms
def alarms_unused(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if ep.alarms is None or config is None:
        return
    obs = config.observability
    if obs.alarms is None and obs.prometheus_workspace_arn is None:
        yield ("alarms", "has no effect: observability has neither alarms nor prometheusWorkspaceArn")


def alarms_need_endpoint_name(ep: Endpoint, config: WholeConfig | None) -> Findings:
    if ep.alarms is None or config is None:
        return
    obs = config.observability
    if obs.alarms is not None and ep.sagemaker_endpoint_name is None and ep.alarms.enabled:
        yield ("alarms", "CloudWatch alarms read AWS/SageMaker metrics by endpoint name: this endpoint has no "
                         "sagemakerEndpointName, so only Prometheus alerting rules (with prometheusWorkspaceArn) "
                         "watch it")


# -------------------------------------------------------------------------------------------- the whole config
def chart_files_dependencies(config: WholeConfig) -> Findings:
    op = config.operator
    if op.install == "chart" and config.manifests.delivery == "files" and op.dependencies == "create":
        yield ("operator.dependencies", "install: chart with manifests.delivery: files: the ALB controller and KEDA "
                                        "Helm charts are not applied by the stack; install them into "
                                        "hyperpod-inference-system yourself (their IRSA roles are created)")


def apex_domain(config: WholeConfig) -> Findings:
    if config.domain is None:
        return
    zone = config.domain.zone_name.rstrip(".")
    for i, ep in enumerate(config.endpoints):
        if ep.domain_name is not None and ep.domain_name == zone:
            yield (f"endpoints[{i}].domainName",
                   f"the zone apex {zone}: the operator may change the apex's A and TXT records, and the apex TXT set "
                   "is shared with SPF and domain verification records; prefer a name below the apex")


def operator_version_unvalidated(config: WholeConfig) -> Findings:
    op = config.operator
    if op.version not in operator_facts.VALIDATED_OPERATOR_VERSIONS:
        release = operator_facts.release(op.version)
        yield ("operator.version", f"operator {op.version}'s CRD text is not public: the fields the config adds for "
                                   "it are sourced from AWS's documentation and the chart's pull requests, and the "
                                   "resources are not checked against its schema "
                                   f"({release.sources}); validated: "
                                   f"{', '.join(operator_facts.VALIDATED_OPERATOR_VERSIONS)}"
                                   + ("; its add-on (v2.x) publishes no configuration schema: the library writes the "
                                      "v1.x keys, and inferenceGateway.* as AWS's samples do"
                                      if (release.addon_version or "").startswith("v2.") else ""))


def addon_version_unvalidated(config: WholeConfig) -> Findings:
    op = config.operator
    validated = operator_facts.release(op.version).addon_version
    if op.install == "addon" and op.addon_version and validated and op.addon_version != validated:
        newer = operator_facts.NEWER_ADDON_VERSIONS.get(op.addon_version) or next(
            (r.version for r in operator_facts.RELEASES if r.addon_version == op.addon_version), None)
        detail = (f"it installs operator {newer}, whose CRD is not available to validate against" if newer
                  else "the library has not validated it")
        if op.addon_version.startswith("v2.") and not (validated or "").startswith("v2."):
            detail += "; v2.x reads other configuration keys (inferenceOperator.*, inferenceGateway.*) and its " \
                      "schema is unknown, so the configurationValues written for v1.x may not apply"
        yield ("operator.addonVersion", f"{op.addon_version} is not the add-on of operator.version {op.version} "
                                        f"({validated}): {detail}; operator.version "
                                        "stays the field set the config validates")


def addon_configuration_overrides(config: WholeConfig) -> Findings:
    op = config.operator
    if op.addon_configuration_overrides:
        paths = ", ".join(prod_facts.dotted(p) for p in prod_facts.override_leaves(op.addon_configuration_overrides))
        yield ("operator.addonConfigurationOverrides",
               f"merged into the add-on's configurationValues unvalidated: {paths}")
