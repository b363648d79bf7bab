"""The plan: what one config (or one endpoint added to it) needs, as frozen plain values, decided without jsii.

``plan_endpoint`` gives one :class:`EndpointPlan` per endpoint: its manifest unit and the units it waits for, the
Kubernetes names it uses, the IRSA roles it needs (:class:`RolePlan`) and the grants they get as values
(:class:`ModelRead`, :class:`SecretRead`), its NVMe cache (:class:`CachePlan`), the shared per-namespace pieces it
joins (token sync, agent code, warm DaemonSet), its outputs and commands, its checks and its warnings.
``plan_shared`` decides, from every endpoint's plan, the pieces they share; ``plan_config`` plans a whole config.

``HyperPodInference`` realizes a plan: the AWS side (``aws_side``), then the Kubernetes side from the plan plus the
AWS values (``kubernetes_side``), then delivery. This module imports the config and the facts only (no aws_cdk, no
jsii, no cdk8s), so wiring is tested in milliseconds.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config.autoscaling import CloudWatchTrigger, PrometheusTrigger, trigger_locations
from ..config.models import Endpoint, HyperPodConfig
from ..config.warnings import ConfigWarning, acknowledgment, config_warnings, endpoint_warnings
from ..facts import naming
from ..facts.production import AMP_WORKSPACE_RE, INSTANCE_TYPE_LABEL, NVIDIA_GPU
from ..facts.rules import partition_of_region
from ..facts.runtimes import PRESETS
from . import plan_commands as commands

#: The default JSON key of a token synced from Secrets Manager into its Kubernetes Secret.
TOKEN_KEY = "token"
#: The agent's read-only volume of a node-mounted FSx file system (same path inside the pod).
FSX_SOURCE_VOLUME = "nvme-fsx-source"


# ----------------------------------------------------------------------------------------------------- values
@dataclass(frozen=True)
class SecretRef:
    """A key of a Kubernetes Secret in the endpoint's namespace."""

    name: str
    key: str


@dataclass(frozen=True)
class PlanContext:
    """What a plan depends on beyond the config: where the construct sits and how its names are scoped.

    :param kubernetes_scope: the head of every Kubernetes name the library chooses (:func:`naming.kubernetes_scope`)
    :param name_scope: the head of the AWS names it chooses (:func:`naming.name_scope`)
    :param namespace_units: namespace -> the unit creating it (the namespaces the stack owns)
    """

    region: str
    account: str
    name_scope: str
    kubernetes_scope: str
    files: bool = False
    stack_layout: str = "single"
    namespace_units: tuple[tuple[str, str], ...] = ()

    @property
    def agent_code_prefix(self) -> str:
        return naming.agent_code_prefix(self.kubernetes_scope)

    @property
    def partition(self) -> str:
        return partition_of_region(self.region)

    def namespace_unit(self, namespace: str) -> str | None:
        return dict(self.namespace_units).get(namespace)

    @classmethod
    def of(cls, config: HyperPodConfig, *, stack_name: str, construct_id: str = "Default",
           path_in_stack: str = "Default", namespace_units: Mapping[str, str] | None = None) -> PlanContext:
        """The context of a ``HyperPodInference`` with id ``construct_id`` at ``path_in_stack`` in stack
        ``stack_name``, in the config's env; ``namespace_units``: default, one unit per owned namespace."""
        assert config.env is not None, "a plan needs the env (the config's, or the enclosing stack's)"
        scope = naming.name_scope(stack_name, construct_id)
        units = namespace_units if namespace_units is not None else \
            {ns: naming.namespace_unit_name(ns) for ns in config.namespaces}
        return cls(region=config.env.region, account=config.env.account, name_scope=scope,
                   kubernetes_scope=naming.kubernetes_scope(scope, stack_name, path_in_stack),
                   files=config.manifests.delivery == "files", stack_layout=config.stack_layout,
                   namespace_units=tuple(units.items()))


@dataclass(frozen=True)
class RolePlan:
    """An IRSA role for one service account: the construct's id, and (files delivery) its physical name."""

    construct_id: str
    namespace: str
    service_account: str
    description: str
    role_name: str | None = None


@dataclass(frozen=True)
class ModelRead:
    """Read of one model: the objects under ``prefix`` of ``bucket`` (and decrypt with its key)."""

    bucket: str
    prefix: str
    kms_key_arn: str | None = None


