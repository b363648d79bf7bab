"""What a plan depends on beyond the config (:class:`PlanContext`), and where the stack's pieces go: the stacks
(scope keys, nested stacks), the owned namespaces' manifests and how manifests reach the cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..config import Endpoint, HyperPodConfig
from ..facts import naming
from ..facts.rules import partition_of_region

#: The unit of the single namespaces manifest of earlier releases (``hyperpod-inference:legacyNamespaces=retain``).
LEGACY_NAMESPACES_UNIT = "namespaces"


@dataclass(frozen=True)
class NamespaceUnitPlan:
    """One manifest of owned namespaces: one per namespace, created (never applied, never adopted); or (``legacy``)
    the single ``namespaces`` manifest of earlier releases, applied and retained on removal (the migration's first
    step, docs/upgrades.md)."""

    unit: str
    namespaces: tuple[str, ...]
    legacy: bool = False


def plan_namespaces(namespaces: Iterable[str], *, legacy: bool = False) -> tuple[NamespaceUnitPlan, ...]:
    """The manifests of the owned ``namespaces``, in their order."""
    names = tuple(namespaces)
    if not names:
        return ()
    if legacy:
        return (NamespaceUnitPlan(LEGACY_NAMESPACES_UNIT, names, legacy=True),)
    return tuple(NamespaceUnitPlan(naming.namespace_unit_name(ns), (ns,)) for ns in names)


def namespace_unit_pairs(units: Iterable[NamespaceUnitPlan]) -> tuple[tuple[str, str], ...]:
    """namespace -> the unit creating it, as :attr:`PlanContext.namespace_units` holds it."""
    return tuple((ns, u.unit) for u in units for ns in u.namespaces)


@dataclass(frozen=True)
class PlanContext:
    """What a plan depends on beyond the config: where the construct sits and how its names are scoped.

    :param kubernetes_scope: the head of every Kubernetes name the library chooses (:func:`naming.kubernetes_scope`)
    :param name_scope: the head of the AWS names it chooses (:func:`naming.name_scope`)
    :param namespace_units: namespace -> the unit creating it (the namespaces the stack owns)
    :param legacy_namespaces: the owned namespaces stay in the single manifest of earlier releases
    :param alarm_topic: the construct was given an SNS topic for the alarms (the ``alarm_topic`` prop)
    """

    region: str
    account: str
    name_scope: str
    kubernetes_scope: str
    files: bool = False
    stack_layout: str = "single"
    namespace_units: tuple[tuple[str, str], ...] = ()
    legacy_namespaces: bool = False
    alarm_topic: bool = False

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
           path_in_stack: str = "Default", namespace_units: Mapping[str, str] | None = None,
           legacy_namespaces: bool = False, alarm_topic: bool = False) -> PlanContext:
        """The context of a ``HyperPodInference`` with id ``construct_id`` at ``path_in_stack`` in stack
        ``stack_name``, in the config's env; ``namespace_units``: default, the units :func:`plan_namespaces` gives."""
        assert config.env is not None, "a plan needs the env (the config's, or the enclosing stack's)"
        scope = naming.name_scope(stack_name, construct_id)
        units = tuple(namespace_units.items()) if namespace_units is not None else \
            namespace_unit_pairs(plan_namespaces(config.namespaces, legacy=legacy_namespaces))
        return cls(region=config.env.region, account=config.env.account, name_scope=scope,
                   kubernetes_scope=naming.kubernetes_scope(scope, stack_name, path_in_stack),
                   files=config.manifests.delivery == "files", stack_layout=config.stack_layout,
                   namespace_units=units, legacy_namespaces=legacy_namespaces, alarm_topic=alarm_topic)


@dataclass(frozen=True)
class DeliveryPlan:
    """How the manifests reach the cluster: applied by the stack's kubectl provider, or (``files``) written for a
    GitOps tool (``gitops``: ``argocd``, ``flux`` or ``none``); every object carries ``owner_labels``."""

    files: bool
    gitops: str | None
    owner_labels: tuple[tuple[str, str], ...]


def plan_delivery(config: HyperPodConfig, kubernetes_scope: str) -> DeliveryPlan:
    files = config.manifests.delivery == "files"
    return DeliveryPlan(files, config.manifests.gitops if files else None,
                        tuple(naming.owner_labels(kubernetes_scope).items()))


# ------------------------------------------------------------------------------------------- stacks and units
def nested_stack_id(namespace: str, group: str | None) -> str:
    """The construct id of the nested stack of a namespace (and ``stackGroup``), which is also its scope key; '.' is
    in neither a namespace nor a group, so the ids of two keys never coincide."""
    return ".".join(p for p in ("Namespace", namespace, group) if p)


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


def manifest_id(unit: str) -> str:
    """The construct id of the ``KubernetesManifest`` delivering ``unit`` (kubectl delivery)."""
    return f"Manifest{naming.pascal(unit)}"


def in_scope(scope_key: str, construct_id: str) -> str:
    """The path of ``construct_id`` below the construct: in its stack (``scope_key`` '') or in a nested stack."""
    return f"{scope_key}/{construct_id}" if scope_key else construct_id
