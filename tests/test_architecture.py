"""The import contract of DESIGN.md's parts table, enforced from the code's imports.

Every import in the package is read with ``ast`` (top-level and inside functions, absolute and relative, and
``importlib.import_module("...")`` / ``__import__("...")`` with a literal name) and each arrow between parts is checked
against the table:

| part | may import |
|---|---|
| facts/ | nothing of the package; the standard library only |
| config/ | facts/ |
| plan/ | facts/, config/; never aws_cdk, jsii, constructs or cdk8s |
| constructs/ | facts/, config/, plan/ |
| charts/ | facts/, config/, plan/, nvme_agent/ |
| ops/ (init.py, doctor/ (base, runner and one module per check family), policy_eval.py, aws.py, hub.py, kube.py, cli.py,
  text.py) | facts/, config/, the plan; never aws_cdk, jsii, constructs or cdk8s |
| composition (assembly/, inference.py, stack.py, app.py, __init__.py, __main__.py: each named in ``MODULES``) | all |
| nvme_agent/, lambda/ | nothing of the package |

The pure builders of the AWS side (``JSII_FREE``: dashboard layout, Prometheus rules, Grafana JSON) import neither
aws_cdk nor constructs, jsii or cdk8s, so they are tested without a jsii kernel.

The import graph of the package (every module a node, every import an arrow, ``TYPE_CHECKING`` ones included) has
no arrow running upward (``LAYERS``: a module imports only modules of its own layer or below) and no circle of more
than ``MAX_CIRCLE`` modules or across folders, and no module of the package is above ``MAX_MODULE_LINES`` lines.
"""

from __future__ import annotations

import ast
import posixpath
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "hyperpod_inference"

#: The folders of the package that are parts of their own (``assembly`` holds the composition).
PARTS = ("facts", "config", "plan", "constructs", "charts", "nvme_agent", "lambda", "ops")
COMPOSITION = "composition"
PLAN = "plan"
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
    "ops": {"ops/__init__.py", "ops/aws.py", "ops/cli.py", "ops/hub.py", "ops/init.py", "ops/kube.py", "ops/policy_eval.py",
            "ops/text.py", "ops/doctor/__init__.py", "ops/doctor/base.py", "ops/doctor/runner.py",
            "ops/doctor/account.py", "ops/doctor/cluster.py", "ops/doctor/kubernetes.py", "ops/doctor/operator.py",
            "ops/doctor/capture.py", "ops/doctor/domain.py", "ops/doctor/model.py",
            "ops/doctor/model_s3.py"},
    PLAN: {"plan/__init__.py", "plan/cache.py", "plan/capture.py", "plan/commands.py", "plan/context.py",
           "plan/domain.py", "plan/endpoints.py", "plan/gateways.py", "plan/observability.py", "plan/operator.py", "plan/outputs.py",
           "plan/ownership.py", "plan/shared.py", "plan/stack.py", "plan/warnings.py"},
    COMPOSITION: {"__init__.py", "__main__.py", "app.py", "inference.py", "stack.py", "assembly/__init__.py",
                  "assembly/aws_side.py", "assembly/delivery.py", "assembly/homes.py", "assembly/kubernetes_side.py",
                  "assembly/limits.py", "assembly/operator_install.py", "assembly/outputs.py",
                  "assembly/ownership.py", "assembly/props.py", "assembly/review.py"},
}
#: Modules (relative to the package) that must not import the CDK or jsii.
JSII_FREE = ("constructs/cloudwatch_layout.py", "constructs/prometheus_rules.py", "constructs/grafana_dashboard.py")
JSII_MODULES = {"aws_cdk", "constructs", "jsii", "cdk8s", "cdk8s_plus_28", "cdk_nag"}
_IMPORT_FUNCTIONS = {"import_module", "__import__"}
#: The layers of the package, bottom first, by folder (or top-level module): a module imports modules of its own
#: layer or below, never above (the parts table says which parts of one layer may import each other).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"facts", "nvme_agent", "lambda"}),
    frozenset({"config"}),
    frozenset({"plan"}),
    frozenset({"constructs", "charts", "ops"}),
    frozenset({"assembly"}),
    frozenset({"inference.py"}),
    frozenset({"stack.py"}),
    frozenset({"app.py"}),
    frozenset({"__main__.py", "__init__.py"}),
)
#: The plan's values handed to the parts that realize it, by module: each of their fields is read there.
REALIZED_PLAN_VALUES: dict[str, tuple[str, ...]] = {
    "plan/stack.py": ("StackPlan", "ConfigPlan"),
    "plan/shared.py": ("SharedPlan", "SharedTokenSync", "WarmGroupPlan", "TriggerNeeds"),
    "plan/endpoints.py": ("EndpointPlan", "TokenSyncPlan", "ReaderPlan", "AgentCodePlan", "VerifyPlan", "RolePlan",
                          "ModelRead", "SecretRead"),
    "plan/operator.py": ("OperatorPlan",),
    "plan/gateways.py": ("GatewayPlan",),
    "plan/capture.py": ("CapturePlan", "CaptureAnalyticsPlan"),
    "plan/domain.py": ("DomainPlan",),
    "plan/observability.py": ("ObservabilityPlan",),
    "plan/context.py": ("NamespaceUnitPlan", "DeliveryPlan"),
}
#: Where the plan is realized: the composition, the constructs and the charts.
REALIZERS = ("assembly", "inference.py", "constructs", "charts")
#: The most modules one import circle may hold; a circle never spans two folders.
MAX_CIRCLE = 4
#: The most lines one module of the package may hold (the NVMe agent's and the Lambda handler's included): a module
#: that grows past it is split along a seam of its own, never exempted.
MAX_MODULE_LINES = 650


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
            # ``from pkg import charts`` / ``from . import commands`` import modules by name: each is an arrow
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


