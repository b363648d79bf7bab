"""Warnings about a valid config: allowed by the operator but unwise. Each has a stable ID, so a user (or a test) can
recognise it; the composition turns each into a CDK warning annotation (``<id>:<namespace>-<name>`` for endpoints),
``validate`` prints them (``--strict`` fails on them), and ``acknowledgeWarnings`` in the config acknowledges one with
a reason (shown instead of the warning).

The registry: :data:`ENDPOINT_WARNINGS` (one endpoint, paths relative to it) and :data:`CONFIG_WARNINGS` (the whole
config, paths from the root) list every warning ID with its rule (:mod:`.warning_rules`), once, in the order the
warnings are reported. Importing this module is enough to know every warning; a new one is a rule and a line here
(and its row in docs/safe-defaults.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import StringConstraints, field_validator, model_validator
from pydantic_core import PydanticCustomError

from . import warning_rules as rules
from .base import CrdPaths, NoCrd, Strict, _err, _raise_all
from .endpoint import Endpoint
from .suggest import nearest

ID_PREFIX = "hyperpod-inference:"

EndpointRule = Callable[[Endpoint, rules.WholeConfig | None], Iterable[tuple[str, str]]]
ConfigRule = Callable[[rules.WholeConfig], Iterable[tuple[str, str]]]

#: Every warning about one endpoint: its ID and its rule.
ENDPOINT_WARNINGS: tuple[tuple[str, EndpointRule], ...] = (
    ("unpinned", rules.unpinned),
    ("tokenInRuntime", rules.token_in_runtime),
    ("fullCapture", rules.full_capture),
    ("captureSamplingZero", rules.capture_sampling_zero),
    ("wholeBucket", rules.whole_bucket),
    ("secretArnPartial", rules.secret_arn_partial),
    ("shareAcrossNamespaces", rules.share_across_namespaces),
    ("placementRegistration", rules.placement_registration),
    ("replicasOutsideAutoscaling", rules.replicas_outside_autoscaling),
    ("triggerSingleAndList", rules.trigger_single_and_list),
    ("activationWithMinReplicas", rules.activation_with_min_replicas),
    ("scaleToZeroVerify", rules.scale_to_zero_verify),
    ("kvCacheCustomRuntime", rules.kv_cache_custom_runtime),
    ("l2CacheRedisIgnored", rules.l2_cache_redis_ignored),
    ("intelligentRouting", rules.intelligent_routing),
    ("kvawareWithoutKvCache", rules.kvaware_without_kv_cache),
    ("metricsPortUnserved", rules.metrics_port_unserved),
    ("sagemakerFieldWithoutEndpoint", rules.sagemaker_field_without_endpoint),
    ("deployTimeBeyondVerify", rules.deploy_time_beyond_verify),
    ("weightCacheWithoutNvme", rules.weight_cache_without_nvme),
    ("requestNearInstanceLimit", rules.request_near_instance_limit),
    ("tensorParallelSize", rules.tensor_parallel_size),
    ("specOverridesUnchecked", rules.spec_overrides_unchecked),
    ("healthTaintToleration", rules.health_taint_toleration),
    ("alarmsUnused", rules.alarms_unused),
    ("alarmsNeedEndpointName", rules.alarms_need_endpoint_name),
)
#: Every warning about the config outside its endpoints: its ID and its rule.
CONFIG_WARNINGS: tuple[tuple[str, ConfigRule], ...] = (
    ("chartFilesDependencies", rules.chart_files_dependencies),
    ("apexDomain", rules.apex_domain),
    ("operatorVersionUnvalidated", rules.operator_version_unvalidated),
    ("addonVersionUnvalidated", rules.addon_version_unvalidated),
    ("addonConfigurationOverrides", rules.addon_configuration_overrides),
)


def warning_ids(endpoint_warnings: Sequence[tuple[str, Any]], config_warnings: Sequence[tuple[str, Any]]
                ) -> dict[str, str]:
    """Every ID of the two tables -> "endpoint" or "config"; an ID listed twice is refused."""
    ids: dict[str, str] = {}
    for kind, table in (("endpoint", endpoint_warnings), ("config", config_warnings)):
        for warning_id, _ in table:
            if warning_id in ids:
                raise ValueError(f"warning {warning_id} is registered twice")
            ids[warning_id] = kind
    return ids


#: Every warning ID -> "endpoint" or "config" (which kind of rule yields it).
WARNING_IDS: dict[str, str] = warning_ids(ENDPOINT_WARNINGS, CONFIG_WARNINGS)


@dataclass(frozen=True)
class ConfigWarning:
    id: str  # stable, without the prefix: e.g. "wholeBucket"
    path: str  # YAML path: relative to the endpoint for endpoint rules, from the root otherwise
    message: str

    @property
    def annotation_id(self) -> str:
        return f"{ID_PREFIX}{self.id}"


def endpoint_warnings(endpoint: Endpoint, config: rules.WholeConfig | None = None) -> list[ConfigWarning]:
    """Every warning about one endpoint, paths relative to it."""
    return [ConfigWarning(wid, path, message) for wid, rule in ENDPOINT_WARNINGS
            for path, message in rule(endpoint, config)]


def config_warnings(config: rules.WholeConfig) -> list[ConfigWarning]:
    """Warnings about the config outside its endpoints, paths from the root."""
    return [ConfigWarning(wid, path, message) for wid, rule in CONFIG_WARNINGS for path, message in rule(config)]


# --------------------------------------------------------------------------------------------- acknowledgments
class WarningAcknowledgment(Strict):
    """One warning acknowledged on purpose (``acknowledgeWarnings``)."""

    crd_paths: ClassVar[CrdPaths] = {
        "id": NoCrd("the config's own warnings"),
        "endpoint": NoCrd("the config's own warnings"),
        "reason": NoCrd("the config's own warnings"),
    }
    id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    """The warning's ID, e.g. unpinned (one of the IDs in docs/safe-defaults.md)."""
    endpoint: Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                                               max_length=127)] | None = None
    """<namespace>/<name> of the endpoint it is acknowledged for; absent = everywhere."""
    reason: Annotated[str, StringConstraints(min_length=1, max_length=1024, pattern=r"\S")]
    """Why the warning does not apply (required; shown by validate and at synth)."""

    @field_validator("id")
    @classmethod
    def _known_id(cls, v: str) -> str:
        if v not in WARNING_IDS:
            guess = nearest(v, sorted(WARNING_IDS))
            hint = f"; did you mean {guess}?" if guess else f" (known: {', '.join(sorted(WARNING_IDS))})"
            raise PydanticCustomError("warning_id", "not a warning ID{hint}", {"hint": hint})
        return v

    @model_validator(mode="after")
    def _endpoint_for_endpoint_warnings(self) -> WarningAcknowledgment:
        if self.endpoint is not None and WARNING_IDS.get(self.id) == "config":
            _raise_all(type(self), [_err(("endpoint",), f"{self.id} is a warning about the whole config, not about "
                                         "one endpoint; leave endpoint out")])
        return self


