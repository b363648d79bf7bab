"""Where the pods run: instance types and node affinity (core/v1 NodeAffinity)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from ..facts import instances as instance_table
from ..facts import production as prod_facts
from ..facts import rules
from .base import LabelKey, Loc, Strict, crd, crd_required

InstanceType = Annotated[str, StringConstraints(pattern=rules.INSTANCE_TYPE)]


class NodeSelectorRequirement(Strict):
    key: LabelKey = crd_required("key")
    """Node label."""
    operator: Literal[prod_facts.NODE_SELECTOR_OPERATORS] = crd_required("operator")  # type: ignore[valid-type]
    """In, NotIn, Exists, DoesNotExist, Gt or Lt."""
    values: list[Annotated[str, StringConstraints(max_length=63)]] | None = crd("values")
    """Label values."""

    @model_validator(mode="after")
    def _values(self) -> NodeSelectorRequirement:
        if self.key in prod_facts.MISSPELLED_NODE_LABELS:
            raise PydanticCustomError("label", "no node carries the label {key}; it is {real}",
                                      {"key": self.key, "real": prod_facts.MISSPELLED_NODE_LABELS[self.key]})
        n = len(self.values or [])
        if self.operator in ("In", "NotIn") and n == 0:
            raise PydanticCustomError("values", "operator {op} needs values", {"op": self.operator})
        if self.operator in ("Exists", "DoesNotExist") and n:
            raise PydanticCustomError("values", "operator {op} takes no values", {"op": self.operator})
        if self.operator in ("Gt", "Lt") and (n != 1 or not (self.values or [""])[0].lstrip("-").isdigit()):
            raise PydanticCustomError("values", "operator {op} takes exactly one integer value", {"op": self.operator})
        return self


class NodeSelectorTerm(Strict):
    match_expressions: list[NodeSelectorRequirement] | None = crd("matchExpressions")
    """Requirements on node labels."""
    match_fields: list[NodeSelectorRequirement] | None = crd("matchFields")
    """Requirements on node fields."""


class NodeSelector(Strict):
    node_selector_terms: list[NodeSelectorTerm] = crd_required("nodeSelectorTerms", min_length=1)
    """Terms, any of which a node must meet."""


class PreferredSchedulingTerm(Strict):
    weight: Annotated[int, Field(ge=prod_facts.NODE_AFFINITY_WEIGHT_RANGE[0],
                                 le=prod_facts.NODE_AFFINITY_WEIGHT_RANGE[1])] = crd_required("weight")
    """Weight 1-100."""
    preference: NodeSelectorTerm = crd_required("preference")
    """The preferred term."""


class NodeAffinity(Strict):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = crd(
        "requiredDuringSchedulingIgnoredDuringExecution")
    """Nodes the pods must land on."""
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = crd(
        "preferredDuringSchedulingIgnoredDuringExecution")
    """Nodes the pods prefer."""

    def instance_type_values(self, label: str = prod_facts.INSTANCE_TYPE_LABEL) -> list[tuple[Loc, str]]:
        """Every value given for the instance-type label (In and NotIn, required and preferred terms), with its
        path below ``nodeAffinity``."""
        out: list[tuple[Loc, str]] = []
        req = self.required_during_scheduling_ignored_during_execution
        terms: list[tuple[Loc, NodeSelectorTerm]] = []
        if req is not None:
            terms += [(("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", i), term)
                      for i, term in enumerate(req.node_selector_terms)]
        for i, pref in enumerate(self.preferred_during_scheduling_ignored_during_execution or []):
            terms.append((("preferredDuringSchedulingIgnoredDuringExecution", i, "preference"), pref.preference))
        for at, term in terms:
            for j, expr in enumerate(term.match_expressions or []):
                if expr.key == label and expr.operator in ("In", "NotIn"):
                    out += [((*at, "matchExpressions", j, "values", k), v) for k, v in enumerate(expr.values or [])]
        return out

    def instance_types(self, label: str = prod_facts.INSTANCE_TYPE_LABEL) -> list[str] | None:
        """The instance types the required terms allow (``<label> In [...]`` in every term), or None when a term does
        not restrict them."""
        req = self.required_during_scheduling_ignored_during_execution
        if req is None:
            return None
        out: list[str] = []
        for term in req.node_selector_terms:
            values = [v for e in term.match_expressions or [] if e.key == label and e.operator == "In"
                      for v in e.values or []]
            if not values:
                return None
            out += [v for v in values if v not in out]
        return out


def unknown_instance_types(instance_type: str | None, instance_types: list[str] | None,
                           node_affinity: NodeAffinity | None) -> list[tuple[Loc, str, str]]:
    """Placement values (an endpoint's ``instanceType``, ``instanceTypes``, ``nodeAffinity``) that are no known
    cluster instance type (HyperPod labels its nodes with the ``ml.*`` type), each with its path, the problem (with
    the nearest known type) and the value."""
    found: list[tuple[Loc, str]] = []
    if instance_type:
        found.append((("instanceType",), instance_type))
    for i, value in enumerate(instance_types or []):
        found.append((("instanceTypes", i), value))
    if node_affinity is not None:
        for loc, value in node_affinity.instance_type_values():
            found.append((("nodeAffinity", *loc), value))
    out = []
    for loc, value in found:
        if value in instance_table.KNOWN_TYPES:
            continue
        guess = instance_table.nearest_known(value)
        hint = f"; did you mean {guess}?" if guess else " (HyperPod nodes carry ml.* instance types)"
        out.append((loc, f"{value} is not a known HyperPod cluster instance type{hint}", value))
    return out
