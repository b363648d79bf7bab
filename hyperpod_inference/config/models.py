"""Typed, validated models of the config file (``apiVersion: hyperpod-inference/v1``), one module per section.

YAML keys are camelCase (the operator's vocabulary); Python attributes are snake_case. Unknown keys are errors.
Field-level rules (patterns, ranges, enums) sit on the fields; rules that span fields are named functions
(:mod:`.cross_rules` for the file, the models' own validators within a section) that report every problem with its
own path, so a config with five mistakes shows five lines.

This module re-exports every section's models under the names they always had:
:mod:`.base` (``Strict`` and the common field types), :mod:`.cluster` (``Env``, ``Cluster``), :mod:`.operator`
(``Operator``, ``Manifests``), :mod:`.capture` (``Capture`` and the ``dataCapture`` tiers), :mod:`.domain`
(``Domain``), :mod:`.model_source` (``ModelSource`` and its sources), :mod:`.endpoint` (``Endpoint``, ``Resources``,
``WeightCache``, ``Verify``), :mod:`.file` (``HyperPodConfig``, ``WarningAcknowledgment``).
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
from .endpoint import IEC_ONLY, JSM_ONLY, Endpoint, EnvName, InstanceType, Resources, Verify, WeightCache
from .file import HyperPodConfig, WarningAcknowledgment
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

__all__ = [
    "IEC_ONLY", "JSM_ONLY", "AbsolutePath", "BucketName", "Capture", "CaptureAnalyticsSettings", "CaptureModes",
    "Cluster", "ContentType", "ContentTypeHeader", "DataCapture", "DnsLabel", "DnsSubdomain", "Domain", "DomainName",
    "Endpoint", "Env", "EnvName", "FsxSource", "HfToken", "HuggingFaceSource", "HyperPodConfig", "InstanceType",
    "JumpStartSource", "KubernetesSecretRef", "Loc", "LoadBalancerCapture", "Manifests", "ModelPodCapture",
    "ModelSource", "Operator", "Resources", "RoleArn", "S3Source", "SagemakerEndpointCapture", "Sampling", "Strict",
    "Verify", "WarningAcknowledgment", "WeightCache",
]
