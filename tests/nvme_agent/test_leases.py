"""Leases at the protocol level: the init container leases the model under the pod's name; as a native sidecar
(``ensure --hold``) it then keeps the lease fresh while the pod lives and releases it when the pod ends; eviction skips
leased models."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from hyperpod_inference.nvme_agent import cache, layout, leases, space

from .conftest import agent_cmd, agent_env, run_agent
from .test_s3 import put_model
from .test_s3 import spec_of as s3_spec


def local_model(tmp_path, name, size=50_000):
    src = tmp_path / "fsx" / name
    src.mkdir(parents=True)
    (src / "w.bin").write_bytes(os.urandom(size))
    return {"source": "local", "path": str(src)}


def age(path, seconds):
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_a_model_leased_by_a_pod_is_not_evicted_while_its_sidecar_refreshes_it_and_is_once_the_pod_ends(
        tmp_path, monkeypatch):
    # GIVEN an older unleased model, and a pod whose native sidecar (ensure --hold) fetched its model, leased it
    # under the pod's name and said so in its ready file (which a stale one from an earlier start does not fake)
    root = tmp_path / "nvme"
    served, other = local_model(tmp_path, "served"), local_model(tmp_path, "other")
    cache.ensure(str(root), other)
    ready = tmp_path / "ready"
    ready.write_text("# stale\n")
    sidecar = subprocess.Popen(agent_cmd("ensure", "--cache-root", root, "--model", json.dumps(served),
                                         "--lease-holder", "pod-1", "--hold", ready, "--interval", "0.1"),
                               env=agent_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        final = layout.model_dir(str(root), served)
        deadline = time.monotonic() + 20
        while not (ready.exists() and ready.read_text() != "# stale\n") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.read_text() == f"# ready: {final}\n" and layout.is_complete(final)
        # (the startup probe runs the file with python3: it passes once the file is there)
        assert subprocess.run([sys.executable, str(ready)], timeout=30).returncode == 0
        for model in (served, other):
            with open(os.path.join(layout.model_dir(str(root), model), layout.LAST_USED), "w") as fh:
                fh.write("1")
        # AND the pod has run longer than the lease TTL, the sidecar refreshing the lease every interval
        age(os.path.join(final, layout.LEASES, "pod-1"), 3600)
        while leases.active_leases(final, 600) != ["pod-1"] and time.monotonic() < deadline:
            time.sleep(0.05)

        # WHEN a new model needs the space of one model
        monkeypatch.setenv(space.FAKE_DISK_ENV, str(space.tree_bytes(str(root)) + 30_000))
        cache.ensure(str(root), local_model(tmp_path, "new1"))

        # THEN the unleased model was evicted and the served one kept
        assert layout.is_complete(final)
        assert not os.path.exists(layout.model_dir(str(root), other))

        # WHEN the pod ends (its sidecar gets SIGTERM)
        sidecar.send_signal(signal.SIGTERM)
        assert sidecar.wait(10) != 0
    finally:
        if sidecar.poll() is None:
            sidecar.kill()
        sidecar.stdout.close()
        sidecar.stderr.close()

    # THEN its lease is gone, and the model is evicted for the next one that needs the space
    assert leases.active_leases(final, 600) == []
    monkeypatch.setenv(space.FAKE_DISK_ENV, str(space.tree_bytes(str(root)) + 30_000))
    cache.ensure(str(root), local_model(tmp_path, "new2"))
    assert not os.path.exists(final)


def test_the_hostname_holder_is_the_hosts_name_and_the_default(tmp_path):
    # GIVEN a pod's init container, whose ensure leases the model @hostname (a pod's host name is its name) by default
    import socket

    for i, holder in enumerate((["--lease-holder", "@hostname"], [])):
        spec = local_model(tmp_path, f"m{i}")
        result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec), *holder)

        # THEN the lease is the host's name
        assert result.returncode == 0, result.stderr
        assert leases.active_leases(result.stdout.strip(), 600) == [socket.gethostname()]
    # AND an empty holder takes none
    spec = local_model(tmp_path, "m9")
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec), "--lease-holder", "")
    assert result.returncode == 0, result.stderr
    assert leases.active_leases(result.stdout.strip(), 600) == []



def test_a_sidecar_whose_model_cannot_be_fetched_is_never_ready(tmp_path):
    # GIVEN a ready file left by an earlier start of the sidecar, and a model whose source does not exist
    ready = tmp_path / "ready"
    ready.write_text("# ready: earlier\n")
    spec = {"source": "local", "path": str(tmp_path / "missing")}
    # WHEN the sidecar starts again
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec), "--hold", ready)
    # THEN it fails and the startup probe's file is gone (the model server does not start on a missing model)
    assert result.returncode != 0
    assert not ready.exists()


def test_hold_needs_a_lease_holder(tmp_path):
    # GIVEN --hold without a holder WHEN it runs THEN it refuses, naming the flag
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model",
                       json.dumps(local_model(tmp_path, "m")), "--lease-holder", "", "--hold", tmp_path / "ready")
    assert result.returncode != 0 and "--lease-holder" in result.stderr


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
