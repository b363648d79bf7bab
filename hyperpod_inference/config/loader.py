"""Loading the config file: YAML -> HyperPodConfig, or one ConfigError listing every problem with its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..facts.production import PATTERN_DESCRIPTIONS as PRODUCTION_PATTERNS
from .models import HyperPodConfig
from .rules import PATTERN_DESCRIPTIONS as _PATTERNS

PATTERN_DESCRIPTIONS = {**PRODUCTION_PATTERNS, **_PATTERNS}


class ConfigError(ValueError):
    """Every problem of a config, each as ``<path>: <message>``; nothing is synthesized when raised."""

    def __init__(self, source: str, problems: list[tuple[str, str]]) -> None:
        self.source = source
        self.problems = problems
        super().__init__("\n".join(f"{source}: {path}: {msg}" for path, msg in problems))


def format_loc(loc: tuple[Any, ...]) -> str:
    """('endpoints', 1, 'model', 'huggingface', 'commitSHA') -> endpoints[1].model.huggingface.commitSHA"""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "<root>"


def _problems(err: ValidationError) -> list[tuple[str, str]]:
    out = []
    for item in err.errors(include_url=False):
        msg = item["msg"]
        if item["type"] == "string_pattern_mismatch":
            pattern = (item.get("ctx") or {}).get("pattern", "")
            msg = f"must be {PATTERN_DESCRIPTIONS[pattern]}" if pattern in PATTERN_DESCRIPTIONS else msg
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        out.append((format_loc(tuple(item["loc"])), msg))
    # stable and de-duplicated: pydantic may report the same location from two validators
    return list(dict.fromkeys(out))


def parse_config(data: Any, source: str = "<config>") -> HyperPodConfig:
    """Validate an already-parsed mapping (camelCase keys)."""
    if not isinstance(data, dict):
        raise ConfigError(source, [("<root>", "the config must be a mapping (apiVersion, env, cluster, ...)")])
    try:
        return HyperPodConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(source, _problems(err)) from None


def load_config(path: str | Path) -> HyperPodConfig:
    """Read and validate a config file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(str(path), [("<file>", f"cannot read: {err.strerror}")]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<file>"
        raise ConfigError(str(path), [(where, f"not valid YAML: {getattr(err, 'problem', err)}")]) from None
    return parse_config(data, str(path))


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (camelCase keys), for editors."""
    schema = HyperPodConfig.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "hyperpod-inference config (apiVersion hyperpod-inference/v1)"
    return schema
