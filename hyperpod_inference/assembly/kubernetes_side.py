"""The Kubernetes side of a plan: the charts of an endpoint (its custom resource, its token sync, its model-reader
service account) from the plan plus the AWS values, the owned namespaces, and the pieces endpoints share (each
namespace's agent code with its gc Job, the warm DaemonSets), all handed to the delivery."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import aws_cdk as cdk
import cdk8s
import cdk8s_plus_28 as kplus
from constructs import Construct

from ..charts.endpoint import EndpointChart, EndpointWiring, add_objects
from ..charts.gateway import gateway_resource
from ..charts.hf_token import external_secret_objects
from ..charts.nvme_cache import NvmeAgentCode, NvmeAgentGc, NvmeCache, NvmeCachePlan, model_reader_service_account
from ..facts import naming
from ..plan.context import NamespaceUnitPlan, PlanContext
from ..plan.endpoints import EndpointPlan
from ..plan.gateways import GatewayPlan
from ..plan.shared import SharedPlan
from .aws_side import AwsValues
from .delivery import ManifestDelivery, ManifestUnit

#: Context key: ``retain`` keeps the single namespaces manifest of earlier releases (retained), for the migration.
LEGACY_NAMESPACES_CONTEXT = "hyperpod-inference:legacyNamespaces"


def _namespace(chart: cdk8s.Chart, name: str) -> kplus.Namespace:
    return kplus.Namespace(chart, f"Namespace-{name}", metadata=cdk8s.ApiObjectMetadata(
        name=name, labels=dict(naming.MANAGED_BY)))


def legacy_namespaces(owner: Construct) -> bool:
    """Whether the context key ``hyperpod-inference:legacyNamespaces=retain`` keeps the single ``namespaces``
    manifest of earlier releases (the first step of the migration, docs/upgrades.md)."""
    return owner.node.try_get_context(LEGACY_NAMESPACES_CONTEXT) == "retain"


def deliver_namespaces(owner: Construct, delivery: ManifestDelivery, units: Iterable[NamespaceUnitPlan]) -> None:
    """The owned namespaces' manifests the plan names: one per namespace, created (never applied): an existing
    namespace fails the deploy with kubectl's AlreadyExists instead of being adopted, and so is never deleted with the
    stack; or (legacy) the single manifest of earlier releases, applied and retained on removal."""
    for plan in units:
        chart = delivery.chart(plan.unit)
        for ns in plan.namespaces:
            _namespace(chart, ns)
        unit = delivery.deliver(owner, plan.unit, chart, overwrite=plan.legacy)
        if plan.legacy and unit.resource is not None:
            unit.resource.node.find_child("Resource").apply_removal_policy(cdk.RemovalPolicy.RETAIN)


class KubernetesSide:
    """The charts of one ``HyperPodInference``'s endpoints, delivered through ``delivery``; ``after``: what every
    custom resource waits for on the AWS side (the operator and its add-ons)."""

    def __init__(self, delivery: ManifestDelivery, context: PlanContext, after: Callable[[], list[Construct]]):
        self.delivery = delivery
        self.context = context
        self._after = after

    def realize(self, plan: EndpointPlan, aws: AwsValues, new_token_sync: bool, scope: Construct,
                home: Construct) -> tuple[EndpointChart, ManifestUnit]:
        """The endpoint's token sync (first use: in ``home``), its reader service account and its custom resource
        (in ``scope``), each after the units its plan names."""
        ctx, ep = self.context, plan.endpoint
        sync = plan.token_sync
        if sync is not None and new_token_sync:
            assert aws.token_role_arn is not None
            chart = self.delivery.chart(sync.unit)
            add_objects(chart, external_secret_objects(ep, region=ctx.region, scope_key=sync.scope_key,
                                                       name_scope=ctx.kubernetes_scope, role_arn=aws.token_role_arn))
            self.delivery.deliver(home, sync.unit, chart, depends_on=list(sync.depends_on))
        if plan.reader is not None:
            chart = self.delivery.chart(plan.reader.unit)
            add_objects(chart, [model_reader_service_account(ep, aws.reader_role_arn, ctx.kubernetes_scope)])
            self.delivery.deliver(scope, plan.reader.unit, chart, depends_on=list(plan.reader.depends_on))
        chart = EndpointChart(self.delivery.k8s_app, plan.unit, endpoint=ep, wiring=self.wiring(plan, aws))
        unit = self.delivery.deliver(scope, plan.unit, chart, depends_on=list(plan.depends_on), after=self._after(),
                                     custom_resource=True)
        return chart, unit

    def realize_gateways(self, owner: Construct, gateways: Iterable[GatewayPlan]) -> dict[str, ManifestUnit]:
        """One manifest per Inference Gateway, in ``owner``: after its namespace and the operator (the add-on installs
        the gateway's CRD and controller), so it is deleted before them; the endpoints behind it wait for it (their
        plans name its unit)."""
        units = {}
        for plan in gateways:
            chart = self.delivery.chart(plan.unit)
            add_objects(chart, [gateway_resource(plan)])
            units[plan.unit] = self.delivery.deliver(owner, plan.unit, chart, depends_on=list(plan.depends_on),
                                                     after=self._after(), custom_resource=True)
        return units

    def wiring(self, plan: EndpointPlan, aws: AwsValues) -> EndpointWiring:
        """The custom resource's values: from the plan, the NVMe cache's pod pieces or (without the cache) the token
        Secret the operator hands to its own init container and, without prefetch, to the runtime; from the AWS
        side, where the capture goes and what the domain name needs."""
        cache = NvmeCachePlan.of(plan.cache) if plan.cache is not None else None
        capture, domain = aws.capture, aws.domain
        return EndpointWiring(
            region=self.context.region,
            capture_s3_uri=capture.s3_uri if capture else None,
            capture_kms_key_id=capture.kms_key_id if capture else None,
            tls_output_s3_uri=domain.tls_output_s3_uri if domain else None,
            certificate_arn=domain.certificate_arn if domain else None,
            hosted_zone_id=domain.hosted_zone_id if domain else None,
            token_secret=plan.token if cache is None else None,
            service_account_name=cache.service_account_name if cache else None,
            kubernetes_volumes=cache.volumes() if cache else (),
            init_containers=cache.init_containers() if cache else (),
            model_volume_name=plan.endpoint.weight_cache.volume_name if cache else None)

    def realize_shared(self, shared: SharedPlan, homes: Mapping[str, Construct]) -> None:
        """Once every endpoint is added: each namespace's agent code with its gc Job (in the image and on the nodes
        of the agent pod the plan picks), then the warm DaemonSets, each with the models of all its endpoints.
        ``homes``: unit -> the construct it is delivered into."""
        for code, gc in shared.agent_code:
            chart = self.delivery.chart(code.unit)
            NvmeAgentCode(chart, "AgentCode", namespace=code.namespace, name_prefix=self.context.agent_code_prefix)
            NvmeAgentGc(chart, "AgentGc", plan=NvmeCachePlan.of(gc))
            # Not pruned: after an agent change the previous code ConfigMap stays for the pods that still mount it
            # (a pod of the old spec restarting during or after the rollout) until the gc Job finds it unused.
            # (the endpoints delivered before it, which depend on it by name, wait for it: ManifestDelivery.deliver)
            self.delivery.deliver(homes[code.unit], code.unit, chart, depends_on=list(code.depends_on), prune=False)
        for group in shared.warm_groups:
            chart = self.delivery.chart(group.unit)
            NvmeCache(chart, "NvmeCache", plans=[NvmeCachePlan.of(c) for c in group.caches])
            self.delivery.deliver(homes[group.unit], group.unit, chart, depends_on=list(group.depends_on))
