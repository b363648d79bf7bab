"""The plan of the config's Inference Gateways (:func:`plan_gateways` -> :class:`GatewayPlan` each): the
``InferenceGatewayConfig``'s spec as values (each ``endpoint:`` scheduler resolved to the endpoint's pods, port and
served model name), its manifest unit and what it waits for, its outputs; and which endpoints wait for it.

Order: a gateway is created after its namespace and the operator add-on (the add-on installs its CRD and controller)
and deleted before the add-on (AWS: every InferenceGatewayConfig must be gone before the add-on is upgraded or
removed); the endpoints behind it are created after it (the operator would otherwise create an
InferenceGatewayConfig of that name itself, and the stack's create would then fail) and deleted before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..config import Endpoint, HyperPodConfig
from ..config.base import dump
from ..config.gateway import Gateway, Scheduler
from ..facts import gateway as facts
from ..facts import naming
from .context import PlanContext
from .outputs import OutputPlan


@dataclass(frozen=True)
class GatewayPlan:
    """One InferenceGatewayConfig the stack creates: ``spec`` is its spec as the library writes it."""

    name: str
    namespace: str
    unit: str
    depends_on: tuple[str, ...]
    spec: Mapping[str, Any] = field(repr=False)
    outputs: tuple[OutputPlan, ...]

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.name}"


def _endpoint(config: HyperPodConfig, gw: Gateway, s: Scheduler) -> Endpoint | None:
    return next((ep for ep in config.endpoints if ep.name == s.endpoint and ep.namespace == gw.namespace), None)


def scheduler_spec(config: HyperPodConfig, gw: Gateway, s: Scheduler) -> dict[str, Any]:
    """One ``spec.schedulers`` entry: ``endpoint:`` becomes ``modelSelector.matchLabels.app`` = the endpoint's
    name (the label the operator puts on its pods), ``targetPort`` = its port and ``modelName`` = its served model
    name, unless the scheduler gives them."""
    out = dump(s)
    out.pop("endpoint", None)
    ep = _endpoint(config, gw, s) if s.endpoint is not None else None
    if ep is not None:
        out["modelSelector"] = {"matchLabels": {facts.POD_APP_LABEL: ep.name}}
        out.setdefault("modelName", ep.served_model_name)
        out.setdefault("targetPort", ep.served_port)
    ordered = {k: out[k] for k in ("name", "modelName", "modelSelector", "targetPort") if k in out}
    return {**ordered, **out}


def gateway_spec(config: HyperPodConfig, gw: Gateway) -> dict[str, Any]:
    """The InferenceGatewayConfig's spec (``bbr`` written disabled when not given; ``tls`` as given, else the
    domain's imported certificate)."""
    spec: dict[str, Any] = {"bbr": dump(gw.bbr) if gw.bbr is not None else {"enabled": False}}
    if gw.tls is not None:
        spec["tls"] = dump(gw.tls)
    elif config.domain is not None and config.domain.certificate_arn is not None:
        spec["tls"] = {"acmArn": config.domain.certificate_arn}
    spec["schedulers"] = [scheduler_spec(config, gw, s) for s in gw.schedulers or []]
    for key in ("auth", "observability", "pod_defaults"):
        value = getattr(gw, key)
        if value is not None:
            spec[type(gw).model_fields[key].alias or key] = dump(value)
    return spec


def gateway_of(config: HyperPodConfig, endpoint: Endpoint) -> Gateway | None:
    """The created gateway ``endpoint`` serves behind: the one whose scheduler names it, else the one its
    ``inferenceGateway.name`` names; None for none (or an external one)."""
    for gw in config.gateways:
        if gw.external or gw.namespace != endpoint.namespace:
            continue
        if any(s.endpoint == endpoint.name for s in gw.schedulers or []):
            return gw
    given = getattr(endpoint, "inference_gateway", None)
    name = getattr(given, "name", None) if given is not None and getattr(given, "enabled", None) else None
    return next((gw for gw in config.gateways if not gw.external and gw.namespace == endpoint.namespace
                 and gw.name == name), None)


def gateway_outputs(gw: Gateway) -> tuple[OutputPlan, ...]:
    key = f"Gateway{naming.pascal(gw.namespace)}{naming.pascal(gw.name)}"
    where = f"{gw.namespace}/{gw.name}"
    return (OutputPlan(f"{key}Status", facts.status_command(gw.name, gw.namespace),
                       f"gateway {where}: True once it is {facts.READY_CONDITION}"),
            OutputPlan(f"{key}Address", facts.address_command(gw.name),
                       f"gateway {where}: its internal load balancer (reachable from inside the VPC only)"))


def plan_gateways(config: HyperPodConfig, context: PlanContext) -> tuple[GatewayPlan, ...]:
    """A plan per gateway the stack creates (``external`` ones create nothing)."""
    plans = []
    for gw in config.gateways:
        if gw.external:
            continue
        namespace_unit = context.namespace_unit(gw.namespace)
        plans.append(GatewayPlan(
            name=gw.name, namespace=gw.namespace, unit=naming.gateway_unit_name(gw.namespace, gw.name),
            depends_on=(namespace_unit,) if namespace_unit else (), spec=MappingProxyType(gateway_spec(config, gw)),
            outputs=gateway_outputs(gw)))
    return tuple(plans)


def gateway_unit_of(config: HyperPodConfig, endpoint: Endpoint) -> str | None:
    """The unit of the created gateway the endpoint serves behind (it waits for it), or None."""
    gw = gateway_of(config, endpoint)
    return naming.gateway_unit_name(gw.namespace, gw.name) if gw is not None else None
