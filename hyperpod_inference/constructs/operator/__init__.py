"""The AWS side of the HyperPod inference operator: execution role, TLS bucket, dependency IRSA roles and EKS add-ons.

Each construct takes plain props and can be used on its own:

- :class:`OperatorExecutionRole` -- the role the operator runs as (``SageMakerHyperPodInference...``), trusted by
  SageMaker and by the operator's one service account, with the AWS managed policy
  ``AmazonSageMakerHyperPodInferenceAccess``. Features add their own statements through their ``grant_*`` methods.
- :class:`TlsBucket` -- the bucket the operator writes TLS certificates to (created as
  ``hyperpod-tls-<scope>-<account>-<region>``, or imported; outside ``hyperpod-tls*`` under a per-stack folder).
- :class:`OperatorDependencyRoles` -- IRSA roles for the ALB controller, KEDA, the Mountpoint S3 CSI driver and the
  JumpStart gated-model download role.
- :class:`OperatorAddon` -- the ``amazon-sagemaker-hyperpod-inference`` EKS add-on and its ``configurationValues``.
- :class:`DependencyAddons` -- the EKS add-ons the operator add-on needs installed first.

One construct a module (``execution_role``, ``tls_bucket``, ``dependency_roles``, ``addon``, ``dependency_addons``);
this package re-exports them. Security checks (cdk-nag AwsSolutions) are acknowledged at the narrowest construct, each
with its reason.
"""

from __future__ import annotations

from ...facts.operator import (
    ADDON_SERVICE_ACCOUNT,
    CHART_SERVICE_ACCOUNT,
    DEPENDENCY_ADDON_VERSIONS,
    EXECUTION_ROLE_NAME_PREFIX,
    GATED_MODEL_SERVICE_ACCOUNT_PREFIX,
    OPERATOR_ADDON_NAME,
    OPERATOR_ADDON_VERSIONS,
    OPERATOR_NAMESPACE,
    TLS_BUCKET_PREFIX,
)
from .addon import OperatorAddon
from .dependency_addons import DependencyAddons
from .dependency_roles import (
    ALB_CONTROLLER_SERVICE_ACCOUNT,
    KEDA_SERVICE_ACCOUNT,
    S3_CSI_SERVICE_ACCOUNT,
    OperatorDependencyRoles,
)
from .execution_role import OperatorExecutionRole, default_execution_role_name, sagemaker_principal
from .tls_bucket import TlsBucket

__all__ = [
    "ADDON_SERVICE_ACCOUNT",
    "ALB_CONTROLLER_SERVICE_ACCOUNT",
    "CHART_SERVICE_ACCOUNT",
    "DEPENDENCY_ADDON_VERSIONS",
    "EXECUTION_ROLE_NAME_PREFIX",
    "GATED_MODEL_SERVICE_ACCOUNT_PREFIX",
    "KEDA_SERVICE_ACCOUNT",
    "OPERATOR_ADDON_NAME",
    "OPERATOR_ADDON_VERSIONS",
    "OPERATOR_NAMESPACE",
    "S3_CSI_SERVICE_ACCOUNT",
    "TLS_BUCKET_PREFIX",
    "DependencyAddons",
    "OperatorAddon",
    "OperatorDependencyRoles",
    "OperatorExecutionRole",
    "TlsBucket",
    "default_execution_role_name",
    "sagemaker_principal",
]
