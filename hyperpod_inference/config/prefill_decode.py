"""Disaggregated prefill and decode (``pdSpec``): the two roles' pods, their autoscaling and topology."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from .autoscaling import AutoScalingSpec
from .base import LabelKey, NonNegative, Positive, Strict, Text, crd, crd_required
from .resources import ResourceRequirements


class PdRoleSpec(Strict):
    args: list[str] | None = crd("args")
    """Worker arguments."""
    node_selector: dict[LabelKey, Annotated[str, StringConstraints(max_length=63)]] | None = crd("nodeSelector")
    """Node labels the pods need."""
    replicas: Positive | None = crd("replicas")
    """Number of pods."""
    resources: ResourceRequirements | None = crd("resources")
    """Pod resources."""


class PdAutoScaling(Strict):
    prefill_auto_scaling: AutoScalingSpec | None = crd("prefillAutoScaling")
    """Autoscaling of the prefill pods."""
    decoding_auto_scaling: AutoScalingSpec | None = crd("decodingAutoScaling")
    """Autoscaling of the decode pods."""


class TopologySpec(Strict):
    availability_zone: Text | None = crd("availabilityZone")
    """The zone to place pods in."""
    placement_group: Text | None = crd("placementGroup")
    """The EC2 placement group."""
    same_az: bool | None = crd("sameAZ", alias="sameAZ")
    """Keep prefill and decode in one zone."""


class PdSpec(Strict):
    """Disaggregated prefill and decode (its presence turns DPD on)."""

    prefill_spec: PdRoleSpec = crd_required("prefillSpec")
    """The prefill pods."""
    decoding_spec: PdRoleSpec = crd_required("decodingSpec")
    """The decode pods."""
    auto_scaling_spec: PdAutoScaling | None = crd("autoScalingSpec")
    """Autoscaling of both."""
    routing_threshold: NonNegative | None = crd("routingThreshold")
    """Prompt length above which prefill is split off."""
    topology_spec: TopologySpec | None = crd("topologySpec")
    """Where the pods are placed."""
