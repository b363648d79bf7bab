"""hyperpod-inference-cdk: AWS CDK constructs and cdk8s charts for SageMaker HyperPod inference.

Add ``HyperPodInference`` to your own stack (or use the whole ``HyperPodInferenceStack`` from a config), or any part
on its own in your CDK app.

The names below are imported on first use: ``import hyperpod_inference`` and ``load_config`` load only the config
models (pydantic), never aws-cdk-lib, cdk8s or the jsii kernel, so validating a config stays fast.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for editors and type checkers; at run time ``__getattr__`` imports each name on first use
    from .charts.endpoint import EndpointChart, EndpointWiring, build_custom_resource
    from .charts.hf_token import external_secret_objects
    from .charts.nvme_cache import NvmeCache, NvmeCachePlan
    from .charts.operator import OperatorChart, OperatorChartProps
    from .config import ConfigError, Endpoint, HyperPodConfig, load_config, parse_config
    from .constructs.data_capture import DataCaptureStorage
    from .constructs.domain import CustomDomain
    from .constructs.endpoint_verification import EndpointVerification
    from .constructs.irsa import ServiceAccountRef, ServiceAccountRole
    from .constructs.model_access import grant_model_read, grant_secret_read
    from .constructs.operator import (
        DependencyAddons,
        OperatorAddon,
        OperatorDependencyRoles,
        OperatorExecutionRole,
        TlsBucket,
    )
    from .inference import HyperPodInference, InferenceEndpoint
    from .plan import EndpointPlan, PlanContext, plan_config, plan_endpoint, token_secret_ref
    from .stack import HyperPodInferenceStack

# public name -> the module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["ConfigError", "Endpoint", "HyperPodConfig", "load_config", "parse_config"], ".config"),
    **dict.fromkeys(["HyperPodInference", "InferenceEndpoint"], ".inference"),
    "HyperPodInferenceStack": ".stack",
    **dict.fromkeys(["EndpointChart", "EndpointWiring", "build_custom_resource"], ".charts.endpoint"),
    "external_secret_objects": ".charts.hf_token",
    **dict.fromkeys(["EndpointPlan", "PlanContext", "plan_config", "plan_endpoint", "token_secret_ref"], ".plan"),
    **dict.fromkeys(["NvmeCache", "NvmeCachePlan"], ".charts.nvme_cache"),
    **dict.fromkeys(["OperatorChart", "OperatorChartProps"], ".charts.operator"),
    "DataCaptureStorage": ".constructs.data_capture",
    "CustomDomain": ".constructs.domain",
    "EndpointVerification": ".constructs.endpoint_verification",
    **dict.fromkeys(["ServiceAccountRef", "ServiceAccountRole"], ".constructs.irsa"),
    **dict.fromkeys(["grant_model_read", "grant_secret_read"], ".constructs.model_access"),
    **dict.fromkeys(["DependencyAddons", "OperatorAddon", "OperatorDependencyRoles", "OperatorExecutionRole",
                     "TlsBucket"], ".constructs.operator"),
}
# modules whose names need no jsii kernel (everything else imports aws-cdk-lib or cdk8s)
_CONFIG_ONLY = frozenset({".config", ".plan"})

__all__ = [
    "ConfigError", "CustomDomain", "DataCaptureStorage", "DependencyAddons", "Endpoint", "EndpointChart", "EndpointPlan",
    "EndpointVerification", "EndpointWiring", "HyperPodConfig", "HyperPodInference", "HyperPodInferenceStack",
    "InferenceEndpoint", "NvmeCache", "NvmeCachePlan", "OperatorAddon", "OperatorChart", "OperatorChartProps",
    "OperatorDependencyRoles", "OperatorExecutionRole", "PlanContext", "ServiceAccountRef", "ServiceAccountRole",
    "TlsBucket",
    "build_custom_resource", "external_secret_objects", "grant_model_read", "grant_secret_read", "load_config",
    "parse_config", "plan_config", "plan_endpoint", "token_secret_ref",
]


def _quiet_jsii() -> None:
    """jsii prints a large end-of-life banner on every start under Node 20; the project's own commands run Node 22
    from ``node_modules`` (see ``package.json``), and this keeps a library user's app on an older Node readable."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module not in _CONFIG_ONLY:
        _quiet_jsii()
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
