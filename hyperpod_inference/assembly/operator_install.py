"""The operator install of one ``HyperPodInference``: add-on, cdk8s chart (with its Helm dependencies) or existing.

``OperatorInstall`` is a helper, not a construct of its own: its resources are children of the ``HyperPodInference``
construct, so their logical IDs stay what they are (``ExecutionRole``, ``OperatorAddon``, ``DependencyRoles``...).
Everything it makes is decided by the plan (:class:`~hyperpod_inference.plan.operator.OperatorPlan`); what depends
on the whole set of endpoints (the add-on's ``enableCustomServiceAccounts`` and the gated-model role's trusted
namespaces) is read from the shared plan at synth.
"""

from __future__ import annotations

from collections.abc import Callable

import aws_cdk as cdk
from aws_cdk import Acknowledgment, Validations
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..charts.operator import OperatorChart, OperatorChartProps
from ..constructs.irsa import ServiceAccountRef, ServiceAccountRole
from ..constructs.lazy import lazy, lazy_string
from ..constructs.operator import (
    DependencyAddons,
    OperatorAddon,
    OperatorDependencyRoles,
    OperatorExecutionRole,
    TlsBucket,
)
from ..facts.operator import (
    ALB_CONTROLLER_CHART,
    GATEWAY_MANAGED_POLICY,
    GATEWAY_SERVICE_ACCOUNT,
    KEDA_CHART,
    OPERATOR_NAMESPACE,
)
from ..plan import operator as ids
from ..plan.operator import OperatorPlan
from ..plan.shared import SharedPlan
from .delivery import ManifestDelivery