@dataclass(frozen=True)
class SecretRead:
    """Read of one Secrets Manager secret (and decrypt with its customer key)."""

    secret_arn: str
    kms_key_arn: str | None = None


@dataclass(frozen=True)
class TokenSyncPlan:
    """The namespace's sync of a Secrets Manager token (shared by every endpoint of the namespace and stack naming the
    same secret): its unit, the reader role of its service account and what that role reads."""

    unit: str
    scope_key: str
    role: RolePlan
    grant: SecretRead
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class ReaderPlan:
    """An endpoint's own model-reader service account (daemonset cache from S3): its unit, role and grant."""

    unit: str
    service_account: str
    role: RolePlan
    grant: ModelRead
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class CachePlan:
    """One endpoint's daemonset cache: what its init container, its warm DaemonSet and its names depend on.

    ``code_configmap_prefix`` names the agent code ConfigMap (``<prefix>-<code hash>``); ``share_across_namespaces``
    puts every namespace's models in one cache root (``weightCache.hostPath``) instead of ``<hostPath>/<namespace>``;
    ``lease_sidecar`` makes the init container a native sidecar that keeps the pod's lease; ``group_scope`` keeps the
    warm DaemonSets of different stacks apart; ``name_scope`` heads the warm DaemonSet's name. The charts render the
    pod pieces from it (``charts.nvme_cache.NvmeCachePlan``)."""

    endpoint: Endpoint
    region: str
    token: SecretRef | None
    service_account_name: str | None
    code_configmap_prefix: str = naming.AGENT_CODE_CONFIGMAP
    share_across_namespaces: bool = False
    lease_sidecar: bool = True
    group_scope: str = ""
    name_scope: str = ""

    @property
    def spec(self) -> dict[str, Any]:
        return model_spec(self.endpoint, self.region)

    @property
    def host_root(self) -> str:
        base = self.endpoint.weight_cache.host_path.rstrip("/")
        if self.share_across_namespaces:
            return base or "/"
        return f"{base}/{self.endpoint.namespace}"

    @property
    def evict_legacy(self) -> bool:
        """``weightCache.evictLegacyLayout``: the warm pods first evict the previous layout's models."""
        return self.endpoint.weight_cache.evict_legacy_layout

    def warm_key(self) -> str:
        """Everything the warm DaemonSet's pod spec depends on except the list of models: plans with equal keys are
        warmed by one DaemonSet."""
        ep = self.endpoint
        return json.dumps({
            "namespace": ep.namespace, "scope": self.group_scope, "image": agent_image(ep, self.region),
            "placement": placement(ep), "tolerations": tolerations(ep), "root": self.host_root,
            "token": [self.token.name, self.token.key] if self.token else None,
            "serviceAccount": self.service_account_name, "sources": source_mounts(ep),
            # the watermark as it was spelled when the key was first written, so the names never move
            "args": ["--min-free-percent", str(ep.weight_cache.min_free_percent)],
            # only when on, so that the default's names never move
            **({"evictLegacy": True} if self.evict_legacy and not self.share_across_namespaces else {}),
        }, sort_keys=True)

    @property
    def warm_name(self) -> str:
        """The warm DaemonSet's name: ``<name scope>-nvme-warm-<hash of the warm key>``, so adding or removing an
        endpoint of the group never renames it."""
        return naming.warm_daemonset_name(self.name_scope, self.warm_key())


@dataclass(frozen=True)
class AgentCodePlan:
    """A namespace's NVMe agent code unit (the code ConfigMap and its gc Job), in the namespace's home."""

    unit: str
    namespace: str
    home: str  # the scope key of the namespace's home
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class VerifyPlan:
    """The post-deploy check of a SageMaker endpoint: one invoke with ``payload``."""

    endpoint_name: str
    payload: str
    content_type: str
    fail_deployment: bool
    show_response: bool
    timeout_minutes: int


@dataclass(frozen=True)
class OutputPlan:
    """One stack output: its construct id, value and description."""

    construct_id: str
    value: str
    description: str


@dataclass(frozen=True)
class WarningPlan:
    """A config warning as the synth reports it: acknowledged (``reason``) or not."""

    annotation_id: str
    where: str
    message: str
    reason: str | None = None


