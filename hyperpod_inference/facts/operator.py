"""The HyperPod inference operator: its releases and the names it fixes (FACTS.md sections 0, 6 and 7).

The one release table (operator versions with their EKS add-on, Helm chart and image versions; the newer add-on
versions that may be pinned unvalidated; the CRD fields each version adds): every ``Literal``, rule and chart reads
it from here, under these names only. Also the names the operator chooses itself (its API group, namespace, service
accounts, managed policies, the TLS bucket prefix), and the versions of the Helm charts and EKS add-ons the library
installs beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from .versions import Version, version_key


@dataclass(frozen=True)
class OperatorRelease:
    """One operator release as the library installs it."""

    version: str
    """The operator's version as the config names it (``operator.version``), e.g. ``v3.3``."""
    addon_version: str | None
    """The ``amazon-sagemaker-hyperpod-inference`` EKS add-on version that ships it (None: no add-on version is known
    to ship it; ``operator.addonVersion`` must then name one)."""
    chart_version: str
    """The ``hyperpod-inference-operator`` Helm chart version (reported as ``CHART_VERSION``)."""
    app_version: str
    """The chart's appVersion (reported as ``APP_VERSION``)."""
    manager_image_tag: str
    """Tag of the ``hyperpod-inference-operator`` image (the chart's ``image.tag``)."""
    init_image_tag: str
    """Tag of the ``hyperpod-inference-operator-init-container`` image (``image.initContainer.tag``)."""
    crd_public: bool = True
    """The release's CRD text is public (and in the reference data the tests check the field tables against): the
    library validates configs of this version. False: its fields are known from AWS's documentation and the chart's
    pull-request text only."""
    sources: str = ""
    """Where each value comes from, and which are inferred (releases without public CRD text)."""


RELEASES: tuple[OperatorRelease, ...] = (
    OperatorRelease(version="v3.2", addon_version="v1.3.0-eksbuild.1", chart_version="2.2.2", app_version="3.2",
                    manager_image_tag="v3.2", init_image_tag="v1.0",
                    sources="chart 2.2.2 (git 011ca927) and the add-on release notes"),
    OperatorRelease(version="v3.3", addon_version="v1.4.0-eksbuild.1", chart_version="2.3.0", app_version="3.3",
                    manager_image_tag="v3.3", init_image_tag="v1.0",
                    sources="chart 2.3.0 (git 0986f2cc, PR #440) and the add-on release notes"),
    OperatorRelease(version="v3.4", addon_version="v1.5.0-eksbuild.1", chart_version="2.4.0", app_version="3.4",
                    manager_image_tag="v3.4", init_image_tag="v1.0", crd_public=False,
                    sources="add-on: operator v3.4 release notes; chart 2.4.0: aws/sagemaker-hyperpod-cli PR #448 "
                            "title; appVersion and image tag inferred from the chart's rule (image MAJOR.MINOR); "
                            "init-container tag inferred unchanged"),
    OperatorRelease(version="v3.5", addon_version=None, chart_version="2.5.0", app_version="3.5",
                    manager_image_tag="v3.5", init_image_tag="v1.0", crd_public=False,
                    sources="chart 2.5.0: PR #455; appVersion 3.5 and image tag v3.5: PR #461 (the versions it "
                            "bumps from); no add-on version is known to ship v3.5; init-container tag inferred "
                            "unchanged"),
    OperatorRelease(version="v3.6", addon_version="v2.0.0-eksbuild.2", chart_version="2.6.0", app_version="3.6",
                    manager_image_tag="v3.6", init_image_tag="v1.0", crd_public=False,
                    sources="chart 2.6.0, appVersion 3.6, image tag v3.6: PR #461 (a later 2.6.1 changes only the "
                            "FSx CSI subchart, PR #453); add-on v2.0.0-eksbuild.1 and .2 seen with v3.6, .2 is the "
                            "first with the Inference Gateway (AWS's gateway documentation); init-container tag "
                            "inferred unchanged"),
    OperatorRelease(version="v3.7", addon_version="v2.1.0-eksbuild.1", chart_version="2.7.0", app_version="3.7",
                    manager_image_tag="v3.7", init_image_tag="v1.0", crd_public=False,
                    sources="chart 2.7.0: PR #466; image tag v3.7: PR #464; appVersion inferred; add-on "
                            "v2.1.0-eksbuild.1 inferred (the newest seen, ACTIVE in AWS's gateway lab; no release "
                            "note pairs it with v3.7); init-container tag inferred unchanged"),
)
"""Releases the library can install, oldest first. Only those with ``crd_public`` are validated targets."""

OPERATOR_VERSIONS: tuple[str, ...] = tuple(r.version for r in sorted(RELEASES, key=lambda r: version_key(r.version)))
"""Operator versions the library supports (oldest first); the config's ``operator.version`` takes exactly these."""

