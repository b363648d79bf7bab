"""The Inference Gateway's custom resource: one ``InferenceGatewayConfig`` (v1alpha1) per planned gateway, in its
namespace, in the gateway's own field names (:mod:`hyperpod_inference.plan.gateways` makes every decision)."""

from __future__ import annotations

import copy
from typing import Any

from ..facts import gateway as facts
from ..facts.naming import MANAGED_BY
from ..plan.gateways import GatewayPlan


def gateway_resource(plan: GatewayPlan) -> dict[str, Any]:
    """The InferenceGatewayConfig of ``plan``."""
    return {"apiVersion": facts.API_VERSION, "kind": facts.KIND,
            "metadata": {"name": plan.name, "namespace": plan.namespace, "labels": dict(MANAGED_BY)},
            "spec": copy.deepcopy(dict(plan.spec))}
