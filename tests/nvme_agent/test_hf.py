"""The agent against a Hub-compatible endpoint on loopback, through the real huggingface_hub client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from hyperpod_inference.nvme_agent import cache, layout, model_relative_dir

from ..fakes.hub import Repo
from .conftest import agent_cmd, agent_env, run_agent

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def make_repo(hub, repo_id="acme/tiny-llm", big=400_000):
    files = {
        "config.json": b'{"architectures": ["LlamaForCausalLM"]}',
        "tokenizer/tokenizer.json": os.urandom(5000),
        "model.safetensors": os.urandom(big),
    }
    return hub.add(Repo(repo_id, COMMIT, files, lfs={"model.safetensors"}))


def spec_of(repo, revision=COMMIT):
    return {"source": "huggingface", "modelId": repo.repo_id, "revision": revision}


def test_cold_download_pinned_revision_with_token(hub, hf_env, tmp_path):
    # GIVEN a private repo (the server answers 401 without the Bearer token) with an LFS and two regular files
    repo = make_repo(hub)
    root = tmp_path / "nvme"

    # WHEN the agent ensures the model with HF_TOKEN in its environment
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec_of(repo)), env=hf_env)

    # THEN the files land under hf--<org>--<model>/<commit> and are verified (sha256 for LFS, git sha1 otherwise)
    assert result.returncode == 0, result.stderr
    final = root / "hf--acme--tiny-llm" / COMMIT
    assert result.stdout.strip() == str(final)
    for name, data in repo.files.items():
        assert (final / name).read_bytes() == data
    manifest = json.loads((final / "manifest.json").read_text())
    assert {f["path"]: f["checksum"]["algo"] for f in manifest["files"]} == {
        "config.json": "git-sha1", "tokenizer/tokenizer.json": "git-sha1", "model.safetensors": "sha256"}
    assert manifest["revision"] == COMMIT
    # AND huggingface_hub's bookkeeping is not published with the model
    assert not (final / ".cache").exists()
    # AND the token never shows up in the agent's output
    assert hub.token not in result.stdout + result.stderr


def test_missing_token_is_rejected_and_nothing_is_marked(hub, hf_env, tmp_path):
    # GIVEN the same private repo and no HF_TOKEN
    repo = make_repo(hub)
    env = {k: v for k, v in hf_env.items() if k != "HF_TOKEN"}

    # WHEN the agent ensures the model
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec_of(repo)), env=env)

    # THEN it fails (the server returned 401) and no model is marked complete
    assert result.returncode == 1
    assert ("GET", f"/api/models/{repo.repo_id}/revision/{COMMIT}") in hub.requests
    assert not list((tmp_path / "nvme").rglob(".complete"))


def test_unpinned_main_is_cached_under_main_and_records_the_commit(hub, hf_env, tmp_path):
    # GIVEN a repo asked for at `main`
    repo = make_repo(hub)

    # WHEN the agent ensures it
    final = cache.ensure(str(tmp_path), spec_of(repo, "main"))

    # THEN the cache dir is <key>/main and the manifest records the commit it resolved to
    assert final.endswith("/hf--acme--tiny-llm/main")
    assert layout.read_manifest(final)["revision"] == COMMIT


def test_kill_9_mid_download_then_resume_refetches_only_unfinished_files(hub, hf_env, tmp_path):
    # GIVEN a repo whose big file is served slowly
    repo = make_repo(hub, big=2_000_000)
    hub.throttle["model.safetensors"] = 0.1  # ~3 s for the big file
    root = tmp_path / "nvme"
    spec = spec_of(repo)
    final = root / model_relative_dir(spec)
    partial = root / (model_relative_dir(spec) + ".partial")
    proc = subprocess.Popen(agent_cmd("ensure", "--cache-root", root, "--model", json.dumps(spec)),
                            env=agent_env(hf_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # WHEN the agent is killed with SIGKILL once the small files are done and the big one is in flight
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                (partial / "config.json").exists() and (partial / "tokenizer/tokenizer.json").exists()
                and hub.count("GET", repo.repo_id, "model.safetensors") >= 1):
            time.sleep(0.05)
        assert hub.count("GET", repo.repo_id, "model.safetensors") == 1
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()

    # THEN nothing is marked complete and readers (check) do not see the model
    assert not (final / ".complete").exists()
    assert not (partial / ".complete").exists()
    models = tmp_path / "models.json"
    models.write_text(json.dumps([spec]))
    assert run_agent("check", "--cache-root", root, "--models-file", models, env=hf_env).returncode == 1

    # WHEN the agent runs again (full speed)
    hub.throttle.clear()
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec), env=hf_env)

    # THEN it completes, fetching again only the file that was in flight
    assert result.returncode == 0, result.stderr
    assert hub.count("GET", repo.repo_id, "config.json") == 1
    assert hub.count("GET", repo.repo_id, "tokenizer/tokenizer.json") == 1
    assert hub.count("GET", repo.repo_id, "model.safetensors") == 2
    assert (final / "model.safetensors").read_bytes() == repo.files["model.safetensors"]
    assert run_agent("check", "--cache-root", root, "--models-file", models, env=hf_env).returncode == 0


def test_two_agents_at_once_download_exactly_once(hub, hf_env, tmp_path):
    # GIVEN a repo whose big file takes a moment to serve
    repo = make_repo(hub, big=1_000_000)
    hub.throttle["model.safetensors"] = 0.03
    spec = json.dumps(spec_of(repo))

    # WHEN two agents on the same node ensure the same model concurrently
    procs = [subprocess.Popen(agent_cmd("ensure", "--cache-root", tmp_path, "--model", spec), env=agent_env(hf_env),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]

    # THEN both succeed with the same model dir and every file was downloaded exactly once
    assert [p.returncode for p in procs] == [0, 0], outs
    assert outs[0][0] == outs[1][0]
    for name in repo.files:
        assert hub.count("GET", repo.repo_id, name) == 1, name


def test_corrupt_download_is_detected_and_fetched_again(hub, hf_env, tmp_path):
    # GIVEN a server that serves a corrupted LFS file on the first GET only
    repo = make_repo(hub)
    hub.corrupt.add("model.safetensors")
    served = []
    original = hub._handle

    def heal_after_first_get(h, head):
        if not head and h.path.endswith("/model.safetensors"):
            served.append(1)
            if len(served) > 1:
                hub.corrupt.discard("model.safetensors")
        return original(h, head)

    hub._handle = heal_after_first_get

    # WHEN the agent ensures the model
    final = cache.ensure(str(tmp_path), spec_of(repo))

    # THEN the checksum mismatch was caught, the file fetched again, and the published file is correct
    assert hub.count("GET", repo.repo_id, "model.safetensors") == 2
    assert open(os.path.join(final, "model.safetensors"), "rb").read() == repo.files["model.safetensors"]


def test_persistent_corruption_fails_without_marking(hub, hf_env, tmp_path):
    # GIVEN a server that always serves a corrupted file
    repo = make_repo(hub)
    hub.corrupt.add("config.json")

    # WHEN the agent ensures the model
    result = run_agent("ensure", "--cache-root", tmp_path, "--model", json.dumps(spec_of(repo)), env=hf_env)

    # THEN it gives up after its retries with exit code 5 and marks nothing complete
    assert result.returncode == 5, result.stderr
    assert "checksum mismatch" in result.stderr
    assert hub.count("GET", repo.repo_id, "config.json") == 3
    assert not list(tmp_path.rglob(".complete"))


def test_the_agent_sets_huggingface_hubs_home_and_telemetry_itself(tmp_path):
    # GIVEN an environment without HF_HOME or HF_HUB_DISABLE_TELEMETRY (the pods set neither)
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("HF_HOME", "HF_HUB_DISABLE_TELEMETRY")}
    env["TMPDIR"] = str(tmp_path)
    code = ("import os, hyperpod_inference.nvme_agent.hf_source as h; "
            "print(os.environ['HF_HOME']); print(os.environ['HF_HUB_DISABLE_TELEMETRY'])")
    # WHEN the Hub source is imported
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    # THEN huggingface_hub's home is under the writable temporary directory and its telemetry is off
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(tmp_path / "hf"), "1"]
