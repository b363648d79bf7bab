"""Loading the config file: YAML -> HyperPodConfig, or one ConfigError listing every problem with its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..facts.production import PATTERN_DESCRIPTIONS as PRODUCTION_PATTERNS
from ..facts.rules import PATTERN_DESCRIPTIONS as _PATTERNS
from .models import HyperPodConfig

PATTERN_DESCRIPTIONS = {**PRODUCTION_PATTERNS, **_PATTERNS}

#: The loader refuses a config file larger than this (bytes).
MAX_FILE_BYTES = 1024 * 1024
#: ... with more alias references (``*name``) than this.
MAX_ALIASES = 100
#: ... or more YAML nodes than this once every alias is expanded (what validation would walk).
MAX_NODES = 100_000


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


def parse_config(data: Any, source: str = "<config>", *, cluster_object: bool = False) -> HyperPodConfig:
    """Validate an already-parsed mapping (camelCase keys).

    ``cluster_object=True``: the config goes to a ``HyperPodInference`` given an ``eks.ICluster``, so ``env`` and the
    cluster fields the object provides (``eksClusterName``, ``kubectlRoleArn``, ``vpcId``, ``oidcProviderArn``) may
    be left out. Default: the config describes the cluster the app imports, and needs them all.
    """
    if not isinstance(data, dict):
        raise ConfigError(source, [("<root>", "the config must be a mapping (apiVersion, env, cluster, ...)")])
    try:
        return HyperPodConfig.model_validate(data, context={"cluster_object": cluster_object})
    except ValidationError as err:
        raise ConfigError(source, _problems(err)) from None


class _LimitExceeded(yaml.MarkedYAMLError):
    """A config the loader refuses although it is valid YAML: duplicate keys, too many aliases or nodes."""


class _ConfigYamlLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that refuses duplicate keys and counts alias references while composing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_count = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_ALIASES:
                event = self.peek_event()
                raise _LimitExceeded(problem=f"more than {MAX_ALIASES} aliases (*name); the loader refuses it",
                                     problem_mark=event.start_mark)
        return super().compose_node(parent, index)

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


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes the document has with every alias expanded; stops counting past MAX_NODES."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        if id(node) in in_progress:
            raise _LimitExceeded(problem="an alias refers to the node that contains it (a recursive structure)",
                                 problem_mark=node.start_mark)
        in_progress.add(id(node))
        total = 1
        if isinstance(node, yaml.SequenceNode):
            children: list[yaml.Node] = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > MAX_NODES:
                break
        in_progress.discard(id(node))
        sizes[id(node)] = total
        return total

    return size(root)


def load_yaml_text(text: str, source: str = "<config>") -> Any:
    """Parse one YAML document of a config: PyYAML's safe loader, plus the loader's refusals (duplicate keys, more
    than MAX_ALIASES aliases, more than MAX_NODES nodes after alias expansion), each a ConfigError with its line."""
    loader = _ConfigYamlLoader(text)
    try:
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
        loader.dispose()


def load_config(path: str | Path, *, cluster_object: bool = False) -> HyperPodConfig:
    """Read and validate a config file (UTF-8, at most MAX_FILE_BYTES; ``cluster_object``: see
    :func:`parse_config`)."""
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
    return parse_config(load_yaml_text(text, str(path)), str(path), cluster_object=cluster_object)


#: The app's stack for one config file without ``stackName``.
DEFAULT_STACK_NAME = "HyperPodInference"


def default_stack_name(config: HyperPodConfig, *, several: bool) -> str:
    """``stackName``, else ``HyperPodInference`` for one config file, ``HyperPodInference-<eksClusterName>`` for
    several."""
    if config.stack_name:
        return config.stack_name
    if several and config.cluster.eks_cluster_name:
        return f"{DEFAULT_STACK_NAME}-{config.cluster.eks_cluster_name}"
    return DEFAULT_STACK_NAME


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