def _module_file(package_dir: Path, dotted: str) -> str | None:
    """The file (relative to the package) of the module ``dotted`` names, or of the module holding the name it
    names; None outside the package."""
    names = dotted.split(".")
    if names[0] != package_dir.name:
        return None
    while names:
        path = package_dir.parent.joinpath(*names)
        for candidate in (path.with_suffix(".py"), path / "__init__.py"):
            if candidate.is_file():
                return candidate.relative_to(package_dir).as_posix()
        names.pop()
    return None


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Every module of the package (its file, relative to the package) -> the modules of the package it imports."""
    graph: dict[str, set[str]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).as_posix()
        targets = {_module_file(package_dir, a.target) for a in imports_of(package_dir, path)}
        graph[rel] = {t for t in targets if t is not None and t != rel}
    return graph


def layer_of(rel: str) -> int:
    head = rel.split("/")[0]
    return next(i for i, members in enumerate(LAYERS) if head in members)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module of a higher layer, as ``source -> target``."""
    return sorted(f"{source} -> {target}" for source, targets in graph.items() for target in targets
                  if layer_of(target) > layer_of(source))


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of the graph: each strongly connected component of more than one module, sorted (Tarjan's
    algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def circle_problems(graph: dict[str, set[str]]) -> list[str]:
    """Every circle of more than :data:`MAX_CIRCLE` modules or across folders, naming its modules."""
    problems = []
    for circle in import_circles(graph):
        folders = {posixpath.dirname(m) for m in circle}
        if len(folders) > 1:
            problems.append(f"a circle across folders {sorted(folders)}: {', '.join(circle)}")
        elif len(circle) > MAX_CIRCLE:
            problems.append(f"a circle of {len(circle)} modules (at most {MAX_CIRCLE}): {', '.join(circle)}")
    return problems


def dataclass_fields(path: Path, name: str) -> list[str]:
    """The fields (annotated names, ``ClassVar`` left out) of class ``name`` in ``path``."""
    (cls,) = [n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef) and n.name == name]
    return [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            and "ClassVar" not in ast.unparse(n.annotation)]


