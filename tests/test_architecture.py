"""The import contract of DESIGN.md's parts table, enforced from the code's imports.

Every import in the package is read with ``ast`` (top-level and inside functions, absolute and relative, and
``importlib.import_module("...")`` / ``__import__("...")`` with a literal name) and each arrow between parts is checked
against the table:

| part | may import |
|---|---|
| facts/ | nothing of the package; the standard library only |
| config/ | facts/ |
| plan (assembly/plan.py, assembly/plan_commands.py) | facts/, config/; never aws_cdk, jsii, constructs or cdk8s |
| constructs/ | facts/, config/, the plan's types |
| charts/ | facts/, config/, the plan's types, nvme_agent/ |
| ops/ (init.py, doctor.py, doctor_alarms.py, doctor_rbac.py, policy_eval.py, aws.py, hub.py, kube.py, cli.py, text.py) | facts/, config/, the plan; never aws_cdk, jsii, constructs or cdk8s |
| composition (the rest of assembly/, inference.py, stack.py, app.py, __init__.py, __main__.py: each named in
  ``MODULES``) | all |
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

#: The folders of the package that are parts of their own (``assembly`` holds the plan and the composition).
PARTS = ("facts", "config", "constructs", "charts", "nvme_agent", "lambda", "ops")
COMPOSITION = "composition"
PLAN = "plan"
#: The plan's modules (relative to the package): pure, tested without jsii.
PLAN_FILES = {"assembly/plan.py", "assembly/plan_commands.py"}
ALLOWED: dict[str, set[str]] = {
    "facts": set(),
    "config": {"facts"},
    PLAN: {"facts", "config"},
    "constructs": {"facts", "config", PLAN},
    "charts": {"facts", "config", PLAN, "nvme_agent"},
    "nvme_agent": set(),
    "lambda": set(),
    "ops": {"facts", "config", PLAN},
    COMPOSITION: {*PARTS, PLAN, COMPOSITION},
}
STDLIB_ONLY = {"facts"}
_JSII = {"aws_cdk", "jsii", "constructs", "cdk8s", "cdk8s_plus_28", "cdk_nag"}
#: Third-party libraries a part never imports (``ops`` calls AWS with boto3; neither it nor the plan starts jsii).
NEVER_IMPORTS: dict[str, set[str]] = {"ops": _JSII, PLAN: _JSII}
#: The modules of the parts that name them (a new module must be added here): every composition module by name.
MODULES: dict[str, set[str]] = {
    "ops": {"ops/__init__.py", "ops/aws.py", "ops/cli.py", "ops/doctor.py", "ops/doctor_alarms.py", "ops/doctor_rbac.py",
            "ops/hub.py", "ops/init.py", "ops/kube.py", "ops/policy_eval.py", "ops/text.py"},
    PLAN: PLAN_FILES,
    COMPOSITION: {"__init__.py", "__main__.py", "app.py", "inference.py", "stack.py", "assembly/__init__.py",
                  "assembly/aws_side.py", "assembly/delivery.py", "assembly/homes.py", "assembly/kubernetes_side.py",
                  "assembly/limits.py", "assembly/operator_install.py", "assembly/outputs.py",
                  "assembly/ownership.py", "assembly/props.py", "assembly/review.py"},
}
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
    if rel.as_posix() in PLAN_FILES:
        return PLAN
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in PARTS else COMPOSITION


def part_of_module(package: str, dotted: str) -> str | None:
    """The part a dotted module belongs to; None for a module outside the package."""
    names = dotted.split(".")
    if names[0] != package:
        return None
    if "/".join(names[1:]) + ".py" in PLAN_FILES:
        return PLAN
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


def _is_module(package_dir: Path, dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of the package (not a name inside a module)."""
    path = package_dir.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or path.is_dir()


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
            # ``from pkg import charts`` / ``from . import plan_commands`` import modules by name: each is an arrow
            modules = [f"{base}.{a.name}" for a in node.names if a.name != "*"
                       and _is_module(package_dir, f"{base}.{a.name}")]
            arrows += [Arrow(source, node.lineno, target) for target in modules or [base]]
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
    assert folders == {*PARTS, "assembly"}