class OperatorInstall:
    """Execution role, TLS bucket, dependency roles and add-ons, and the operator itself, in ``scope``, as ``plan``
    says; ``shared``: the shared plan of every endpoint (read at synth).

    ``name_scope`` is what the names the library chooses carry (the stack's name, and the construct's id unless it is
    ``Default``).

    Attributes: ``execution_role``, ``tls_bucket`` (TlsBucket), ``dependency_roles`` (None with ``install:
    existing``), ``s3_csi_role``, ``dependencies`` (what custom resources must wait for and outlive) and
    ``chart_unit`` (``install: chart`` only).
    """

    def __init__(self, scope: Construct, *, plan: OperatorPlan, shared: Callable[[], SharedPlan],
                 oidc_provider_arn: str, delivery: ManifestDelivery, cluster: eks.ICluster | None, name_scope: str,
                 tls_bucket: s3.IBucket | None = None, execution_role: iam.IRole | None = None) -> None:
        op = plan.settings
        self.plan = plan
        self.dependencies: list[Construct] = []
        self.chart_unit = None
        self.tls_bucket = TlsBucket(scope, ids.TLS_BUCKET_ID, bucket_name=op.tls_bucket_name, bucket=tls_bucket,
                                    name_scope=name_scope)
        self.dependency_roles: OperatorDependencyRoles | None = None
        if op.install == "existing":
            self.execution_role: iam.IRole = execution_role or iam.Role.from_role_arn(
                scope, ids.EXECUTION_ROLE_ID, op.execution_role_arn, mutable=True)
            self.s3_csi_role: iam.IRole | None = (
                iam.Role.from_role_arn(scope, ids.S3_CSI_DRIVER_ROLE_ID, op.s3_csi_driver_role_arn)
                if op.s3_csi_driver_role_arn else None)
            return
        cluster_name = plan.eks_cluster_name or cluster.cluster_name  # type: ignore[union-attr]
        self.execution_role = OperatorExecutionRole(scope, ids.EXECUTION_ROLE_ID, oidc_provider_arn=oidc_provider_arn,
                                                    install_mode=op.install,
                                                    role_name=plan.execution_role_name,
                                                    sagemaker_source_account=op.sagemaker_source_account)
        roles = OperatorDependencyRoles(
            scope, ids.DEPENDENCY_ROLES_ID, oidc_provider_arn=oidc_provider_arn,
            namespaces_for_gated=lambda: list(shared().gated_namespaces),
            alb_role_arn=op.alb_controller_role_arn, keda_role_arn=op.keda_role_arn,
            s3_csi_role_arn=op.s3_csi_driver_role_arn, sagemaker_source_account=op.sagemaker_source_account,
            defer_gated_role=True, gated_role_name=plan.gated_role_name)
        self.dependency_roles = roles
        self.s3_csi_role = roles.s3_csi_role
        deps: list[Construct] = []
        if plan.creates_dependencies:
            deps.append(DependencyAddons(scope, ids.DEPENDENCY_ADDONS_ID, cluster_name=cluster_name,
                                         s3_csi_role_arn=roles.s3_csi_role.role_arn))
        custom_service_accounts = lazy(lambda: shared().custom_service_accounts)
        custom_service_accounts_env = lazy_string(lambda: "true" if shared().custom_service_accounts else "false")
        if op.install == "addon":
            gateway_role = self._gateway_role(scope, oidc_provider_arn) if plan.gateway_controller else None
            addon = OperatorAddon(
                scope, ids.OPERATOR_ADDON_ID, cluster_name=cluster_name, version=op.version,
                addon_version=op.addon_version, execution_role_arn=self.execution_role.role_arn,
                tls_bucket_name=self.tls_bucket.bucket_name, hyperpod_cluster_arn=plan.hyperpod_cluster_arn,
                enable_custom_service_accounts=custom_service_accounts,
                jumpstart_gated_model_download_role_arn=lazy(self._gated_role_arn),
                alb_role_arn=roles.alb_role.role_arn, keda_role_arn=roles.keda_role.role_arn,
                preserve_on_delete=plan.preserve_on_delete,
                gateway_role_arn=gateway_role.role_arn if gateway_role is not None else None,
                configuration_overrides=op.addon_configuration_overrides)
            addon.node.add_dependency(self.tls_bucket, *deps)
            self.dependencies.append(addon)
            return
        # install: chart -- the operator's objects as a cdk8s chart, applied after the dependency add-ons
        # (with manifests.delivery: files nothing applies the ALB controller and KEDA charts: the config's
        # chartFilesDependencies warning says so)
        if delivery.cluster is not None and plan.creates_dependencies:
            deps.extend(self._helm_dependencies(delivery.cluster, plan, roles))
        chart = OperatorChart(delivery.k8s_app, ids.OPERATOR_UNIT, props=OperatorChartProps(
            version=op.version, region=cdk.Stack.of(scope).region,
            execution_role_arn=plan.execution_role_arn or self.execution_role.role_arn,
            # The chart's env is a URI: a bucket outside hyperpod-tls* gives it this stack's folder, so the
            # operator's default output is where its grant lies (the add-on key is a bucket name; see OperatorAddon).
            tls_bucket_name=self.tls_bucket.s3_uri, eks_cluster_name=cluster_name,
            hyperpod_cluster_arn=plan.hyperpod_cluster_arn,
            jumpstart_gated_model_download_role_arn=lazy_string(lambda: self._gated_role_arn() or ""),
            enable_custom_service_accounts=custom_service_accounts_env, crd_source=op.crd_source))
        # Applied, not created: its namespace (hyperpod-inference-system) is the one the ALB controller and KEDA Helm
        # releases create first, and its names are the operator's own, not the stack's (one operator per cluster is
        # checked at synth: claim_operator).
        unit = delivery.deliver(scope, ids.OPERATOR_UNIT, chart, after=[self.tls_bucket, *deps], overwrite=True)
        delivery.operator_unit = unit
        self.chart_unit = unit

    @staticmethod
    def _gateway_role(scope: Construct, oidc_provider_arn: str) -> iam.Role:
        """The Inference Gateway controller's IRSA role, with AWS's managed policy for it."""
        role = ServiceAccountRole(scope, ids.GATEWAY_ROLE_ID, oidc_provider_arn=oidc_provider_arn,
                                  service_account=ServiceAccountRef(*GATEWAY_SERVICE_ACCOUNT),
                                  description="Inference Gateway controller installed by the HyperPod inference add-on")
        role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(GATEWAY_MANAGED_POLICY))
        Validations.of(role).acknowledge(Acknowledgment(
            id=f"AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{GATEWAY_MANAGED_POLICY}]",
            reason="AWS's managed policy for the Inference Gateway controller (ACM import, tag, describe, delete of "
                   "the certificates it issues)"))
        return role

    def _gated_role_arn(self) -> str | None:
        """The gated-model role's ARN once a JumpStart endpoint made it exist (the add-on then gets the key)."""
        role = self.dependency_roles.jumpstart_gated_role if self.dependency_roles is not None else None
        if role is None:
            return None
        return self.plan.gated_role_arn or role.role_arn

    def endpoint_added(self, gated_model_role: bool) -> None:
        """What an endpoint's plan needs of the operator's side: the gated-model role (a JumpStart endpoint)."""
        if gated_model_role and self.dependency_roles is not None:
            self.dependency_roles.add_gated_model_role()

    @staticmethod
    def _helm_dependencies(cluster: eks.ICluster, plan: OperatorPlan,
                           roles: OperatorDependencyRoles) -> list[Construct]:
        """Chart mode: the ALB controller and KEDA from their public Helm charts, in the operator's namespace."""
        region = cdk.Stack.of(cluster).region
        alb = cluster.add_helm_chart(
            "AlbController", chart=ALB_CONTROLLER_CHART.chart, repository=ALB_CONTROLLER_CHART.repository,
            version=ALB_CONTROLLER_CHART.version, namespace=OPERATOR_NAMESPACE, create_namespace=True,
            release=ALB_CONTROLLER_CHART.release,
            values={"clusterName": plan.eks_cluster_name or cluster.cluster_name, "region": region,
                    "vpcId": plan.vpc_id or cluster.vpc.vpc_id,
                    "serviceAccount": {"create": True, "name": "aws-load-balancer-controller",
                                       "annotations": {"eks.amazonaws.com/role-arn": roles.alb_role.role_arn}}})
        keda = cluster.add_helm_chart(
            "Keda", chart=KEDA_CHART.chart, repository=KEDA_CHART.repository, version=KEDA_CHART.version,
            namespace=OPERATOR_NAMESPACE, create_namespace=True, release=KEDA_CHART.release,
            values={"podIdentity": {"aws": {"irsa": {"enabled": True, "roleArn": roles.keda_role.role_arn}}}})
        return [alb, keda]
