"""The worker's resources: Kubernetes requests and limits (with their claims), and the endpoint's ``resources``
(the shorthand ``cpu`` / ``memory`` / ``gpus`` or requests / limits)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from ..facts import instances as instance_table
from ..facts import production as prod_facts
from .base import CrdPaths, Loc, NoCrd, Quantity, ResourceName, Strict, Text, _err, _raise_all, crd, crd_required


class ResourceClaim(Strict):
    name: Text = crd_required("name")
    """The pod's resource claim."""
    request: Text | None = crd("request")
    """The request inside the claim."""


class ResourceRequirements(Strict):
    requests: dict[ResourceName, Quantity] | None = crd("requests")
    """Resource requests."""
    limits: dict[ResourceName, Quantity] | None = crd("limits")
    """Resource limits."""
    claims: list[ResourceClaim] | None = crd("claims")
    """Dynamic resource claims."""

    @model_validator(mode="after")
    def _bounds(self) -> ResourceRequirements:
        problems = resource_problems(self.requests or {}, self.limits or {})
        if problems:
            raise PydanticCustomError("resources", "; ".join(problems))
        return self


def resource_problems(requests: dict[str, Any], limits: dict[str, Any]) -> list[str]:
    """requests ≤ limits; an extended resource (GPU, Neuron) needs request = limit (Kubernetes refuses the pod)."""
    out = []
    for name, req in requests.items():
        lim = limits.get(name)
        if name in prod_facts.EXTENDED_RESOURCES:
            if lim is None or prod_facts.quantity_value(req) != prod_facts.quantity_value(lim):
                out.append(f"{name}: an extended resource needs requests = limits (requests {req}, limits {lim})")
        elif lim is not None and prod_facts.quantity_value(req) > prod_facts.quantity_value(lim):
            out.append(f"{name}: requests ({req}) must not exceed limits ({lim})")
    return out  # an extended resource only in limits is fine: Kubernetes defaults the request to the limit


class Resources(Strict):
    """Worker resources beyond the accelerators the instance type implies (Kubernetes quantities).

    Either the shorthand ``cpu`` / ``memory`` (request = limit), or ``requests`` / ``limits`` as Kubernetes takes
    them; ``gpus`` goes with both and overrides the instance table's count."""

    crd_paths: ClassVar[CrdPaths] = {
        "cpu": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
        "memory": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
        "gpus": NoCrd("not verbatim: the library derives spec.worker.resources from it"),
    }
    cpu: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?m?$")] | None = None
    """CPU request = limit, e.g. 8 or 500m. Refused above what the instance gives a pod after the node's reserve
    (the smallest candidate with instanceTypes / nodeAffinity), warned within 10% of it."""
    memory: Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?$")] | None = None
    """Memory request = limit, e.g. 64Gi. Refused above the instance's memory less the node's reserve, warned
    within 10% of it."""
    gpus: Annotated[int, Field(ge=0, le=64)] | None = None
    """Accelerators per pod, overriding the instance table's count; refused above the instance's count (the
    smallest candidate's)."""
    requests: dict[ResourceName, Quantity] | None = crd("spec.worker.resources.requests")
    """Kubernetes resource requests (cpu, memory and accelerators checked against the instance as the shorthand
    is)."""
    limits: dict[ResourceName, Quantity] | None = crd("spec.worker.resources.limits")
    """Kubernetes resource limits (a limit without a request is the request)."""

    @model_validator(mode="after")
    def _one_form(self) -> Resources:
        e = []
        if (self.requests is not None or self.limits is not None) and (self.cpu or self.memory):
            e.append(_err(("cpu" if self.cpu else "memory",), "give either the shorthand cpu / memory (request = "
                          "limit) or requests / limits, not both"))
        for problem in resource_problems(self.requests or {}, self.limits or {}):
            e.append(_err(("requests",), problem))
        named = [k for k in {**(self.requests or {}), **(self.limits or {})} if k in prod_facts.EXTENDED_RESOURCES]
        if self.gpus is not None and named:
            e.append(_err(("gpus",), f"give the accelerator count once: gpus or {named[0]} in requests / limits"))
        _raise_all(type(self), e)
        return self

    @property
    def detailed(self) -> bool:
        return self.requests is not None or self.limits is not None


    def request_of(self, name: str) -> tuple[Loc, str | int] | None:
        """The worker's request of ``cpu`` / ``memory`` and its path (a limit alone is the request)."""
        short = self.cpu if name == "cpu" else self.memory
        if short is not None:
            return ("resources", name), short
        if name in (self.requests or {}):
            return ("resources", "requests", name), (self.requests or {})[name]
        if name in (self.limits or {}):
            return ("resources", "limits", name), (self.limits or {})[name]
        return None


