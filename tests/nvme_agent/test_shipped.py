"""The agent as the pods run it: a self-contained flat package, shipped as the stripped, compressed bundle through the
chart's inline bootstrap."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import subprocess
import sys

from hyperpod_inference import nvme_agent
from hyperpod_inference.charts.agent_bundle import (
    BOOTSTRAP,
    agent_bundle,
    agent_code_hash,
    bundle_of,
    shipped_source_files,
)
from hyperpod_inference.nvme_agent import agent_source_files, model_relative_dir

from .conftest import agent_env
from .test_hf import make_repo
from .test_hf import spec_of as hf_spec
from .test_s3 import put_model
from .test_s3 import spec_of as s3_spec


def bootstrap(bundle_path, code_hash, *args, env=None, cwd=None):
    """``python3 -I -c BOOTSTRAP <hash> <bundle> <args>`` as the containers run it (no PYTHONPATH: the agent comes from
    the bundle only)."""
    run_env = agent_env(env)
    run_env.pop("PYTHONPATH")
    return subprocess.run([sys.executable, "-I", "-c", BOOTSTRAP, code_hash, str(bundle_path), *map(str, args)],
                          env=run_env, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_shipped_agent_runs_ensure_and_verify_for_every_source(tmp_path, s3, bucket, aws_env, hub, hf_env):
    # GIVEN the bundle the ConfigMap carries, mounted as a file, and a model in each source
    bundle = tmp_path / "agent.z"
    bundle.write_bytes(agent_bundle())
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")
    put_model(s3, bucket)
    repo = make_repo(hub)
    specs = [{"source": "local", "path": str(src)}, s3_spec(bucket), hf_spec(repo)]
    root = tmp_path / "nvme"

    for spec in specs:
        # WHEN the bootstrap runs `ensure`, then `verify`, from a directory without the package
        result = bootstrap(bundle, agent_code_hash(), "ensure", "--cache-root", root, "--model", json.dumps(spec),
                           env={**aws_env, **hf_env}, cwd=tmp_path)

        # THEN the model is complete and verifies
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == str(root / model_relative_dir(spec))
        result = bootstrap(bundle, agent_code_hash(), "verify", "--cache-root", root, "--model", json.dumps(spec),
                           cwd=tmp_path)
        assert result.returncode == 0 and json.loads(result.stdout) == {"state": "ok", "corrupt": []}, result.stderr


def test_a_code_hash_mismatch_refuses_to_run(tmp_path):
    # GIVEN a mounted bundle whose agent was changed (a ConfigMap replaced in the namespace): its `ensure` would
    # leave a marker
    marker = tmp_path / "ran"
    files = shipped_source_files()
    files["cli.py"] += f"\nopen({str(marker)!r}, 'w').close()\n"
    bundle = tmp_path / "agent.z"
    bundle.write_bytes(bundle_of(files))
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")

    # WHEN the pod's bootstrap runs it with the hash its spec names
    result = bootstrap(bundle, agent_code_hash(), "ensure", "--cache-root", tmp_path / "nvme", "--model",
                       json.dumps({"source": "local", "path": str(src)}), cwd=tmp_path)

    # THEN it refuses with exit code 6, naming the mismatch; none of the mounted code ran
    assert result.returncode == 6
    assert "nvme-agent: code hash mismatch" in result.stderr
    assert not marker.exists() and not (tmp_path / "nvme").exists()
    # AND the same bundle runs when the spec names its hash (the marker shows its code is what runs)
    ok = bootstrap(bundle, hashlib.sha256(bundle.read_bytes()).hexdigest(), "check", "--cache-root",
                   tmp_path / "nvme", "--models-file", os.devnull, cwd=tmp_path)
    assert ok.returncode == 0 and marker.exists(), ok.stderr


def test_agent_source_files_is_a_self_contained_flat_package():
    # GIVEN the files that go into the ConfigMap
    files = agent_source_files()
    here = os.path.dirname(nvme_agent.__file__)

    # THEN they are every .py file of the package, with valid ConfigMap keys, and nothing else is in the package
    assert "__main__.py" in files and "__init__.py" in files
    assert set(files) == {n for n in os.listdir(here) if n.endswith(".py")}
    assert not [n for n in os.listdir(here) if n != "__pycache__" and not n.endswith(".py")]
    assert all(re.fullmatch(r"[-._a-zA-Z0-9]+", k) for k in files)
    # AND they import only the stdlib, botocore, huggingface_hub, awscrt and isal (optional:
    # imported in a try / except ImportError), and each other (relatively)
    allowed_third_party = {"botocore", "huggingface_hub", "awscrt", "isal"}
    import sys
    for name, source in files.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) else [])
            for mod in mods:
                top = mod.split(".")[0]
                assert top in sys.stdlib_module_names or top in allowed_third_party, (name, mod)
