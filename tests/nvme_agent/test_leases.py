"""Leases at the protocol level: the init container leases the model under the pod's name, a sidecar keeps the lease
fresh while the pod lives and releases it when the pod ends; eviction skips leased models."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from hyperpod_inference.nvme_agent import cache

from .conftest import agent_cmd, agent_env, run_agent


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
    # GIVEN a model the init container fetched and leased under its pod's name, and an older unleased model
    root = tmp_path / "nvme"
    served, other = local_model(tmp_path, "served"), local_model(tmp_path, "other")
    lease = ("--cache-root", root, "--model", json.dumps(served))
    result = run_agent("ensure", *lease, "--lease-holder", "pod-1")
    assert result.returncode == 0, result.stderr
    final = result.stdout.strip()
    cache.ensure(str(root), other)
    for model in (served, other):
        with open(os.path.join(cache.model_dir(str(root), model), cache.LAST_USED), "w") as fh:
            fh.write("1")
    # AND the pod has run longer than the lease TTL, its sidecar refreshing the lease every interval
    age(os.path.join(final, cache.LEASES, "pod-1"), 3600)
    sidecar = subprocess.Popen(agent_cmd("lease", *lease, "--holder", "pod-1", "--interval", "0.1"),
                               env=agent_env(), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while cache.active_leases(final, 600) != ["pod-1"] and time.monotonic() < deadline:
            time.sleep(0.05)

        # WHEN a new model needs the space of one model
        monkeypatch.setenv(cache.FAKE_DISK_ENV, str(cache._tree_bytes(str(root)) + 30_000))
        cache.ensure(str(root), local_model(tmp_path, "new1"))

        # THEN the unleased model was evicted and the served one kept
        assert cache.is_complete(final)
        assert not os.path.exists(cache.model_dir(str(root), other))

        # WHEN the pod ends (its sidecar gets SIGTERM)
        sidecar.send_signal(signal.SIGTERM)
        assert sidecar.wait(10) != 0
    finally:
        if sidecar.poll() is None:
            sidecar.kill()
        sidecar.stderr.close()

    # THEN its lease is gone, and the model is evicted for the next one that needs the space
    assert cache.active_leases(final, 600) == []
    monkeypatch.setenv(cache.FAKE_DISK_ENV, str(cache._tree_bytes(str(root)) + 30_000))
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
        assert cache.active_leases(result.stdout.strip(), 600) == [socket.gethostname()]
    # AND an empty holder takes none
    spec = local_model(tmp_path, "m9")
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec), "--lease-holder", "")
    assert result.returncode == 0, result.stderr
    assert cache.active_leases(result.stdout.strip(), 600) == []

