"""Warnings about a valid config: allowed by the operator but unwise. Each has a stable ID, so a user (or a test) can
recognise it; the composition turns each into a CDK warning annotation (``<id>:<namespace>-<name>`` for endpoints),
``validate`` prints them (``--strict`` fails on them), and ``acknowledgeWarnings`` in the config acknowledges one with
a reason (shown instead of the warning).

Every warning ID has exactly one registered function: :func:`endpoint_rule` (one endpoint, paths relative to it) or
:func:`config_rule` (the whole config, paths from the root), each given the ID it yields. Rules never raise:
refusals are validation errors. The rules live beside the facts they read (:mod:`.production`, :mod:`.safety`) and
here (those about the model source, capture and the operator's install); :data:`WARNING_IDS` lists them all once
those modules are imported (importing :mod:`.models` does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
_ENDPOINT_RULES: list[tuple[str, EndpointRule]] = []
_CONFIG_RULES: list[tuple[str, ConfigRule]] = []
#: Every registered warning ID -> "endpoint" or "config" (which kind of rule yields it).
WARNING_IDS: dict[str, str] = {}


def _register(kind: str, warning_id: str) -> None:
    if warning_id in WARNING_IDS:
        raise ValueError(f"warning {warning_id} is registered twice")
    WARNING_IDS[warning_id] = kind


def endpoint_rule(warning_id: str) -> Callable[[EndpointRule], EndpointRule]:
    """Register the rule of warning ``warning_id`` over one endpoint. ``config`` is None when the endpoint stands
    alone (``add_endpoint`` on a construct without a config section for it)."""
    _register("endpoint", warning_id)

    def register(rule: EndpointRule) -> EndpointRule:
        _ENDPOINT_RULES.append((warning_id, rule))
        return rule

    return register


def config_rule(warning_id: str) -> Callable[[ConfigRule], ConfigRule]:
    """Register the rule of warning ``warning_id`` over the whole config."""
    _register("config", warning_id)

    def register(rule: ConfigRule) -> ConfigRule:
        _CONFIG_RULES.append((warning_id, rule))
        return rule

    return register


def _checked(warning_id: str, found: Iterable[ConfigWarning]) -> Iterator[ConfigWarning]:
    for w in found:
        if w.id != warning_id:
            raise AssertionError(f"the rule of warning {warning_id} yielded {w.id}")
        yield w


def endpoint_warnings(endpoint: Endpoint, config: HyperPodConfig | None = None) -> list[ConfigWarning]:
    """Every warning about one endpoint, paths relative to it."""
    return [w for wid, rule in _ENDPOINT_RULES for w in _checked(wid, rule(endpoint, config))]


def config_warnings(config: HyperPodConfig) -> list[ConfigWarning]:
    """Warnings about the config outside its endpoints, paths from the root."""
    return [w for wid, rule in _CONFIG_RULES for w in _checked(wid, rule(config))]


# --------------------------------------------------------------------------------------------- acknowledgments
def endpoint_ref(endpoint: Any) -> str:
    """How ``acknowledgeWarnings[].endpoint`` names an endpoint: ``<namespace>/<name>``."""
    return f"{endpoint.namespace}/{endpoint.name}"


def acknowledgment(config: HyperPodConfig | None, warning_id: str, endpoint: Any = None) -> str | None:
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


def all_warnings(config: HyperPodConfig) -> list[Finding]:
    """Every warning of a config (its endpoints' and its own), with paths from the root and acknowledgments."""
    out = [Finding(w, w.path, None, acknowledgment(config, w.id)) for w in config_warnings(config)]
    for i, ep in enumerate(config.endpoints):
        for w in endpoint_warnings(ep, config):
            out.append(Finding(w, f"endpoints[{i}].{w.path}", endpoint_ref(ep), acknowledgment(config, w.id, ep)))
    return out


# ------------------------------------------------------------------------------------- model source and capture
@endpoint_rule("unpinned")
def _unpinned(endpoint: Endpoint, config: HyperPodConfig | None) -> Iterator[ConfigWarning]:
    hf = endpoint.model.huggingface
    if hf is not None and hf.commit_sha is None:
        yield ConfigWarning("unpinned", "model.huggingface.commitSHA",
                            "no commitSHA, so the deployment follows the Hub's main branch and is not reproducible; "
                            "pin model.huggingface.commitSHA")


@endpoint_rule("tokenInRuntime")
def _token_in_runtime(endpoint: Endpoint, config: HyperPodConfig | None) -> Iterator[ConfigWarning]:
    hf = endpoint.model.huggingface
    if hf is not None and hf.token is not None and not hf.prefetch and endpoint.weight_cache.mode != "daemonset":
        yield ConfigWarning("tokenInRuntime", "model.huggingface.prefetch",
                            "with prefetch: false the operator also gives the Hugging Face token to the model server "
                            "container; set prefetch: true to keep it in the init container")


@endpoint_rule("fullCapture")
def _full_capture(endpoint: Endpoint, config: HyperPodConfig | None) -> Iterator[ConfigWarning]:
    pod = endpoint.data_capture.model_pod if endpoint.data_capture else None
    if pod is not None and pod.enabled and pod.initial_sampling_percentage in (None, 100) \
            and not pod.max_payload_size_kb:
        yield ConfigWarning("fullCapture", "dataCapture.modelPod",
                            "modelPod capture samples 100% of requests with no payload cap (maxPayloadSizeKB); every "
                            "full request and response is stored")


# ------------------------------------------------------------------------------------------- operator install
@config_rule("chartFilesDependencies")
def _chart_files_dependencies(config: HyperPodConfig) -> Iterator[ConfigWarning]:
    op = config.operator
    if op.install == "chart" and config.manifests.delivery == "files" and op.dependencies == "create":
        yield ConfigWarning("chartFilesDependencies", "operator.dependencies",
                            "install: chart with manifests.delivery: files: the ALB controller and KEDA Helm charts "
                            "are not applied by the stack; install them into hyperpod-inference-system yourself "
                            "(their IRSA roles are created)")
