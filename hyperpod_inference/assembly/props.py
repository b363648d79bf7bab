"""The props of ``HyperPodInference`` checked against its config and its stack, before anything is built: every
problem named by the prop and the config key, in one error."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from ..config.models import HyperPodConfig
from ..constructs.lazy import is_unresolved
from ..facts.operator import EXECUTION_ROLE_NAME_PREFIX


def check_props(owner: Construct, config: HyperPodConfig, cluster: eks.ICluster | None,
                execution_role: iam.IRole | None) -> None:
    """The construct's env, cluster object and execution role against the config: every problem in one error."""
    problems: list[str] = []
    stack = cdk.Stack.of(owner)
    if is_unresolved(stack.account) or is_unresolved(stack.region):
        problems.append("the enclosing stack needs a literal env (account and region): IRSA trust conditions "
                        "and physical names are exact")
    elif config.env is not None and (config.env.account, config.env.region) != (stack.account, stack.region):
        problems.append(f"config env ({config.env.account} / {config.env.region}) differs from the enclosing "
                        f"stack's ({stack.account} / {stack.region})")
    if config.manifests.delivery == "kubectl" and cluster is None:
        problems.append("cluster: required with manifests.delivery: kubectl (the cluster whose kubectl provider "
                        "applies the manifests)")
    if cluster is None and config.cluster.eks_cluster_name is None:
        problems.append("cluster.eksClusterName: required without a cluster object (the operator add-on names "
                        "the cluster); fill it in, or pass cluster= (an eks.ICluster)")
    if cluster is not None and config.manifests.delivery == "kubectl" and cluster.kubectl_layer is None:
        problems.append(f"cluster: {cluster.node.path} has no kubectl_layer, so its kubectl handler has only the "
                        "AWS CLI and every manifest would fail at deploy; import it with kubectl_layer= (e.g. "
                        "aws_cdk.lambda_layer_kubectl_v33.KubectlV33Layer(stack, \"KubectlLayer\"), the layer "
                        "matching its Kubernetes version)")
    object_oidc = object_oidc_arn(cluster)
    if object_oidc is not None and config.cluster.oidc_provider_arn is not None \
            and object_oidc != config.cluster.oidc_provider_arn:
        problems.append(f"cluster: its OIDC provider is {object_oidc}, but cluster.oidcProviderArn is "
                        f"{config.cluster.oidc_provider_arn}; IRSA trusts would name the wrong provider. Leave "
                        "cluster.oidcProviderArn out (the object's is used) or make them the same")
    if cluster is not None and config.cluster.eks_cluster_name and not is_unresolved(cluster.cluster_name) \
            and cluster.cluster_name != config.cluster.eks_cluster_name:
        problems.append(f"cluster: named {cluster.cluster_name!r}, but cluster.eksClusterName is "
                        f"{config.cluster.eks_cluster_name!r}")
    if execution_role is not None:
        if config.operator.install != "existing":
            problems.append("execution_role: only used with operator.install: existing (the library creates the "
                            "role for addon and chart)")
        name = execution_role.role_name
        if not is_unresolved(name) and not name.startswith(EXECUTION_ROLE_NAME_PREFIX):
            problems.append(f"execution_role: the role name must start with {EXECUTION_ROLE_NAME_PREFIX} (the "
                            f"managed policy only passes such roles), got {name!r}")
    if problems:
        raise ValueError(f"HyperPodInference {owner.node.path}: " + "; ".join(problems))
    if execution_role is not None:
        cdk.Annotations.of(owner).add_warning_v2(
            "hyperpod-inference:executionRoleTrust",
            "execution_role: its trust policy cannot be checked here; it must trust sagemaker.amazonaws.com and "
            "the operator's service account")


def check_resource_props(owner: Construct, config: HyperPodConfig, **props: Any) -> None:
    """A resource object given both as a prop and in the config: named by the prop and the config key."""
    problems: list[str] = []
    capture, domain = config.capture, config.domain
    for prop, key, configured in (
            ("capture_bucket", "capture.bucketName", capture is not None and capture.bucket_name is not None),
            ("capture_key", "capture.kms", capture is not None and capture.kms != "create"),
            ("tls_bucket", "operator.tlsBucketName", config.operator.tls_bucket_name is not None),
            ("hosted_zone", "domain.hostedZoneId", domain is not None and domain.hosted_zone_id is not None),
            ("certificate", "domain.certificateArn", domain is not None and domain.certificate_arn is not None)):
        if props[prop] is not None and configured:
            problems.append(f"{prop}: given, and the config sets {key} too; give one (the prop, or {key})")
    for prop, section in (("capture_bucket", "capture"), ("capture_key", "capture"),
                          ("hosted_zone", "domain"), ("certificate", "domain")):
        if props[prop] is not None and getattr(config, section) is None:
            problems.append(f"{prop}: given, but the config has no {section} section to use it for")
    zone = props["hosted_zone"]
    if zone is not None and domain is not None and not is_unresolved(zone.zone_name) \
            and zone.zone_name.rstrip(".") != domain.zone_name.rstrip("."):
        problems.append(f"hosted_zone: its name is {zone.zone_name!r}, but domain.zoneName is "
                        f"{domain.zone_name!r}")
    alarms = config.observability.alarms
    if alarms is not None and props["alarm_topic"] is not None and (alarms.sns_topic_arn or alarms.create_topic):
        problems.append("alarm_topic: given, and the config sets observability.alarms.snsTopicArn or createTopic "
                        "too; give one")
    if alarms is not None and props["alarm_topic"] is None and not (alarms.sns_topic_arn or alarms.create_topic):
        problems.append("observability.alarms: needs snsTopicArn or createTopic: true (where the alarms go), or "
                        "an imported sns.ITopic as the alarm_topic prop")
    if props["certificate"] is not None and domain is not None and domain.wildcard is not None:
        problems.append("certificate: given, so domain.wildcard (which shapes an issued certificate) does not "
                        "apply; leave domain.wildcard out")
    if problems:
        raise ValueError(f"HyperPodInference {owner.node.path}: " + "; ".join(problems))


def object_oidc_arn(cluster: eks.ICluster | None) -> str | None:
    """The cluster object's literal OIDC provider ARN, or None (no object, no provider, or a token)."""
    if cluster is None:
        return None
    try:
        arn = cluster.open_id_connect_provider.open_id_connect_provider_arn
    except jsii.errors.JSIIError:
        return None
    return None if arn is None or is_unresolved(arn) else arn


def oidc_provider_arn(config: HyperPodConfig, cluster: eks.ICluster | None) -> str:
    arn = config.cluster.oidc_provider_arn
    if arn is None and cluster is not None:
        try:
            arn = cluster.open_id_connect_provider.open_id_connect_provider_arn
        except jsii.errors.JSIIError:
            arn = None
    if arn is None:
        raise ValueError("cluster.oidcProviderArn: required (the cluster object carries no OIDC provider)")
    if is_unresolved(arn):
        raise ValueError("cluster.oidcProviderArn: the cluster object's OIDC provider ARN is a deploy-time token; "
                         "give the literal ARN in the config so IRSA trust conditions stay exact")
    return arn