@dataclass(frozen=True)
class EndpointPlan:
    """Everything one endpoint needs, as values: realized by ``HyperPodInference.add_endpoint``.

    ``scope_key`` names the stack the endpoint's pieces go to ('' = the enclosing stack, else the nested stack's
    path below the construct); ``nested_stack`` is the (namespace, stackGroup) of the nested stack to create for it
    (``stackLayout: perNamespace``), None otherwise. ``depends_on``: the units its custom resource waits for, in
    order. ``token``: the Secret the operator hands to its containers (the operator's cache); ``s3_csi_read``: what
    the S3 CSI driver's role reads for it."""

    endpoint: Endpoint
    unit: str
    scope_key: str
    nested_stack: tuple[str, str | None] | None
    base_depends_on: tuple[str, ...]
    depends_on: tuple[str, ...]
    token: SecretRef | None
    token_sync: TokenSyncPlan | None
    reader: ReaderPlan | None
    cache: CachePlan | None
    agent_code: AgentCodePlan | None
    s3_csi_read: ModelRead | None
    captures: bool
    alb_logs: bool
    verify: VerifyPlan | None
    outputs: tuple[OutputPlan, ...]
    output_key: str
    warnings: tuple[WarningPlan, ...]

    @property
    def label(self) -> str:
        return f"{self.endpoint.namespace}/{self.endpoint.name}"

    @property
    def warm_unit(self) -> str | None:
        """The unit of the warm DaemonSet this endpoint's models join (daemonset cache only)."""
        if self.cache is None:
            return None
        return naming.shared_unit_name(self.endpoint.namespace, "warm", self.cache.warm_name)


@dataclass(frozen=True)
class WarmGroupPlan:
    """One warm DaemonSet: the endpoints whose agent pods are alike (equal warm keys), in the stack of the first."""

    unit: str
    scope_key: str
    caches: tuple[CachePlan, ...]
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class SharedPlan:
    """What the endpoints share, decided from all of their plans: token syncs (with every key their role decrypts
    with), agent code units (each with the endpoint its gc Job runs like), warm DaemonSets, what the operator's side
    needs of the whole set, and what KEDA's role reads for the triggers (``keda``)."""

    token_syncs: tuple[TokenSyncPlan, ...]
    token_grants: tuple[tuple[str, tuple[SecretRead, ...]], ...]
    agent_code: tuple[tuple[AgentCodePlan, CachePlan], ...]
    warm_groups: tuple[WarmGroupPlan, ...]
    gated_namespaces: tuple[str, ...]
    custom_service_accounts: bool
    keda: TriggerNeeds


@dataclass(frozen=True)
class ConfigPlan:
    """A whole config's plan: config warnings, one plan per endpoint, and what they share."""

    context: PlanContext
    warnings: tuple[WarningPlan, ...]
    endpoints: tuple[EndpointPlan, ...]
    shared: SharedPlan = field(repr=False)


@dataclass(frozen=True)
class TriggerNeeds:
    """What the endpoints' triggers read: CloudWatch at all, and which AMP workspaces (region, workspace ID)."""

    cloudwatch: bool
    workspaces: tuple[tuple[str, str], ...]

    @property
    def any(self) -> bool:
        return self.cloudwatch or bool(self.workspaces)


def trigger_needs(endpoints: Iterable[Endpoint]) -> TriggerNeeds:
    cloudwatch = False
    workspaces: list[tuple[str, str]] = []
    for ep in endpoints:
        for _, trigger in trigger_locations(ep):
            if isinstance(trigger, CloudWatchTrigger):
                cloudwatch = True
            elif isinstance(trigger, PrometheusTrigger):
                m = AMP_WORKSPACE_RE.match(trigger.server_address)
                if m and (m.group(1), m.group(2)) not in workspaces:
                    workspaces.append((m.group(1), m.group(2)))
    return TriggerNeeds(cloudwatch, tuple(sorted(workspaces)))


# ------------------------------------------------------------------------------------- names and pod pieces
def token_sync_key(endpoint: Endpoint, scope_key: str = "") -> str:
    """What a Secrets Manager token sync reads (namespace, secret ARN, JSON property) and ``scope_key`` (keeps the
    syncs of different stacks in one namespace apart): endpoints with equal keys share one sync."""
    hf = endpoint.model.huggingface
    token = hf.token if hf is not None else None
    if token is None or token.secrets_manager_arn is None:
        raise ValueError(f"endpoint {endpoint.namespace}/{endpoint.name}: no Secrets Manager token")
    return json.dumps([endpoint.namespace, scope_key, token.secrets_manager_arn, token.json_property])


