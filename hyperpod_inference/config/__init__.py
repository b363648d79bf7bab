"""The config file contract (v1): pydantic models, loader and JSON Schema export."""

from .loader import ConfigError, config_json_schema, format_loc, load_config, parse_config
from .models import (
    Capture,
    Cluster,
    DataCapture,
    Domain,
    Endpoint,
    Env,
    HfToken,
    HuggingFaceSource,
    HyperPodConfig,
    JumpStartSource,
    Manifests,
    ModelPodCapture,
    ModelSource,
    Operator,
    S3Source,
    SagemakerEndpointCapture,
    Verify,
    WeightCache,
)

__all__ = [
    "Capture", "Cluster", "ConfigError", "DataCapture", "Domain", "Endpoint", "Env", "HfToken", "HuggingFaceSource",
    "HyperPodConfig", "JumpStartSource", "Manifests", "ModelPodCapture", "ModelSource", "Operator", "S3Source",
    "SagemakerEndpointCapture", "Verify", "WeightCache", "config_json_schema", "format_loc", "load_config",
    "parse_config",
]
