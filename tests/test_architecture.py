"""The import contract of DESIGN.md's parts table, enforced from the code's imports.

Every import in the package is read with ``ast`` (top-level and inside functions, absolute and relative, and
``importlib.import_module("...")`` / ``__import__("...")`` with a literal name) and each arrow between parts is checked
against the table:

| part | may import |
|---|---|
| facts/ | nothing of the package; the standard library only |
| config/ | facts/ |
| constructs/ | facts/, config/ |
| charts/ | facts/, config/, nvme_agent/ |
| ops/ (init.py, doctor.py, aws.py, kube.py, cli.py) | facts/, config/; never aws_cdk, jsii, constructs or cdk8s |
| composition (inference.py, stack.py, app.py, manifests.py, __init__.py, __main__.py, any other top-level module) | all |
| nvme_agent/, lambda/ | nothing of the package |

The pure builders of the AWS side (``JSII_FREE``: dashboard layout, Prometheus rules, Grafana JSON, the observed
endpoint values) import neither aws_cdk nor constructs, jsii or cdk8s, so they are tested without a jsii kernel.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "hyperpod_inference"

PARTS = ("facts", "config", "constructs", "charts", "nvme_agent", "lambda", "ops")
COMPOSITION = "composition"
ALLOWED: dict[str, set[str]] = {
    "facts": set(),
    "config": {"facts"},
    "constructs": {"facts", "config"},
    "charts": {"facts", "config", "nvme_agent"},
    "nvme_agent": set(),
    "lambda": set(),
    "ops": {"facts", "config"},
    COMPOSITION: {*PARTS, COMPOSITION},
}
STDLIB_ONLY = {"facts"}
#: Third-party libraries a part never imports (``ops`` calls AWS with boto3 and never starts jsii).
NEVER_IMPORTS: dict[str, set[str]] = {"ops": {"aws_cdk", "jsii", "constructs", "cdk8s", "cdk8s_plus_28"}}
#: The modules of the parts that name them (a new module must be added here).
MODULES: dict[str, set[str]] = {"ops": {"__init__", "aws", "cli", "doctor", "init", "kube"}}
#: Modules (relative to the package) that must not import the CDK or jsii.
JSII_FREE = ("constructs/observed.py", "constructs/cloudwatch_layout.py", "constructs/prometheus_rules.py",
             "constructs/grafana_dashboard.py")
JSII_MODULES = {"aws_cdk", "constructs", "jsii", "cdk8s", "cdk8s_plus_28", "cdk_nag"}
_IMPORT_FUNCTIONS = {"import_module", "__import__"}


@dataclass(frozen=True)
class Arrow:
    source: str  # file, relative to the package's parent
    line: int
    target: str  # the dotted module imported


def part_of_file(package_dir: Path, path: Path) -> str:
    rel = path.relative_to(package_dir)
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in PARTS else COMPOSITION


def part_of_module(package: str, dotted: str) -> str | None:
    """The part a dotted module belongs to; None for a module outside the package."""
    names = dotted.split(".")
    if names[0] != package:
        return None
    return names[1] if len(names) > 1 and names[1] in PARTS else COMPOSITION


def _module_name(package_dir: Path, path: Path) -> tuple[str, bool]:
    rel = path.relative_to(package_dir.parent).with_suffix("")
    names = list(rel.parts)
    is_init = names[-1] == "__init__"
    if is_init:
        names = names[:-1]
    return ".".join(names), is_init


def _resolve_relative(module: str, is_init: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_init else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def imports_of(package_dir: Path, path: Path) -> list[Arrow]:
    """Every module ``path`` imports, anywhere in the file."""
    module, is_init = _module_name(package_dir, path)
    tree = ast.parse(path.read_text(), filename=str(path))
    source = str(path.relative_to(package_dir.parent))
    arrows: list[Arrow] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            arrows += [Arrow(source, node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(module, is_init, node.level, node.module) if node.level
                    else node.module or "")
            arrows.append(Arrow(source, node.lineno, base))
            # ``from pkg import charts`` imports a part by name: the names under the package root are modules too
            if part_of_module(module.split(".")[0], base) == COMPOSITION and "." not in base:
                arrows += [Arrow(source, node.lineno, f"{base}.{alias.name}") for alias in node.names
                           if alias.name != "*"]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in _IMPORT_FUNCTIONS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                target = node.args[0].value
                if target.startswith("."):
                    level = len(target) - len(target.lstrip("."))
                    package = module if is_init else module.rsplit(".", 1)[0]
                    anchor = package + ".__init__"  # resolve against the package the call names (__package__)
                    target = _resolve_relative(anchor, False, level, target.lstrip(".") or None)
                arrows.append(Arrow(source, node.lineno, target))
    return arrows


def violations(package_dir: Path) -> list[str]:
    """Every import that breaks the parts table, as ``file:line: part -> target (its part)``."""
    package = package_dir.name
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    problems: list[str] = []
    for path in sorted(package_dir.rglob("*.py")):
        part = part_of_file(package_dir, path)
        for arrow in imports_of(package_dir, path):
            target_part = part_of_module(package, arrow.target)
            where = f"{arrow.source}:{arrow.line}: {part}"
            if target_part is None:
                top = arrow.target.split(".")[0]
                if part in STDLIB_ONLY and top and top not in stdlib:
                    problems.append(f"{where} -> {arrow.target} (not the standard library)")
                if top in NEVER_IMPORTS.get(part, set()):
                    problems.append(f"{where} -> {arrow.target} (never imported by {part})")
            elif target_part != part and target_part not in ALLOWED[part]:
                problems.append(f"{where} -> {arrow.target} ({target_part})")
    return sorted(set(problems))


def jsii_imports(package_dir: Path, rel: str) -> list[str]:
    """The CDK / jsii modules ``rel`` imports (directly), as ``file:line: target``."""
    path = package_dir / rel
    return [f"{a.source}:{a.line}: {a.target}" for a in imports_of(package_dir, path)
            if a.target.split(".")[0] in JSII_MODULES]


# --------------------------------------------------------------------------------------------------------- tests
def test_the_pure_builders_import_no_cdk_or_jsii():
    # GIVEN the builder modules the observability construct realizes / THEN none of them imports the CDK or jsii,
    # and neither does anything of the package they import
    for rel in JSII_FREE:
        assert jsii_imports(PACKAGE_DIR, rel) == [], rel
        for arrow in imports_of(PACKAGE_DIR, PACKAGE_DIR / rel):
            if arrow.target.startswith("hyperpod_inference.constructs."):
                target = arrow.target.split(".", 1)[1].replace(".", "/") + ".py"
                assert target in JSII_FREE, f"{rel} imports {arrow.target}, which is not jsii-free"


def test_the_jsii_free_check_catches_a_cdk_import(tmp_path):
    root = _package(tmp_path, {"constructs/observed.py": "from aws_cdk import Duration\n"})
    assert jsii_imports(root, "constructs/observed.py") == ["pkg/constructs/observed.py:1: aws_cdk"]


def test_the_package_keeps_the_import_contract():
    # GIVEN every module of the package / WHEN its imports are read / THEN no arrow breaks the parts table
    assert PACKAGE_DIR.is_dir()
    assert violations(PACKAGE_DIR) == []


def test_the_contract_covers_every_part_of_the_package():
    # GIVEN the package's folders / THEN each one is a part of the table (a new folder must be placed in it)
    folders = {p.name for p in PACKAGE_DIR.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert folders == set(PARTS)


def test_the_parts_that_name_their_modules_hold_exactly_those():
    # GIVEN the table's module lists / THEN each such part holds exactly the modules it names
    for part, modules in MODULES.items():
        assert {p.stem for p in (PACKAGE_DIR / part).glob("*.py")} == modules


def test_ops_never_loads_aws_cdk_or_jsii():
    # GIVEN a fresh interpreter / WHEN every ops module is imported and the CLI parser is built
    import subprocess

    code = ("import sys, argparse\n"
            "from hyperpod_inference.ops import aws, cli, doctor, init, kube\n"
            "p = argparse.ArgumentParser(); cli.add_parsers(p.add_subparsers())\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('aws_cdk', 'jsii', 'constructs', 'cdk8s'))\n"
            "print(bad)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=PACKAGE_DIR.parent, check=True)
    # THEN none of aws_cdk, jsii, constructs or cdk8s was loaded
    assert done.stdout.strip() == "[]"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for part in ("", *PARTS):
        folder = root / part
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    for rel, text in files.items():
        (root / rel).write_text(textwrap.dedent(text))
    return root


@pytest.mark.parametrize(("files", "expected"), [
    # top-level absolute import
    ({"config/models.py": "import pkg.charts.operator_images\n"},
     "pkg/config/models.py:1: config -> pkg.charts.operator_images (charts)"),
    # relative import
    ({"constructs/operator.py": "from ..charts.operator import NAMES\n"},
     "pkg/constructs/operator.py:1: constructs -> pkg.charts.operator (charts)"),
    # relative import of a part by name
    ({"config/models.py": "from .. import charts\n"}, "pkg/config/models.py:1: config -> pkg.charts (charts)"),
    # function-level import
    ({"config/models.py": "def f():\n    from pkg.constructs import domain\n    return domain\n"},
     "pkg/config/models.py:2: config -> pkg.constructs (constructs)"),
    # importlib.import_module with a literal, absolute and relative
    ({"facts/rules.py": "import importlib\nm = importlib.import_module('pkg.config.models')\n"},
     "pkg/facts/rules.py:2: facts -> pkg.config.models (config)"),
    ({"charts/endpoint.py": "from importlib import import_module\nm = import_module('..constructs.irsa', __package__)\n"},
     "pkg/charts/endpoint.py:2: charts -> pkg.constructs.irsa (constructs)"),
    # __import__ with a literal
    ({"nvme_agent/cli.py": "m = __import__('pkg.facts.rules')\n"}, "pkg/nvme_agent/cli.py:1: nvme_agent -> pkg.facts.rules (facts)"),
    # the agent and the Lambda handler import nothing of the package
    ({"lambda/index.py": "from pkg import stack\n"}, "pkg/lambda/index.py:1: lambda -> pkg (composition)"),
    # a part never imports the composition
    ({"constructs/x.py": "from ..stack import HyperPodInferenceStack\n"},
     "pkg/constructs/x.py:1: constructs -> pkg.stack (composition)"),
    # facts: the standard library only
    ({"facts/rules.py": "import pydantic\n"}, "pkg/facts/rules.py:1: facts -> pydantic (not the standard library)"),
    ({"facts/rules.py": "def f():\n    from aws_cdk import Token\n"},
     "pkg/facts/rules.py:2: facts -> aws_cdk (not the standard library)"),
    # ops: facts and config only, and never the CDK
    ({"ops/doctor.py": "from ..constructs import domain\n"}, "pkg/ops/doctor.py:1: ops -> pkg.constructs (constructs)"),
    ({"ops/doctor.py": "def f():\n    import aws_cdk\n"}, "pkg/ops/doctor.py:2: ops -> aws_cdk (never imported by ops)"),
])
def test_the_checker_catches_each_kind_of_import(tmp_path, files, expected):
    # GIVEN a small package with one forbidden import of one kind
    root = _package(tmp_path, files)
    # WHEN checked / THEN that import is reported with its file, line and both parts
    assert expected in violations(root)


def test_the_checker_allows_every_arrow_the_table_allows(tmp_path):
    # GIVEN a package that uses each allowed arrow, in each kind of import
    root = _package(tmp_path, {
        "facts/rules.py": "import re\nfrom . import naming\nfrom .naming import x\n",
        "facts/naming.py": "from __future__ import annotations\nimport hashlib\nx = 1\n",
        "config/models.py": "import pydantic\nfrom ..facts import rules\nimport pkg.facts.naming\n",
        "constructs/operator.py": "from ..config import models\nfrom ..facts.rules import x\n"
                                  "import importlib\nimportlib.import_module('pkg.facts.rules')\n",
        "charts/endpoint.py": "def f():\n    from ..nvme_agent import cli\n    from pkg.config import models\n",
        "nvme_agent/cli.py": "from . import spec\nimport boto3\n",
        "ops/doctor.py": "import boto3\nfrom ..config import models\nfrom ..facts import naming\n",
        "stack.py": "from .charts import endpoint\nfrom .constructs import operator\nfrom . import app\n",
        "app.py": "from .stack import X\n",
    })
    # THEN nothing is reported
    assert violations(root) == []
