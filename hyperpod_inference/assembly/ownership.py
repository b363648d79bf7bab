"""Ownership across the constructs of one app: one operator per cluster, one owner per Kubernetes object.

Each ``HyperPodInference`` claims, on the app's root construct, the cluster it installs the operator onto (at
construction: a second install is an error naming the first and the fix) and every Kubernetes object it delivers (at
synth, once sealed: an object two constructs deliver to one cluster is a synth-time validation problem of each).
Across apps, ``doctor`` finds what one app cannot see.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_eks as eks
from constructs import Construct

from ..constructs.lazy import is_unresolved
from ..plan.operator import OperatorPlan

#: The attribute of an app's root construct holding, per cluster, the path of the construct installing its operator.
_OPERATOR_OWNERS = "_hyperpod_inference_operator_owners"
#: ... and, per cluster and Kubernetes object (kind, namespace, name), the paths of the constructs delivering it.
_OBJECT_OWNERS = "_hyperpod_inference_object_owners"


def _app_registry(owner: Construct, attribute: str) -> dict[Any, Any]:
    root = owner.node.root
    registry = getattr(root, attribute, None)
    if registry is None:
        registry = {}
        setattr(root, attribute, registry)
    return registry


def cluster_identity(eks_cluster_name: str | None, cluster: eks.ICluster | None, account: str, region: str,
                     ) -> tuple[str, ...]:
    """Which cluster a construct installs onto: its account, Region and EKS name (``cluster.eksClusterName``, else
    the cluster object's), or the cluster construct's path when the name is known only at deploy (a cluster created in
    the same app)."""
    name = eks_cluster_name
    if name is None and cluster is not None:
        if is_unresolved(cluster.cluster_name):
            return ("construct", cluster.node.path)
        name = cluster.cluster_name
    return ("cluster", account, region, name or "")


def claim_operator(owner: Construct, operator: OperatorPlan, cluster: eks.ICluster | None) -> None:
    """One operator per cluster within an app: a second construct (another stack, or a second HyperPodInference)
    that would install the operator or its dependency add-ons on a cluster another already installs onto is an
    error naming the first and the fix. Across apps, ``doctor`` finds it."""
    if operator.install == "existing":
        return
    stack = cdk.Stack.of(owner)
    key = cluster_identity(operator.eks_cluster_name, cluster, stack.account, stack.region)
    owners: dict[tuple[str, ...], str] = _app_registry(owner, _OPERATOR_OWNERS)
    first = owners.get(key)
    if first is not None:
        where = f"cluster {key[3]} ({key[1]}, {key[2]})" if key[0] == "cluster" else f"cluster {key[1]}"
        what = "the operator" + (" and its dependency add-ons" if operator.creates_dependencies else "")
        raise ValueError(
            f"HyperPodInference {owner.node.path}: {where} already gets the operator from {first}; one operator per "
            f"cluster: here set operator.install: existing (with operator.executionRoleArn, the execution role of "
            f"{first}) and operator.dependencies: existing, instead of installing {what} a second time")
    owners[key] = owner.node.path


def claim_objects(owner: Construct, cluster: tuple[str, ...], objects: Iterable[list[dict[str, Any]] | None]) -> None:
    """Register every Kubernetes object ``owner`` delivers (at synth, once sealed: each unit's ``objects``) under
    its ``cluster`` (:func:`cluster_identity`), for :func:`shared_object_problems`."""
    owners: dict[tuple[Any, ...], list[str]] = _app_registry(owner, _OBJECT_OWNERS)
    path = owner.node.path  # one call into the CDK runtime, not one per object
    for delivered in objects:
        for obj in delivered or []:
            meta = obj.get("metadata") or {}
            paths = owners.setdefault((cluster, obj.get("kind"), meta.get("namespace") or "", meta.get("name")), [])
            if path not in paths:
                paths.append(path)


def shared_object_problems(owner: Construct) -> list[str]:
    """Kubernetes objects ``owner`` delivers that another construct of the app delivers to the same cluster too
    (a namespace both list in ``namespaces:``, an endpoint name both use): one would fail to create it, and either's
    destroy would delete it. One problem per other construct, naming the first objects."""
    owners: dict[tuple[Any, ...], list[str]] = _app_registry(owner, _OBJECT_OWNERS)
    shared: dict[str, list[str]] = {}
    path = owner.node.path
    for (_cluster, kind, ns, name), paths in owners.items():
        if path in paths:
            for other in paths:
                if other != path:
                    shared.setdefault(other, []).append(f"{kind} {ns + '/' if ns else ''}{name}")
    return [f"Kubernetes objects also delivered to this cluster by {other}: {', '.join(objs[:5])}"
            + (f" and {len(objs) - 5} more" if len(objs) > 5 else "") + "; two constructs never share an object "
            "(give one of them other namespaces or endpoint names, or leave the namespace out of its namespaces:)"
            for other, objs in sorted(shared.items())]