def token_names(endpoint: Endpoint, scope_key: str = "", name_scope: str = "") -> dict[str, str]:
    """The Kubernetes names of an endpoint's Secrets Manager token sync: ``<name_scope>-hf-token-<hash of
    token_sync_key>`` (:func:`~hyperpod_inference.facts.naming.hf_token_names`)."""
    return naming.hf_token_names(name_scope, token_sync_key(endpoint, scope_key))


def token_secret_ref(endpoint: Endpoint, scope_key: str = "", name_scope: str = "") -> SecretRef | None:
    """The Kubernetes Secret (in the endpoint's namespace) that holds the token, whichever way it gets there."""
    hf = endpoint.model.huggingface
    if hf is None or hf.token is None:
        return None
    if hf.token.kubernetes_secret is not None:
        return SecretRef(hf.token.kubernetes_secret.name, hf.token.kubernetes_secret.key)
    return SecretRef(token_names(endpoint, scope_key, name_scope)["secret"], TOKEN_KEY)


def model_spec(endpoint: Endpoint, region: str) -> dict[str, Any]:
    """The agent's model spec for an endpoint's source (no secrets in it)."""
    src = endpoint.model
    if src.huggingface is not None:
        return {"source": "huggingface", "modelId": src.huggingface.model_id,
                "revision": src.huggingface.commit_sha or "main"}
    if src.s3 is not None:
        return {"source": "s3", "bucket": src.s3.bucket, "prefix": src.s3.prefix, "region": src.s3.region or region}
    if src.fsx is not None and src.fsx.node_path:
        # links are followed only to targets on the node-mounted file system
        spec = {"source": "local", "path": fsx_node_model_path(endpoint)}
        mount = src.fsx.node_path.rstrip("/")
        return {**spec, "mount": mount} if mount else spec
    raise ValueError(f"endpoint {endpoint.namespace}/{endpoint.name}: the NVMe agent caches S3, Hugging Face and "
                     "node-mounted FSx sources")


def fsx_node_model_path(endpoint: Endpoint) -> str:
    """``model.fsx.path`` under ``nodePath``, in one spelling (the config refuses ``.``/``..`` segments): repeated
    and trailing slashes go, so the agent's spec and cache directory do not depend on how the path was written."""
    fsx = endpoint.model.fsx
    assert fsx is not None and fsx.node_path
    return posixpath.normpath("/" + "/".join(p for p in f"{fsx.node_path}/{fsx.path}".split("/") if p))


