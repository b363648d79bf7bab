"""hyperpod-inference-cdk: AWS CDK constructs and cdk8s charts for SageMaker HyperPod inference.

Use the whole stack (``HyperPodInferenceStack`` from a config), or any part on its own in your CDK app.
"""

from .charts.endpoint import EndpointChart, EndpointWiring, build_custom_resource
from .charts.hf_token import external_secret_objects, token_secret_ref
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
from .stack import HyperPodInferenceStack

__all__ = [
    "ConfigError", "CustomDomain", "DataCaptureStorage", "DependencyAddons", "Endpoint", "EndpointChart",
    "EndpointVerification", "HyperPodInference", "InferenceEndpoint",
    "EndpointWiring", "HyperPodConfig", "HyperPodInferenceStack", "NvmeCache", "NvmeCachePlan", "OperatorAddon",
    "OperatorChart", "OperatorChartProps", "OperatorDependencyRoles", "OperatorExecutionRole", "ServiceAccountRef",
    "ServiceAccountRole", "TlsBucket", "build_custom_resource", "external_secret_objects", "grant_model_read",
    "grant_secret_read", "load_config", "parse_config", "token_secret_ref",
]
