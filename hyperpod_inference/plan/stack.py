"""The plan of a whole config: what the stack decides before any endpoint (:func:`plan_stack` -> :class:`StackPlan`),
then each endpoint's plan, what they share and the observability over them (:func:`plan_config` ->
:class:`ConfigPlan`). ``HyperPodInference`` makes the same plan piece by piece: the stack's at construction, each
endpoint's as it is added, the shared pieces and observability once every endpoint is in."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import HyperPodConfig
from .capture import CapturePlan, plan_capture
from .context import DeliveryPlan, NamespaceUnitPlan, PlanContext, plan_delivery, plan_namespaces
from .domain import DomainPlan, plan_domain
from .endpoints import EndpointPlan, plan_endpoint
from .gateways import GatewayPlan, plan_gateways
from .observability import ObservabilityPlan, plan_observability
from .operator import OperatorPlan, plan_operator
from .shared import SharedPlan, plan_shared
from .warnings import WarningPlan, config_warning_plans


@dataclass(frozen=True)
class StackPlan:
    """What the config decides for the whole stack: how manifests reach the cluster, the owned namespaces'
    manifests, the operator install, the capture and domain pieces (None without their section), the config's
    own warnings and the Inference Gateways it creates."""

    delivery: DeliveryPlan
    namespaces: tuple[NamespaceUnitPlan, ...]
    operator: OperatorPlan
    capture: CapturePlan | None
    domain: DomainPlan | None
    warnings: tuple[WarningPlan, ...]
    gateways: tuple[GatewayPlan, ...] = ()


def plan_stack(config: HyperPodConfig, context: PlanContext) -> StackPlan:
    return StackPlan(
        delivery=plan_delivery(config, context.kubernetes_scope),
        namespaces=plan_namespaces(config.namespaces, legacy=context.legacy_namespaces),
        operator=plan_operator(config, context), capture=plan_capture(config, context), domain=plan_domain(config),
        warnings=config_warning_plans(config), gateways=plan_gateways(config, context))


@dataclass(frozen=True)
class ConfigPlan:
    """A whole config's plan: the stack's decisions, one plan per endpoint, what they share and the observability
    over them (None when nothing is asked for)."""

    context: PlanContext
    stack: StackPlan
    endpoints: tuple[EndpointPlan, ...]
    shared: SharedPlan = field(repr=False)
    observability: ObservabilityPlan | None = field(default=None, repr=False)

    @property
    def warnings(self) -> tuple[WarningPlan, ...]:
        """The config's own warnings (each endpoint's are in its plan)."""
        return self.stack.warnings


def plan_config(config: HyperPodConfig, context: PlanContext) -> ConfigPlan:
    """The plan of a whole config: the stack's decisions, each endpoint's plan (placed by ``stackLayout``), what
    they share and the observability over them."""
    plans = tuple(plan_endpoint(config, ep, context) for ep in config.endpoints)
    return ConfigPlan(context, plan_stack(config, context), plans, plan_shared(plans),
                      plan_observability(config.observability, config.endpoints, alarm_topic=context.alarm_topic))
