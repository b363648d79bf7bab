"""HyperPodInferenceStack: a thin stack that imports the cluster the config describes and adds one
``HyperPodInference`` (id ``Default``, so logical IDs are those of the construct's children)."""

from __future__ import annotations

import importlib
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .assembly.delivery import ManifestUnit  # noqa: F401 - re-exported
from .assembly.limits import (  # noqa: F401 - re-exported: the stack's public size limits and checks
    MAX_MANIFEST_BYTES,
    MAX_OUTPUTS,
    MAX_RESOURCES,
    MAX_TEMPLATE_BYTES,
    template_size_problems,
)
from .config.cross_rules import cluster_import_problems
from .config.loader import ConfigError
from .config.models import HyperPodConfig
from .facts import kubectl as kubectl_facts
from .facts.kubectl import KubectlLayer
from .inference import HyperPodInference


def kubectl_layer_for(version: str | None) -> KubectlLayer:
    """The published kubectl layer for Kubernetes ``version`` (``cluster.kubernetesVersion``; None = the default,
    v33). ConfigError naming the field when none serves it."""
    if version is None:
        return kubectl_facts.DEFAULT_LAYER
    layer = kubectl_facts.layer_for(version)
    if layer is None:
        raise ConfigError("cluster.kubernetesVersion", [("cluster.kubernetesVersion", f"no published kubectl layer "
                                                         f"serves Kubernetes {version}")])
    return layer


def kubectl_layer(scope: Construct, version: str | None) -> Any:
    """The kubectl layer construct (``KubectlV<minor>Layer``) for ``version``; a ConfigError with the pip command
    when its package is not installed."""
    layer = kubectl_layer_for(version)
    try:
        module = importlib.import_module(layer.module)
    except ImportError:
        raise ConfigError("cluster.kubernetesVersion", [("cluster.kubernetesVersion", (
            f"Kubernetes {version} needs the kubectl layer {layer.package}, which is not installed: "
            f"pip install 'hyperpod-inference-cdk[kubectl-v{layer.minor}]' (or pip install {layer.package})"))]) \
            from None
    return getattr(module, layer.class_name)(scope, "KubectlLayer")


def import_cluster(scope: Construct, config: HyperPodConfig) -> eks.ICluster:
    """The existing EKS cluster of ``config.cluster``, with its kubectl role, the kubectl layer of its Kubernetes
    version (``cluster.kubernetesVersion``; default v33) and (optionally) private subnets."""
    c = config.cluster
    oidc = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(scope, "OidcProvider", c.oidc_provider_arn)
    extra: dict[str, Any] = {}
    if c.kubectl_subnet_ids:
        from aws_cdk import aws_ec2 as ec2

        extra["vpc"] = ec2.Vpc.from_vpc_attributes(scope, "ClusterVpc", vpc_id=c.vpc_id,
                                                    availability_zones=cdk.Fn.get_azs())
        extra["kubectl_private_subnet_ids"] = list(c.kubectl_subnet_ids)
        if c.kubectl_security_group_id:
            extra["kubectl_security_group_id"] = c.kubectl_security_group_id
    return eks.Cluster.from_cluster_attributes(
        scope, "Cluster", cluster_name=c.eks_cluster_name, kubectl_role_arn=c.kubectl_role_arn,
        kubectl_layer=kubectl_layer(scope, c.kubernetes_version), open_id_connect_provider=oidc, **extra)


class HyperPodInferenceStack(cdk.Stack):
    """Everything HyperPod inference needs on an existing cluster, from one validated config, as its own stack.

    :param config: the validated config (``hyperpod_inference.load_config``)
    :param kwargs: other ``cdk.StackProps``; ``env`` defaults to ``config.env``.

    ``inference`` is the ``HyperPodInference`` construct; its attributes (``execution_role``, ``tls_bucket``,
    ``capture``, ``domain``, ``endpoints``, ``custom_resources``, ``manifest_resources``) are the stack's too.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: HyperPodConfig, **kwargs: Any) -> None:
        problems = cluster_import_problems(config, env_given=kwargs.get("env") is not None)
        if problems:
            raise ConfigError(f"HyperPodInferenceStack {construct_id}", problems)
        if config.env is not None:
            kwargs.setdefault("env", cdk.Environment(account=config.env.account, region=config.env.region))
        kwargs.setdefault("description", "SageMaker HyperPod inference (hyperpod-inference-cdk)")
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        cluster = import_cluster(self, config) if config.manifests.delivery == "kubectl" else None
        self.inference = HyperPodInference(self, "Default", config=config, cluster=cluster)

    # The construct's public attributes, read through the stack.
    execution_role = property(lambda self: self.inference.execution_role)
    tls_bucket = property(lambda self: self.inference.tls_bucket)
    capture = property(lambda self: self.inference.capture)
    domain = property(lambda self: self.inference.domain)
    endpoints = property(lambda self: self.inference.endpoints)
    custom_resources = property(lambda self: self.inference.custom_resources)
    manifest_resources = property(lambda self: self.inference.manifest_resources)
    units = property(lambda self: self.inference.units)

    def manifest_documents(self) -> dict[str, list[dict[str, Any]]]:
        return self.inference.manifest_documents()

    def write_manifests(self, outdir: str) -> list[str]:
        return self.inference.write_manifests(outdir)
