"""The apply tiers of files mode: each kind the library writes in its tier, unknown kinds by their API group."""

from __future__ import annotations

import pytest

from hyperpod_inference.facts import gitops


@pytest.mark.parametrize(("api_version", "kind", "tier"), [
    ("v1", "Namespace", gitops.NAMESPACES),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", gitops.NAMESPACES),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", gitops.RBAC),
    ("v1", "ServiceAccount", gitops.RBAC),
    ("external-secrets.io/v1", "ExternalSecret", gitops.CONFIGURATION),
    ("cert-manager.io/v1", "Certificate", gitops.CONFIGURATION),
    ("v1", "ConfigMap", gitops.CONFIGURATION),
    ("apps/v1", "DaemonSet", gitops.WORKLOADS),
    ("networking.k8s.io/v1", "NetworkPolicy", gitops.WORKLOADS),
    ("policy/v1", "PodDisruptionBudget", gitops.WORKLOADS),  # a built-in kind the table does not name
    ("inference.sagemaker.aws.amazon.com/v1", "InferenceEndpointConfig", gitops.CUSTOM_RESOURCES),
    ("keda.sh/v1alpha1", "ScaledObject", gitops.CUSTOM_RESOURCES),  # any other custom resource
    ("example.com/v1", "Namespace", gitops.CUSTOM_RESOURCES),  # a kind named Namespace in another group
])
def test_each_kind_falls_in_its_tier(api_version: str, kind: str, tier: gitops.Tier) -> None:
    assert gitops.tier_of({"apiVersion": api_version, "kind": kind}) is tier


def test_a_namespace_is_protected_from_pruning_by_every_tool_and_only_argocd_adds_waves() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "inference"}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    for tool in ("none", "flux"):
        assert gitops.annotations(ns, tool) == {"argocd.argoproj.io/sync-options": "Prune=false",
                                                "kustomize.toolkit.fluxcd.io/prune": "disabled"}
        assert gitops.annotations(cm, tool) == {}
    assert gitops.annotations(cm, "argocd") == {"argocd.argoproj.io/sync-wave": "2"}
    assert gitops.annotations(ns, "argocd")["argocd.argoproj.io/sync-wave"] == "0"
