"""The layout of ``manifests.delivery: files`` for GitOps tools: the order objects apply in, file names that sort that
way, the kustomization that lists them, and the annotations Argo CD and Flux read.

Every object belongs to one tier; a tier's objects may need those of the tiers before it, never of those after:

===  ==================================  =====================================================================
 0   namespaces and CRDs                 Namespace, CustomResourceDefinition
 1   service accounts and RBAC           ServiceAccount, Role, ClusterRole, RoleBinding, ClusterRoleBinding
 2   configuration and secret syncs      ConfigMap, Secret, External Secrets' SecretStore and ExternalSecret,
                                         cert-manager's Issuer and Certificate
 3   workloads                           every other built-in kind: DaemonSet, Deployment, Job, Service,
                                         NetworkPolicy, ...
 4   custom resources                    every other kind (the operator's InferenceEndpointConfig,
                                         JumpStartModel, InferenceGatewayConfig, ...)
===  ==================================  =====================================================================

One file holds one chart's objects of one tier: ``<tier>-<chart>.yaml``, so the files sort (``kubectl apply -f``
reads a folder in name order) in the order the kustomization lists them. cert-manager's objects are configuration
(the operator's Deployment mounts the Secret its Certificate writes: with Argo CD waves, a later wave would wait
forever for the Deployment's health).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The value of ``manifests.gitops`` with no tool-specific annotations.
NO_TOOL = "none"
ARGOCD = "argocd"
FLUX = "flux"
#: The values ``manifests.gitops`` takes.
TOOLS = (ARGOCD, FLUX, NO_TOOL)

#: Argo CD applies a lower wave first and waits for its objects to be healthy before the next.
ARGOCD_SYNC_WAVE = "argocd.argoproj.io/sync-wave"
ARGOCD_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
#: Argo CD never deletes an object with this sync option, even when it leaves the folder.
ARGOCD_NO_PRUNE = "Prune=false"
#: Flux's kustomize-controller never garbage-collects an object with this annotation.
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
FLUX_NO_PRUNE = "disabled"

#: The kustomization of each folder. kustomize (``kubectl apply -k``), Argo CD and Flux read a folder's
#: ``kustomization.yaml``, ``kustomization.yml`` or ``Kustomization``; the last one has no ``.yaml`` extension, so
#: ``kubectl apply -f <folder>``, which reads every ``.yaml``, ``.yml`` and ``.json`` file as objects, skips it (a
#: ``kustomization.yaml`` there fails it: no API serves the kind ``Kustomization``).
KUSTOMIZATION_FILE = "Kustomization"
KUSTOMIZE_API_VERSION = "kustomize.config.k8s.io/v1beta1"


@dataclass(frozen=True)
class Tier:
    index: int
    title: str


TIERS = (Tier(0, "namespaces and CRDs"), Tier(1, "service accounts and RBAC"),
         Tier(2, "configuration and secret syncs"), Tier(3, "workloads"), Tier(4, "custom resources"))
NAMESPACES, RBAC, CONFIGURATION, WORKLOADS, CUSTOM_RESOURCES = TIERS

_BY_KIND: dict[tuple[str, str], Tier] = {
    ("", "Namespace"): NAMESPACES,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): NAMESPACES,
    ("", "ServiceAccount"): RBAC,
    **{("rbac.authorization.k8s.io", k): RBAC for k in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")},
    ("", "ConfigMap"): CONFIGURATION,
    ("", "Secret"): CONFIGURATION,
    **{("external-secrets.io", k): CONFIGURATION for k in ("SecretStore", "ClusterSecretStore", "ExternalSecret")},
    **{("cert-manager.io", k): CONFIGURATION for k in ("Issuer", "ClusterIssuer", "Certificate")},
}


def group_of(api_version: str) -> str:
    """``apps/v1`` -> ``apps``; ``v1`` -> ``""`` (the core group)."""
    return api_version.rpartition("/")[0]


def is_built_in_group(group: str) -> bool:
    """Kubernetes' own API groups: the core group, single words (``apps``, ``batch``, ``policy``) and ``*.k8s.io``.
    A CRD's group always holds a dot, and ``*.k8s.io`` needs Kubernetes' approval."""
    return "." not in group or group.endswith(".k8s.io")


def tier_of(obj: dict[str, Any]) -> Tier:
    """The tier of a Kubernetes object (a dict with ``apiVersion`` and ``kind``)."""
    group, kind = group_of(str(obj.get("apiVersion", ""))), str(obj.get("kind", ""))
    known = _BY_KIND.get((group, kind))
    if known is not None:
        return known
    return WORKLOADS if is_built_in_group(group) else CUSTOM_RESOURCES


def file_name(tier: Tier, chart: str) -> str:
    """``<tier>-<chart>.yaml``: one chart's objects of one tier."""
    return f"{tier.index}-{chart}.yaml"


def annotations(obj: dict[str, Any], tool: str) -> dict[str, str]:
    """What files mode adds to an object's annotations: a namespace is never pruned by Argo CD or Flux (whatever
    ``tool``: deleting it deletes everything in it); with ``argocd`` every object carries its tier as its sync wave."""
    added: dict[str, str] = {}
    tier = tier_of(obj)
    if obj.get("kind") == "Namespace" and tier is NAMESPACES:
        added.update({ARGOCD_SYNC_OPTIONS: ARGOCD_NO_PRUNE, FLUX_PRUNE: FLUX_NO_PRUNE})
    if tool == ARGOCD:
        added[ARGOCD_SYNC_WAVE] = str(tier.index)
    return added


def kustomization(files: list[str]) -> dict[str, Any]:
    """The folder's kustomization: its files in the order they apply."""
    return {"apiVersion": KUSTOMIZE_API_VERSION, "kind": "Kustomization", "resources": list(files)}
