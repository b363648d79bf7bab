"""What the documented commands print: no Node.js banner, no Python byte string, no warning the user cannot act on.
Run as a user would (the JSII silencing variable unset), with the PATH the docs give (node_modules/.bin and the venv's
bin first, as `make` sets it; the venv running the tests, so that `make test-latest` checks its own)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.docs.helpers import REPO, fenced

NOISE = [re.compile(p) for p in (r"(^|\s)b['\"]", r"!!\s+Node", r"end-of-life", r"DeprecationWarning",
                                 r"UserWarning", r"jsii")]


def _user_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JSII_", "PYTHONWARNINGS"))}
    env["PATH"] = os.pathsep.join([str(REPO / "node_modules" / ".bin"), os.path.dirname(sys.executable), env["PATH"]])
    return env


def _noise(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(p.search(line) for p in NOISE)]


def test_the_node_banner_as_jsii_prints_it_is_noise() -> None:
    # GIVEN what jsii prints under an end-of-life Node.js (a Python byte string per line) THEN it is caught
    banner = "b'!!  Node 20 is end-of-life and not supported anymore by this software since 2026-10-30.  !!\\n'"
    assert _noise(banner) == [banner]
    assert _noise('"description": "the MIG profile, e.g. mig-1g.10gb",') == []


@pytest.mark.parametrize("args", [["validate", "hyperpod.yaml"], ["schema"]], ids=["validate", "schema"])
def test_cli_prints_only_its_answer(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "hyperpod_inference", *args], cwd=REPO, env=_user_env(),
                          capture_output=True, text=True, check=True, timeout=120)
    assert _noise(done.stdout + done.stderr) == []
    assert done.stderr == ""


@pytest.mark.e2e  # a real synth through jsii and Node.js
def test_readme_python_snippet_prints_no_banner_or_byte_string(tmp_path) -> None:
    # GIVEN the README's synth snippet run as a script with the documented PATH WHEN it synthesizes THEN it is quiet
    node = REPO / "node_modules" / ".bin" / "node"
    if not node.exists():
        pytest.skip("node_modules is not installed (make deps installs the pinned Node.js)")
    (snippet,) = [b for b in fenced(REPO / "README.md", "python") if "app.synth()" in b]
    script = tmp_path / "app_snippet.py"
    script.write_text(snippet)
    done = subprocess.run([sys.executable, str(script)], cwd=REPO, env=_user_env(), capture_output=True, text=True,
                          check=True, timeout=300)
    assert _noise(done.stdout + done.stderr) == []