def source_mounts(endpoint: Endpoint) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts) giving the agent read-only access to a node-mounted FSx file system at the same path."""
    fsx = endpoint.model.fsx
    if fsx is None or not fsx.node_path:
        return [], []
    return ([{"name": FSX_SOURCE_VOLUME, "hostPath": {"path": fsx.node_path, "type": "Directory"}}],
            [{"name": FSX_SOURCE_VOLUME, "mountPath": fsx.node_path, "readOnly": True}])


def placement(ep: Endpoint) -> dict[str, Any]:
    """The warm DaemonSet's node affinity: the endpoint's own required terms, or its instance type(s)."""
    if ep.node_affinity is not None and ep.node_affinity.required_during_scheduling_ignored_during_execution:
        required = ep.node_affinity.required_during_scheduling_ignored_during_execution
        return {"requiredDuringSchedulingIgnoredDuringExecution": required.model_dump(by_alias=True, exclude_none=True)}
    types = ep.placement_types()
    if not types:
        return {}  # only preferred terms: the endpoint may land on any node, so may its cache
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": types}]}]}}


def tolerations(ep: Endpoint) -> list[dict[str, Any]]:
    """The accelerator taint of the endpoint's nodes (NVIDIA, or Neuron on Trainium); only the warm DaemonSet gets
    it."""
    facts = ep.instance
    keys = [facts.resource] if facts is not None else [NVIDIA_GPU]
    return [{"key": k, "operator": "Exists", "effect": "NoSchedule"} for k in keys]


def agent_image(endpoint: Endpoint, region: str) -> str:
    """The NVMe agent's image: ``weightCache.agentImage``, else the model server's (the agent needs python3)."""
    if endpoint.weight_cache.agent_image:
        return endpoint.weight_cache.agent_image
    if endpoint.image:
        return endpoint.image
    return PRESETS[endpoint.effective_runtime or "vllm"].image(region)


def nested_stack_id(namespace: str, group: str | None) -> str:
    """The construct id of the nested stack of a namespace (and ``stackGroup``), which is also its scope key; '.' is
    in neither a namespace nor a group, so the ids of two keys never coincide."""
    return ".".join(p for p in ("Namespace", namespace, group) if p)


def gated_namespaces(endpoints: Iterable[Endpoint]) -> tuple[str, ...]:
    """Namespaces whose ``hyperpod-inference-service-account*`` may assume the gated-model role: exactly those of the
    JumpStart endpoints (the role exists only once there is one)."""
    return tuple(sorted({ep.namespace for ep in endpoints if ep.is_jumpstart}))


def needs_custom_service_accounts(endpoints: Iterable[Endpoint]) -> bool:
    """The operator add-on's ``enableCustomServiceAccounts``: an endpoint's pods use a service account of ours."""
    return any(ep.weight_cache.mode == "daemonset" and not ep.is_jumpstart for ep in endpoints)


def role_plan(context: PlanContext, namespace: str, owner: str, service_account: str, purpose: str) -> RolePlan:
    """The IRSA role of ``namespace``/``service_account``, for ``owner`` (an endpoint, or a shared token sync). With
    files delivery nothing resolves the manifests' values at deploy: the role gets a deterministic name, so the
    ServiceAccount's annotation carries its real ARN."""
    name = naming.service_account_role_name(context.name_scope, namespace, owner, purpose) if context.files else None
    return RolePlan(f"{naming.pascal(namespace)}{naming.pascal(owner)}{purpose}Role", namespace, service_account,
                    f"{purpose} for {namespace}/{owner} (hyperpod-inference-cdk)", name)


def report(warning: ConfigWarning, annotation_id: str, where: str, reason: str | None) -> WarningPlan:
    return WarningPlan(annotation_id, where, warning.message, reason)


# --------------------------------------------------------------------------------------------------- planning
def default_scope(config: HyperPodConfig, endpoint: Endpoint) -> tuple[str, tuple[str, str | None] | None]:
    """(scope key, nested stack) of an endpoint placed by the config: the enclosing stack (``stackLayout: single``),
    or the nested stack of its namespace and ``stackGroup`` (``perNamespace``)."""
    if config.stack_layout != "perNamespace":
        return "", None
    key = (endpoint.namespace, endpoint.stack_group)
    return nested_stack_id(*key), key


def namespace_home(context: PlanContext, namespace: str) -> str:
    """The scope key of where a namespace's one-per-namespace pieces (the agent code, its gc Job) live, whatever the
    order of the endpoints: the enclosing stack, or the namespace's own nested stack ``Namespace.<ns>``."""
    return nested_stack_id(namespace, None) if context.stack_layout == "perNamespace" else ""