def test_the_parts_that_name_their_modules_hold_exactly_those():
    # GIVEN the table's module lists / THEN each such part holds exactly the modules it names (a new composition
    # module must be placed in the table by name: there is no "any other module")
    for part, modules in MODULES.items():
        found = {p.relative_to(PACKAGE_DIR).as_posix() for p in PACKAGE_DIR.rglob("*.py")
                 if part_of_file(PACKAGE_DIR, p) == part}
        assert found == modules, part


def _jsii_loaded_after(code: str) -> tuple[str, list[str]]:
    """Run ``code`` in a fresh interpreter from the repository root: (what it printed, the modules of aws_cdk,
    jsii, constructs or cdk8s it loaded)."""
    import json
    import subprocess

    probe = (f"{code}\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('aws_cdk', 'jsii', 'constructs', 'cdk8s'))))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=PACKAGE_DIR.parent, check=True)
    *printed, loaded = done.stdout.strip().splitlines()
    return "\n".join(printed), json.loads(loaded)


def test_ops_never_loads_aws_cdk_or_jsii():
    # GIVEN a fresh interpreter / WHEN every ops module is imported and the CLI parser is built
    _, loaded = _jsii_loaded_after("import argparse\n"
                                   "from hyperpod_inference.ops import aws, cli, doctor, init, kube\n"
                                   "p = argparse.ArgumentParser(); cli.add_parsers(p.add_subparsers())")
    # THEN none of aws_cdk, jsii, constructs or cdk8s was loaded
    assert loaded == []


def test_the_plan_never_loads_aws_cdk_or_jsii():
    # GIVEN a fresh interpreter / WHEN the plan is imported and the default config is planned
    printed, loaded = _jsii_loaded_after(
        "from hyperpod_inference.config.loader import load_config\n"
        "from hyperpod_inference.assembly import plan\n"
        "config = load_config('hyperpod.yaml')\n"
        "print(len(plan.plan_config(config, plan.PlanContext.of(config, stack_name='HyperPodInference')).endpoints))")
    # THEN every endpoint got a plan, and none of aws_cdk, jsii, constructs or cdk8s was loaded
    assert int(printed) >= 1 and loaded == []


def test_the_fresh_interpreter_probe_sees_a_jsii_import():
    _, loaded = _jsii_loaded_after("import constructs")
    assert "constructs" in loaded


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for part in ("", *PARTS, "assembly"):
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
    # the plan: facts and config only, never the CDK, never the rest of the composition
    ({"assembly/plan.py": "import jsii\n"}, "pkg/assembly/plan.py:1: plan -> jsii (never imported by plan)"),
    ({"assembly/plan.py": "from .delivery import ManifestDelivery\n"},
     "pkg/assembly/plan.py:1: plan -> pkg.assembly.delivery (composition)"),
    ({"assembly/plan_commands.py": "from ..charts import endpoint\n"},
     "pkg/assembly/plan_commands.py:1: plan -> pkg.charts (charts)"),
    # constructs and charts may use the plan's types, never the rest of the composition
    ({"charts/endpoint.py": "from ..assembly.aws_side import AwsValues\n"},
     "pkg/charts/endpoint.py:1: charts -> pkg.assembly.aws_side (composition)"),
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
        "ops/doctor.py": "import boto3\nfrom ..config import models\nfrom ..facts import naming\n"
                         "from ..assembly import plan\n",
        "assembly/plan.py": "from ..config import models\nfrom . import plan_commands\n",
        "assembly/plan_commands.py": "import shlex\nfrom ..facts import naming\n",
        "charts/hf_token.py": "from ..assembly.plan import token_names\n",
        "assembly/aws_side.py": "import aws_cdk\nfrom .plan import EndpointPlan\nfrom ..constructs import irsa\n",
        "stack.py": "from .charts import endpoint\nfrom .constructs import operator\nfrom . import app\n",
        "app.py": "from .stack import X\n",
    })
    # THEN nothing is reported
    assert violations(root) == []


def test_the_facade_stays_a_facade():
    # GIVEN inference.py / THEN HyperPodInference is at most 350 lines (the composition lives in assembly/), and
    # what add_endpoint returns is frozen
    tree = ast.parse((PACKAGE_DIR / "inference.py").read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    facade = classes["HyperPodInference"]
    assert facade.end_lineno - facade.lineno + 1 <= 350
    (decorator,) = classes["InferenceEndpoint"].decorator_list
    assert isinstance(decorator, ast.Call) and any(k.arg == "frozen" and k.value.value is True
                                                   for k in decorator.keywords)
