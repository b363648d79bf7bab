"""`--usage-dir`: every agent shares its root's usage, and a failed free-space watermark lists every root's."""

from __future__ import annotations

import json
import logging
import os
import time

from hyperpod_inference.nvme_agent import cli, layout, space

from .conftest import run_agent


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