class AcknowledgingConfig(rules.WholeConfig, Protocol):
    """A whole config with its ``acknowledgeWarnings``."""

    @property
    def acknowledge_warnings(self) -> Sequence[WarningAcknowledgment]: ...


def endpoint_ref(endpoint: Any) -> str:
    """How ``acknowledgeWarnings[].endpoint`` names an endpoint: ``<namespace>/<name>``."""
    return f"{endpoint.namespace}/{endpoint.name}"


def acknowledgment(config: AcknowledgingConfig | None, warning_id: str, endpoint: Any = None) -> str | None:
    """The reason the config gives for ``warning_id`` (on ``endpoint``, or config-wide), or None.

    An acknowledgment without ``endpoint`` covers the warning everywhere; one with it only on that endpoint."""
    if config is None:
        return None
    ref = endpoint_ref(endpoint) if endpoint is not None else None
    for ack in config.acknowledge_warnings:
        if ack.id == warning_id and (ack.endpoint is None or ack.endpoint == ref):
            return ack.reason
    return None


@dataclass(frozen=True)
class Finding:
    """A warning of a whole config: its path from the root, the endpoint it is about, and the acknowledgment's
    reason (None = not acknowledged)."""

    warning: ConfigWarning
    path: str
    endpoint: str | None
    reason: str | None


def all_warnings(config: AcknowledgingConfig) -> list[Finding]:
    """Every warning of a config (its endpoints' and its own), with paths from the root and acknowledgments."""
    out = [Finding(w, w.path, None, acknowledgment(config, w.id)) for w in config_warnings(config)]
    for i, ep in enumerate(config.endpoints):
        for w in endpoint_warnings(ep, config):
            out.append(Finding(w, f"endpoints[{i}].{w.path}", endpoint_ref(ep), acknowledgment(config, w.id, ep)))
    return out
