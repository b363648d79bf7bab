"""Manifest delivery: cdk8s charts -> review copies under ``cdk.out/manifests/`` and (kubectl delivery) one
``KubernetesManifest`` resource per chart, in dependency order, within the kubectl provider's size limits.

``ManifestDelivery`` is a helper of ``HyperPodInference``, not a construct of its own: the manifest resources are
children of the scope they are delivered into, so their logical IDs stay ``Manifest<Chart>`` wherever the helper
lives.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
import cdk8s
from aws_cdk import aws_eks as eks
from constructs import Construct

from ..constructs.lazy import is_unresolved
from ..facts import gitops as gitops_facts
from ..plan.context import manifest_id
from .limits import MAX_MANIFEST_BYTES
from .review import with_placeholders, write_gitops_files, write_manifest_files

#: The parameter of a nested stack carrying the kubectl provider's service token.
NESTED_PROVIDER_PARAMETER = "KubectlProviderServiceToken"

# cdk-nag findings inside aws-cdk-lib's own kubectl provider nested stack; exact IDs as cdk-nag prints them.
KUBECTL_PROVIDER_ACKS = {
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]":
        "aws-cdk-lib's kubectl provider Lambdas use the AWS basic execution role for their logs",
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly]":
        "aws-cdk-lib's kubectl handler needs ECR pull for Helm OCI charts",
    'AwsSolutions::AwsSolutions-IAM4[Policy::{"Fn::If":["HandlerHasEcrPublic195AF58A",{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}]':
        "aws-cdk-lib's kubectl handler: conditional ECR Public read-only policy",
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]":
        "private API endpoint (cluster.kubectlSubnetIds): aws-cdk-lib's kubectl provider Lambdas run in the VPC",
    "AwsSolutions::AwsSolutions-L1": "aws-cdk-lib pins the kubectl handler's runtime; not under this library's control",
    "AwsSolutions::AwsSolutions-IAM5[Resource::<Handler886CB40B.Arn>:*]":
        "aws-cdk-lib's provider framework may invoke any version of its kubectl handler",
}


@dataclass
class ManifestUnit:
    """One chart: one review file and (kubectl delivery) one KubernetesManifest resource."""

    name: str
    chart: cdk8s.Chart
    depends_on: list[str] = field(default_factory=list)  # other units, by name
    after: list[Construct] = field(default_factory=list)  # AWS-side constructs that must exist first
    custom_resource: bool = False
    resource: eks.KubernetesManifest | None = None
    #: Compact JSON size of the objects as delivered (None: not delivered through ``deliver``).
    manifest_bytes: int | None = None
    #: The objects as delivered (the chart is synthesized once, in ``deliver``).
    delivered: list[dict[str, Any]] | None = None

    def objects(self) -> list[dict[str, Any]]:
        """The chart's objects: as delivered, else synthesized now."""
        return list(self.delivered) if self.delivered is not None else list(self.chart.to_json())


