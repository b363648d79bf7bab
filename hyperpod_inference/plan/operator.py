"""The operator install, planned (:func:`plan_operator` -> :class:`OperatorPlan`): the add-on, the cdk8s chart or
an operator already there; its execution role and TLS bucket; the dependency roles and add-ons; and, with files
delivery, the physical names a GitOps manifest needs literally. What it needs of the whole set of endpoints (the
gated-model role's namespaces, ``enableCustomServiceAccounts``) is in the shared plan (:mod:`.shared`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import HyperPodConfig, Operator
from ..facts import naming
from .context import PlanContext

#: The construct ids of the operator's pieces, children of the construct.
TLS_BUCKET_ID = "TlsBucket"
EXECUTION_ROLE_ID = "ExecutionRole"
S3_CSI_DRIVER_ROLE_ID = "S3CsiDriverRole"  # install: existing, imported
DEPENDENCY_ROLES_ID = "DependencyRoles"
DEPENDENCY_ADDONS_ID = "DependencyAddons"
OPERATOR_ADDON_ID = "OperatorAddon"
GATEWAY_ROLE_ID = "GatewayControllerRole"
#: The manifest unit of the operator's own objects (``install: chart``).
OPERATOR_UNIT = "operator"


@dataclass(frozen=True)
class OperatorPlan:
    """How the operator is installed (``settings``: the ``operator`` section) onto the cluster the ``cluster``
    section names.

    ``execution_role_name``: the execution role the stack creates (None with ``install: existing``);
    ``gated_role_name``: the gated-model role's name (files delivery only: the operator chart names its ARN);
    ``execution_role_arn`` / ``gated_role_arn``: their literal ARNs (files delivery only); ``preserve_on_delete``: the
    add-on stays on ``cdk destroy`` (files delivery: resources applied by GitOps still need it)."""

    settings: Operator
    hyperpod_cluster_arn: str
    eks_cluster_name: str | None
    vpc_id: str | None
    execution_role_name: str | None
    gated_role_name: str | None
    execution_role_arn: str | None
    gated_role_arn: str | None
    preserve_on_delete: bool
    gateway_controller: bool = False
    """The add-on installs the Inference Gateway controller (the config has gateways or an endpoint opts into one)."""

    @property
    def install(self) -> str:
        return self.settings.install

    @property
    def creates_dependencies(self) -> bool:
        """The stack creates the dependency add-ons (and, ``install: chart``, the ALB controller and KEDA)."""
        return self.settings.install != "existing" and self.settings.dependencies == "create"


def plan_operator(config: HyperPodConfig, context: PlanContext) -> OperatorPlan:
    op, cluster = config.operator, config.cluster
    files = context.files
    creates = op.install != "existing"
    execution = naming.execution_role_name(context.name_scope, context.region) if creates else None
    gated = naming.gated_model_role_name(context.name_scope) if creates and files else None

    def literal(name: str | None) -> str | None:
        return naming.role_arn(context.partition, context.account, name) if files and name else None

    return OperatorPlan(
        settings=op, hyperpod_cluster_arn=cluster.hyperpod_cluster_arn, eks_cluster_name=cluster.eks_cluster_name,
        vpc_id=cluster.vpc_id, execution_role_name=execution, gated_role_name=gated,
        execution_role_arn=literal(execution), gated_role_arn=literal(gated), preserve_on_delete=files,
        gateway_controller=any(not gw.external for gw in config.gateways) or any(
            ep.inference_gateway is not None and ep.inference_gateway.enabled for ep in config.endpoints))