def plan_endpoint(config: HyperPodConfig, endpoint: Endpoint, context: PlanContext, *,
                  scope_key: str | None = None) -> EndpointPlan:
    """The plan of one endpoint of ``config``; ``scope_key``: the stack it is placed in by the caller (default: where
    the config's ``stackLayout`` places it)."""
    nested: tuple[str, str | None] | None = None
    if scope_key is None:
        scope_key, nested = default_scope(config, endpoint)
    ns, kscope = endpoint.namespace, context.kubernetes_scope
    unit = naming.endpoint_unit_name(ns, endpoint.name)
    namespace_unit = context.namespace_unit(ns)
    base = (namespace_unit,) if namespace_unit else ()
    deps = list(base)
    token = token_secret_ref(endpoint, scope_key, kscope)
    hf = endpoint.model.huggingface
    token_sync = reader = cache = agent_code = s3_csi_read = None
    if hf is not None and hf.token is not None and hf.token.secrets_manager_arn:
        names = token_names(endpoint, scope_key, kscope)
        sync_unit = naming.shared_unit_name(ns, "token", names["secret"])
        token_sync = TokenSyncPlan(sync_unit, scope_key, role_plan(context, ns, sync_unit[len(ns) + 1:],
                                                                   names["service_account"], "Reader"),
                                   SecretRead(hf.token.secrets_manager_arn, hf.token.kms_key_arn), base)
        deps.append(sync_unit)
    s3 = endpoint.model.s3
    read = ModelRead(s3.bucket, s3.prefix, s3.kms_key_arn) if s3 is not None else None
    if endpoint.weight_cache.mode == "daemonset":
        sa_name = None
        if read is not None:
            sa_name = naming.model_reader_service_account_name(kscope, endpoint.name)
            reader = ReaderPlan(naming.shared_unit_name(ns, "reader", sa_name), sa_name,
                                role_plan(context, ns, endpoint.name, sa_name, "ModelReader"), read, base)
        wc = endpoint.weight_cache
        cache = CachePlan(endpoint, context.region, token, sa_name, code_configmap_prefix=context.agent_code_prefix,
                          share_across_namespaces=wc.share_across_namespaces, lease_sidecar=wc.lease_sidecar,
                          group_scope=scope_key, name_scope=kscope)
        agent_code = AgentCodePlan(naming.shared_unit_name(ns, "agent", context.agent_code_prefix), ns,
                                   namespace_home(context, ns), base)
        deps.append(agent_code.unit)
        if reader is not None:
            deps.append(reader.unit)
    else:
        s3_csi_read = read  # the operator mounts the bucket through the S3 CSI driver: exactly this model's prefix
    dc = endpoint.data_capture
    captures = dc is not None and dc.any_enabled
    alb_logs = bool(dc and dc.load_balancer and dc.load_balancer.enabled)
    verify = None
    if endpoint.verify is not None and endpoint.sagemaker_endpoint_name is not None:
        v = endpoint.verify
        verify = VerifyPlan(endpoint.sagemaker_endpoint_name, commands.default_payload(endpoint), v.content_type,
                            v.fail_deployment, v.show_response, v.timeout_minutes)
    return EndpointPlan(
        endpoint=endpoint, unit=unit, scope_key=scope_key, nested_stack=nested, base_depends_on=base,
        depends_on=tuple(deps), token=token, token_sync=token_sync, reader=reader, cache=cache,
        agent_code=agent_code, s3_csi_read=s3_csi_read, captures=captures, alb_logs=alb_logs, verify=verify,
        outputs=endpoint_outputs(endpoint, context.region), output_key=output_key(endpoint),
        warnings=endpoint_warning_plans(config, endpoint, unit))


def output_key(endpoint: Endpoint) -> str:
    return f"{naming.pascal(endpoint.namespace)}{naming.pascal(endpoint.name)}"


def endpoint_outputs(endpoint: Endpoint, region: str) -> tuple[OutputPlan, ...]:
    """The endpoint's status output and (with a domain name or SageMaker endpoint) its invoke output; the
    verification's summary output is added where the check is made."""
    key, where = output_key(endpoint), f"{endpoint.namespace}/{endpoint.name}"
    outs = [OutputPlan(f"{key}Status", commands.status_command(endpoint), f"{where}: status and events (and DNS/TLS)")]
    invoke = commands.invoke_output(endpoint, region=region)
    if invoke:
        outs.append(OutputPlan(f"{key}Invoke", invoke, f"{where}: URL and invoke command"))
    return tuple(outs)


def endpoint_warning_plans(config: HyperPodConfig, endpoint: Endpoint, unit: str) -> tuple[WarningPlan, ...]:
    where = f"endpoints {endpoint.namespace}/{endpoint.name}"
    return tuple(report(w, f"{w.annotation_id}:{unit}", f"{where}: {w.path}", acknowledgment(config, w.id, endpoint))
                 for w in endpoint_warnings(endpoint, config))


def config_warning_plans(config: HyperPodConfig) -> tuple[WarningPlan, ...]:
    return tuple(report(w, w.annotation_id, w.path, acknowledgment(config, w.id)) for w in config_warnings(config))


