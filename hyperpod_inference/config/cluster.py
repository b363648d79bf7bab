"""The ``env`` and ``cluster`` sections: where the stack deploys and the existing HyperPod EKS cluster."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import (
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..facts import kubectl as kubectl_facts
from ..facts import rules
from .base import (
    CrdPaths,
    NoCrd,
    RoleArn,
    Strict,
    _err,
    _raise_all,
)


# ---------------------------------------------------------------------------------------------------------------- env
class Env(Strict):
    """Where the stack deploys. Both are literal so physical names and manifests are known at synth time."""

    crd_paths: ClassVar[CrdPaths] = {
        "account": NoCrd("AWS side, not the custom resource"),
        "region": NoCrd("AWS side, not the custom resource"),
    }
    account: Annotated[str, StringConstraints(pattern=rules.ACCOUNT)]
    """The 12-digit AWS account ID."""
    region: Annotated[str, StringConstraints(pattern=rules.REGION)]
    """The AWS region, e.g. us-west-2."""


class Cluster(Strict):
    """The existing HyperPod EKS cluster the stack installs into. A config loads with only ``hyperpodClusterArn``;
    the app's ``HyperPodInferenceStack`` (which imports the cluster by name) refuses it without eksClusterName,
    kubectlRoleArn, oidcProviderArn, vpcId and env; ``HyperPodInference`` given a cluster object takes them from the
    object and its stack (oidcProviderArn unless the object carries a literal one; one that contradicts the object's
    is refused, naming both)."""

    crd_paths: ClassVar[CrdPaths] = {
        "eks_cluster_name": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC provider "
                                  "by it"),
        "kubectl_role_arn": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC provider "
                                  "by it"),
        "oidc_provider_arn": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC provider"
                                   " by it"),
        "vpc_id": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC provider by it"),
        "kubectl_subnet_ids": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC "
                                    "provider by it"),
        "kubectl_security_group_id": NoCrd("AWS side: the stack imports the cluster, its kubectl provider and OIDC "
                                           "provider by it"),
        "hyperpod_cluster_arn": NoCrd("the operator add-on's hyperpodClusterArn value"),
        "kubernetes_version": NoCrd("AWS side: the kubectl layer the stack imports the cluster with"),
    }
    eks_cluster_name: Annotated[str, StringConstraints(pattern=rules.EKS_CLUSTER_NAME)] | None = None
    """The EKS cluster of the HyperPod cluster."""
    hyperpod_cluster_arn: Annotated[str, StringConstraints(pattern=rules.HYPERPOD_CLUSTER_ARN)]
    """The HyperPod cluster's ARN (the operator needs it for data capture)."""
    kubectl_role_arn: RoleArn | None = None
    """A role mapped to cluster-admin that the kubectl provider assumes (EKS access entry or aws-auth)."""
    oidc_provider_arn: Annotated[str, StringConstraints(pattern=rules.OIDC_PROVIDER_ARN)] | None = None
    """The cluster's IAM OIDC provider; IRSA trust conditions are parsed from it."""
    vpc_id: Annotated[str, StringConstraints(pattern=rules.VPC_ID)] | None = None
    """The cluster's VPC."""
    kubectl_subnet_ids: list[Annotated[str, StringConstraints(pattern=rules.SUBNET_ID)]] = Field(default_factory=list)
    """Private API endpoint only: subnets the kubectl handler runs in."""
    kubectl_security_group_id: Annotated[str, StringConstraints(pattern=rules.SECURITY_GROUP_ID)] | None = None
    """Private API endpoint only: the security group of the kubectl handler (needs kubectlSubnetIds)."""

    kubernetes_version: Annotated[str, StringConstraints(pattern=r"^1\.[0-9]{1,3}$")] | None = None
    """The cluster's Kubernetes version (e.g. 1.33): the app picks the kubectl layer whose kubectl matches it
    (aws-cdk.lambda-layer-kubectl-v<minor>; v33 is installed, the others come with the extra kubectl-v<minor>).
    Default: the v33 layer (Kubernetes 1.32 to 1.34). A version no published layer serves is refused."""

    @field_validator("kubernetes_version")
    @classmethod
    def _served(cls, v: str | None) -> str | None:
        if v is not None and kubectl_facts.layer_for(v) is None:
            layers = sorted(kubectl_facts.LAYERS.values(), key=lambda layer: layer.minor)
            raise PydanticCustomError("kubectl_layer", "no published kubectl layer serves Kubernetes {v} (layers "
                                      "v{lo} to v{hi} serve {first} to {last})",
                                      {"v": v, "lo": layers[0].minor, "hi": layers[-1].minor,
                                       "first": layers[0].serves[0], "last": layers[-1].serves[-1]})
        return v

    @model_validator(mode="after")
    def _private_endpoint(self) -> Cluster:
        if self.kubectl_security_group_id and not self.kubectl_subnet_ids:
            _raise_all(type(self), [_err(("kubectlSecurityGroupId",),
                                         "only used with kubectlSubnetIds (private API endpoint)")])
        return self


