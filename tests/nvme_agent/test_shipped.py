"""The agent as the pods run it: the stripped, compressed bundle through the chart's inline bootstrap."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

from hyperpod_inference.charts.agent_bundle import (
    BOOTSTRAP,
    agent_bundle,
    agent_code_hash,
    bundle_of,
    shipped_source_files,
)
from hyperpod_inference.nvme_agent import model_relative_dir

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
