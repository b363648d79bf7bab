"""No command the docs show prints jsii's Node end-of-life banner.

`make` (and `npx cdk`) run the Node 22 that package.json pins, ahead of the system's on PATH; `app.py` silences the
banner for an older Node that runs `cdk synth` anyway. (`python -m hyperpod_inference validate|schema` starts no jsii
at all: tests/test_public_api.py.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
NODE_BIN = REPO / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
SILENCE = "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"
JSII_SUPPORTED_MAJORS = (22, 24)  # jsii: ^22 and ^24 (it dropped Node 20 on 2026-10-30)


def _node_major(node: str) -> int:
    out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    match = re.fullmatch(r"v(\d+)\.\d+\.\d+", out)
    assert match, out
    return int(match.group(1))


def _cdk_synth(path: str, outdir: Path, **env_vars: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != SILENCE}
    env.update(PATH=path, CDK_DISABLE_CLI_TELEMETRY="true", **env_vars)
    proc = subprocess.run([str(NODE_BIN / "cdk"), "synth", "--no-notices", "-q", "-o", str(outdir)], cwd=REPO,
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


@pytest.fixture(scope="module")
def project_node() -> Path:
    node = NODE_BIN / "node"
    if not node.exists():
        pytest.fail(f"{node.relative_to(REPO)} is missing: run `npm install` (package.json pins Node 22)",
                    pytrace=False)
    return node


def test_package_json_pins_a_node_that_jsii_supports(project_node: Path) -> None:
    # GIVEN the Node that package.json pins, as npm installed it
    pinned = json.loads((REPO / "package.json").read_text())["devDependencies"]["node"]
    # THEN it is an exact version of a major jsii supports, and it is the one installed
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), pinned
    assert int(pinned.split(".")[0]) in JSII_SUPPORTED_MAJORS
    assert _node_major(str(project_node)) == int(pinned.split(".")[0])


def test_make_style_cdk_synth_runs_jsii_on_the_pinned_node_without_the_banner(project_node: Path,
                                                                              tmp_path: Path) -> None:
    # GIVEN the PATH `make synth` sets (venv, then node_modules/.bin, then the system's), and app.py's silencing
    # disabled (an empty value lists no Node major), so only the Node that runs jsii decides
    path = os.pathsep.join([str(VENV_BIN), str(NODE_BIN), os.environ.get("PATH", "")])
    # WHEN the default app is synthesized
    proc = _cdk_synth(path, tmp_path / "out", **{SILENCE: ""})
    # THEN no end-of-life banner was printed
    assert "end-of-life" not in proc.stdout + proc.stderr
    assert (tmp_path / "out" / "HyperPodInference.template.json").is_file()


def test_cdk_synth_under_an_end_of_life_node_prints_no_banner(tmp_path: Path) -> None:
    # GIVEN the system's Node first on PATH (no node_modules/.bin), as a plain `cdk synth` outside make may run it
    path = os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])
    system_node = shutil.which("node", path=path)
    if system_node is None or _node_major(system_node) in JSII_SUPPORTED_MAJORS:
        pytest.skip(f"the system's Node ({system_node}) is not one jsii calls end-of-life: nothing to silence")
    # WHEN the default app is synthesized with it (the silencing variable unset)
    proc = _cdk_synth(path, tmp_path / "out")
    # THEN app.py's silencing kept the banner out of the output
    assert "end-of-life" not in proc.stdout + proc.stderr
