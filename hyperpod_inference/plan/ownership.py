"""What the stack owns, as the plan names it: every Kubernetes object it delivers (:func:`planned_units`, one
manifest each; :func:`planned_objects`, those whose names do not depend on content, which ``doctor`` looks for in the
cluster) and every AWS piece it makes (:func:`planned_pieces`, each a construct below ``HyperPodInference`` with the
CloudFormation resources under it). A test synthesizes the stack and finds each planned piece and object once, and
nothing the plan does not name."""

from __future__ import annotations

from dataclasses import dataclass

from ..facts import gateway as gateway_facts
from ..facts import naming
from .context import in_scope, manifest_id
from .endpoints import token_names
from .operator import (
    DEPENDENCY_ADDONS_ID,
    DEPENDENCY_ROLES_ID,
    EXECUTION_ROLE_ID,
    GATEWAY_ROLE_ID,
    OPERATOR_ADDON_ID,
    OPERATOR_UNIT,
    TLS_BUCKET_ID,
)
from .shared import KEDA_TRIGGERS_ID
from .stack import ConfigPlan


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
    namespaces, are left out): each endpoint's custom resource, each Inference Gateway, its token
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
    for g in plan.stack.gateways:
        add(gateway_facts.KIND, g.namespace, g.name, f"the Inference Gateway {g.label}")
    gc = naming.agent_gc_name(plan.context.agent_code_prefix)
    for code, _ in plan.shared.agent_code:
        for kind in ("ServiceAccount", "Role", "RoleBinding", "NetworkPolicy"):
            add(kind, code.namespace, gc, f"the NVMe agent code gc of namespace {code.namespace}")
    return tuple(out.values())


# ------------------------------------------------------------------------------------------- the whole stack
@dataclass(frozen=True)
class ManifestObject:
    """A Kubernetes object of a manifest: kind, namespace ('' for a cluster-scoped one) and name; ``hashed``: its
    name is ``<name>-<hash of its content>`` (an immutable ConfigMap, a Job that runs once per content)."""

    kind: str
    namespace: str
    name: str
    hashed: bool = False


@dataclass(frozen=True)
class PlannedUnit:
    """One manifest the stack delivers (``manifests/<unit>.yaml`` and, with kubectl delivery, one
    ``KubernetesManifest`` in the stack ``scope_key`` names) and the objects in it; ``objects`` is None for the
    operator's own release (``install: chart``), whose objects its chart names."""

    unit: str
    scope_key: str
    objects: tuple[ManifestObject, ...] | None


@dataclass(frozen=True)
class PlannedPiece:
    """An AWS piece the stack makes: the construct at ``path`` below the ``HyperPodInference`` construct (``<nested
    stack id>/<id>`` in a nested stack) with every CloudFormation resource under it, and what it is for."""

    path: str
    what: str


def planned_units(plan: ConfigPlan) -> tuple[PlannedUnit, ...]:
    """Every manifest of ``plan``, once each, in the plan's order (a token sync with its first endpoint)."""
    ctx = plan.context
    units: dict[str, PlannedUnit] = {}

    def add(unit: str, scope_key: str, *objects: ManifestObject) -> None:
        units.setdefault(unit, PlannedUnit(unit, scope_key, objects))

    if plan.stack.operator.install == "chart":
        units[OPERATOR_UNIT] = PlannedUnit(OPERATOR_UNIT, "", None)
    for n in plan.stack.namespaces:
        add(n.unit, "", *(ManifestObject("Namespace", "", ns) for ns in n.namespaces))
    for g in plan.stack.gateways:
        add(g.unit, "", ManifestObject(gateway_facts.KIND, g.namespace, g.name))
    for p in plan.endpoints:
        ep, ns = p.endpoint, p.endpoint.namespace
        if p.token_sync is not None:
            names = token_names(ep, p.token_sync.scope_key, ctx.kubernetes_scope)
            add(p.token_sync.unit, p.token_sync.scope_key, ManifestObject("ServiceAccount", ns, names["service_account"]),
                ManifestObject("SecretStore", ns, names["store"]),
                ManifestObject("ExternalSecret", ns, names["external_secret"]))
        if p.reader is not None:
            add(p.reader.unit, p.scope_key, ManifestObject("ServiceAccount", ns, p.reader.service_account))
        add(p.unit, p.scope_key, ManifestObject(ep.kind, ns, ep.name))
    gc = naming.agent_gc_name(ctx.agent_code_prefix)
    for code, _ in plan.shared.agent_code:
        ns = code.namespace
        add(code.unit, code.home, ManifestObject("ConfigMap", ns, ctx.agent_code_prefix, hashed=True),
            *(ManifestObject(kind, ns, gc) for kind in ("ServiceAccount", "Role", "RoleBinding", "NetworkPolicy")),
            ManifestObject("Job", ns, gc, hashed=True))
    for group in plan.shared.warm_groups:
        ns, warm = group.caches[0].endpoint.namespace, group.caches[0].warm_name
        add(group.unit, group.scope_key, ManifestObject("ConfigMap", ns, f"{warm}-models", hashed=True),
            ManifestObject("DaemonSet", ns, warm),
            ManifestObject("NetworkPolicy", ns, naming.deny_ingress_policy_name(warm)))
    return tuple(units.values())


