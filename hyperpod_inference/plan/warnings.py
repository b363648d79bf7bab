"""The config's warnings as the synth reports them (:class:`WarningPlan`): each acknowledged in
``acknowledgeWarnings`` with its reason, or not; an endpoint's carry its unit in their ID."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Endpoint, HyperPodConfig
from ..config.warnings import ConfigWarning, acknowledgment, config_warnings, endpoint_warnings


@dataclass(frozen=True)
class WarningPlan:
    """A config warning as the synth reports it: acknowledged (``reason``) or not."""

    annotation_id: str
    where: str
    message: str
    reason: str | None = None


def report(warning: ConfigWarning, annotation_id: str, where: str, reason: str | None) -> WarningPlan:
    return WarningPlan(annotation_id, where, warning.message, reason)


def endpoint_warning_plans(config: HyperPodConfig, endpoint: Endpoint, unit: str) -> tuple[WarningPlan, ...]:
    where = f"endpoints {endpoint.namespace}/{endpoint.name}"
    return tuple(report(w, f"{w.annotation_id}:{unit}", f"{where}: {w.path}", acknowledgment(config, w.id, endpoint))
                 for w in endpoint_warnings(endpoint, config))


def config_warning_plans(config: HyperPodConfig) -> tuple[WarningPlan, ...]:
    return tuple(report(w, w.annotation_id, w.path, acknowledgment(config, w.id)) for w in config_warnings(config))
