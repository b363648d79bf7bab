"""The rules between the ``gateways`` section and the rest of the config (registered with the file's cross rules):
the operator and add-on that install the gateway, its certificate, the endpoints its schedulers name (and that opt
in), and the gateways the endpoints name.

An endpoint a scheduler names with ``endpoint:`` is opted in by the library (its ``inferenceGateway`` is written
``{enabled: true, name: <gateway>}``): the scheduler already says which gateway the endpoint serves behind, so the
config says it once; an endpoint that says otherwise (``enabled: false``, another name) is refused.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from ..facts import gateway as facts
from ..facts import operator as operator_facts
from ..facts.runtimes import PRESETS
from ..facts.versions import Version
from .base import Problems, _err
from .cross_rules import ConfigView, cross_rule
from .endpoint import Endpoint
from .gateway import Gateway


def opt_in(ep: Endpoint) -> tuple[bool | None, str | None]:
    """The endpoint's own ``inferenceGateway``: (enabled, name), each None when not written."""
    given = getattr(ep, "inference_gateway", None)
    if given is None:
        return None, None
    enabled = given.enabled if "enabled" in given.model_fields_set else None
    return enabled, getattr(given, "name", None)


def routes(v: ConfigView) -> Iterator[tuple[int, Gateway, int, int, Endpoint]]:
    """(gateway index, gateway, scheduler index, endpoint index, endpoint) of every ``endpoint:`` that names an
    endpoint of the gateway's namespace."""
    for i, gw in v.gateways:
        for j, s in enumerate(gw.schedulers or []):
            for k, ep in v.endpoints:
                if s.endpoint is not None and ep.name == s.endpoint and ep.namespace == gw.namespace:
                    yield i, gw, j, k, ep


@cross_rule
def gateway_install(v: ConfigView) -> Problems:
    """A created gateway needs an operator that has ``spec.inferenceGateway`` and the add-on from
    ``v2.0.0-eksbuild.2`` (the gateway ships only in the add-on)."""
    op = v.operator
    created = [(i, gw) for i, gw in v.gateways if not gw.external]
    if op is None or not created:
        return
    since = operator_facts.field_since(facts.OPERATOR_FIELD)
    for i, _ in created:
        if not operator_facts.has_field(op.version, facts.OPERATOR_FIELD):
            yield _err(("gateways", i), f"needs operator {since} or later (operator.version is {op.version})")
        elif op.install == "chart":
            yield _err(("gateways", i), "the Inference Gateway is installed by the EKS add-on only: operator.install "
                                        "addon (or existing, with the add-on's gateway enabled)")
        elif op.install == "addon":
            addon = op.addon_version or operator_facts.release(op.version).addon_version
            if addon is not None and Version(addon) < Version(facts.MIN_ADDON_VERSION):
                yield _err(("gateways", i), f"needs the add-on {facts.MIN_ADDON_VERSION} or later "
                                            f"(operator.addonVersion is {addon})")


@cross_rule
def gateway_names_and_tls(v: ConfigView) -> Problems:
    """One gateway per namespace and name; a created gateway terminates TLS (``tls``, or the domain's imported
    certificate: an issued one covers the endpoints' names and its ARN is known only at deploy)."""
    seen: dict[tuple[str, str], int] = {}
    for i, gw in v.gateways:
        key = (gw.namespace, gw.name)
        if key in seen:
            yield _err(("gateways", i, "name"), f"{gw.namespace}/{gw.name} is also gateways[{seen[key]}]")
        seen.setdefault(key, i)
        domain_certificate = v.domain is not None and v.domain.certificate_arn is not None
        if not gw.external and gw.tls is None and not domain_certificate and "domain" not in v.invalid:
            yield _err(("gateways", i, "tls"), "required: {} (the gateway issues a certificate with cert-manager), "
                                               "{acmArn: ...}, or domain.certificateArn (an imported certificate) "
                                               "for the gateway to use")