class ManifestDelivery:
    """The charts of one ``HyperPodInference`` and how they reach the cluster.

    :param cluster: the cluster whose kubectl provider applies the charts; ``None`` for ``manifests.delivery: files``
        (review files only).
    :param owner_labels: labels put on every object delivered (``app.kubernetes.io/managed-by`` and the stack's).
    :param adopt_existing: apply the manifests (``kubectl apply``, adopting an object that exists) instead of
        creating them; only for a documented migration (a unit may still ask for ``overwrite=False``).
    :param gitops: ``manifests.delivery: files``: the tool that applies the files (``argocd``, ``flux`` or
        ``none``); they are then written in apply order with a kustomization, namespaces protected from pruning
        (``facts.gitops``). None: review copies, one file per chart.
    """

    def __init__(self, cluster: eks.ICluster | None, *, owner_labels: dict[str, str] | None = None,
                 adopt_existing: bool = False, gitops: str | None = None) -> None:
        self.cluster = cluster
        self.owner_labels = dict(owner_labels or {})
        self.adopt_existing = adopt_existing
        self.gitops = gitops
        self.k8s_app = cdk8s.App()
        self.units: dict[str, ManifestUnit] = {}
        #: unit name -> the resources of units delivered before it that depend on it (they wait once it is delivered)
        self._waiting: dict[str, list[Construct]] = {}
        self.operator_unit: ManifestUnit | None = None
        self._acknowledged_provider = False
        self._shared_cluster: eks.ICluster | None = None
        self._provider: eks.IKubectlProvider | None = None
        self._nested_clusters: dict[cdk.Stack, eks.ICluster] = {}
        self._clusters_by_scope: dict[Construct, eks.ICluster] = {}

    def chart(self, name: str) -> cdk8s.Chart:
        """A new, empty chart whose objects land in ``manifests/<name>.yaml``."""
        if name in self.units:
            raise ValueError(f"a chart named {name!r} already exists")
        return cdk8s.Chart(self.k8s_app, name, disable_resource_name_hashes=True)

    def deliver(self, scope: Construct, name: str, chart: cdk8s.Chart, *, depends_on: list[str] | None = None,
                after: list[Construct] | None = None, custom_resource: bool = False,
                overwrite: bool | None = None, prune: bool = True) -> ManifestUnit:
        """Register ``chart`` and, with kubectl delivery, apply it as ``Manifest<Name>`` in ``scope`` after the
        units named in ``depends_on``, the constructs in ``after`` and (for custom resources) the operator chart.
        Every object gets the owner labels.

        The kubectl handler creates the objects (``kubectl create``; later updates apply), so an object that already
        exists fails the deploy instead of being adopted; ``overwrite=True`` (or ``adopt_existing``) applies them
        instead. ``prune=False``: an object dropped from the chart on an update stays in the cluster (no
        ``kubectl apply --prune``). A unit named in ``depends_on`` may be delivered later: this one then waits for it
        all the same."""
        unit = ManifestUnit(name, chart, list(depends_on or []), list(after or []), custom_resource)
        self.units[name] = unit
        objs = unit.delivered = [self._labelled(o) for o in unit.objects()]
        if overwrite is None:
            overwrite = self.adopt_existing
        unit.manifest_bytes = len(json.dumps(objs, separators=(",", ":")))
        waiting = self._waiting.pop(name, [])
        if self.cluster is None or not objs:
            return unit
        resource = eks.KubernetesManifest(scope, manifest_id(name), cluster=self._cluster_for(scope),
                                          manifest=objs, overwrite=overwrite, prune=prune)
        unit.resource = resource
        first: list[Construct] = []
        for dep in dict.fromkeys(unit.depends_on):
            other = self.units.get(dep)
            if other is None:
                self._waiting.setdefault(dep, []).append(resource)
            elif other.resource is not None:
                first.append(other.resource)
        first += unit.after
        if custom_resource and self.operator_unit is not None and self.operator_unit.resource is not None:
            first.append(self.operator_unit.resource)
        if first:
            resource.node.add_dependency(*first)  # one call into the CDK runtime, whatever the count
        for earlier in waiting:
            earlier.node.add_dependency(resource)
        self._acknowledge_provider()
        return unit

    def _labelled(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.owner_labels and isinstance(obj.get("metadata"), dict):
            obj["metadata"]["labels"] = {**(obj["metadata"].get("labels") or {}), **self.owner_labels}
        return obj

    def _cluster_for(self, scope: Construct) -> eks.ICluster:
        """The cluster as the manifests in ``scope`` see it. An imported cluster without a kubectl provider gets one
        per stack that applies a manifest (aws-cdk-lib's ``KubectlProvider.get_or_create``), nested stacks included;
        so manifests in another stack than the cluster's use a view of the cluster that carries the cluster stack's
        provider: one provider (one nested provider stack, one Lambda set) for the whole app."""
        assert self.cluster is not None
        known = self._clusters_by_scope.get(scope)
        if known is None:
            known = self._clusters_by_scope[scope] = self._cluster_view(scope)
        return known

    def _cluster_view(self, scope: Construct) -> eks.ICluster:
        c = self.cluster
        assert c is not None
        cluster_stack, stack = cdk.Stack.of(c), cdk.Stack.of(scope)
        if stack is cluster_stack or isinstance(c, eks.Cluster) or c.kubectl_provider is not None:
            return c
        role_arn = c.kubectl_role.role_arn if c.kubectl_role is not None else None
        if self._shared_cluster is None:
            self._provider = eks.KubectlProvider.get_or_create(cluster_stack, c)
            self._shared_cluster = eks.Cluster.from_cluster_attributes(
                cluster_stack, f"{cdk.Names.node_unique_id(c.node)}-SharedKubectlProvider", cluster_name=c.cluster_name,
                kubectl_provider=self._provider, kubectl_role_arn=role_arn)
        if not isinstance(stack, cdk.NestedStack) or role_arn is None or is_unresolved(role_arn):
            return self._shared_cluster
        # A nested stack gets the provider's function through one parameter of a short name: every manifest there
        # names it, and CloudFormation's generated cross-stack parameter name is about 230 characters long.
        view = self._nested_clusters.get(stack)
        if view is None:
            token = cdk.CfnParameter(stack, NESTED_PROVIDER_PARAMETER, type="String",
                                     description="The kubectl provider's service token (from the parent stack)")
            stack.set_parameter(NESTED_PROVIDER_PARAMETER, self._provider.service_token)
            provider = eks.KubectlProvider.from_kubectl_provider_attributes(
                stack, "KubectlProviderView", function_arn=token.value_as_string, kubectl_role_arn=role_arn,
                handler_role=self._provider.handler_role)
            view = self._nested_clusters[stack] = eks.Cluster.from_cluster_attributes(
                stack, "ClusterView", cluster_name=c.cluster_name, kubectl_provider=provider, kubectl_role_arn=role_arn)
        return view

    def _acknowledge_provider(self) -> None:
        if self._acknowledged_provider or self.cluster is None:
            return
        stack = cdk.Stack.of(self.cluster)
        provider = stack.node.try_find_child(f"{cdk.Names.node_unique_id(self.cluster.node)}-KubectlProvider")
        if provider is not None:
            cdk.Validations.of(provider).acknowledge(
                *[cdk.Acknowledgment(id=k, reason=v) for k, v in KUBECTL_PROVIDER_ACKS.items()])
            self._acknowledged_provider = True

    # ------------------------------------------------------------------------------------------- review copies
    def documents(self, stack: cdk.Stack) -> dict[str, list[dict[str, Any]]]:
        """Every chart's objects, deploy-time values shown as placeholders (``<LogicalId.Attr>``); with ``gitops``,
        with the annotations the GitOps tools read."""
        objects = [(u.name, u.objects()) for u in self.units.values()]  # each chart synthesized once
        docs = {name: with_placeholders(stack, objs) for name, objs in objects if objs}
        if self.gitops is not None:
            for objs in docs.values():
                for obj in objs:
                    self._annotate(obj, gitops_facts.annotations(obj, self.gitops))
        return docs

    @staticmethod
    def _annotate(obj: dict[str, Any], annotations: dict[str, str]) -> None:
        if annotations and isinstance(obj.get("metadata"), dict):
            obj["metadata"]["annotations"] = {**(obj["metadata"].get("annotations") or {}), **annotations}

    def write(self, stack: cdk.Stack, outdir: str, *, folder: str = "manifests") -> list[str]:
        """Write ``<outdir>/<folder>/<chart>.yaml`` (one file per chart); with ``gitops``, one file per chart and
        tier in apply order and the folder's kustomization (``review.write_gitops_files``)."""
        write = write_manifest_files if self.gitops is None else write_gitops_files
        return [str(p) for p in write(os.path.join(outdir, folder), self.documents(stack))]

    # ------------------------------------------------------------------------------------------- size limits
    def size_problems(self) -> list[str]:
        problems = []
        for unit in self.units.values():
            size = unit.manifest_bytes if unit.manifest_bytes is not None else \
                len(json.dumps(unit.objects(), separators=(",", ":")))
            if size > MAX_MANIFEST_BYTES:
                problems.append(f"manifest '{unit.name}' is {size} bytes; the kubectl provider takes at most "
                                f"{MAX_MANIFEST_BYTES} bytes per manifest")
        return problems
