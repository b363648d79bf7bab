"""Where the HyperPod inference operator's images live: one table of regional ECR registries and the tag per version.

The table is the Helm chart's ``image.repositoryDomainMap`` (chart 2.2.2 for v3.2, 2.3.0 for v3.3). A region that the
chart does not list makes the chart fail to render; here it raises ``ValueError`` naming the region and the supported
ones.
"""

from __future__ import annotations

OPERATOR_VERSIONS: tuple[str, ...] = ("v3.2", "v3.3")
"""Operator versions this library can install as a chart (oldest first)."""

# region -> (ECR registry account, first operator version that publishes images there)
_REGISTRY_ACCOUNTS: dict[str, tuple[str, str]] = {
    "us-east-1": ("557690614651", "v3.2"),
    "us-east-2": ("061051259071", "v3.2"),
    "us-west-1": ("183295454132", "v3.2"),
    "us-west-2": ("861276088053", "v3.2"),
    "eu-north-1": ("850995554027", "v3.2"),
    "eu-central-1": ("491085393763", "v3.2"),
    "eu-west-1": ("537124951544", "v3.2"),
    "eu-west-2": ("337909760000", "v3.2"),
    "eu-south-2": ("025050981094", "v3.2"),
    "ap-northeast-1": ("724772091842", "v3.2"),
    "ap-southeast-1": ("474668384327", "v3.2"),
    "ap-southeast-2": ("147997151819", "v3.2"),
    "ap-southeast-3": ("158128612970", "v3.2"),
    "ap-southeast-4": ("311141544681", "v3.2"),
    "ap-south-1": ("522814713546", "v3.2"),
    "ap-south-2": ("680458885894", "v3.3"),
    "sa-east-1": ("495599735358", "v3.2"),
}

OPERATOR_IMAGE_TAGS: dict[str, str] = {"v3.2": "v3.2", "v3.3": "v3.3"}
"""Manager image tag per operator version (the chart's ``image.tag``)."""

INIT_CONTAINER_IMAGE_TAG = "v1.0"
"""Tag of ``hyperpod-inference-operator-init-container`` (the chart's ``image.initContainer.tag``), both versions."""

OPERATOR_REPOSITORY = "hyperpod-inference-operator"
INIT_CONTAINER_REPOSITORY = "hyperpod-inference-operator-init-container"


def _check_version(version: str) -> None:
    if version not in OPERATOR_VERSIONS:
        raise ValueError(f"unsupported operator version {version!r}; supported: {', '.join(OPERATOR_VERSIONS)}")


def SUPPORTED_REGIONS(version: str) -> list[str]:  # noqa: N802 - public name fixed by the design
    """Regions with an operator image registry for ``version``, sorted."""
    _check_version(version)
    order = OPERATOR_VERSIONS.index
    return sorted(r for r, (_, since) in _REGISTRY_ACCOUNTS.items() if order(since) <= order(version))


def image_registry(region: str, version: str) -> str:
    """``<account>.dkr.ecr.<region>.amazonaws.com`` for the operator images of ``version`` in ``region``."""
    supported = SUPPORTED_REGIONS(version)
    if region not in supported:
        raise ValueError(
            f"the HyperPod inference operator {version} has no image registry in region {region!r}; "
            f"supported regions: {', '.join(supported)}")
    account, _ = _REGISTRY_ACCOUNTS[region]
    return f"{account}.dkr.ecr.{region}.amazonaws.com"


def operator_image(region: str, version: str) -> str:
    """The manager image, e.g. ``861276088053.dkr.ecr.us-west-2.amazonaws.com/hyperpod-inference-operator:v3.3``."""
    return f"{image_registry(region, version)}/{OPERATOR_REPOSITORY}:{OPERATOR_IMAGE_TAGS[version]}"


def init_container_image(region: str, version: str) -> str:
    """The ``check-csi-drivers`` init container image of ``version`` in ``region``."""
    return f"{image_registry(region, version)}/{INIT_CONTAINER_REPOSITORY}:{INIT_CONTAINER_IMAGE_TAG}"
