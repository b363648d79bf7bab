"""config/'s own import graph: the strict base model and shared types at the bottom, the sections above them, the
endpoint above its parts, the rules above the sections, the whole file above the rules, and the loader and the
re-exports on top. No import runs to a layer above its module's, and there is no import circle.

Every import counts: at the top of a module, inside a function, or under ``if TYPE_CHECKING:`` (read with ``ast`` by
:func:`tests.test_architecture.imports_of`)."""

from __future__ import annotations

from pathlib import Path

from tests.test_architecture import PACKAGE_DIR, imports_of

#: config/'s modules by layer, bottom first. A module may import its own layer's modules and those below it.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("base", frozenset({"suggest", "safety", "base"})),
    ("sections", frozenset({"autoscaling", "routing", "metrics_tags", "probes", "resources", "worker_env",
                            "placement", "prefill_decode", "cache", "verify", "model_source", "capture", "cluster",
                            "operator", "domain", "observability", "gateway"})),
    ("endpoint", frozenset({"endpoint"})),
    ("rules", frozenset({"cross_rules", "gateway_rules", "warning_rules", "warnings"})),
    ("file", frozenset({"file"})),
    ("entry", frozenset({"models", "loader", "__init__"})),
)


def config_graph(package_dir: Path) -> dict[str, dict[str, int]]:
    """Module of ``config/`` -> the modules of ``config/`` it imports, each with the line of its first import."""
    prefix = f"{package_dir.name}.config"
    graph: dict[str, dict[str, int]] = {}
    for path in sorted((package_dir / "config").glob("*.py")):
        targets = graph.setdefault(path.stem, {})
        for arrow in imports_of(package_dir, path):
            if arrow.target == prefix:
                targets.setdefault("__init__", arrow.line)
            elif arrow.target.startswith(prefix + "."):
                targets.setdefault(arrow.target[len(prefix) + 1:].split(".")[0], arrow.line)
    return graph


def upward_imports(package_dir: Path, layers=LAYERS) -> list[str]:
    """Every import of a module of a layer above the importer's, as ``module:line -> target (layer)``."""
    rank = {module: (i, name) for i, (name, modules) in enumerate(layers) for module in modules}
    return [f"{source}:{line} -> {target} ({rank[target][1]} above {rank[source][1]})"
            for source, targets in config_graph(package_dir).items() for target, line in targets.items()
            if source in rank and target in rank and rank[target][0] > rank[source][0]]


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The import circles: each strongly connected set of more than one module (Tarjan's algorithm, without
    recursion), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return sorted(found)


def test_every_module_of_config_has_a_layer():
    # GIVEN config/'s modules THEN each is in exactly one layer (a new module says where it stands)
    named = [module for _, modules in LAYERS for module in modules]
    assert len(named) == len(set(named))
    assert set(config_graph(PACKAGE_DIR)) == set(named)


def test_no_import_of_config_runs_up_its_layers():
    # GIVEN every import between config/'s modules THEN none reaches a layer above the importer's
    assert upward_imports(PACKAGE_DIR) == []


def test_config_has_no_import_circle():
    # GIVEN config/'s import graph THEN no two modules import each other, however indirectly
    assert circles(config_graph(PACKAGE_DIR)) == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "pkg"
    (package / "config").mkdir(parents=True)
    for name in ("__init__.py", "config/__init__.py"):
        (package / name).write_text("")
    for name, text in files.items():
        (package / "config" / name).write_text(text)
    return package


def test_the_graph_check_sees_an_upward_import_and_a_circle_however_it_is_written(tmp_path):
    # GIVEN the base importing the endpoint for type checking only, the endpoint importing the base, and a rule
    # module importing the file inside a function
    package = _package(tmp_path, {
        "base.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .endpoint import Endpoint\n",
        "endpoint.py": "from . import base\n",
        "cross_rules.py": "def f():\n    from pkg.config.file import HyperPodConfig\n",
        "file.py": "",
    })
    # THEN both upward imports are named with their lines, and the base and the endpoint make a circle
    assert upward_imports(package) == ["base:3 -> endpoint (endpoint above base)",
                                       "cross_rules:2 -> file (file above rules)"]
    assert circles(config_graph(package)) == [["base", "endpoint"]]
