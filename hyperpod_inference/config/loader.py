"""Loading the config file: YAML -> HyperPodConfig, or one ConfigError listing every problem with its path."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..facts import naming
from ..facts.production import MAX_UNKNOWN_LISTED
from ..facts.production import PATTERN_DESCRIPTIONS as PRODUCTION_PATTERNS
from ..facts.rules import PATTERN_DESCRIPTIONS as _PATTERNS
from ..facts.safety import HF_TOKEN_SHAPE, looks_like_hf_token
from . import safety
from .models import HyperPodConfig
from .suggest import unknown_key_message

PATTERN_DESCRIPTIONS = {**PRODUCTION_PATTERNS, **_PATTERNS}

#: The loader refuses a config file larger than this (bytes).
MAX_FILE_BYTES = 1024 * 1024
#: ... with more alias references (``*name``) than this.
MAX_ALIASES = 100
#: ... or more YAML nodes than this, as written or once every alias is expanded (what validation would walk; a fleet
#: of 300 endpoints of the heaviest benchmark profile has about 18,000).
MAX_NODES = 50_000
#: ... or mappings and sequences nested deeper than this, as written or once aliases are expanded (the default
#: config nests 8 deep; a ``specOverrides`` patch adds its own levels).
MAX_DEPTH = 32
#: A ConfigError's message lists this many problems and counts the rest (``problems`` keeps them all).
MAX_SHOWN_PROBLEMS = 100

#: The event parser of the limits' first pass: libyaml's when PyYAML has it (its wheels do), else PyYAML's own.
_EVENT_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ConfigError(ValueError):
    """Every problem of a config, each as ``<path>: <message>``; nothing is synthesized when raised.

    ``sources``: the file of each problem, when they come from several files (default: ``source`` for all)."""

    def __init__(self, source: str, problems: list[tuple[str, str]], *, sources: list[str] | None = None) -> None:
        self.source = source
        self.problems = problems
        self.sources = list(sources) if sources is not None else [source] * len(problems)
        lines = [f"{src}: {path}: {msg}" for src, (path, msg) in zip(self.sources[:MAX_SHOWN_PROBLEMS],
                                                                     problems[:MAX_SHOWN_PROBLEMS], strict=True)]
        if len(problems) > MAX_SHOWN_PROBLEMS:
            lines.append(f"{source}: and {len(problems) - MAX_SHOWN_PROBLEMS:,} more problems")
        super().__init__("\n".join(lines))


def format_loc(loc: tuple[Any, ...]) -> str:
    """('endpoints', 1, 'model', 'huggingface', 'commitSHA') -> endpoints[1].model.huggingface.commitSHA"""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "<root>"


#: Said in place of a key that looks like a token (the key itself is never repeated).
TOKEN_KEY_NOTE = "it looks like a Hugging Face token, so it is not repeated here"
_UNKNOWN_KEY_TYPES = ("extra_forbidden", "unknown_key")


def _redacted(text: str, replacement: str = "<a token-shaped value>") -> str:
    return HF_TOKEN_SHAPE.sub(replacement, text)


def _before_token(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """``loc`` up to its first key that looks like a token (all of it when none does)."""
    for i, part in enumerate(loc):
        if isinstance(part, str) and looks_like_hf_token(part):
            return loc[:i]
    return loc


def _token_key_problem(loc: tuple[Any, ...], at: int, item: Any, key_lines: Mapping[str, int]) -> tuple[str, str]:
    """A problem at or under the token-shaped key ``loc[at]``: named by its mapping and its line, never by itself."""
    line = key_lines.get(loc[at])
    where = f" at line {line}" if line else ""
    if at == len(loc) - 1 and item["type"] in _UNKNOWN_KEY_TYPES:
        return format_loc(loc[:at]), f"an unknown key{where} ({TOKEN_KEY_NOTE})"
    return format_loc(loc[:at]), f"a key{where} ({TOKEN_KEY_NOTE}): {_redacted(item['msg'], '<that key>')}"


def _token_key_lines(problems: list[tuple[str, str]], data: Any,
                     key_lines: Mapping[str, int]) -> list[tuple[str, str]]:
    """Each "has a key that looks like a token" problem with the lines of those keys, when the file gave them."""
    if not key_lines:
        return problems
    by_path: dict[str, list[int]] = {}
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while stack:  # the mappings holding a token-shaped key, by path (no recursion)
        where, node = stack.pop()
        if isinstance(node, dict):
            lines = sorted(key_lines[k] for k in node if isinstance(k, str) and k in key_lines)
            if lines:
                by_path[format_loc(where)] = lines
            stack += [((*where, k), v) for k, v in node.items() if not (isinstance(k, str) and k in key_lines)]
        elif isinstance(node, list):
            stack += [((*where, i), v) for i, v in enumerate(node)]
    return [(path, safety.token_key_message(by_path[path]) if msg == safety.TOKEN_KEY_MESSAGE and path in by_path
             else msg) for path, msg in problems]


def _problems(err: ValidationError, key_lines: Mapping[str, int] | None = None) -> list[tuple[str, str]]:
    """``(path, message)`` of each error: the first MAX_UNKNOWN_LISTED unknown keys of a mapping one by one (with
    the nearest field name), the rest counted in one problem after them; a key that looks like a token is named by
    its line (``key_lines``: from the file), never repeated."""
    out: list[tuple[str, str]] = []
    unknown: dict[tuple[Any, ...], list[int]] = {}  # parent -> [how many unknown keys, index after its last listed]
    for item in err.errors(include_url=False):
        loc = tuple(item["loc"])
        if item["type"] in _UNKNOWN_KEY_TYPES:
            counted = unknown.setdefault(loc[:-1], [0, 0])
            counted[0] += 1
            if counted[0] > MAX_UNKNOWN_LISTED:
                continue
            counted[1] = len(out) + 1
        if len(_before_token(loc)) < len(loc):
            out.append(_token_key_problem(loc, len(_before_token(loc)), item, key_lines or {}))
            continue
        msg = item["msg"]
        if item["type"] == "extra_forbidden":
            msg = unknown_key_message(HyperPodConfig, loc)
        if item["type"] == "string_pattern_mismatch":
            pattern = (item.get("ctx") or {}).get("pattern", "")
            msg = f"must be {PATTERN_DESCRIPTIONS[pattern]}" if pattern in PATTERN_DESCRIPTIONS else msg
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        out.append((format_loc(loc), _redacted(msg)))
    for parent, (count, after) in sorted(unknown.items(), key=lambda kv: -kv[1][1]):
        if count > MAX_UNKNOWN_LISTED:
            out.insert(after, (format_loc(parent), f"and {count - MAX_UNKNOWN_LISTED:,} more unknown keys"))
    # stable and de-duplicated: pydantic may report the same location from two validators
    return list(dict.fromkeys(out))


def parse_config(data: Any, source: str = "<config>", *, cluster_object: bool = False) -> HyperPodConfig:
    """Validate an already-parsed mapping (camelCase keys).

    The ``cluster`` section needs only ``hyperpodClusterArn`` and ``env`` may be absent: what the rest is needed for
    is checked where it applies (``HyperPodInferenceStack`` imports the cluster by name and needs them; a
    ``HyperPodInference`` given a cluster object takes them from it and from its stack).
    ``cluster_object`` is deprecated and does nothing.
    """
    if cluster_object:
        warnings.warn("cluster_object=True is no longer needed: every config loads without the cluster's import "
                      "fields", DeprecationWarning, stacklevel=2)
    return _parse(data, source, {})


def _parse(data: Any, source: str, key_lines: Mapping[str, int]) -> HyperPodConfig:
    """:func:`parse_config`; ``key_lines``: the line of each token-shaped key of the file, named instead of it."""
    if not isinstance(data, dict):
        raise ConfigError(source, [("<root>", "the config must be a mapping (apiVersion, env, cluster, ...)")])
    # a token-shaped string anywhere in the file (operator.addonConfigurationOverrides, an endpoint's specOverrides,
    # tags, payload, ...), found even when other fields are invalid; the endpoints' own rule says the same
    tokens = [(format_loc(_before_token(path)), message) for path, message in safety.token_shaped(data)]
    try:
        config = HyperPodConfig.model_validate(data)
    except ValidationError as err:
        problems = _problems(err, key_lines) + tokens
        raise ConfigError(source, list(dict.fromkeys(_token_key_lines(problems, data, key_lines)))) from None
    tokens = _token_key_lines(tokens, data, key_lines)
    if tokens:
        raise ConfigError(source, tokens)
    return config


class _LimitExceeded(yaml.MarkedYAMLError):
    """A config the loader refuses although it is valid YAML: duplicate keys, too many aliases or nodes."""


class _UnreadableValue(yaml.MarkedYAMLError):
    """A scalar YAML resolves to a type (by its tag or its look) that its text is not: ``2025-02-30``, ``!!int abc``."""


#: What a scalar of each YAML tag must be, for the message when it is not.
_TAG_WORDS = {"tag:yaml.org,2002:int": "an integer", "tag:yaml.org,2002:float": "a number",
              "tag:yaml.org,2002:bool": "a boolean (true or false)",
              "tag:yaml.org,2002:timestamp": "a date or timestamp (YYYY-MM-DD, ISO 8601)",
              "tag:yaml.org,2002:binary": "base64 data", "tag:yaml.org,2002:null": "null"}


def _unreadable(node: yaml.Node, err: Exception) -> _UnreadableValue:
    """The config error of a scalar PyYAML's constructor failed on (a ValueError, KeyError, ... of its own)."""
    value = node.value if isinstance(node.value, str) else ""
    shown = ("a value that looks like a token" if looks_like_hf_token(value) else
             repr(value) if len(value) <= 40 else repr(value[:37]) + "...")
    what = _TAG_WORDS.get(node.tag, f"the type of tag {node.tag}")
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    digits = sum(c.isdigit() for c in value)
    if node.tag == "tag:yaml.org,2002:int" and limit and digits > limit:
        problem = f"an integer of {digits:,} digits, more than the {limit:,} Python reads; quote it to make it a string"
    else:
        reason = f" ({err})" if node.tag == "tag:yaml.org,2002:timestamp" and isinstance(err, ValueError) \
            and not looks_like_hf_token(str(err)) else ""
        problem = f"YAML reads {shown} as {what}, but it is not one{reason}; quote it to make it a string"
    return _UnreadableValue(problem=problem, problem_mark=node.start_mark)