VALIDATED_OPERATOR_VERSIONS: tuple[str, ...] = tuple(
    v for v in OPERATOR_VERSIONS if next(r for r in RELEASES if r.version == v).crd_public)
"""The versions whose CRD text is public: configs of these are checked against the operator's own schema."""

OperatorVersion = Literal[OPERATOR_VERSIONS]  # type: ignore[valid-type]
"""The type of an operator version prop (``Literal["v3.2", ..., "v3.7"]``), made from the table."""

DEFAULT_OPERATOR_VERSION = "v3.3"

#: Add-on versions seen besides the one each release installs, with the operator version each ships:
#: ``operator.addonVersion`` may pin one (with a warning) (AWS add-on release notes and samples).
NEWER_ADDON_VERSIONS: Mapping[str, str] = MappingProxyType({
    "v2.0.0-eksbuild.1": "v3.6",
})

RELEASES_BY_VERSION: Mapping[str, OperatorRelease] = MappingProxyType({r.version: r for r in RELEASES})

#: CRD field (path under the custom resource, IEC v1 and JSM v1) -> the first operator version that has it. A field
#: not listed is in every supported version. Checked against the CRDs of each version with public CRD text by a
#: test; the v3.6 fields are sourced from the chart's PR #461 ("spec/status.inferenceGateway opt-in and IEC
#: spec.kubernetes.podTemplateAnnotations") and AWS's gateway documentation (``inferenceGateway.{enabled, name}``).
#: Fields of later versions whose path is not published stay in ``specOverrides`` (facts.production.LATER_FIELDS).
FIELDS_SINCE: Mapping[str, str] = MappingProxyType({
    "spec.modelCacheConfig": "v3.3",
    "spec.modelCacheConfig.weightsCache": "v3.3",
    "spec.modelCacheConfig.weightsCache.enabled": "v3.3",
    "spec.modelCacheConfig.weightsCache.hostPath": "v3.3",
    "spec.modelCacheConfig.imageCache": "v3.3",
    "spec.modelCacheConfig.imageCache.enabled": "v3.3",
    "spec.loadBalancer.idleTimeoutSeconds": "v3.3",
    "spec.inferenceGateway": "v3.6",
    "spec.inferenceGateway.enabled": "v3.6",
    "spec.inferenceGateway.name": "v3.6",
    "spec.kubernetes.podTemplateAnnotations": "v3.6",
})


def release(version: str) -> OperatorRelease:
    """The release of ``version``; ValueError naming the supported versions for any other."""
    try:
        return RELEASES_BY_VERSION[version]
    except (KeyError, TypeError):
        raise ValueError(f"unsupported operator version {version!r}; supported: {', '.join(OPERATOR_VERSIONS)}") from None


def has_field(version: str, field: str) -> bool:
    """Whether the CRDs of operator ``version`` have ``field`` (e.g. ``spec.modelCacheConfig``)."""
    since = FIELDS_SINCE.get(field)
    return since is None or Version(version) >= Version(since)


def field_since(field: str) -> str | None:
    """The first supported operator version with ``field``; None when every supported version has it."""
    return FIELDS_SINCE.get(field)


#: HyperPod's node-health taint, and the one value of it a model pod may tolerate: a toleration of any other value
#: (or of the key with ``operator: Exists``) lets pods onto nodes HyperPod is draining or repairing (a review on
#: awslabs/awsome-distributed-ai PR #1110; tolerations come with operator v3.7).
NODE_HEALTH_TAINT_KEY = "sagemaker.amazonaws.com/node-health-status"
NODE_HEALTH_SCHEDULABLE = "Schedulable"


# --- operator image registries (the chart's image.repositoryDomainMap: chart 2.2.2 for v3.2, 2.3.0 for v3.3) ----------

#: region -> (ECR registry account, first operator version that publishes images there)
REGISTRY_ACCOUNTS: Mapping[str, tuple[str, str]] = MappingProxyType({
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
})
OPERATOR_REPOSITORY = "hyperpod-inference-operator"
INIT_CONTAINER_REPOSITORY = "hyperpod-inference-operator-init-container"


def image_regions(version: str) -> list[str]:
    """Regions with an operator image registry for ``version``, sorted."""
    release(version)
    return sorted(r for r, (_, since) in REGISTRY_ACCOUNTS.items() if Version(since) <= Version(version))


def image_region_problem(region: str, version: str) -> str | None:
    """Why the operator ``version``'s images cannot be pulled in ``region`` (chart install), or None."""
    supported = image_regions(version)
    if region in supported:
        return None
    return f"the operator {version} image is not published in {region}; supported: {', '.join(supported)}"


