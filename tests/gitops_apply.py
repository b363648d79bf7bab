"""The order in which each tool applies a folder of manifests, as its source code does it, and what that order must
respect on an empty cluster.

- ``kubectl apply -f <folder>``: cli-runtime's ``ExpandPathsToFileVisitors`` walks the folder (``filepath.Walk``:
  lexical name order, not into subfolders), reading every ``.json``, ``.yaml`` and ``.yml`` file, and applies each
  file's documents in order.
- ``kubectl apply -k`` / ``kustomize build``: the kustomization's resources in the order listed, then kustomize's
  legacy sort (kubectl's ``KustomizeVisitor`` sets ``DoLegacyResourceSort``): ``orderFirst`` / ``orderLast`` of
  ``api/internal/builtins/SortOrderTransformer.go``, then the GVK string, then ``<gvk>|<namespace>|<name>``.
- Argo CD (gitops-engine ``pkg/sync/sync_tasks.go``): by sync wave, then ``kindOrder`` (unknown kinds last), then
  name; then every Namespace is moved before the first object in it and every CRD before the first object of its kind.
- Flux (kustomize-controller ``apply``): namespaces, CRDs and ClusterRoles first (applied, then waited for), then
  kinds ending in ``Class``, then the rest, each stage sorted by fluxcd/pkg ``ssa/sort.go``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

KUBECTL_EXTENSIONS = (".json", ".yaml", ".yml")

_KUSTOMIZE_FIRST = ["Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
                    "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap",
                    "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
                    "PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget"]
_KUSTOMIZE_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
_ARGOCD_KINDS = ["Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
                 "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
                 "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
                 "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding",
                 "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet",
                 "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
                 "APIService"]
_FLUX_FIRST = ["CustomResourceDefinition", "Namespace", "ResourceQuota", "StorageClass", "ServiceAccount",
               "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap", "Secret",
               "Service", "LimitRange", "PriorityClass", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget"]
_FLUX_LAST = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]


def _ranks(first: list[str], last: list[str]) -> dict[str, int]:
    ranks = {kind: i - len(first) for i, kind in enumerate(first)}
    ranks.update({kind: 1 + i for i, kind in enumerate(last)})
    return ranks


_KUSTOMIZE_RANK = _ranks(_KUSTOMIZE_FIRST, _KUSTOMIZE_LAST)
_ARGOCD_RANK = {kind: i - len(_ARGOCD_KINDS) for i, kind in enumerate(_ARGOCD_KINDS)}
_FLUX_RANK = _ranks(_FLUX_FIRST, _FLUX_LAST)


def _group_version(obj: Obj) -> tuple[str, str]:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    return group, version


def _meta(obj: Obj, key: str) -> str:
    return str((obj.get("metadata") or {}).get(key) or "")


def _load(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# ------------------------------------------------------------------------------------------------ the four orders
def kubectl_apply_f(folder: Path) -> list[Obj]:
    """``kubectl apply -f <folder>``: files in name order, documents in file order."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in KUBECTL_EXTENSIONS)
    return [obj for path in files for obj in _load(path)]


def kustomization_resources(folder: Path, kustomization: str) -> list[Obj]:
    """The objects of the files a kustomization lists, in its order (before any sort)."""
    listed = yaml.safe_load((folder / kustomization).read_text())["resources"]
    return [obj for name in listed for obj in _load(folder / name)]


def kustomize_legacy(objects: list[Obj]) -> list[Obj]:
    """kustomize's legacy sort (``kubectl apply -k``, ``kustomize build``, Flux's build)."""
    def gvk(obj: Obj) -> str:
        group, version = _group_version(obj)
        return "_".join([group or "~G", version or "~V", obj["kind"] or "~K"])

    def res_id(obj: Obj) -> str:
        group, version = _group_version(obj)
        gvk_string = ".".join([obj["kind"] or "[noKind]", version or "[noVer]", group or "[noGrp]"])
        return "|".join([gvk_string, _meta(obj, "namespace") or "~X", _meta(obj, "name") or "~N"])

    return sorted(objects, key=lambda o: (_KUSTOMIZE_RANK.get(o["kind"], 0), gvk(o), res_id(o)))


def argocd_sync(objects: list[Obj]) -> list[Obj]:
    """Argo CD's sync order: wave, kind, name; then namespaces and CRDs moved before what needs them."""
    def wave(obj: Obj) -> int:
        return int(((obj.get("metadata") or {}).get("annotations") or {}).get("argocd.argoproj.io/sync-wave", "0"))

    tasks = sorted(objects, key=lambda o: (wave(o), _ARGOCD_RANK.get(o["kind"], 0), _meta(o, "name")))

    def is_namespace(obj: Obj) -> str | None:
        return _meta(obj, "name") if obj["kind"] == "Namespace" and _group_version(obj)[0] == "" else None

    def is_crd(obj: Obj) -> str | None:
        if obj["kind"] != "CustomResourceDefinition":
            return None
        return f"{obj['spec']['group']}/{obj['spec']['names']['kind']}"

    tasks = _bubble(tasks, is_namespace, lambda o: _meta(o, "namespace") or None)
    return _bubble(tasks, is_crd, lambda o: f"{_group_version(o)[0]}/{o['kind']}")


