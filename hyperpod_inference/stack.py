"""HyperPodInferenceStack: one CloudFormation stack for HyperPod inference on an existing HyperPod EKS cluster.

Composition and order (deletion runs in reverse, so the operator outlives the resources it finalizes):
  dependency add-ons -> operator (add-on or chart) -> roles, service accounts, secrets -> custom resources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
import cdk8s
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from .charts.endpoint import EndpointChart, EndpointWiring, add_objects
from .config.models import Endpoint, HyperPodConfig
from .manifests import with_placeholders, write_manifest_files

# Size limits checked at synth (issue: a manifest that the kubectl provider cannot carry fails late and badly).
MAX_MANIFEST_BYTES = 256 * 1024
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_RESOURCES = 500

# cdk-nag findings inside aws-cdk-lib's own kubectl provider nested stack; exact IDs as cdk-nag prints them.
KUBECTL_PROVIDER_ACKS = {
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]":
        "aws-cdk-lib's kubectl provider Lambdas use the AWS basic execution role for their logs",
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly]":
        "aws-cdk-lib's kubectl handler needs ECR pull for Helm OCI charts",
    'AwsSolutions::AwsSolutions-IAM4[Policy::{"Fn::If":["HandlerHasEcrPublic195AF58A",{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}]':
        "aws-cdk-lib's kubectl handler: conditional ECR Public read-only policy",
    "AwsSolutions::AwsSolutions-L1": "aws-cdk-lib pins the kubectl handler's runtime; not under this library's control",
    "AwsSolutions::AwsSolutions-IAM5[Resource::<Handler886CB40B.Arn>:*]":
        "aws-cdk-lib's provider framework may invoke any version of its kubectl handler",
}


def _pascal(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", name) if p)


@dataclass
class ManifestUnit:
    """One chart: one review file and (kubectl delivery) one KubernetesManifest resource."""

    name: str
    chart: cdk8s.Chart
    depends_on: list[str] = field(default_factory=list)
    resource: Construct | None = None

    def objects(self) -> list[dict[str, Any]]:
        return list(self.chart.to_json())


class HyperPodInferenceStack(cdk.Stack):
    """Everything HyperPod inference needs on an existing cluster, from one validated config.

    :param config: the validated config (``hyperpod_inference.config.load_config``)
    :param stack_name and other ``cdk.StackProps`` as usual; ``env`` comes from ``config.env``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: HyperPodConfig, **kwargs: Any) -> None:
        kwargs.setdefault("env", cdk.Environment(account=config.env.account, region=config.env.region))
        kwargs.setdefault("description", "SageMaker HyperPod inference (hyperpod-inference-cdk)")
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.k8s_app = cdk8s.App()
        self.units: list[ManifestUnit] = []
        self.custom_resources: dict[str, dict[str, Any]] = {}
        self.cluster = self._import_cluster() if config.manifests.delivery == "kubectl" else None

        self._add_namespaces()
        for endpoint in config.endpoints:
            self._add_endpoint(endpoint)
        self._apply()
        self._outputs()

    # ------------------------------------------------------------------------------------------------- cluster
    def _import_cluster(self) -> eks.ICluster:
        from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer

        c = self.config.cluster
        oidc = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(self, "OidcProvider", c.oidc_provider_arn)
        extra: dict[str, Any] = {}
        if c.kubectl_subnet_ids:
            from aws_cdk import aws_ec2 as ec2

            extra["vpc"] = ec2.Vpc.from_vpc_attributes(self, "ClusterVpc", vpc_id=c.vpc_id,
                                                        availability_zones=cdk.Fn.get_azs())
            extra["kubectl_private_subnet_ids"] = list(c.kubectl_subnet_ids)
            if c.kubectl_security_group_id:
                extra["kubectl_security_group_id"] = c.kubectl_security_group_id
        return eks.Cluster.from_cluster_attributes(
            self, "Cluster", cluster_name=c.eks_cluster_name, kubectl_role_arn=c.kubectl_role_arn,
            kubectl_layer=KubectlV33Layer(self, "KubectlLayer"), open_id_connect_provider=oidc, **extra)

    # ----------------------------------------------------------------------------------------------- k8s objects
    def add_chart(self, name: str, *, depends_on: list[str] | None = None) -> cdk8s.Chart:
        """A new chart whose objects land in ``manifests/<name>.yaml`` and (kubectl) in one manifest resource."""
        chart = cdk8s.Chart(self.k8s_app, name, disable_resource_name_hashes=True)
        self.units.append(ManifestUnit(name, chart, list(depends_on or [])))
        return chart

    def _add_namespaces(self) -> None:
        if not self.config.namespaces:
            return
        chart = self.add_chart("namespaces")
        add_objects(chart, [{"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": ns, "labels": {"app.kubernetes.io/managed-by": "hyperpod-inference-cdk"}}}
                            for ns in self.config.namespaces])

    def endpoint_wiring(self, endpoint: Endpoint) -> EndpointWiring:
        return EndpointWiring(region=self.region)

    def _add_endpoint(self, endpoint: Endpoint) -> None:
        wiring = self.endpoint_wiring(endpoint)
        name = f"{endpoint.namespace}-{endpoint.name}"
        deps = ["namespaces"] if endpoint.namespace in self.config.namespaces else []
        chart = EndpointChart(self.k8s_app, name, endpoint=endpoint, wiring=wiring)
        self.units.append(ManifestUnit(name, chart, deps))
        self.custom_resources[name] = chart.resource

    # ------------------------------------------------------------------------------------------------ apply
    def _apply(self) -> None:
        if self.cluster is None:
            return
        by_name: dict[str, ManifestUnit] = {}
        for unit in self.units:
            objs = unit.objects()
            if not objs:
                continue
            unit.resource = eks.KubernetesManifest(self, f"Manifest{_pascal(unit.name)}", cluster=self.cluster,
                                                   manifest=objs, overwrite=True)
            for dep in unit.depends_on:
                if dep in by_name and by_name[dep].resource is not None:
                    unit.resource.node.add_dependency(by_name[dep].resource)
            by_name[unit.name] = unit
        provider = self.node.try_find_child(f"{cdk.Names.node_unique_id(self.cluster.node)}-KubectlProvider")
        if provider is not None:
            cdk.Validations.of(provider).acknowledge(
                *[cdk.Acknowledgment(id=k, reason=v) for k, v in KUBECTL_PROVIDER_ACKS.items()])

    # ------------------------------------------------------------------------------------------------ outputs
    def _outputs(self) -> None:
        for ep in self.config.endpoints:
            kind = ep.kind.lower()
            status = (f"kubectl describe {kind} {ep.name} -n {ep.namespace} ; "
                      f"kubectl get events -n {ep.namespace} --field-selector involvedObject.name={ep.name}")
            cdk.CfnOutput(self, f"{_pascal(ep.namespace)}{_pascal(ep.name)}Status", value=status,
                          description=f"{ep.namespace}/{ep.name}: deployment status and events")

    # --------------------------------------------------------------------------------------------- manifests
    def manifest_documents(self) -> dict[str, list[dict[str, Any]]]:
        """Every chart's objects, deploy-time values shown as placeholders (``<LogicalId.Attr>``)."""
        return {u.name: with_placeholders(self, u.objects()) for u in self.units if u.objects()}

    def write_manifests(self, outdir: str) -> list[str]:
        """Write ``<outdir>/manifests/<chart>.yaml`` (one file per chart)."""
        import os

        return [str(p) for p in write_manifest_files(os.path.join(outdir, "manifests"), self.manifest_documents())]
