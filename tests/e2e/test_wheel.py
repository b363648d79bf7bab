"""The package as a user gets it: ``python -m build`` makes a wheel; installed into a fresh venv outside the
repository, a user's CDK app that imports it synthesizes, with the NVMe agent and the Lambda handler from the wheel.

One to two minutes on a shared 2-core machine: the build (sdist, then the wheel from the sdist) in an isolated build
env, then a normal ``pip install`` of the wheel and its dependencies into a new venv (pip's configured indexes and
cache), then one in-process synth.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.charts.agent_bundle import AGENT_BUNDLE, agent_bundle

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "hyperpod_inference"
NODE_BIN = REPO / "node_modules" / ".bin"
# what a clean checkout holds besides the sources; never copied into the build folder
_NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", ".venv-*", "node_modules", "cdk.out", ".bench", "build",
                                      "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache")
# a variable that would let the fresh venv see this repository or the test's venv
_LEAKY_VARS = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONUSERBASE")

USER_APP = '''\
"""A user's own CDK app: only the installed package, no file of the repository."""
import sys

import aws_cdk as cdk

import hyperpod_inference
from hyperpod_inference import HyperPodInferenceStack, load_config

app = cdk.App(outdir=sys.argv[1])
stack = HyperPodInferenceStack(app, "UserStack", config=load_config("hyperpod.yaml"))
assembly = app.synth()
stack.write_manifests(assembly.directory)
print("package:", hyperpod_inference.__file__)
'''


def _user_env() -> dict[str, str]:
    """The environment of a command in the fresh venv: nothing that points back at this repository or venv."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_VARS}
    if NODE_BIN.is_dir():  # the project's Node (package.json), as `make` runs it
        env["PATH"] = f"{NODE_BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, text=True, capture_output=True, stdin=subprocess.DEVNULL,
                          timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"`{' '.join(cmd)}` exited {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}"
                    f"\n--- stderr\n{proc.stderr[-6000:]}", pytrace=False)
    return proc


def _agent_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((PACKAGE / "nvme_agent").glob("*.py"))}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``python -m build`` makes from a copy of the sources (the build writes egg-info next to them)."""
    if importlib.util.find_spec("build") is None:
        pytest.fail("the `build` package is missing from this venv (dev extra): pip install -e '.[dev]'", pytrace=False)
    src = tmp_path_factory.mktemp("src") / "hyperpod-inference-cdk"
    shutil.copytree(REPO, src, ignore=_NOT_SOURCES, symlinks=True)
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(src)], cwd=src)
    wheels = sorted(dist.glob("hyperpod_inference_cdk-*-py3-none-any.whl"))
    assert len(wheels) == 1, f"expected one pure-Python wheel in {sorted(p.name for p in dist.iterdir())}"
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (no system site-packages) outside the repository with the wheel and its dependencies."""
    root = tmp_path_factory.mktemp("user-venv")
    assert REPO not in root.parents, "the venv must live outside the repository"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, symlinks=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], cwd=root, env=_user_env())
    return python


def test_wheel_holds_the_nvme_agent_the_lambda_handler_and_the_policy_file(wheel: Path) -> None:
    # GIVEN the built wheel
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    handler = sorted(p.relative_to(REPO).as_posix() for p in (PACKAGE / "lambda").rglob("*.py"))
    agent = [f"hyperpod_inference/nvme_agent/{name}" for name in _agent_files()]
    policies = sorted(p.relative_to(REPO).as_posix() for p in (PACKAGE / "constructs").rglob("*.json"))
    # THEN every agent module, every Lambda handler file and every construct data file is in it
    assert "hyperpod_inference/lambda/verify_endpoint/index.py" in handler
    assert policies and "hyperpod_inference/nvme_agent/cli.py" in agent
    assert sorted(set(handler + agent + policies) - names) == []
    # AND the licence is PEP 639 metadata; no test or repository file slips in
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert not [n for n in names if not n.startswith(("hyperpod_inference/", "hyperpod_inference_cdk-"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_a_user_app_in_a_fresh_venv_synthesizes_with_the_installed_package(installed: Path,
                                                                           tmp_path: Path) -> None:
    # GIVEN a user's app folder outside the repository with a copy of the default config
    app_dir = tmp_path / "user-app"
    app_dir.mkdir()
    (app_dir / "app.py").write_text(USER_APP)
    shutil.copy(REPO / "hyperpod.yaml", app_dir / "hyperpod.yaml")
    out = app_dir / "cdk.out"
    # WHEN it runs with the fresh venv's Python
    proc = _run([str(installed), "app.py", str(out)], cwd=app_dir, env=_user_env())
    # THEN the package came from the venv, not from the repository
    package_line = next(line for line in proc.stdout.splitlines() if line.startswith("package:"))
    package_file = Path(package_line.split(":", 1)[1].strip())
    assert installed.parent.parent in package_file.parents, package_line
    # AND the stack synthesized: its template and the review manifests
    assert (out / "UserStack.template.json").is_file()
    manifests = sorted(p.name for p in (out / "manifests").glob("*.yaml"))
    assert manifests, "no review manifests written"
    # AND the verification Lambda's asset is the handler shipped in the wheel
    handler = (PACKAGE / "lambda" / "verify_endpoint" / "index.py").read_text()
    assets = [p for p in out.glob("asset.*") if p.is_dir() and (p / "index.py").is_file()]
    assert any((p / "index.py").read_text() == handler for p in assets), [p.name for p in assets]
    # AND the NVMe agent's ConfigMap carries the agent's code as the repository builds it (from the installed files)
    config_maps = [doc for path in (out / "manifests").glob("*.yaml") for doc in yaml.safe_load_all(path.read_text())
                   if doc and doc.get("kind") == "ConfigMap" and AGENT_BUNDLE in (doc.get("binaryData") or {})]
    assert config_maps, f"no NVMe agent code ConfigMap in {manifests}"
    assert base64.b64decode(config_maps[0]["binaryData"][AGENT_BUNDLE]) == agent_bundle()


def test_the_installed_console_script_validates_a_config(installed: Path, tmp_path: Path) -> None:
    # GIVEN the `hyperpod-inference` script the wheel installs, and a copy of the default config outside the repository
    shutil.copy(REPO / "hyperpod.yaml", tmp_path / "hyperpod.yaml")
    # WHEN it validates the config
    proc = _run([str(installed.parent / "hyperpod-inference"), "validate", "hyperpod.yaml"], cwd=tmp_path,
                env=_user_env())
    # THEN it reports the file valid
    assert proc.stdout.strip() == "hyperpod.yaml: valid"
