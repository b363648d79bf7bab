"""Typed, validated models of the config file (``apiVersion: hyperpod-inference/v1``), one module per section.

YAML keys are camelCase (the operator's vocabulary); Python attributes are snake_case. Unknown keys are errors.
Field-level rules (patterns, ranges, enums) sit on the fields; rules that span fields are named functions
(:mod:`.cross_rules` for the file, :data:`.endpoint.ENDPOINT_RULES` for one endpoint, the models' own validators
within a part) that report every problem with its own path, so a config with five mistakes shows five lines.

The modules stand in layers, each importing only its own layer and those below (tests/config/test_import_graph.py):
:mod:`.base` (``Strict``, the CRD-path helpers and the shared field types) at the bottom; the sections and the
operator's fields by concept above it (:mod:`.cluster`, :mod:`.operator`, :mod:`.capture`, :mod:`.domain`,
:mod:`.observability`, :mod:`.model_source`, :mod:`.autoscaling`, :mod:`.placement`, :mod:`.routing`,
:mod:`.probes`, :mod:`.resources`, :mod:`.worker_env`, :mod:`.metrics_tags`, :mod:`.prefill_decode`, :mod:`.cache`,
:mod:`.verify`); :mod:`.endpoint` above its parts; the rules above the sections (:mod:`.cross_rules`, the warnings'
:mod:`.warning_rules` and their registry :mod:`.warnings`); :mod:`.file` (``HyperPodConfig``) above the rules.
This module re-exports the models under the names they always had.
"""

from __future__ import annotations

from .base import (
    AbsolutePath,
    BucketName,
    ContentType,
    DnsLabel,
    DnsSubdomain,
    DomainName,
    Loc,
    RoleArn,
    Strict,
)
from .cache import WeightCache
from .capture import (
    Capture,
    CaptureAnalyticsSettings,
    CaptureModes,
    ContentTypeHeader,
    DataCapture,
    LoadBalancerCapture,
    ModelPodCapture,
    SagemakerEndpointCapture,
    Sampling,
)
from .cluster import Cluster, Env
from .domain import Domain
from .endpoint import IEC_ONLY, JSM_ONLY, Endpoint
from .file import HyperPodConfig
from .model_source import (
    FsxSource,
    HfToken,
    HuggingFaceSource,
    JumpStartSource,
    KubernetesSecretRef,
    ModelSource,
    S3Source,
)
from .operator import Manifests, Operator
from .placement import InstanceType
from .resources import Resources
from .verify import Verify
from .warnings import WarningAcknowledgment
from .worker_env import EnvName

__all__ = [
    "IEC_ONLY", "JSM_ONLY", "AbsolutePath", "BucketName", "Capture", "CaptureAnalyticsSettings", "CaptureModes",
    "Cluster", "ContentType", "ContentTypeHeader", "DataCapture", "DnsLabel", "DnsSubdomain", "Domain", "DomainName",
    "Endpoint", "Env", "EnvName", "FsxSource", "HfToken", "HuggingFaceSource", "HyperPodConfig", "InstanceType",
    "JumpStartSource", "KubernetesSecretRef", "Loc", "LoadBalancerCapture", "Manifests", "ModelPodCapture",
    "ModelSource", "Operator", "Resources", "RoleArn", "S3Source", "SagemakerEndpointCapture", "Sampling", "Strict",
    "Verify", "WarningAcknowledgment", "WeightCache",
]