def plan_shared(plans: Sequence[EndpointPlan]) -> SharedPlan:
    """What the endpoints of ``plans`` share, in the order they were added: one token sync per unit (its role
    decrypts with every key an endpoint names), one agent code unit per namespace (its gc Job runs like the
    namespace's first daemonset-cached endpoint by name), one warm DaemonSet per warm name (in the stack of the
    first endpoint, after the units that one waits for)."""
    syncs: dict[str, TokenSyncPlan] = {}
    grants: dict[str, dict[SecretRead, None]] = {}
    code: dict[str, AgentCodePlan] = {}
    caches: dict[str, list[CachePlan]] = {}
    warm: dict[str, tuple[EndpointPlan, list[CachePlan]]] = {}
    for p in plans:
        if p.token_sync is not None:
            syncs.setdefault(p.token_sync.unit, p.token_sync)
            grants.setdefault(p.token_sync.unit, {})[p.token_sync.grant] = None
        if p.cache is not None and p.agent_code is not None:
            code.setdefault(p.agent_code.unit, p.agent_code)
            caches.setdefault(p.endpoint.namespace, []).append(p.cache)
            assert p.warm_unit is not None
            warm.setdefault(p.warm_unit, (p, []))[1].append(p.cache)
    endpoints = [p.endpoint for p in plans]
    return SharedPlan(
        token_syncs=tuple(syncs.values()),
        token_grants=tuple((unit, tuple(g)) for unit, g in grants.items()),
        agent_code=tuple((c, min(caches[c.namespace], key=lambda cp: cp.endpoint.name)) for c in code.values()),
        warm_groups=tuple(WarmGroupPlan(unit, first.scope_key, tuple(group), first.depends_on)
                          for unit, (first, group) in warm.items()),
        gated_namespaces=gated_namespaces(endpoints),
        custom_service_accounts=needs_custom_service_accounts(endpoints), keda=trigger_needs(endpoints))


def plan_config(config: HyperPodConfig, context: PlanContext) -> ConfigPlan:
    """The plan of a whole config: its warnings, each endpoint's plan (placed by ``stackLayout``) and what they
    share."""
    plans = tuple(plan_endpoint(config, ep, context) for ep in config.endpoints)
    return ConfigPlan(context, config_warning_plans(config), plans, plan_shared(plans))


@dataclass(frozen=True)
class PlannedObject:
    """A Kubernetes object the stack would create, named by the plan: ``endpoint`` is the index of the endpoint
    whose name it is (its custom resource: a name the user chooses), None for a name the library chooses;
    ``used_by`` says what it is for."""

    kind: str
    namespace: str
    name: str
    used_by: str
    endpoint: int | None = None


def planned_objects(plan: ConfigPlan) -> tuple[PlannedObject, ...]:
    """The objects of ``plan`` whose names do not depend on content (content-named ConfigMaps and Jobs, and the
    namespaces, are left out): each endpoint's custom resource, its token
    sync's ServiceAccount, SecretStore, ExternalSecret and the Secret that one writes, its model-reader
    ServiceAccount, each warm DaemonSet with its NetworkPolicy, and each namespace's agent gc ServiceAccount, Role,
    RoleBinding and NetworkPolicy. Once each, in the plan's order."""
    scope = plan.context.kubernetes_scope
    out: dict[tuple[str, str, str], PlannedObject] = {}

    def add(kind: str, namespace: str, name: str, used_by: str, endpoint: int | None = None) -> None:
        out.setdefault((kind, namespace, name), PlannedObject(kind, namespace, name, used_by, endpoint))

    for i, p in enumerate(plan.endpoints):
        ep, ns = p.endpoint, p.endpoint.namespace
        where = f"endpoints[{i}] ({ep.name})"
        add(ep.kind, ns, ep.name, where, i)
        if p.token_sync is not None:
            names = token_names(ep, p.token_sync.scope_key, scope)
            sync = f"the token sync of {where}"
            add("ServiceAccount", ns, names["service_account"], sync)
            add("SecretStore", ns, names["store"], sync)
            add("ExternalSecret", ns, names["external_secret"], sync)
            add("Secret", ns, names["secret"], f"the token of {where}")
        if p.reader is not None:
            add("ServiceAccount", ns, p.reader.service_account, f"the model reader of {where}")
    for group in plan.shared.warm_groups:
        first = group.caches[0]
        ns = first.endpoint.namespace
        used_by = f"the NVMe warm DaemonSet of {', '.join(c.endpoint.name for c in group.caches)}"
        add("DaemonSet", ns, first.warm_name, used_by)
        add("NetworkPolicy", ns, naming.deny_ingress_policy_name(first.warm_name), used_by)
    gc = naming.agent_gc_name(plan.context.agent_code_prefix)
    for code, _ in plan.shared.agent_code:
        for kind in ("ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"):
            add(kind, code.namespace, gc, f"the NVMe agent code gc of namespace {code.namespace}")
    return tuple(out.values())