# --- names the operator fixes (FACTS.md sections 6 and 7) -----------------------------------------------------------

#: The API group of the operator's custom resources, and the version of it the library writes.
API_GROUP = "inference.sagemaker.aws.amazon.com"
API_VERSION = f"{API_GROUP}/v1"

#: The Helm chart's ``namePrefix`` and ``shortPrefix``.
CHART_NAME_PREFIX = "hyperpod-inference-operator"
CHART_SHORT_PREFIX = "hyperpod-inference"
OPERATOR_NAMESPACE = f"{CHART_SHORT_PREFIX}-system"
CHART_SERVICE_ACCOUNT = f"{CHART_NAME_PREFIX}-controller-manager"
"""ServiceAccount of the Helm-chart / cdk8s-chart install (the execution role's IRSA ``sub`` in chart mode)."""
ADDON_SERVICE_ACCOUNT = "hyperpod-inference-controller-manager"
"""ServiceAccount of the EKS add-on install (the execution role's IRSA ``sub`` in add-on mode)."""
OPERATOR_ADDON_NAME = "amazon-sagemaker-hyperpod-inference"

#: The add-on refuses other role names, and the managed policy's iam:PassRole only covers this prefix.
EXECUTION_ROLE_NAME_PREFIX = "SageMakerHyperPodInference"
OPERATOR_MANAGED_POLICY = "AmazonSageMakerHyperPodInferenceAccess"
GATED_MODEL_MANAGED_POLICY = "AmazonSageMakerHyperPodGatedModelAccess"
#: The managed policy's S3 and KMS statements cover buckets named ``hyperpod-tls*``.
TLS_BUCKET_PREFIX = "hyperpod-tls"
#: Object tag the operator sets on (and requires of) the TLS objects it writes and reads.
OPERATOR_OBJECT_TAG = ("CreatedBy", "HyperPodInference")
#: The operator creates one service account per JumpStart endpoint, named with this prefix.
GATED_MODEL_SERVICE_ACCOUNT_PREFIX = "hyperpod-inference-service-account"

#: The Inference Gateway's controller (FACTS section 13): the add-on installs it from this version when its
#: configuration has ``inferenceGateway.enabled: true``; it runs as this service account, with AWS's managed policy.
GATEWAY_MIN_ADDON_VERSION = "v2.0.0-eksbuild.2"
GATEWAY_MANAGED_POLICY = "AmazonSageMakerHyperPodInferenceGatewayAccess"

#: (namespace, name) of the dependencies' service accounts.
ALB_CONTROLLER_SERVICE_ACCOUNT = (OPERATOR_NAMESPACE, "aws-load-balancer-controller")
KEDA_SERVICE_ACCOUNT = (OPERATOR_NAMESPACE, "keda-operator")
S3_CSI_SERVICE_ACCOUNT = ("kube-system", "s3-csi-driver-sa")
GATEWAY_SERVICE_ACCOUNT = (OPERATOR_NAMESPACE, "inference-gateway-controller")

#: EKS add-ons the operator add-on needs, at the minimum versions the setup guide names.
DEPENDENCY_ADDON_VERSIONS: Mapping[str, str] = MappingProxyType({
    "aws-mountpoint-s3-csi-driver": "v1.14.1-eksbuild.1",
    "aws-fsx-csi-driver": "v1.6.0-eksbuild.1",
    "metrics-server": "v0.7.2-eksbuild.4",
    "cert-manager": "v1.18.2-eksbuild.2",
})


@dataclass(frozen=True)
class HelmChartRef:
    """A public Helm chart the library installs beside the operator (``install: chart``)."""

    chart: str
    repository: str
    version: str
    release: str


#: The Helm chart's own subchart versions (Chart.yaml of chart 2.2.2) for the two it does not get as add-ons.
ALB_CONTROLLER_CHART = HelmChartRef(chart="aws-load-balancer-controller", repository="https://aws.github.io/eks-charts",
                                    version="1.13.2", release="aws-load-balancer-controller")
KEDA_CHART = HelmChartRef(chart="keda", repository="https://kedacore.github.io/charts", version="2.17.1", release="keda")

OPERATOR_ADDON_VERSIONS: Mapping[str, str] = MappingProxyType(
    {r.version: r.addon_version for r in RELEASES if r.addon_version is not None})
"""Operator version -> EKS add-on version (release notes), for the versions an add-on is known to ship."""
CHART_VERSIONS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {r.version: (r.chart_version, r.app_version) for r in RELEASES})
"""Operator version -> (Helm chart version, appVersion)."""
OPERATOR_IMAGE_TAGS: Mapping[str, str] = MappingProxyType({r.version: r.manager_image_tag for r in RELEASES})
