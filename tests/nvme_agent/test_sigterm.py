"""SIGTERM mid-download: every source stops within 5 s, exits non-zero, and leaves only what the next run can verify
and reuse."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hyperpod_inference.nvme_agent import cache, layout, model_relative_dir

from ..fakes.hub import Repo
from .conftest import AGENT_PARENT, FAKE_AWS, agent_env, run_agent
from .stall_s3 import StallS3
from .test_hf import COMMIT

MiB = 1024 * 1024
STOP_WITHIN = 5.0


def wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def sigterm_and_time(proc) -> tuple[int, float]:
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(STOP_WITHIN + 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, time.monotonic() - start


def leftovers(partial) -> list[str]:
    """Everything in a partial directory that is not a whole file under its planned name."""
    return sorted(str(p.relative_to(partial)) for p in partial.rglob("*")
                  if p.name.endswith(".download") or ".cache" in p.relative_to(partial).parts)


def start(cmd_args, env, argv_prefix=None):
    cmd = [*(argv_prefix or [sys.executable, "-m", "nvme_agent"]), *map(str, cmd_args)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def stall_s3(tmp_path):
    server = StallS3("models", {"m/config.json": b'{"a": 1}', "m/model.safetensors": os.urandom(4 * MiB)})
    yield server
    server.close()


def test_sigterm_mid_s3_download_stops_within_5s_and_the_next_run_reuses_the_finished_files(stall_s3, tmp_path):
    # GIVEN an S3 endpoint that stalls after 1 MiB of the weights, and the agent downloading the model
    stall_s3.stall_after["m/model.safetensors"] = MiB
    spec = {"source": "s3", "bucket": "models", "prefix": "m/", "region": "us-east-1"}
    root = tmp_path / "nvme"
    partial = root / (model_relative_dir(spec) + layout.PARTIAL_SUFFIX)
    env = agent_env(dict(FAKE_AWS, AWS_ENDPOINT_URL=stall_s3.url, AWS_CONFIG_FILE=str(tmp_path / "none"),
                         AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none")))
    proc = start(["ensure", "--cache-root", root, "--model", json.dumps(spec)], env)
    assert stall_s3.stalled.wait(30) and wait_for(lambda: (partial / "config.json").exists())

    # WHEN it gets SIGTERM while the weights' GET hangs
    code, took = sigterm_and_time(proc)

    # THEN it exits non-zero within 5 s, leaving the finished file and no temporary file, and nothing is complete
    assert code != 0 and took < STOP_WITHIN, (code, took, proc.stderr.read())
    proc.stderr.close()
    assert leftovers(partial) == []
    assert (partial / "config.json").read_bytes() == b'{"a": 1}'
    assert not list(root.rglob(".complete"))

    # AND the next run (the endpoint no longer stalls) completes, fetching again only the unfinished file
    stall_s3.release.set()
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec), env=env)
    assert result.returncode == 0, result.stderr
    assert stall_s3.gets == {"m/config.json": 1, "m/model.safetensors": 2}
    final = root / model_relative_dir(spec)
    assert (final / "model.safetensors").read_bytes() == stall_s3.objects["m/model.safetensors"]


def test_sigterm_mid_hub_download_stops_within_5s_and_the_next_run_reuses_the_finished_files(hub, hf_env, tmp_path):
    # GIVEN a Hub that stalls after 64 KiB of the weights, and the agent downloading the model with one file at a time
    # (so that a queued file is not fetched after the signal)
    files = {"a-config.json": b"{}", "model.safetensors": os.urandom(MiB), "z-tokenizer.json": b"tok"}
    repo = hub.add(Repo("acme/stall", COMMIT, files, lfs={"model.safetensors"}))
    hub.stall_after["model.safetensors"] = 64 * 1024
    spec = {"source": "huggingface", "modelId": repo.repo_id, "revision": COMMIT}
    root = tmp_path / "nvme"
    partial = root / (model_relative_dir(spec) + layout.PARTIAL_SUFFIX)
    proc = start(["ensure", "--cache-root", root, "--model", json.dumps(spec), "--concurrency", "1"],
                 agent_env(hf_env))
    assert hub.stalled.wait(30)

    # WHEN it gets SIGTERM while the weights' GET hangs
    code, took = sigterm_and_time(proc)

    # THEN it exits non-zero within 5 s, fetched no queued file, and left no temporary file or client bookkeeping
    assert code != 0 and took < STOP_WITHIN, (code, took, proc.stderr.read())
    proc.stderr.close()
    assert hub.count("GET", repo.repo_id, "z-tokenizer.json") == 0
    assert (partial / "a-config.json").read_bytes() == b"{}"
    assert leftovers(partial) == []
    assert not list(root.rglob(".complete"))

    # AND the next run completes, fetching again only the unfinished file and the queued one
    hub.release.set()
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec), env=hf_env)
    assert result.returncode == 0, result.stderr
    assert [hub.count("GET", repo.repo_id, n) for n in files] == [1, 2, 1]


# the agent as the init container runs it, with the local copy's reads stalling after the first MiB of a large file
# (a hung network file system); the marker file tells the test the copy hangs
STALLING_LOCAL_AGENT = """
import os, runpy, sys, time
import nvme_agent.checksums as checksums
original = checksums.chunks_of
def chunks_of(fh, size=checksums._BUF):
    for i, chunk in enumerate(original(fh, size)):
        if i == 1 and os.fstat(fh.fileno()).st_size > 2 * 1024 * 1024:
            open(os.environ["STALL_MARKER"], "w").close()
            time.sleep(30)
        yield chunk
checksums.chunks_of = chunks_of
sys.argv[0] = "nvme_agent"
runpy.run_module("nvme_agent", run_name="__main__", alter_sys=True)
"""


def test_sigterm_mid_local_copy_stops_within_5s_and_the_next_run_completes(tmp_path):
    # GIVEN a local model with a small file and a large one whose reads hang, and the agent copying it
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (src / "a-config.json").write_bytes(b"{}")
    (src / "model.safetensors").write_bytes(os.urandom(4 * MiB))
    spec = {"source": "local", "path": str(src)}
    root = tmp_path / "nvme"
    partial = root / (model_relative_dir(spec) + layout.PARTIAL_SUFFIX)
    marker = tmp_path / "stalled"
    proc = start(["ensure", "--cache-root", root, "--model", json.dumps(spec), "--concurrency", "1"],
                 agent_env({"STALL_MARKER": str(marker)}), [sys.executable, "-c", STALLING_LOCAL_AGENT])
    assert wait_for(marker.exists)

    # WHEN it gets SIGTERM while the copy hangs
    code, took = sigterm_and_time(proc)

    # THEN it exits non-zero within 5 s, leaving the finished file and no temporary file
    assert code != 0 and took < STOP_WITHIN, (code, took, proc.stderr.read())
    proc.stderr.close()
    assert (partial / "a-config.json").read_bytes() == b"{}"
    assert leftovers(partial) == []
    assert not list(root.rglob(".complete"))

    # AND the next run completes
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec), pythonpath=AGENT_PARENT)
    assert result.returncode == 0, result.stderr
    assert cache.verify(str(root), spec) == ("ok", [])