def _bubble(tasks: list[Obj], dep_key: Callable[[Obj], str | None],
            ref_key: Callable[[Obj], str | None]) -> list[Obj]:
    """gitops-engine's ``adjustDeps``: a dependency moves to the index of the first task that referenced it."""
    tasks = list(tasks)
    first: dict[str, int] = {}
    for i, task in enumerate(list(tasks)):
        key = dep_key(task)
        if key is not None:
            if key in first:
                index = first[key]
                tasks.insert(index, tasks.pop(i))
                first = {k: v + 1 if v >= index else v for k, v in first.items()}
            continue
        ref = ref_key(task)
        if ref is not None and ref not in first:
            first[ref] = i
    return tasks


def flux_staged(objects: list[Obj]) -> list[Obj]:
    """Flux's staged apply: cluster definitions, then classes, then the rest, each stage sorted."""
    def definition(obj: Obj) -> bool:
        group = _group_version(obj)[0]
        return (obj["kind"] == "CustomResourceDefinition" and group == "apiextensions.k8s.io") or \
            (obj["kind"] == "Namespace" and obj["apiVersion"] == "v1") or \
            (obj["kind"] == "ClusterRole" and group == "rbac.authorization.k8s.io")

    def key(obj: Obj) -> tuple[Any, ...]:
        return (_FLUX_RANK.get(obj["kind"], 0), _group_version(obj)[0], obj["kind"], _meta(obj, "namespace"),
                _meta(obj, "name"))

    stages: list[list[Obj]] = [[], [], []]
    for obj in objects:
        stages[0 if definition(obj) else 1 if obj["kind"].endswith("Class") else 2].append(obj)
    return [obj for stage in stages for obj in sorted(stage, key=key)]


# ------------------------------------------------------------------------------------------------ what must hold
def order_problems(order: list[Obj], existing_namespaces: set[str] = frozenset()) -> list[str]:
    """Every object applied before its namespace (one the folder creates; others must be in
    ``existing_namespaces``), before the CRD of its kind (one the folder holds), or a RoleBinding before the Role it
    binds (one the folder holds: a deployer without ``bind`` is checked against the Role's rules)."""
    created = {_meta(o, "name") for o in order if o["kind"] == "Namespace"}
    crds = {f"{o['spec']['group']}/{o['spec']['names']['kind']}" for o in order
            if o["kind"] == "CustomResourceDefinition"}
    roles = {(_meta(o, "namespace"), _meta(o, "name")) for o in order if o["kind"] == "Role"}
    seen: set[str] = set()
    problems = []
    for obj in order:
        ident = f"{obj['kind']}/{_meta(obj, 'namespace')}/{_meta(obj, 'name')}"
        namespace = _meta(obj, "namespace")
        if namespace and namespace not in existing_namespaces and f"Namespace//{namespace}" not in seen:
            where = "is applied later" if namespace in created else "is not created by the folder"
            problems.append(f"{ident} before its namespace ({namespace} {where})")
        kind = f"{_group_version(obj)[0]}/{obj['kind']}"
        if kind in crds and f"crd:{kind}" not in seen:
            problems.append(f"{ident} before the CRD of its kind")
        ref = obj.get("roleRef") or {}
        if obj["kind"] == "RoleBinding" and ref.get("kind") == "Role" and (namespace, ref.get("name")) in roles \
                and f"Role/{namespace}/{ref.get('name')}" not in seen:
            problems.append(f"{ident} before the Role it binds")
        seen.add(ident)
        if obj["kind"] == "CustomResourceDefinition":
            seen.add(f"crd:{obj['spec']['group']}/{obj['spec']['names']['kind']}")
    return problems


TOOLS = ("kubectl apply -f", "kubectl apply -k", "Argo CD", "Flux")


def tool_order(folder: Path, kustomization: str, tool: str) -> list[Obj]:
    """The folder as ``tool`` (one of :data:`TOOLS`) applies it."""
    if tool == "kubectl apply -f":
        return kubectl_apply_f(folder)
    built = kustomize_legacy(kustomization_resources(folder, kustomization))
    return {"kubectl apply -k": built, "Argo CD": argocd_sync(built), "Flux": flux_staged(built)}[tool]
