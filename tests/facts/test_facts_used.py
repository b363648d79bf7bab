"""Every fact in ``facts/`` is one the library uses: a public name defined at the top of a ``facts/`` module is read
somewhere in the package besides its own definition (in its module or another; a test reading it does not count), so
a fact the library stops using fails here instead of lingering."""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "hyperpod_inference"


def defined_names(tree: ast.Module) -> list[str]:
    """The public names a module defines at its top: functions, classes and assigned names."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def read_names(tree: ast.Module) -> Counter[str]:
    """How often each name is read in a module: a name loaded, an attribute, a name imported."""
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found[node.id] += 1
        elif isinstance(node, ast.Attribute):
            found[node.attr] += 1
        elif isinstance(node, ast.ImportFrom):
            found.update(alias.name for alias in node.names)
    return found


def unused_facts(package_dir: Path) -> list[str]:
    """``<facts module>:<name>`` for every public name of ``facts/`` nothing in the package reads."""
    trees = {p: ast.parse(p.read_text()) for p in sorted(package_dir.rglob("*.py"))}
    reads = {p: read_names(t) for p, t in trees.items()}
    out = []
    for path in sorted((package_dir / "facts").glob("*.py")):
        for name in defined_names(trees[path]):
            if not any(found[name] for found in reads.values()):
                out.append(f"{path.stem}:{name}")
    return out


def test_every_fact_is_read_by_the_library():
    assert unused_facts(PACKAGE_DIR) == []


def test_the_check_finds_a_fact_nothing_reads(tmp_path):
    # GIVEN a package whose facts define a name read in its own module, one read by another part, and one nobody
    # reads (a test reading it would not count: tests are outside the package)
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "rules.py").write_text(textwrap.dedent("""
        LIMIT = 10
        USED_ELSEWHERE = "x"
        NEVER_READ, ALSO_NEVER = 1, 2
        _PRIVATE = 3

        def check(value):
            return value <= LIMIT
    """))
    (tmp_path / "config.py").write_text("from .facts.rules import USED_ELSEWHERE\nfrom .facts import rules\n"
                                        "rules.check(USED_ELSEWHERE)\n")
    # WHEN checked / THEN exactly the names nothing reads are reported
    assert unused_facts(tmp_path) == ["rules:NEVER_READ", "rules:ALSO_NEVER"]
