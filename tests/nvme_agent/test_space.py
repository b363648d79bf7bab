"""Space and usage (`space`): LRU eviction above the free-space watermark (never a leased or locked model), what a
failed watermark names, `--usage-dir` (every agent shares its root's usage, and a failed watermark lists every
root's) and the warning about a cache root on kubelet's disk."""

from __future__ import annotations

import json
import logging
import os
import time

import pytest

from hyperpod_inference.nvme_agent import cache, cli, errors, layout, leases, model_relative_dir, space
from hyperpod_inference.nvme_agent.config import AgentConfig

from .conftest import run_agent
from .test_local import spec_of
from .test_s3 import put_model
from .test_s3 import spec_of as s3_spec


def local_model(tmp_path, name, size):
    src = tmp_path / "fsx" / name
    src.mkdir(parents=True)
    (src / "w.bin").write_bytes(os.urandom(size))
    return {"source": "local", "path": str(src)}


def usage_of(usage_dir, name):
    return json.loads((usage_dir / f"{name}.json").read_text())


def test_ensure_and_warm_write_their_roots_usage_and_an_eviction_updates_it(tmp_path):
    # GIVEN a namespace's cache root and the disk's shared usage directory
    root, usage = tmp_path / "nvme" / "team-a", tmp_path / "nvme" / ".usage"
    first = local_model(tmp_path, "first", 30_000)
    flags = ("--cache-root", root, "--usage-dir", usage, "--root-name", "team-a")

    # WHEN ensure fetches a model (taking no lease, so that the warm cycle below may evict it)
    before = time.time()
    result = run_agent("ensure", *flags, "--model", json.dumps(first), "--lease-holder", "")

    # THEN the root's usage is in <usage dir>/team-a.json: its bytes, its one model, when, and its name
    assert result.returncode == 0, result.stderr
    record = usage_of(usage, "team-a")
    assert record["root"] == "team-a" and record["models"] == 1
    assert record["bytes"] == space.tree_bytes(str(root)) >= 30_000
    assert before <= record["time"] <= time.time()
    assert os.listdir(usage) == ["team-a.json"]  # written atomically: no temporary left

    # WHEN a warm cycle keeps a second model, on a disk with room for only one of them (the first is evicted)
    models = tmp_path / "models.json"
    models.write_text(json.dumps([local_model(tmp_path, "second", 30_000)]))
    disk = {space.FAKE_DISK_ENV: str(space.tree_bytes(str(root)) + 20_000)}
    result = run_agent("warm", *flags, "--models-file", models, "--once", env=disk)

    # THEN the usage file shows the root after the eviction
    assert result.returncode == 0, result.stderr
    assert not os.path.exists(layout.model_dir(str(root), first))
    record = usage_of(usage, "team-a")
    assert record["models"] == 1 and record["bytes"] == space.tree_bytes(str(root))


def write_record(usage, name, *, nbytes, models=1, age=0.0, root=None):
    (usage / f"{name}.json").write_text(json.dumps({"root": root or name, "bytes": nbytes, "models": models,
                                                    "time": time.time() - age}))


def test_a_failed_watermark_lists_every_roots_usage_and_the_other_files(tmp_path):
    # GIVEN a 10,000-byte disk: another namespace's root reported 5,000 bytes in 2 models, 3,000 bytes are other
    # files, and this root is empty
    root, usage = tmp_path / "nvme" / "team-a", tmp_path / "nvme" / ".usage"
    usage.mkdir(parents=True)
    write_record(usage, "team-b", nbytes=5_000, models=2)
    space.disk_usage_hook = lambda path: (10_000 - 8_000 - space.tree_bytes(path), 10_000)
    # AND usage files that must not count: stale (two days old), malformed, oversized, named for another root, a link
    write_record(usage, "stale", nbytes=111, age=2 * 86400)
    (usage / "malformed.json").write_text("{not json")
    (usage / "typed.json").write_text(json.dumps({"root": "typed", "bytes": "222", "models": 1, "time": time.time()}))
    (usage / "big.json").write_text(json.dumps({"root": "big", "bytes": 333, "models": 1, "time": time.time(),
                                                "pad": "x" * 5000}))
    write_record(usage, "renamed", nbytes=444, root="team-c")
    write_record(tmp_path, "linked", nbytes=555)
    (usage / "linked.json").symlink_to(tmp_path / "linked.json")
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("nvme_agent").addHandler(handler)

    # WHEN ensure needs 1,000 bytes with 1,500 kept free (only 2,000 are free)
    try:
        code = cli.main(["ensure", "--cache-root", str(root), "--usage-dir", str(usage), "--root-name", "team-a",
                         "--min-free-bytes", "1500", "--model", json.dumps(local_model(tmp_path, "m", 1_000))])
    finally:
        logging.getLogger("nvme_agent").removeHandler(handler)

    # THEN it exits 4 naming each root's usage (this one included) and the other files, ignoring the bad files
    assert code == cli.EXIT_NO_SPACE
    message = next(r.getMessage() for r in records if r.levelno == logging.ERROR)
    ours = space.tree_bytes(str(root))
    assert (f"Usage by cache root: team-b 5000 bytes (2 model(s)), team-a {ours} bytes (0 model(s)); "
            f"other files {8_000 - 5_000} bytes (disk used {8_000 + ours} bytes") in message, message
    for ignored in ("stale", "malformed", "typed", "big", "renamed", "team-c", "linked"):
        assert ignored not in message
    # AND this root's usage was written for the others
    assert usage_of(usage, "team-a")["models"] == 0


def test_a_linked_usage_dir_is_refused_naming_it(tmp_path):
    # GIVEN a usage directory replaced by a link to another directory
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "usage").symlink_to(elsewhere)

    # WHEN ensure runs with it THEN it refuses naming it, and wrote nothing through the link
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--usage-dir", tmp_path / "usage", "--root-name",
                       "team-a", "--model", json.dumps(local_model(tmp_path, "m", 100)))
    assert result.returncode == 1
    assert f"{tmp_path / 'usage'} must be a real directory (a symlink)" in result.stderr
    assert os.listdir(elsewhere) == []


def test_a_usage_dir_needs_a_valid_root_name(tmp_path):
    # GIVEN a model and a usage directory
    spec = json.dumps(local_model(tmp_path, "m", 100))
    for name in (None, ".hidden", "a/b", "x" * 101):
        # WHEN ensure runs without a root name or with one that is not a plain file name
        args = ("--root-name", name) if name is not None else ()
        result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--usage-dir", tmp_path / "usage", *args,
                           "--model", spec)

        # THEN it fails naming --root-name, before writing anything
        assert result.returncode == 1 and "--root-name must be" in result.stderr, (name, result.stderr)
        assert not (tmp_path / "usage").exists() and not (tmp_path / "nvme").exists()


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


def test_not_enough_space_names_this_roots_usage_and_the_rest_of_the_disk(tmp_path):
    # GIVEN a 1,000-byte model, and a disk of 10,000 bytes of which other roots use 9,500 besides this root's files
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (src / "w.bin").write_bytes(os.urandom(1000))
    root = str(tmp_path / "nvme")

    def usage(path):
        ours = space.tree_bytes(path)
        return 10_000 - 9_500 - ours, 10_000

    space.disk_usage_hook = usage

    # WHEN the agent ensures the model THEN it fails naming both usages
    with pytest.raises(errors.InsufficientSpace, match=r"this cache root 0 bytes, the rest of the disk .* 9500 bytes"):
        cache.ensure(root, spec_of(src))
