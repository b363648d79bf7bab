"""The public API is imported lazily: loading or validating a config never starts aws-cdk-lib, cdk8s or jsii."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import hyperpod_inference

REPO = Path(__file__).resolve().parents[1]
# top-level modules that load a jsii assembly (and so start the Node kernel) or are the kernel itself
HEAVY = ("aws_cdk", "jsii", "cdk8s", "cdk8s_plus_28", "cdk_nag", "constructs")
# names that must be importable from the package root
REQUIRED = {"HyperPodInference", "InferenceEndpoint", "Endpoint", "load_config", "HyperPodConfig", "ConfigError",
            "HyperPodInferenceStack", "EndpointChart", "OperatorChart", "DataCaptureStorage", "CustomDomain"}


def _fresh_python(code: str) -> subprocess.CompletedProcess[str]:
    """Run code in a new interpreter (nothing imported yet) from the repository root; fail on a non-zero exit."""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def _imported_heavy_modules(importtime_stderr: str) -> list[str]:
    """Top-level packages among HEAVY named in ``python -X importtime`` output (``import time: self | cum | name``)."""
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in importtime_stderr.splitlines()
             if line.startswith("import time:")}
    return sorted(names & set(HEAVY))


@pytest.fixture
def chart_mode_config(tmp_path: Path) -> Path:
    """The default config with the operator installed as a chart (the mode whose rules read the image tables)."""
    data = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
    data["operator"].update({"install": "chart", "crdSource": "crds"})  # the folder is read at synth, not at load
    path = tmp_path / "chart.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_importing_the_package_and_loading_configs_imports_no_cdk_cdk8s_or_jsii(chart_mode_config: Path) -> None:
    # GIVEN a fresh interpreter
    # WHEN it imports the package, reads a public config name and loads the default and a chart-mode config
    proc = _fresh_python(
        "import sys, hyperpod_inference\n"
        "from hyperpod_inference import Endpoint, HyperPodConfig, load_config\n"
        f"load_config({str(REPO / 'hyperpod.yaml')!r}); load_config({str(chart_mode_config)!r})\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n")
    # THEN none of aws_cdk, jsii, cdk8s, cdk8s-plus, cdk-nag or constructs was imported
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("args", [["validate", "hyperpod.yaml"], ["validate", "tests/fixtures/files.yaml"],
                                  ["schema"]], ids=["validate-default", "validate-files", "schema"])
def test_the_validate_and_schema_commands_import_no_cdk_or_jsii_and_print_no_node_banner(args: list[str]) -> None:
    # GIVEN the command as the docs show it, in a fresh interpreter, with jsii's end-of-life silencing NOT set
    env = {k: v for k, v in os.environ.items() if k != "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"}
    # WHEN it runs (with -X importtime listing every module it imports)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "hyperpod_inference", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    # THEN it succeeds without importing aws_cdk, jsii or any other jsii library
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _imported_heavy_modules(proc.stderr) == []
    # AND prints no Node end-of-life banner
    assert "end-of-life" not in proc.stdout + proc.stderr
    if args[0] == "schema":  # AND the schema is JSON on stdout
        assert json.loads(proc.stdout)["title"]
    else:
        assert proc.stdout.strip().startswith(f"{args[1]}: valid")


def test_a_construct_imported_from_the_package_root_starts_jsii_without_the_node_banner() -> None:
    # GIVEN a fresh interpreter with jsii's end-of-life silencing unset (whatever Node is first on PATH)
    env = {k: v for k, v in os.environ.items() if k != "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"}
    # WHEN it takes a construct from the package root (which imports aws-cdk-lib and starts the jsii kernel)
    proc = subprocess.run([sys.executable, "-c", "from hyperpod_inference import HyperPodInferenceStack"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300)
    # THEN the import works and no Node end-of-life banner is printed
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "end-of-life" not in proc.stdout + proc.stderr


def test_the_public_names_are_listed_and_unknown_names_raise_attribute_error() -> None:
    # GIVEN the package's __all__
    # THEN it holds the names the docs use, dir() shows them, and an unknown name is an AttributeError
    assert REQUIRED <= set(hyperpod_inference.__all__)
    assert sorted(hyperpod_inference.__all__) == sorted(hyperpod_inference._EXPORTS)
    assert set(hyperpod_inference.__all__) <= set(dir(hyperpod_inference))
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        hyperpod_inference.NoSuchThing  # noqa: B018
    # AND a subpackage still imports through the package root
    from hyperpod_inference import nvme_agent

    assert nvme_agent.__name__ == "hyperpod_inference.nvme_agent"


@pytest.mark.parametrize("name", hyperpod_inference.__all__)
def test_each_public_name_resolves_to_the_object_its_module_defines(name: str) -> None:
    # GIVEN a public name WHEN it is read from the package root
    value = getattr(hyperpod_inference, name)
    # THEN it is the very object of the module that defines it
    module = importlib.import_module(hyperpod_inference._EXPORTS[name], "hyperpod_inference")
    assert value is getattr(module, name)


def test_the_editor_imports_name_the_same_module_as_the_lazy_table() -> None:
    # GIVEN the ``if TYPE_CHECKING:`` imports of the package's __init__.py (what editors and type checkers see)
    tree = ast.parse((REPO / "hyperpod_inference" / "__init__.py").read_text())
    block = next(node for node in tree.body
                 if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
    seen = {alias.name: "." * imp.level + (imp.module or "") for imp in block.body if isinstance(imp, ast.ImportFrom)
            for alias in imp.names}
    # THEN they import exactly the public names, each from the module the lazy table loads it from
    assert seen == hyperpod_inference._EXPORTS