class _NoDuplicateKeys(yaml.constructor.SafeConstructor):
    """PyYAML's safe constructor that refuses duplicate keys (YAML would keep only the last one), turns a scalar it
    cannot construct into an error with the scalar's place, and keeps the line of each key that looks like a token
    (``token_key_lines``: the error names the line, never the key)."""

    token_key_lines: dict[str, int]

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError) as err:
            # PyYAML's scalar constructors raise these for text their tag's type cannot hold (an impossible date, an
            # integer past Python's digit limit, !!int abc, !!bool maybe, !!timestamp x)
            raise _unreadable(node, err) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):  # ``!!map x``: SafeConstructor's error, with the node's place
            return super().construct_mapping(node, deep=deep)
        seen: dict[Any, yaml.Node] = {}
        lines = self.__dict__.setdefault("token_key_lines", {})
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # merged keys may be overridden: that is what a merge is for
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str) and looks_like_hf_token(key):
                lines.setdefault(key, key_node.start_mark.line + 1)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeConstructor reports it
                continue
            if first is not None:
                shown = "that looks like a token" if isinstance(key, str) and looks_like_hf_token(key) else repr(key)
                raise _LimitExceeded(
                    problem=f"duplicate key {shown} (first at line {first.start_mark.line + 1}); YAML would keep only "
                            "the last one", problem_mark=key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


class _ConfigYamlLoader(_NoDuplicateKeys, yaml.SafeLoader):
    """PyYAML's SafeLoader (pure Python) that refuses duplicate keys."""


#: The same with libyaml's parser and composer when PyYAML has them (its wheels do): about ten times faster on a
#: large file. Either parses only what :func:`_check_events` let through.
_FastConfigYamlLoader: type = (type("_FastConfigYamlLoader", (_NoDuplicateKeys, yaml.CSafeLoader), {})
                               if hasattr(yaml, "CSafeLoader") else _ConfigYamlLoader)


def _check_events(text: str, loader_class: type | None = None) -> bool:
    """The limits' first pass, before any node is built: walks the parser's events (flat, no recursion) and stops at
    the first mapping or sequence nested deeper than MAX_DEPTH, the first node past MAX_NODES or the first alias
    past MAX_ALIASES, so a deep or huge file is refused after reading only that far. True when libyaml parsed the
    whole file; a file it finds invalid is walked again by PyYAML's own parser, whose error names the problem (as the
    pure-Python load would), and False is returned when that one accepts it."""
    loader_class = loader_class or _EVENT_LOADER
    depth = nodes = aliases = 0
    loader = loader_class(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _LimitExceeded(problem=f"mappings and sequences nested more than {MAX_DEPTH} deep; the "
                                                 "loader refuses it", problem_mark=event.start_mark)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
                continue
            elif isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise _LimitExceeded(problem=f"more than {MAX_ALIASES} aliases (*name); the loader refuses it",
                                         problem_mark=event.start_mark)
            elif not isinstance(event, yaml.ScalarEvent):
                continue
            nodes += 1
            if nodes > MAX_NODES:
                raise _LimitExceeded(problem=f"more than {MAX_NODES} YAML nodes; the loader refuses it",
                                     problem_mark=event.start_mark)
    except _LimitExceeded:
        raise
    except yaml.YAMLError as err:
        if "maximum nesting depth" in str(getattr(err, "problem", "")):  # libyaml's own limit (1000), checked ahead
            raise _LimitExceeded(problem=f"mappings and sequences nested more than {MAX_DEPTH} deep; the loader "
                                         "refuses it", problem_mark=getattr(err, "problem_mark", None)) from None
        if loader_class is yaml.SafeLoader:
            raise
        _check_events(text, yaml.SafeLoader)
        return False
    finally:
        loader.dispose()
    return loader_class is not yaml.SafeLoader


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes the document has with every alias expanded; stops counting past MAX_NODES. Refuses a document
    nested deeper than MAX_DEPTH once aliases are expanded (an alias of a deep node, placed deep)."""
    sizes: dict[int, tuple[int, int]] = {}
    in_progress: set[int] = set()

    def size(node: yaml.Node) -> tuple[int, int]:
        """(nodes, depth of mappings and sequences) of ``node`` expanded."""
        known = sizes.get(id(node))
        if known is not None:
            return known
        if id(node) in in_progress:
            raise _LimitExceeded(problem="an alias refers to the node that contains it (a recursive structure)",
                                 problem_mark=node.start_mark)
        in_progress.add(id(node))
        total, depth = 1, 0
        if isinstance(node, yaml.SequenceNode):
            children: list[yaml.Node] = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            child_total, child_depth = size(child)
            total, depth = total + child_total, max(depth, child_depth)
            if total > MAX_NODES:
                break
        if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)):
            depth += 1
            if depth > MAX_DEPTH:
                raise _LimitExceeded(problem=f"mappings and sequences nested more than {MAX_DEPTH} deep once aliases "
                                             "are expanded; the loader refuses it", problem_mark=node.start_mark)
        in_progress.discard(id(node))
        sizes[id(node)] = (total, depth)
        return total, depth

    return size(root)[0]


def load_yaml_text(text: str, source: str = "<config>") -> Any:
    """Parse one YAML document of a config: PyYAML's safe loader, plus the loader's refusals (duplicate keys, more
    than MAX_ALIASES aliases, more than MAX_NODES nodes or nesting deeper than MAX_DEPTH, as written or after alias
    expansion), each a ConfigError with its line. The limits are checked on the parser's events first, so a file
    that breaks one is refused before a node is built (within a second for any file the size limit lets in). A
    scalar whose tag's type cannot hold its text (``2025-02-30``, ``!!int abc``) is a ConfigError with its line too."""
    return _load_yaml(text, source)[0]


def _load_yaml(text: str, source: str) -> tuple[Any, dict[str, int]]:
    """:func:`load_yaml_text`, and the line of each key that looks like a token."""
    loader: Any = None
    try:
        loader = (_FastConfigYamlLoader if _check_events(text) else _ConfigYamlLoader)(text)
        root = loader.get_single_node()
        if root is None:
            return None, {}
        if _expanded_size(root) > MAX_NODES:
            raise ConfigError(source, [("<file>", f"more than {MAX_NODES} YAML nodes once aliases are expanded; "
                                        "the loader refuses it")])
        return loader.construct_document(root), dict(getattr(loader, "token_key_lines", {}))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<file>"
        problem = _redacted(str(getattr(err, "problem", None) or err))
        what = {_LimitExceeded: "refused: ", _UnreadableValue: ""}.get(type(err), "not valid YAML: ")
        raise ConfigError(source, [(where, f"{what}{problem}")]) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_config(path: str | Path, *, cluster_object: bool = False) -> HyperPodConfig:
    """Read and validate a config file (UTF-8, at most MAX_FILE_BYTES). ``cluster_object`` is deprecated and does
    nothing (see :func:`parse_config`)."""
    path = Path(path)
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise ConfigError(str(path), [("<file>", f"cannot read: {err.strerror}")]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(str(path), [("<file>", f"larger than {MAX_FILE_BYTES} bytes (1 MiB); the loader refuses "
                                       "it")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise ConfigError(str(path), [(f"line {line}", f"not UTF-8: byte 0x{raw[err.start]:02x} at offset "
                                       f"{err.start}; save the file as UTF-8")]) from None
    if cluster_object:
        warnings.warn("cluster_object=True is no longer needed: every config loads without the cluster's import "
                      "fields", DeprecationWarning, stacklevel=2)
    data, key_lines = _load_yaml(text, str(path))
    return _parse(data, str(path), key_lines)


#: The app's stack for one config file without ``stackName`` (facts/naming.py).
DEFAULT_STACK_NAME = naming.DEFAULT_STACK_NAME


def default_stack_name(config: HyperPodConfig, *, several: bool) -> str:
    """``stackName``, else ``HyperPodInference`` for one config file, ``HyperPodInference-<eksClusterName>`` for
    several (:func:`naming.default_stack_name`)."""
    return naming.default_stack_name(config.stack_name, config.cluster.eks_cluster_name, several=several)


def load_configs(paths: list[str | Path]) -> list[tuple[str, HyperPodConfig]]:
    """Several config files, one stack each: ``[(stack name, config)]`` in the files' order.

    Every file's problems and the rules across files are collected and raised once, each naming its file and path:
    two files naming the same stack (``stackName``, or the default of :func:`default_stack_name`); a SageMaker
    endpoint name used twice in one account and region; a domain name used twice in one zone; two files installing
    the operator on one cluster (one operator per cluster)."""
    files = [str(p) for p in paths]
    problems: list[tuple[str, tuple[str, str]]] = []
    loaded: list[tuple[str, HyperPodConfig]] = []
    seen_files: dict[str, int] = {}
    for i, path in enumerate(files):
        if path in seen_files:
            problems.append((path, ("<file>", f"given twice (also config {seen_files[path] + 1})")))
            continue
        seen_files[path] = i
        try:
            loaded.append((path, load_config(path)))
        except ConfigError as err:
            problems += list(zip(err.sources, err.problems, strict=True))
    several = len(files) > 1
    stacks: dict[str, str] = {}
    sm_names: dict[tuple[str, str, str], str] = {}
    domains: dict[tuple[str, str], str] = {}
    installs: dict[tuple[str, str, str], str] = {}
    out: list[tuple[str, HyperPodConfig]] = []
    for path, config in loaded:
        name = default_stack_name(config, several=several)
        if name in stacks:
            problems.append((path, ("stackName", f"stack {name} is also the stack of {stacks[name]}; give one of them "
                                    "another stackName")))
        stacks.setdefault(name, path)
        account, region = (config.env.account, config.env.region) if config.env else ("", "")
        cluster = (account, region, config.cluster.eks_cluster_name or "")
        if config.operator.install != "existing" and cluster[2]:
            if cluster in installs:
                problems.append((path, ("operator.install", (
                    f"{config.operator.install} installs the operator on cluster {cluster[2]} ({account} / {region}), "
                    f"which {installs[cluster]} installs it on already (one operator per cluster); set "
                    "operator.install: existing and operator.dependencies: existing here"))))
            installs.setdefault(cluster, path)
        for j, ep in enumerate(config.endpoints):
            if ep.sagemaker_endpoint_name:
                key = (account, region, ep.sagemaker_endpoint_name.lower())
                if key in sm_names and sm_names[key] != path:
                    problems.append((path, (f"endpoints[{j}].sagemakerEndpointName", (
                        f"SageMaker endpoint {ep.sagemaker_endpoint_name} is also in {sm_names[key]} (names are unique "
                        f"per account and region: {account} / {region})"))))
                sm_names.setdefault(key, path)
            if ep.domain_name and config.domain is not None:
                key2 = (config.domain.zone_name.rstrip(".").lower(), ep.domain_name.lower())
                if key2 in domains and domains[key2] != path:
                    problems.append((path, (f"endpoints[{j}].domainName", (
                        f"{ep.domain_name} is also in {domains[key2]} (one record per name in zone "
                        f"{config.domain.zone_name})"))))
                domains.setdefault(key2, path)
        out.append((name, config))
    if problems:
        sources = [src for src, _ in problems]
        raise ConfigError(", ".join(dict.fromkeys(sources)), [p for _, p in problems], sources=sources)
    return out


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (camelCase keys), for editors."""
    schema = HyperPodConfig.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "hyperpod-inference config (apiVersion hyperpod-inference/v1)"
    return schema
