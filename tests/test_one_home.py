"""One home per fact, checked over the package's source: the managed-by label, the operator's API group, the partition
of a Region and "is this a CDK token" are each written in one module; every other module reads them from there.

- the label ``app.kubernetes.io/managed-by: hyperpod-inference-cdk``: ``facts/naming.py``;
- the API group ``inference.sagemaker.aws.amazon.com``: ``facts/operator.py``;
- the partition: ``facts.rules.partition_of_region`` for code without the CDK (its table of Region prefixes),
  ``constructs/lazy.literal_partition`` for constructs (aws-cdk-lib's ``region_info``); nothing assigns a partition
  literal;
- a CDK token: ``facts.rules.is_deploy_time`` (the token marks) and ``constructs/lazy.is_unresolved`` (the one call of
  ``Token.is_unresolved``).

A string constant counts wherever it is (an f-string's literal part too), except a docstring.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "hyperpod_inference"


def _docstrings(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def strings(tree: ast.Module) -> list[str]:
    """Every string constant of a module but its docstrings."""
    skip = _docstrings(tree)
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in skip]


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain (a call in it as ``f()``), else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{dotted(node.func)}()"
    return ""


def homes(package_dir: Path) -> dict[str, set[str]]:
    """fact -> the modules (relative paths) that write it."""
    found: dict[str, set[str]] = {fact: set() for fact in (
        "managed-by label", "operator API group", "partition of a Region", "partition literal",
        "def partition_of_region", "def literal_partition", "token mark", "Token.is_unresolved")}
    prefixes = ("cn-", "us-gov-", "us-iso-", "us-isob-", "us-isof-", "eu-isoe-", "eusc-")
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).as_posix()
        tree = ast.parse(path.read_text())
        texts = strings(tree)
        if {"app.kubernetes.io/managed-by", "hyperpod-inference-cdk"} & set(texts):
            found["managed-by label"].add(rel)
        if any("inference.sagemaker.aws.amazon.com" in t for t in texts):
            found["operator API group"].add(rel)
        if set(prefixes) & set(texts) or any(
                dotted(n).endswith("RegionInfo.get().partition") for n in ast.walk(tree)):
            found["partition of a Region"].add(rel)
        if any("${Token[" in t or "#{Token[" in t for t in texts):
            found["token mark"].add(rel)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) and \
                    re.fullmatch(r"aws(-[a-z]+)*", str(node.value.value)) and any(
                    "partition" in n.id.lower() for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    for n in ast.walk(t) if isinstance(n, ast.Name)):
                found["partition literal"].add(rel)
            if isinstance(node, ast.FunctionDef) and node.name in ("partition_of_region", "literal_partition"):
                found[f"def {node.name}"].add(rel)
            if isinstance(node, ast.Call) and dotted(node.func).endswith("Token.is_unresolved"):
                found["Token.is_unresolved"].add(rel)
    return found


HOMES = {
    "managed-by label": {"facts/naming.py"},
    "operator API group": {"facts/operator.py"},
    "partition of a Region": {"facts/rules.py", "constructs/lazy.py"},
    "partition literal": set(),
    "def partition_of_region": {"facts/rules.py"},
    "def literal_partition": {"constructs/lazy.py"},
    "token mark": {"facts/rules.py"},
    "Token.is_unresolved": {"constructs/lazy.py"},
}


@pytest.mark.parametrize("fact", HOMES)
def test_each_fact_is_written_in_its_one_home(fact):
    assert homes(PACKAGE_DIR)[fact] == HOMES[fact]


def test_the_check_sees_a_second_home(tmp_path):
    # GIVEN a package that writes each fact a second time, the ways they were written before they had one home
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "endpoint.py").write_text(textwrap.dedent('''
        """Mentions app.kubernetes.io/managed-by in a docstring only: that is no home."""
        API_VERSION = "inference.sagemaker.aws.amazon.com/v1"
        MANAGED_BY = {"app.kubernetes.io/managed-by": "hyperpod-inference-cdk"}
    '''))
    (tmp_path / "constructs").mkdir()
    (tmp_path / "constructs" / "grants.py").write_text(textwrap.dedent('''
        from aws_cdk import Token, region_info
        partition = "aws"
        def arn(region):
            if Token.is_unresolved(region) or "${Token[" in region:
                return None
            china = region.startswith("cn-")
            return region_info.RegionInfo.get(region).partition
    '''))
    # WHEN checked / THEN each second home is found, and the docstring is not one
    found = homes(tmp_path)
    assert found["managed-by label"] == found["operator API group"] == {"charts/endpoint.py"}
    assert found["partition of a Region"] == found["partition literal"] == {"constructs/grants.py"}
    assert found["token mark"] == found["Token.is_unresolved"] == {"constructs/grants.py"}
