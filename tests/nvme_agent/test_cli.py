"""The command line (`cli`): the modules a source needs and bad specs."""

from __future__ import annotations

import json
import os

import pytest

from hyperpod_inference.nvme_agent import layout, model_relative_dir

from .conftest import run_agent
from .test_hf import COMMIT


@pytest.mark.parametrize("source,module,env", [
    ("s3", "botocore", {}),
    ("huggingface", "huggingface_hub", {}),
])
def test_missing_module_exits_3_naming_it(tmp_path, source, module, env):
    # GIVEN an environment where the module the source needs cannot be imported
    shadow = tmp_path / "shadow" / module
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(f'raise ImportError("No module named {module}")\n')
    from .conftest import AGENT_PARENT

    spec = {"source": "s3", "bucket": "b-models", "prefix": "x/"} if source == "s3" else {
        "source": "huggingface", "modelId": "acme/x", "revision": COMMIT}

    # WHEN the agent starts
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec), env=env,
                       pythonpath=f"{tmp_path / 'shadow'}{os.pathsep}{AGENT_PARENT}")

    # THEN it exits with code 3 and names the module
    assert result.returncode == 3, result.stderr
    assert module in result.stderr
    assert not list((tmp_path / "nvme").rglob(".complete"))

    # AND WHEN the model is already complete in the cache, the same agent serves the hit without the module
    final = tmp_path / "nvme" / model_relative_dir(spec)
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")
    (final / "manifest.json").write_text(json.dumps({"version": layout.MANIFEST_VERSION, "files": [
        {"path": "config.json", "size": 2, "checksum": {"algo": "size"}}]}))
    (final / ".complete").write_text("1\n")
    hit = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec), env=env,
                    pythonpath=f"{tmp_path / 'shadow'}{os.pathsep}{AGENT_PARENT}")
    assert hit.returncode == 0, hit.stderr
    assert hit.stdout.strip() == str(final)


def test_bad_spec_is_a_usage_error(tmp_path):
    # GIVEN/WHEN a spec with an unknown source THEN exit code 2 with the reason
    result = run_agent("ensure", "--cache-root", tmp_path, "--model", '{"source": "ftp"}')
    assert result.returncode == 2
    assert "source" in result.stderr
