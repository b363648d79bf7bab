"""The node caches of an endpoint (``spec.modelCacheConfig``): the weight cache (the operator's, or the NVMe agent's
DaemonSet) and the image cache."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StringConstraints, field_validator
from pydantic_core import PydanticCustomError

from ..facts import rules
from .base import AbsolutePath, CrdPaths, DnsLabel, NoCrd, Strict, _safe_host_path, crd_required


class WeightCache(Strict):
    crd_paths: ClassVar[CrdPaths] = {
        "mode": NoCrd("not verbatim: the library derives spec.modelCacheConfig.weightsCache from it"),
        "host_path": NoCrd("not verbatim: the library derives spec.modelCacheConfig.weightsCache.hostPath from it"),
        "volume_name": NoCrd("not verbatim: the library derives spec.worker.modelVolumeMount.name from it"),
        "agent_image": NoCrd("the NVMe agent DaemonSet and init container image"),
        "min_free_percent": NoCrd("the NVMe agent's eviction threshold"),
        "share_across_namespaces": NoCrd("the NVMe agent's cache layout"),
        "lease_sidecar": NoCrd("not verbatim: the library makes the NVMe agent's init container in "
                               "spec.kubernetes.initContainers a native sidecar"),
        "evict_legacy_layout": NoCrd("the NVMe agent's warm DaemonSet (a one-time eviction of the previous layout)"),
    }
    mode: Literal["off", "operator", "daemonset"] = "off"
    """off; operator (the operator's weights cache, v3.3); daemonset (the NVMe agent warms every GPU node, an init
    container falls back to the source)."""
    host_path: AbsolutePath = "/opt/dlami/nvme"
    """The node's NVMe mount the cache lives under."""
    volume_name: DnsLabel = "nvme-model"
    """The name of the model volume in the worker pod."""
    agent_image: Annotated[str, StringConstraints(min_length=1, max_length=512)] | None = None
    """daemonset: the image that runs the NVMe agent; default the endpoint's model server image (already on the
    node; the agent needs its Python with botocore or huggingface_hub)."""
    min_free_percent: Annotated[int, Field(ge=0, le=90)] = 10
    """daemonset: evict least-recently-used models to keep this share of the disk free."""
    share_across_namespaces: bool = Field(
        default=False, description="daemonset: one cache root for every namespace instead of "
                                   "<hostPath>/<namespace>/ (warned: the namespaces' pods then mount each other's models)")
    lease_sidecar: bool = True
    """daemonset: the agent's init container is a native sidecar (restartPolicy Always and a startup probe;
    Kubernetes 1.29+) that keeps the pod's lease on its model for the pod's whole life. false: a plain init
    container, whose lease lasts 600 s after the pod starts; the warm DaemonSet's lease keeps the model then. Turn it
    off where restartPolicy does not reach the pod: Kubernetes refuses the startup probe of a plain init container."""
    evict_legacy_layout: bool = False
    """daemonset: a one-time opt-in, for nodes that still hold models cached directly under hostPath by releases
    before the per-namespace roots: the warm DaemonSet's pods first evict those (unleased) models. Its init container
    mounts the whole hostPath, every namespace's folder: set it for one deploy, then remove it."""

    _safe_host_path = field_validator("host_path")(_safe_host_path)

    @field_validator("volume_name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v in rules.RESERVED_VOLUME_NAMES:
            raise PydanticCustomError("reserved", "'{v}' is reserved by the operator (reserved: {r})",
                                      {"v": v, "r": ", ".join(sorted(rules.RESERVED_VOLUME_NAMES))})
        return v


class ImageCache(Strict):
    enabled: bool = crd_required("enabled")
    """Cache the worker image on the nodes."""
