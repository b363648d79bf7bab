"""Where the HyperPod inference operator's images live: the regional ECR registries and the tag per version.

The facts (the Helm chart's ``image.repositoryDomainMap``, chart 2.2.2 for v3.2 and 2.3.0 for v3.3, and the tags) are
in :mod:`hyperpod_inference.facts.operator`. A region that the chart does not list makes the chart fail to render;
here it raises ``ValueError`` naming the region and the supported ones.
"""

from __future__ import annotations

from ..facts import operator as facts
from ..facts.operator import (
    INIT_CONTAINER_REPOSITORY,
    OPERATOR_IMAGE_TAGS,
    OPERATOR_REPOSITORY,
    OPERATOR_VERSIONS,
)

__all__ = ["INIT_CONTAINER_IMAGE_TAG", "INIT_CONTAINER_REPOSITORY", "OPERATOR_IMAGE_TAGS", "OPERATOR_REPOSITORY",
           "OPERATOR_VERSIONS", "SUPPORTED_REGIONS", "image_registry", "init_container_image", "operator_image"]

INIT_CONTAINER_IMAGE_TAG = facts.release(facts.DEFAULT_OPERATOR_VERSION).init_image_tag
"""Tag of ``hyperpod-inference-operator-init-container`` of the default version (the same in every release today)."""


def SUPPORTED_REGIONS(version: str) -> list[str]:  # noqa: N802 - public name fixed by the design
    """Regions with an operator image registry for ``version``, sorted."""
    return facts.image_regions(version)


def image_registry(region: str, version: str) -> str:
    """``<account>.dkr.ecr.<region>.amazonaws.com`` for the operator images of ``version`` in ``region``."""
    if facts.image_region_problem(region, version):
        raise ValueError(
            f"the HyperPod inference operator {version} has no image registry in region {region!r}; "
            f"supported regions: {', '.join(facts.image_regions(version))}")
    account, _ = facts.REGISTRY_ACCOUNTS[region]
    return f"{account}.dkr.ecr.{region}.amazonaws.com"


def operator_image(region: str, version: str) -> str:
    """The manager image, e.g. ``861276088053.dkr.ecr.us-west-2.amazonaws.com/hyperpod-inference-operator:v3.3``."""
    return f"{image_registry(region, version)}/{OPERATOR_REPOSITORY}:{facts.release(version).manager_image_tag}"


def init_container_image(region: str, version: str) -> str:
    """The ``check-csi-drivers`` init container image of ``version`` in ``region``."""
    return f"{image_registry(region, version)}/{INIT_CONTAINER_REPOSITORY}:{facts.release(version).init_image_tag}"