def unread_plan_fields(package_dir: Path, values: dict[str, tuple[str, ...]], realizers: tuple[str, ...]) -> list[str]:
    """Every field of the plan's ``values`` that no module of ``realizers`` reads (as an attribute), as
    ``Class.field``."""
    read: set[str] = set()
    for head in realizers:
        target = package_dir / head
        for path in ([target] if target.is_file() else sorted(target.rglob("*.py"))):
            read |= {n.attr for n in ast.walk(ast.parse(path.read_text()))
                     if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    return [f"{name}.{f}" for rel, names in values.items() for name in names
            for f in dataclass_fields(package_dir / rel, name) if f not in read]


def long_modules(package_dir: Path, limit: int) -> dict[str, int]:
    """Every module of the package above ``limit`` lines -> its lines."""
    sizes = {path.relative_to(package_dir).as_posix(): len(path.read_text().splitlines())
             for path in sorted(package_dir.rglob("*.py"))}
    return {rel: lines for rel, lines in sizes.items() if lines > limit}


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
    root = _package(tmp_path, {"constructs/cloudwatch_layout.py": "from aws_cdk import Duration\n"})
    assert jsii_imports(root, "constructs/cloudwatch_layout.py") == ["pkg/constructs/cloudwatch_layout.py:1: aws_cdk"]


def test_the_package_keeps_the_import_contract():
    # GIVEN every module of the package / WHEN its imports are read / THEN no arrow breaks the parts table
    assert PACKAGE_DIR.is_dir()
    assert violations(PACKAGE_DIR) == []


def test_no_import_runs_upward():
    # GIVEN the package's import graph / THEN every module imports only modules of its own layer or below (the
    # plan never the composition, a part never the facade, the facade never the stack)
    graph = import_graph(PACKAGE_DIR)
    assert {layer_of(m) for m in graph}  # every module has a layer (a new folder must be placed in LAYERS)
    assert upward_imports(graph) == []


def test_no_import_circle_is_large_or_crosses_folders():
    # GIVEN the package's import graph / THEN each circle of imports stays within one folder and holds at most
    # MAX_CIRCLE modules
    assert circle_problems(import_graph(PACKAGE_DIR)) == []


def test_no_module_of_the_package_is_above_650_lines():
    # GIVEN every module of the package, the NVMe agent's and the Lambda handler's included / THEN none is above
    # MAX_MODULE_LINES lines (there is no list of exceptions)
    assert long_modules(PACKAGE_DIR, MAX_MODULE_LINES) == {}


def test_the_size_check_names_a_long_module_anywhere_in_the_package(tmp_path):
    root = _package(tmp_path, {"nvme_agent/big.py": "x = 1\n" * 651, "charts/ok.py": "x = 1\n" * 650})
    assert long_modules(root, MAX_MODULE_LINES) == {"nvme_agent/big.py": 651}


def test_the_graph_checks_see_an_upward_import_and_each_kind_of_circle(tmp_path):
    # GIVEN a package where a chart imports the composition, two folders import each other (through a
    # TYPE_CHECKING import), and five modules of one folder import each other in a ring
    ring = {f"charts/m{i}.py": f"from . import m{(i + 1) % 5}\n" for i in range(5)}
    root = _package(tmp_path, {
        **ring,
        "charts/endpoint.py": "from ..assembly.plan import X\n",
        "assembly/plan.py": "X = 1\n",
        "assembly/ownership.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..inference import F\n",
        "inference.py": "from .assembly.ownership import claim\n",
    })
    graph = import_graph(root)
    # THEN the upward imports are named
    assert upward_imports(graph) == ["assembly/ownership.py -> inference.py", "charts/endpoint.py -> assembly/plan.py"]
    # AND so are the circle across folders and the circle of five
    problems = circle_problems(graph)
    assert problems == ["a circle across folders ['', 'assembly']: assembly/ownership.py, inference.py",
                        "a circle of 5 modules (at most 4): " + ", ".join(sorted(ring))]
    # AND a small circle inside one folder is allowed
    assert circle_problems({"a/x.py": {"a/y.py"}, "a/y.py": {"a/x.py"}}) == []


def test_every_field_of_the_plan_is_read_where_the_plan_is_realized():
    # GIVEN the plan's values the composition, constructs and charts get (the shared plan's token syncs, gated
    # namespaces and custom service accounts among them) / THEN each field is read there: the plan decides nothing
    # that is recomputed or left unused
    assert unread_plan_fields(PACKAGE_DIR, REALIZED_PLAN_VALUES, REALIZERS) == []


def test_the_field_check_sees_a_field_nobody_reads(tmp_path):
    root = _package(tmp_path, {
        "plan/shared.py": "from dataclasses import dataclass\nfrom typing import ClassVar\n@dataclass(frozen=True)\n"
                          "class SharedPlan:\n    KIND: ClassVar[str] = 'x'\n    warm: int\n    gated: tuple\n",
        "assembly/operator_install.py": "def f(shared):\n    return shared.warm\n",
    })
    assert unread_plan_fields(root, {"plan/shared.py": ("SharedPlan",)}, ("assembly",)) == ["SharedPlan.gated"]


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
                                   "from hyperpod_inference.ops import aws, cli, init, kube\n"
                                   "from hyperpod_inference.ops.doctor import runner\n"
                                   "p = argparse.ArgumentParser(); cli.add_parsers(p.add_subparsers())")
    # THEN none of aws_cdk, jsii, constructs or cdk8s was loaded
    assert loaded == []


def test_the_plan_never_loads_aws_cdk_or_jsii():
    # GIVEN a fresh interpreter / WHEN the plan is imported and the default config is planned
    printed, loaded = _jsii_loaded_after(
        "from hyperpod_inference.config.loader import load_config\n"
        "from hyperpod_inference import plan\n"
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
    ({"plan/endpoints.py": "import jsii\n"}, "pkg/plan/endpoints.py:1: plan -> jsii (never imported by plan)"),
    ({"plan/endpoints.py": "from ..assembly.delivery import ManifestDelivery\n"},
     "pkg/plan/endpoints.py:1: plan -> pkg.assembly.delivery (composition)"),
    ({"plan/commands.py": "from ..charts import endpoint\n"},
     "pkg/plan/commands.py:1: plan -> pkg.charts (charts)"),
    ({"plan/stack.py": "from ..inference import HyperPodInference\n"},
     "pkg/plan/stack.py:1: plan -> pkg.inference (composition)"),
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
                         "from .. import plan\n",
        "plan/endpoints.py": "from ..config import models\nfrom . import commands\n",
        "plan/commands.py": "import shlex\nfrom ..facts import naming\n",
        "charts/hf_token.py": "from ..plan.endpoints import token_names\n",
        "assembly/aws_side.py": "import aws_cdk\nfrom ..plan.endpoints import EndpointPlan\nfrom ..constructs import irsa\n",
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
