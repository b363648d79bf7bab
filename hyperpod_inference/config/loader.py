"""Loading the config file: YAML -> HyperPodConfig, or one ConfigError listing every problem with its path."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..facts import naming
from ..facts.production import PATTERN_DESCRIPTIONS as PRODUCTION_PATTERNS
from ..facts.rules import PATTERN_DESCRIPTIONS as _PATTERNS
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

#: The event parser of the limits' first pass: libyaml's when PyYAML has it (its wheels do), else PyYAML's own.
_EVENT_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ConfigError(ValueError):
    """Every problem of a config, each as ``<path>: <message>``; nothing is synthesized when raised.

    ``sources``: the file of each problem, when they come from several files (default: ``source`` for all)."""

    def __init__(self, source: str, problems: list[tuple[str, str]], *, sources: list[str] | None = None) -> None:
        self.source = source
        self.problems = problems
        self.sources = list(sources) if sources is not None else [source] * len(problems)
        lines = (f"{src}: {path}: {msg}" for src, (path, msg) in zip(self.sources, problems, strict=True))
        super().__init__("\n".join(lines))


def format_loc(loc: tuple[Any, ...]) -> str:
    """('endpoints', 1, 'model', 'huggingface', 'commitSHA') -> endpoints[1].model.huggingface.commitSHA"""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "<root>"


def _problems(err: ValidationError, data: Any = None) -> list[tuple[str, str]]:
    out = []
    for item in err.errors(include_url=False):
        msg = item["msg"]
        if item["type"] == "extra_forbidden":
            msg = unknown_key_message(tuple(item["loc"]))
        if item["type"] == "string_pattern_mismatch":
            pattern = (item.get("ctx") or {}).get("pattern", "")
            msg = f"must be {PATTERN_DESCRIPTIONS[pattern]}" if pattern in PATTERN_DESCRIPTIONS else msg
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        out.append((format_loc(tuple(item["loc"])), msg))
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
    if not isinstance(data, dict):
        raise ConfigError(source, [("<root>", "the config must be a mapping (apiVersion, env, cluster, ...)")])
    # a token-shaped string anywhere in the file (operator.addonConfigurationOverrides, an endpoint's specOverrides,
    # tags, payload, ...), found even when other fields are invalid; the endpoints' own rule says the same
    tokens = [(format_loc(path), message) for path, message in safety.token_shaped(data)]
    try:
        config = HyperPodConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(source, list(dict.fromkeys(_problems(err, data) + tokens))) from None
    if tokens:
        raise ConfigError(source, tokens)
    return config


class _LimitExceeded(yaml.MarkedYAMLError):
    """A config the loader refuses although it is valid YAML: duplicate keys, too many aliases or nodes."""


class _NoDuplicateKeys(yaml.constructor.SafeConstructor):
    """PyYAML's safe constructor that refuses duplicate keys (YAML would keep only the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # merged keys may be overridden: that is what a merge is for
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeConstructor reports it
                continue
            if first is not None:
                raise _LimitExceeded(
                    problem=f"duplicate key {key!r} (first at line {first.start_mark.line + 1}); YAML would keep only "
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
    that breaks one is refused before a node is built (within a second for any file the size limit lets in)."""
    loader: Any = None
    try:
        loader = (_FastConfigYamlLoader if _check_events(text) else _ConfigYamlLoader)(text)
        root = loader.get_single_node()
        if root is None:
            return None
        if _expanded_size(root) > MAX_NODES:
            raise ConfigError(source, [("<file>", f"more than {MAX_NODES} YAML nodes once aliases are expanded; "
                                        "the loader refuses it")])
        return loader.construct_document(root)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "<file>"
        problem = getattr(err, "problem", None) or str(err)
        what = "refused" if isinstance(err, _LimitExceeded) else "not valid YAML"
        raise ConfigError(source, [(where, f"{what}: {problem}")]) from None
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
    return parse_config(load_yaml_text(text, str(path)), str(path))


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
