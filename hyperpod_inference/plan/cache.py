"""An endpoint's NVMe weight cache (``weightCache.mode: daemonset``), planned: what its agent's init container, its
warm DaemonSet and their names depend on, and the pod pieces (model spec, placement, tolerations, image, source
mounts) the charts render (``charts.nvme_cache.NvmeCachePlan``)."""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from ..config import Endpoint
from ..facts import naming
from ..facts.production import INSTANCE_TYPE_LABEL, NVIDIA_GPU
from ..facts.runtimes import PRESETS

#: The agent's read-only volume of a node-mounted FSx file system (same path inside the pod).
FSX_SOURCE_VOLUME = "nvme-fsx-source"


@dataclass(frozen=True)
class SecretRef:
    """A key of a Kubernetes Secret in the endpoint's namespace."""

    name: str
    key: str


@dataclass(frozen=True)
class CachePlan:
    """One endpoint's daemonset cache: what its init container, its warm DaemonSet and its names depend on.

    ``code_configmap_prefix`` names the agent code ConfigMap (``<prefix>-<code hash>``); ``share_across_namespaces``
    puts every namespace's models in one cache root (``weightCache.hostPath``) instead of ``<hostPath>/<namespace>``;
    ``lease_sidecar`` makes the init container a native sidecar that keeps the pod's lease; ``group_scope`` keeps the
    warm DaemonSets of different stacks apart; ``name_scope`` heads the warm DaemonSet's name. The charts render the
    pod pieces from it (``charts.nvme_cache.NvmeCachePlan``)."""

    endpoint: Endpoint
    region: str
    token: SecretRef | None
    service_account_name: str | None
    code_configmap_prefix: str = naming.AGENT_CODE_CONFIGMAP
    share_across_namespaces: bool = False
    lease_sidecar: bool = True
    group_scope: str = ""
    name_scope: str = ""

    @property
    def spec(self) -> dict[str, Any]:
        return model_spec(self.endpoint, self.region)

    @property
    def host_root(self) -> str:
        base = self.endpoint.weight_cache.host_path.rstrip("/")
        if self.share_across_namespaces:
            return base or "/"
        return f"{base}/{self.endpoint.namespace}"

    @property
    def evict_legacy(self) -> bool:
        """``weightCache.evictLegacyLayout``: the warm pods first evict the previous layout's models."""
        return self.endpoint.weight_cache.evict_legacy_layout

    def warm_key(self) -> str:
        """Everything the warm DaemonSet's pod spec depends on except the list of models: plans with equal keys are
        warmed by one DaemonSet."""
        ep = self.endpoint
        return json.dumps({
            "namespace": ep.namespace, "scope": self.group_scope, "image": agent_image(ep, self.region),
            "placement": placement(ep), "tolerations": tolerations(ep), "root": self.host_root,
            "token": [self.token.name, self.token.key] if self.token else None,
            "serviceAccount": self.service_account_name, "sources": source_mounts(ep),
            # the watermark as it was spelled when the key was first written, so the names never move
            "args": ["--min-free-percent", str(ep.weight_cache.min_free_percent)],
            # only when on, so that the default's names never move
            **({"evictLegacy": True} if self.evict_legacy and not self.share_across_namespaces else {}),
        }, sort_keys=True)

    @property
    def warm_name(self) -> str:
        """The warm DaemonSet's name: ``<name scope>-nvme-warm-<hash of the warm key>``, so adding or removing an
        endpoint of the group never renames it."""
        return naming.warm_daemonset_name(self.name_scope, self.warm_key())



def model_spec(endpoint: Endpoint, region: str) -> dict[str, Any]:
    """The agent's model spec for an endpoint's source (no secrets in it)."""
    src = endpoint.model
    if src.huggingface is not None:
        return {"source": "huggingface", "modelId": src.huggingface.model_id,
                "revision": src.huggingface.commit_sha or "main"}
    if src.s3 is not None:
        return {"source": "s3", "bucket": src.s3.bucket, "prefix": src.s3.prefix, "region": src.s3.region or region}
    if src.fsx is not None and src.fsx.node_path:
        # links are followed only to targets on the node-mounted file system
        spec = {"source": "local", "path": fsx_node_model_path(endpoint)}
        mount = src.fsx.node_path.rstrip("/")
        return {**spec, "mount": mount} if mount else spec
    raise ValueError(f"endpoint {endpoint.namespace}/{endpoint.name}: the NVMe agent caches S3, Hugging Face and "
                     "node-mounted FSx sources")


def fsx_node_model_path(endpoint: Endpoint) -> str:
    """``model.fsx.path`` under ``nodePath``, in one spelling (the config refuses ``.``/``..`` segments): repeated
    and trailing slashes go, so the agent's spec and cache directory do not depend on how the path was written."""
    fsx = endpoint.model.fsx
    assert fsx is not None and fsx.node_path
    return posixpath.normpath("/" + "/".join(p for p in f"{fsx.node_path}/{fsx.path}".split("/") if p))


def source_mounts(endpoint: Endpoint) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts) giving the agent read-only access to a node-mounted FSx file system at the same path."""
    fsx = endpoint.model.fsx
    if fsx is None or not fsx.node_path:
        return [], []
    return ([{"name": FSX_SOURCE_VOLUME, "hostPath": {"path": fsx.node_path, "type": "Directory"}}],
            [{"name": FSX_SOURCE_VOLUME, "mountPath": fsx.node_path, "readOnly": True}])


def placement(ep: Endpoint) -> dict[str, Any]:
    """The warm DaemonSet's node affinity: the endpoint's own required terms, or its instance type(s)."""
    if ep.node_affinity is not None and ep.node_affinity.required_during_scheduling_ignored_during_execution:
        required = ep.node_affinity.required_during_scheduling_ignored_during_execution
        return {"requiredDuringSchedulingIgnoredDuringExecution": required.model_dump(by_alias=True, exclude_none=True)}
    types = ep.placement_types()
    if not types:
        return {}  # only preferred terms: the endpoint may land on any node, so may its cache
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": types}]}]}}


def tolerations(ep: Endpoint) -> list[dict[str, Any]]:
    """The accelerator taint of the endpoint's nodes (NVIDIA, or Neuron on Trainium); only the warm DaemonSet gets
    it."""
    facts = ep.instance
    keys = [facts.resource] if facts is not None else [NVIDIA_GPU]
    return [{"key": k, "operator": "Exists", "effect": "NoSchedule"} for k in keys]


def agent_image(endpoint: Endpoint, region: str) -> str:
    """The NVMe agent's image: ``weightCache.agentImage``, else the model server's (the agent needs python3)."""
    if endpoint.weight_cache.agent_image:
        return endpoint.weight_cache.agent_image
    if endpoint.image:
        return endpoint.image
    return PRESETS[endpoint.effective_runtime or "vllm"].image(region)