@cross_rule
def scheduler_endpoints(v: ConfigView) -> Problems:
    """``endpoint:`` names an InferenceEndpointConfig of this config in the gateway's namespace, once; the library
    must know its served model name (or ``modelName`` gives it); model names are unique in a gateway."""
    if "endpoints" in v.invalid:
        return
    by_name = {ep.name: ep for _, ep in v.endpoints}
    used: dict[tuple[str, str], str] = {}
    for i, gw in v.gateways:
        schedulers = gw.schedulers or []
        models = {s.model_name: j for j, s in reversed(list(enumerate(schedulers))) if s.model_name is not None}
        for j, s in enumerate(schedulers):
            if s.endpoint is None:
                continue
            at = ("gateways", i, "schedulers", j)
            ep = next((e for _, e in v.endpoints if e.name == s.endpoint and e.namespace == gw.namespace), None)
            if ep is None:
                other = by_name.get(s.endpoint)
                where = f" (it is in namespace {other.namespace})" if other is not None else ""
                yield _err((*at, "endpoint"), f"no endpoint {s.endpoint!r} in the gateway's namespace "
                                              f"{gw.namespace}{where}")
                continue
            if ep.is_jumpstart:
                yield _err((*at, "endpoint"), f"{s.endpoint} is a JumpStartModel: its pods' labels and port are not "
                                              "known; give modelSelector, targetPort and modelName")
                continue
            key = (ep.namespace, ep.name)
            if key in used:
                yield _err((*at, "endpoint"), f"{s.endpoint} already serves behind {used[key]}")
            used.setdefault(key, f"gateways[{i}].schedulers[{j}]")
            if s.model_name is not None:
                continue
            if ep.served_model_name is None:
                yield _err((*at, "modelName"), f"required: the model name endpoint {s.endpoint} serves (runtime "
                                               f"{ep.effective_runtime}) is not set by the library")
            elif ep.served_model_name in models:
                yield _err((*at, "endpoint"), f"serves model {ep.served_model_name!r}, as "
                                              f"schedulers[{models[ep.served_model_name]}] does (must be unique)")
            else:
                models[ep.served_model_name] = j


@cross_rule
def endpoints_behind_gateways(v: ConfigView) -> Problems:
    """An endpoint a scheduler names does not say otherwise in its ``inferenceGateway``, nor enable intelligent
    routing; one that opts in names a gateway of its namespace (created or ``external``)."""
    named: dict[int, tuple[int, Gateway]] = {}
    for i, gw, _, k, ep in routes(v):
        named.setdefault(k, (i, gw))
        enabled, name = opt_in(ep)
        at = ("endpoints", k, "inferenceGateway")
        if enabled is False:
            yield _err((*at, "enabled"), f"must be true (or absent with inferenceGateway): gateways[{i}] routes to "
                                         "this endpoint")
        if name is not None and name != gw.name:
            yield _err((*at, "name"), f"is {name!r}, but gateways[{i}] ({gw.name}) routes to this endpoint")
        irs = ep.intelligent_routing_spec
        if irs is not None and irs.enabled and enabled is not True:
            yield _err(("endpoints", k, "intelligentRoutingSpec", "enabled"),
                       f"exclusive with the Inference Gateway: gateways[{i}] ({gw.name}) routes to this endpoint")
    if "gateways" in v.invalid:
        return
    gateways = {(gw.namespace, gw.name) for _, gw in v.gateways}
    for k, ep in v.endpoints:
        enabled, name = opt_in(ep)
        if enabled and name is not None and k not in named and (ep.namespace, name) not in gateways:
            yield _err(("endpoints", k, "inferenceGateway", "name"),
                       f"no gateway {name!r} in namespace {ep.namespace}: add it to gateways (or with external: true "
                       "when it is created elsewhere)")


@cross_rule
def gateway_runtimes(v: ConfigView) -> Problems:
    """An endpoint behind a gateway runs vLLM 0.9.2+ or SGLang 0.3.5.post1+ when its image names its version."""
    behind = {k for *_, k, _ in routes(v)} | {k for k, ep in v.endpoints if opt_in(ep)[0]}
    for k, ep in v.endpoints:
        if k not in behind:
            continue
        preset = PRESETS.get(ep.effective_runtime or "")
        image = ep.image or (f"{preset.repository}:{preset.tag}" if preset else None)
        if image is None:
            continue
        problem = facts.runtime_problem(facts.engine_of(ep.effective_runtime, ep.image), image)
        if problem:
            yield _err(("endpoints", k, "image" if ep.image else "runtime"), problem)


def with_opt_ins(config: Any) -> Any:
    """``config`` with every endpoint a scheduler names opted in to that gateway (``inferenceGateway: {enabled:
    true, name: <gateway>}``); the same object when nothing changes."""
    field = type(config.endpoints[0]).model_fields.get("inference_gateway") if config.endpoints else None
    model = next((a for a in typing.get_args(field.annotation) if isinstance(a, type) and issubclass(a, BaseModel)),
                 None) if field is not None else None
    if model is None:
        return config
    endpoints, changed = [], False
    for ep in config.endpoints:
        gw = next((g for g in config.gateways if not g.external and g.namespace == ep.namespace
                   and any(s.endpoint == ep.name for s in g.schedulers or [])), None)
        if gw is not None and opt_in(ep) != (True, gw.name):
            ep = ep.model_copy(update={"inference_gateway": model.model_validate({"enabled": True, "name": gw.name})})
            changed = True
        endpoints.append(ep)
    return config.model_copy(update={"endpoints": endpoints}) if changed else config
