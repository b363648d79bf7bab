"""Warnings about a valid config: allowed by the operator but unwise. Each has a stable ID, so a user (or a test) can
recognise it; the composition turns each into a CDK warning annotation (``<id>:<namespace>/<name>`` for endpoints).

A rule is a function registered with :func:`endpoint_rule` (one endpoint, paths relative to it) or
:func:`config_rule` (the whole config, paths from the root). Rules never raise: refusals are validation errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import Endpoint, HyperPodConfig

ID_PREFIX = "hyperpod-inference:"


@dataclass(frozen=True)
class ConfigWarning:
    id: str  # stable, without the prefix: e.g. "wholeBucket"
    path: str  # YAML path: relative to the endpoint for endpoint rules, from the root otherwise
    message: str

    @property
    def annotation_id(self) -> str:
        return f"{ID_PREFIX}{self.id}"


EndpointRule = Callable[["Endpoint", "HyperPodConfig | None"], Iterable[ConfigWarning]]
ConfigRule = Callable[["HyperPodConfig"], Iterable[ConfigWarning]]
_ENDPOINT_RULES: list[EndpointRule] = []
_CONFIG_RULES: list[ConfigRule] = []


def endpoint_rule(rule: EndpointRule) -> EndpointRule:
    """Register a rule over one endpoint. ``config`` is None when the endpoint stands alone (``add_endpoint`` on a
    construct without a config section for it)."""
    _ENDPOINT_RULES.append(rule)
    return rule


def config_rule(rule: ConfigRule) -> ConfigRule:
    _CONFIG_RULES.append(rule)
    return rule


def endpoint_warnings(endpoint: Endpoint, config: HyperPodConfig | None = None) -> list[ConfigWarning]:
    """Every warning about one endpoint, paths relative to it."""
    return [w for rule in _ENDPOINT_RULES for w in rule(endpoint, config)]


def config_warnings(config: HyperPodConfig) -> list[ConfigWarning]:
    """Warnings about the config outside its endpoints, paths from the root."""
    return [w for rule in _CONFIG_RULES for w in rule(config)]
