"""Eviction, leases, warm mode / readiness, module checks and the package contract."""

from __future__ import annotations

import ast
import json
import os
import re
import time

import pytest

from hyperpod_inference import nvme_agent
from hyperpod_inference.nvme_agent import agent_source_files, cache, layout, leases, model_relative_dir, space, warm
from hyperpod_inference.nvme_agent.config import AgentConfig

from .conftest import free_port, run_agent
from .test_hf import COMMIT, make_repo
from .test_hf import spec_of as hf_spec
from .test_s3 import put_model
from .test_s3 import spec_of as s3_spec


def test_lru_eviction_evicts_oldest_unleased_and_skips_leased(s3, bucket, tmp_path, monkeypatch):
    # GIVEN three complete models: the oldest one leased by a running pod, then an unleased one, then a recent one
    root = str(tmp_path / "nvme")
    finals = {}
    for name in ("leased", "old", "recent", "target"):
        put_model(s3, bucket, prefix=f"{name}/", files={"w.safetensors": os.urandom(100_000)})
    for name, ts in (("leased", 1000.0), ("old", 2000.0), ("recent", 3000.0)):
        finals[name] = cache.ensure(root, s3_spec(bucket, f"{name}/"))
        with open(os.path.join(finals[name], layout.LAST_USED), "w") as fh:
            fh.write(str(ts))
    leases.touch_lease(finals["leased"], "pod-a")
    # AND a disk with room for only 60 kB more
    monkeypatch.setenv(space.FAKE_DISK_ENV, str(space.tree_bytes(root) + 60_000))

    # WHEN a fourth 100 kB model is ensured
    target = cache.ensure(root, s3_spec(bucket, "target/"))

    # THEN the least recently used unleased model was evicted, the leased one was skipped, the rest kept
    assert layout.is_complete(target)
    assert not os.path.exists(finals["old"])
    assert layout.is_complete(finals["leased"])
    assert layout.is_complete(finals["recent"])
    assert not os.listdir(os.path.join(root, ".trash"))


def test_expired_lease_does_not_protect_and_locked_model_is_skipped(s3, bucket, tmp_path, monkeypatch):
    # GIVEN two complete models: one with a lease not touched within the TTL, one currently locked by another agent
    root = str(tmp_path / "nvme")
    for name in ("stale", "busy", "target"):
        put_model(s3, bucket, prefix=f"{name}/", files={"w.bin": os.urandom(50_000)})
    stale = cache.ensure(root, s3_spec(bucket, "stale/"))
    busy = cache.ensure(root, s3_spec(bucket, "busy/"))
    lease = leases.touch_lease(stale, "pod-gone")
    os.utime(lease, (time.time() - 3600, time.time() - 3600))
    for final, ts in ((busy, "1"), (stale, "2")):
        with open(os.path.join(final, layout.LAST_USED), "w") as fh:
            fh.write(ts)
    monkeypatch.setenv(space.FAKE_DISK_ENV, str(space.tree_bytes(root) + 10_000))

    # WHEN a new model needs space while the busy model's lock is held
    with layout.model_lock(root, model_relative_dir(s3_spec(bucket, "busy/")), exclusive=False):
        cache.ensure(root, s3_spec(bucket, "target/"), AgentConfig(lease_ttl=600))

    # THEN the locked model survives (although older) and the stale-leased one is evicted
    assert layout.is_complete(busy)
    assert not os.path.exists(stale)


def test_warm_writes_readiness_only_when_all_complete_and_check_follows(s3, bucket, hub, hf_env, aws_env, tmp_path):
    # GIVEN a models file listing an S3 and a Hub model
    put_model(s3, bucket)
    repo = make_repo(hub)
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"models": [s3_spec(bucket), hf_spec(repo)]}))
    root = tmp_path / "nvme"
    env = {**aws_env, **hf_env}
    check = ("check", "--cache-root", root, "--models-file", models)
    assert run_agent(*check, env=env).returncode == 1

    # WHEN warm runs one cycle
    result = run_agent("warm", "--cache-root", root, "--models-file", models, "--once", env=env)

    # THEN both models are complete, leased by the warm agent, and the readiness file exists
    assert result.returncode == 0, result.stderr
    ready = list(root.glob(".agent-ready-*"))
    assert len(ready) == 1
    hf_final = root / model_relative_dir(hf_spec(repo))
    assert (hf_final / ".leases" / warm.WARM_HOLDER).exists()
    assert run_agent(*check, env=env).returncode == 0

    # WHEN a file of the Hub model disappears and the Hub is unreachable
    os.unlink(hf_final / "config.json")
    assert run_agent(*check, env=env).returncode == 1
    down = dict(env, HF_ENDPOINT=f"http://127.0.0.1:{free_port()}")
    result = run_agent("warm", "--cache-root", root, "--models-file", models, "--once", env=down)

    # THEN the cycle fails and the readiness file is removed
    assert result.returncode == 1
    assert not ready[0].exists()

    # WHEN the Hub is back, the next cycle repairs the model into a fresh directory (a published directory that
    # fails its structural check is never resumed)
    result = run_agent("warm", "--cache-root", root, "--models-file", models, "--once", env=env)
    assert result.returncode == 0, result.stderr
    assert ready[0].exists()
    assert hub.count("GET", repo.repo_id, "config.json") == 2
    assert hub.count("GET", repo.repo_id, "model.safetensors") == 2


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


