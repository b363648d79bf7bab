"""What the endpoints share, decided from all of their plans (:func:`plan_shared` -> :class:`SharedPlan`): one token
sync per namespace, stack and secret (its role reads with every key an endpoint names), one agent code unit per
namespace, one warm DaemonSet per alike agent pod, and what the operator's side and KEDA need of the whole set."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..config import Endpoint
from ..config.autoscaling import CloudWatchTrigger, PrometheusTrigger, trigger_locations
from ..facts.production import AMP_WORKSPACE_RE
from .cache import CachePlan
from .endpoints import AgentCodePlan, EndpointPlan, SecretRead, TokenSyncPlan

#: The construct giving KEDA's role what the triggers read.
KEDA_TRIGGERS_ID = "KedaTriggers"


@dataclass(frozen=True)
class SharedTokenSync:
    """One token sync as its endpoints share it: its plan (the first endpoint's: unit, stack, role) and every read
    its role is granted (the secret, with each key an endpoint of the sync names)."""

    sync: TokenSyncPlan
    grants: tuple[SecretRead, ...]


@dataclass(frozen=True)
class WarmGroupPlan:
    """One warm DaemonSet: the endpoints whose agent pods are alike (equal warm keys), in the stack of the first."""

    unit: str
    scope_key: str
    caches: tuple[CachePlan, ...]
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class TriggerNeeds:
    """What the endpoints' triggers read: CloudWatch at all, and which AMP workspaces (region, workspace ID)."""

    cloudwatch: bool
    workspaces: tuple[tuple[str, str], ...]

    @property
    def any(self) -> bool:
        return self.cloudwatch or bool(self.workspaces)


@dataclass(frozen=True)
class SharedPlan:
    """What the endpoints share, decided from all of their plans: token syncs (each with every key its role decrypts
    with), agent code units (each with the endpoint its gc Job runs like), warm DaemonSets, what the operator's side
    needs of the whole set (the namespaces whose service accounts may assume the gated-model role, the add-on's
    ``enableCustomServiceAccounts``), and what KEDA's role reads for the triggers (``keda``)."""

    token_syncs: tuple[SharedTokenSync, ...]
    agent_code: tuple[tuple[AgentCodePlan, CachePlan], ...]
    warm_groups: tuple[WarmGroupPlan, ...]
    gated_namespaces: tuple[str, ...]
    custom_service_accounts: bool
    keda: TriggerNeeds


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


def gated_namespaces(endpoints: Iterable[Endpoint]) -> tuple[str, ...]:
    """Namespaces whose ``hyperpod-inference-service-account*`` may assume the gated-model role: exactly those of the
    JumpStart endpoints (the role exists only once there is one)."""
    return tuple(sorted({ep.namespace for ep in endpoints if ep.is_jumpstart}))


def needs_custom_service_accounts(endpoints: Iterable[Endpoint]) -> bool:
    """The operator add-on's ``enableCustomServiceAccounts``: an endpoint's pods use a service account of ours."""
    return any(ep.weight_cache.mode == "daemonset" and not ep.is_jumpstart for ep in endpoints)


def plan_shared(plans: Sequence[EndpointPlan]) -> SharedPlan:
    """What the endpoints of ``plans`` share, in the order they were added: one token sync per unit (its role
    decrypts with every key an endpoint names), one agent code unit per namespace (its gc Job runs like the
    namespace's first daemonset-cached endpoint by name), one warm DaemonSet per warm name (in the stack of the
    first endpoint, after the units that one waits for)."""
    syncs: dict[str, tuple[TokenSyncPlan, dict[SecretRead, None]]] = {}
    code: dict[str, AgentCodePlan] = {}
    caches: dict[str, list[CachePlan]] = {}
    warm: dict[str, tuple[EndpointPlan, list[CachePlan]]] = {}
    for p in plans:
        if p.token_sync is not None:
            syncs.setdefault(p.token_sync.unit, (p.token_sync, {}))[1][p.token_sync.grant] = None
        if p.cache is not None and p.agent_code is not None:
            code.setdefault(p.agent_code.unit, p.agent_code)
            caches.setdefault(p.endpoint.namespace, []).append(p.cache)
            assert p.warm_unit is not None
            warm.setdefault(p.warm_unit, (p, []))[1].append(p.cache)
    endpoints = [p.endpoint for p in plans]
    return SharedPlan(
        token_syncs=tuple(SharedTokenSync(sync, tuple(grants)) for sync, grants in syncs.values()),
        agent_code=tuple((c, min(caches[c.namespace], key=lambda cp: cp.endpoint.name)) for c in code.values()),
        warm_groups=tuple(WarmGroupPlan(unit, first.scope_key, tuple(group), first.depends_on)
                          for unit, (first, group) in warm.items()),
        gated_namespaces=gated_namespaces(endpoints),
        custom_service_accounts=needs_custom_service_accounts(endpoints), keda=trigger_needs(endpoints))