def instance_fit_findings(res: Resources | None, roles: list[tuple[str, ResourceRequirements | None]],
                          candidates: list[str], accelerators: tuple[str, int], *, warn: bool) -> list[tuple[Loc, str]]:
    """Requests the instance cannot give a pod (``warn=False``: refusals) or that come within 10% of it
    (``warn=True``): ``res``, the endpoint's ``resources``; ``roles``, the prefill / decode pods' (``pdSpec``);
    ``candidates``, the instance types it may land on (the smallest decides; the node keeps its reserve,
    ``facts.instances.allocatable``); ``accelerators``, the worker's (extended resource, count)."""
    types = [t for t in candidates if t in instance_table.INSTANCES]
    facts = instance_table.smallest(types)
    if facts is None or (res is None and not roles):
        return []
    which = types[0] if len(types) == 1 else f"the smallest candidate ({', '.join(types)})"
    out: list[tuple[Loc, str]] = []
    resource, count = accelerators
    given = res is not None and (res.gpus is not None or any(
        k in prod_facts.EXTENDED_RESOURCES[:2] for k in {**(res.requests or {}), **(res.limits or {})}))
    if not warn and given and res is not None and count > facts.count:
        loc: Loc = ("resources", "gpus") if res.gpus is not None else (
            "resources", "limits" if resource in (res.limits or {}) else "requests", resource)
        out.append((loc, f"{count} {resource} requested, and {which} has {facts.count}: the pod never schedules"))
    limits = instance_table.allocatable(facts)
    if limits is None:
        return out
    asked: list[tuple[str, tuple[Loc, str | int] | None]] = [(name, res.request_of(name) if res is not None else None)
                                                              for name in ("cpu", "memory")]
    for role, rr in roles:
        for name in ("cpu", "memory", *prod_facts.EXTENDED_RESOURCES[:2]):
            for part, values in (("requests", rr.requests if rr else None), ("limits", rr.limits if rr else None)):
                if values and name in values:
                    asked.append((name, (("pdSpec", role, "resources", part, name), values[name])))
                    break
    for name, found in asked:
        if found is None:
            continue
        loc, value = found
        if name in prod_facts.EXTENDED_RESOURCES:
            if not warn and prod_facts.quantity_value(value) > facts.count:
                out.append((loc, f"{value} {name} requested, and {which} has {facts.count}: the pod never "
                                 "schedules"))
            continue
        limit = limits[0] if name == "cpu" else limits[1]
        amount = prod_facts.quantity_value(value)
        shown = f"{limit:.2f} CPUs" if name == "cpu" else f"{limit / 2**30:.1f}Gi"
        reserve = ("after the node's reserve (kube-reserved and the eviction threshold of the EKS AMI; "
                   "docs/safe-defaults.md)")
        if amount > limit and not warn:
            out.append((loc, f"{value} is more than {which} can give a pod: {shown} {reserve}"))
        elif warn and instance_table.NEAR_LIMIT_SHARE * limit < amount <= limit:
            out.append((loc, f"{value} is within 10% of what {which} can give a pod ({shown} {reserve}); "
                             "DaemonSets on the node request from the same share, so the pod may not schedule"))
    return out