def test_model_relative_dir_is_deterministic_and_safe():
    # GIVEN specs of both sources WHEN computing their cache dirs THEN they follow <source-key>/<revision>
    assert model_relative_dir({"source": "s3", "bucket": "my-bucket", "prefix": "qwen/"}) == "s3--my-bucket--qwen/latest"
    assert model_relative_dir({"source": "s3", "bucket": "my-bucket", "prefix": "/qwen"}) == "s3--my-bucket--qwen/latest"
    assert model_relative_dir({"source": "huggingface", "modelId": "acme/tiny", "revision": COMMIT}) == \
        f"hf--acme--tiny/{COMMIT}"
    assert model_relative_dir({"source": "huggingface", "modelId": "acme/tiny"}) == "hf--acme--tiny/main"
    # AND lossy slugs get a hash, so distinct sources never share a directory, and every label is DNS-safe
    specs = [
        {"source": "s3", "bucket": "my.bucket", "prefix": "Models/Qwen2.5/"},
        {"source": "s3", "bucket": "my-bucket", "prefix": "models-qwen2-5/"},
        {"source": "s3", "bucket": "my-bucket", "prefix": "models/qwen2-5/"},
        {"source": "huggingface", "modelId": "Qwen/Qwen2.5-7B-Instruct", "revision": "main"},
        {"source": "huggingface", "modelId": "qwen/qwen2-5-7b-instruct", "revision": "main"},
        {"source": "huggingface", "modelId": "acme/" + "x" * 120, "revision": "release/v1.0"},
    ]
    dirs = [model_relative_dir(s) for s in specs]
    assert len(set(dirs)) == len(dirs)
    for d in dirs:
        for label in d.split("/"):
            assert re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", label), label
    assert dirs == [model_relative_dir(s) for s in specs]


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


def test_lease_command_protects_and_release_unprotects(s3, bucket, tmp_path, aws_env):
    # GIVEN a complete model
    put_model(s3, bucket)
    root = tmp_path / "nvme"
    spec = s3_spec(bucket)
    final = cache.ensure(str(root), spec)

    # WHEN a reader takes a lease through the CLI THEN the lease is active
    lease = ("lease", "--cache-root", root, "--model", json.dumps(spec), "--holder", "pod-7")
    assert run_agent(*lease, "--once", env=aws_env).returncode == 0
    assert leases.active_leases(final, ttl=600) == ["pod-7"]

    # WHEN it releases the lease THEN no lease is active any more
    assert run_agent(*lease, "--release", env=aws_env).returncode == 0
    assert leases.active_leases(final, ttl=600) == []


def test_a_cache_root_on_the_device_of_kubelets_files_is_warned(tmp_path, monkeypatch):
    # GIVEN a cache root and a reference file on the same device, and one on another device (/proc)
    (tmp_path / "hostname").write_text("node-1\n")

    # WHEN / THEN only the first is reported as on kubelet's (root) disk
    assert space.on_kubelet_disk(str(tmp_path), str(tmp_path / "hostname")) is True
    assert space.on_kubelet_disk(str(tmp_path), "/proc/self/status") is False
    assert space.on_kubelet_disk(str(tmp_path / "missing"), str(tmp_path / "hostname")) is False

    # AND the agent warns about it when it runs ensure there (and not when the reference is elsewhere)
    monkeypatch.setattr(space, "KUBELET_FILE", "/proc/self/status")
    assert space.on_kubelet_disk(str(tmp_path)) is False
    monkeypatch.setattr(space, "KUBELET_FILE", str(tmp_path / "hostname"))
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")
    import logging

    from hyperpod_inference.nvme_agent import cli
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("nvme_agent").addHandler(handler)
    try:
        code = cli.main(["ensure", "--cache-root", str(tmp_path / "nvme"), "--model",
                         json.dumps({"source": "local", "path": str(src)})])
    finally:
        logging.getLogger("nvme_agent").removeHandler(handler)
    assert code == 0
    assert any("same device as kubelet's pod data" in r.getMessage() for r in records)
