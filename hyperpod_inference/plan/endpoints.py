"""The plan of one endpoint (:func:`plan_endpoint` -> :class:`EndpointPlan`): its manifest unit and the units it
waits for, the Kubernetes names it uses, the IRSA roles it needs (:class:`RolePlan`) and the grants they get as values
(:class:`ModelRead`, :class:`SecretRead`), its NVMe cache (:class:`~.cache.CachePlan`), the shared per-namespace
pieces it joins (token sync, agent code, warm DaemonSet), its post-deploy check, outputs and warnings."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..config import Endpoint, HyperPodConfig
from ..facts import naming
from . import commands
from .cache import CachePlan, SecretRef
from .context import PlanContext, default_scope, namespace_home
from .gateways import gateway_unit_of
from .outputs import OutputPlan, endpoint_outputs, output_key
from .warnings import WarningPlan, endpoint_warning_plans

#: The default JSON key of a token synced from Secrets Manager into its Kubernetes Secret.
TOKEN_KEY = "token"


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
class AgentCodePlan:
    """A namespace's NVMe agent code unit (the code ConfigMap and its gc Job), in the namespace's home."""

    unit: str
    namespace: str
    home: str  # the scope key of the namespace's home
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class VerifyPlan:
    """The post-deploy check of a SageMaker endpoint: one invoke with ``payload``, by the construct ``construct_id``
    next to the endpoint's manifest."""

    endpoint_name: str
    payload: str
    content_type: str
    fail_deployment: bool
    show_response: bool
    timeout_minutes: int
    construct_id: str




@dataclass(frozen=True)
class EndpointPlan:
    """Everything one endpoint needs, as values: realized by ``HyperPodInference.add_endpoint``.

    ``scope_key`` names the stack the endpoint's pieces go to ('' = the enclosing stack, else the nested stack's
    path below the construct); ``nested_stack`` is the (namespace, stackGroup) of the nested stack to create for it
    (``stackLayout: perNamespace``), None otherwise. ``depends_on``: the units its custom resource waits for, in
    order. ``token``: the Secret the operator hands to its containers (the operator's cache); ``s3_csi_read``: what
    the S3 CSI driver's role reads for it; ``gated_model_role``: the operator's JumpStart gated-model role must exist
    (a JumpStart endpoint)."""

    endpoint: Endpoint
    unit: str
    scope_key: str
    nested_stack: tuple[str, str | None] | None
    depends_on: tuple[str, ...]
    token: SecretRef | None
    token_sync: TokenSyncPlan | None
    reader: ReaderPlan | None
    cache: CachePlan | None
    agent_code: AgentCodePlan | None
    s3_csi_read: ModelRead | None
    captures: bool
    alb_logs: bool
    gated_model_role: bool
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


# ------------------------------------------------------------------------------------------------------- names
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


def role_plan(context: PlanContext, namespace: str, owner: str, service_account: str, purpose: str) -> RolePlan:
    """The IRSA role of ``namespace``/``service_account``, for ``owner`` (an endpoint, or a shared token sync). With
    files delivery nothing resolves the manifests' values at deploy: the role gets a deterministic name, so the
    ServiceAccount's annotation carries its real ARN."""
    name = naming.service_account_role_name(context.name_scope, namespace, owner, purpose) if context.files else None
    return RolePlan(f"{naming.pascal(namespace)}{naming.pascal(owner)}{purpose}Role", namespace, service_account,
                    f"{purpose} for {namespace}/{owner} (hyperpod-inference-cdk)", name)


# ---------------------------------------------------------------------------------------------------- planning
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
    gateway_unit = gateway_unit_of(config, endpoint)
    if gateway_unit is not None:
        deps.append(gateway_unit)
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
                            v.fail_deployment, v.show_response, v.timeout_minutes, f"Verify{naming.pascal(unit)}")
    return EndpointPlan(
        endpoint=endpoint, unit=unit, scope_key=scope_key, nested_stack=nested,
        depends_on=tuple(deps), token=token, token_sync=token_sync, reader=reader, cache=cache,
        agent_code=agent_code, s3_csi_read=s3_csi_read, captures=captures, alb_logs=alb_logs,
        gated_model_role=endpoint.is_jumpstart, verify=verify, outputs=endpoint_outputs(endpoint, context.region),
        output_key=output_key(endpoint), warnings=endpoint_warning_plans(config, endpoint, unit))