def planned_pieces(plan: ConfigPlan) -> tuple[PlannedPiece, ...]:
    """Every AWS piece of ``plan`` that makes CloudFormation resources (what the config imports makes none and is
    left out; a resource given to the construct as a prop, an imported bucket or zone, may leave a piece without
    any), once each: the operator's, each manifest (kubectl delivery), each endpoint's roles and check, the shared
    token sync roles, capture, domain, KEDA's grants, observability, and each nested stack."""
    op, settings, files = plan.stack.operator, plan.stack.operator.settings, plan.context.files
    pieces: dict[str, str] = {}
    if settings.tls_bucket_name is None:
        pieces[TLS_BUCKET_ID] = "the operator's TLS bucket"
    if op.install != "existing":
        pieces[EXECUTION_ROLE_ID] = "the operator's execution role"
        imported = (settings.alb_controller_role_arn, settings.keda_role_arn, settings.s3_csi_driver_role_arn)
        if not all(imported) or plan.shared.gated_namespaces:
            pieces[DEPENDENCY_ROLES_ID] = "the roles of the operator's dependencies (and the gated-model role)"
        if op.creates_dependencies:
            pieces[DEPENDENCY_ADDONS_ID] = "the operator's dependency add-ons"
        if op.install == "addon":
            pieces[OPERATOR_ADDON_ID] = "the operator's EKS add-on"
            if op.gateway_controller:
                pieces[GATEWAY_ROLE_ID] = "the Inference Gateway controller's role"
    if not files:
        for unit in planned_units(plan):
            pieces[in_scope(unit.scope_key, manifest_id(unit.unit))] = f"the manifest {unit.unit}"
    for p in plan.endpoints:
        if p.token_sync is not None:
            sync = p.token_sync
            pieces.setdefault(in_scope(sync.scope_key, sync.role.construct_id), f"the reader role of {sync.unit}")
        if p.reader is not None:
            pieces[in_scope(p.scope_key, p.reader.role.construct_id)] = f"the model reader role of {p.label}"
        if p.verify is not None and not files:
            pieces[in_scope(p.scope_key, p.verify.construct_id)] = f"the post-deploy check of {p.label}"
    capture, domain = plan.stack.capture, plan.stack.domain
    if capture is not None and any(p.captures for p in plan.endpoints):
        pieces[capture.construct_id] = "the capture bucket and keys"
        if capture.analytics is not None:
            pieces[capture.analytics.construct_id] = "the capture analytics (Glue tables, Athena workgroup and queries)"
    if domain is not None and any(p.endpoint.domain_name for p in plan.endpoints) \
            and (domain.hosted_zone_id is None or domain.certificate_arn is None):
        pieces[domain.construct_id] = "the hosted zone and certificate of the endpoints' domain names"
    if plan.shared.keda.any and op.install != "existing" and settings.keda_role_arn is None:
        pieces[KEDA_TRIGGERS_ID] = "what KEDA's role may read for the triggers"
    pieces.update(_observability_pieces(plan))
    for key in sorted({path.split("/")[0] for path in pieces if "/" in path}):
        pieces[f"{key}.NestedStack"] = f"the nested stack {key}"
    return tuple(PlannedPiece(path, what) for path, what in pieces.items())


def _observability_pieces(plan: ConfigPlan) -> dict[str, str]:
    """The dashboards, the created alarm topic and the rules (in the observability construct), and each endpoint's
    alarms: there, or in the nested stack of the endpoint (``<stack>/<id>Alarms``)."""
    obs = plan.observability
    if obs is None:
        return {}
    settings, pieces = obs.settings, {}
    alarms = settings.alarms
    created_topic = alarms is not None and alarms.create_topic and not alarms.sns_topic_arn \
        and not plan.context.alarm_topic
    if (settings.dashboard and obs.endpoints) or created_topic or settings.prometheus_workspace_arn:
        pieces[obs.construct_id] = "the dashboards, alarm topic and Prometheus rules"
    if alarms is None and not plan.context.alarm_topic:
        return pieces
    observed = {o.key: o for o in obs.endpoints}
    for p in plan.endpoints:
        o = observed[p.label]
        if o.thresholds is not None and o.sagemaker_endpoint_name:
            path = in_scope(p.scope_key, f"{obs.construct_id}Alarms") if p.scope_key else obs.construct_id
            pieces.setdefault(path, "the endpoints' alarms")
    return pieces
