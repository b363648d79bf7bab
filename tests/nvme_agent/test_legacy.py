"""`evict-legacy`: models the previous layout cached directly under `<hostPath>` are evicted, never a cache root."""

from __future__ import annotations

import json
import os
import subprocess
import time

from hyperpod_inference.nvme_agent import cache, layout, leases

from .conftest import agent_cmd, agent_env, run_agent


def local_model(tmp_path, name, size=20_000):
    src = tmp_path / "fsx" / name
    src.mkdir(parents=True)
    (src / "w.bin").write_bytes(os.urandom(size))
    return {"source": "local", "path": str(src)}


def legacy_parent(tmp_path, *names):
    """`<hostPath>` as the previous layout left it: models directly under it, with `.locks` and `.trash`, and no
    cache-root marker (the previous agent wrote the same files, the marker aside)."""
    parent = tmp_path / "host"
    rels = [os.path.relpath(cache.ensure(str(parent), local_model(tmp_path, name)), parent) for name in names]
    os.unlink(parent / layout.ROOT_MARKER)
    return parent, rels


def tree(path) -> set[str]:
    out = set()
    for dirpath, dirs, files in os.walk(path):
        for name in dirs + files:
            out.add(os.path.relpath(os.path.join(dirpath, name), path))
    return out


def evict(parent, env=None):
    return run_agent("evict-legacy", "--cache-parent", parent, env=env)


def test_evict_legacy_evicts_the_previous_layouts_models_and_partials_and_nothing_else(tmp_path):
    # GIVEN <hostPath> holding two models of the previous layout and a partial download it left
    parent, (rel_a, rel_b, rel_c) = legacy_parent(tmp_path, "a", "b", "c")
    partial = parent / "s3--bucket--left" / f"latest{layout.PARTIAL_SUFFIX}"
    partial.mkdir(parents=True)
    (partial / "w.bin").write_bytes(b"x" * 100)
    # AND a namespace's cache root, made by the agent, holding a model (its root carries the marker)
    result = run_agent("ensure", "--cache-root", parent / "team-a", "--model", json.dumps(local_model(tmp_path, "t")))
    assert result.returncode == 0, result.stderr
    assert (parent / "team-a" / layout.ROOT_MARKER).is_file()
    # AND a namespace named like a source key: its marked root, and an unmarked one kubelet just created for a pod
    cache.ensure(str(parent / "s3--lookalike"), local_model(tmp_path, "l"))
    marked = rel_c.split("/")[0]  # laid out like the previous layout's models, but marked as a cache root
    (parent / marked / layout.ROOT_MARKER).touch()
    (parent / "hf--fresh" / "local--fsx--m" / "latest").mkdir(parents=True)
    # AND entries it does not recognise: a file, a foreign directory, a link to a model of the previous layout
    # outside <hostPath>, and a source-key directory holding a link to one
    (parent / "README").write_text("ours")
    (parent / "notes").mkdir()
    (parent / "notes" / "n.txt").write_text("ours")
    outside, (rel_o,) = legacy_parent(tmp_path / "elsewhere", "o")
    (parent / "s3--link").symlink_to(outside / rel_o.split("/")[0])
    (parent / "hf--linked").mkdir()
    (parent / "hf--linked" / "latest").symlink_to(outside / rel_o)
    keep = {name: tree(parent / name) for name in ("team-a", "s3--lookalike", marked, "hf--fresh", "notes",
                                                   "hf--linked")}
    outside_before = tree(outside)

    # WHEN evict-legacy runs on <hostPath>
    result = evict(parent)

    # THEN it exits 0, the previous layout's models and partial are gone and the trash is empty
    assert result.returncode == 0, result.stderr
    for rel in (rel_a, rel_b, "s3--bucket--left"):
        assert not (parent / rel.split("/")[0]).exists()
    assert os.listdir(parent / ".trash") == []
    # AND every other entry is untouched, links not followed
    assert {name: tree(parent / name) for name in keep} == keep
    assert (parent / "README").read_text() == "ours" and (parent / "s3--link").is_symlink()
    assert tree(outside) == outside_before and layout.is_complete(str(outside / rel_o))
    # AND it printed one line per evicted or skipped entry
    lines = set(result.stdout.splitlines())
    assert {f"evicted {rel_a}", f"evicted {rel_b}", f"evicted s3--bucket--left/latest{layout.PARTIAL_SUFFIX}",
            "skipped team-a: a cache root",
            "skipped s3--lookalike: a cache root", f"skipped {marked}: a cache root",
            "skipped hf--fresh: not a model directory of the previous layout",
            "skipped s3--link: not a model directory of the previous layout",
            "skipped hf--linked: not a model directory of the previous layout"} <= lines
    assert len(lines) == len(result.stdout.splitlines()) == 11, result.stdout


def test_evict_legacy_skips_a_leased_or_locked_model_and_evicts_it_once_free_then_does_nothing(tmp_path):
    # GIVEN two models of the previous layout: one leased by a pod (the same lease files), one another agent holds
    # the lock of (a hit in progress)
    parent, (leased, locked) = legacy_parent(tmp_path, "leased", "locked")
    leases.touch_lease(str(parent / leased), "pod-1")
    with layout.model_lock(str(parent), locked, exclusive=False):
        # WHEN evict-legacy runs
        result = evict(parent)

    # THEN both are kept and reported, and it exits 0
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == sorted([f"skipped {leased}: leased by pod-1", f"skipped {locked}: in use"])
    assert layout.is_complete(str(parent / leased)) and layout.is_complete(str(parent / locked))

    # WHEN the lease has expired and the lock is free, and it runs again
    old = time.time() - 3600
    os.utime(parent / leased / layout.LEASES / "pod-1", (old, old))
    again = evict(parent)

    # THEN both are evicted
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines() == sorted([f"evicted {leased}", f"evicted {locked}"])
    assert not (parent / leased).exists() and not (parent / locked).exists()
    # AND a third run has nothing left to do (idempotent)
    third = evict(parent)
    assert third.returncode == 0 and third.stdout == "", third.stderr + third.stdout


def test_evict_legacy_does_nothing_when_the_parent_is_the_one_shared_cache_root(tmp_path):
    # GIVEN one cache root shared by every namespace (shareAcrossNamespaces): the agent uses <hostPath> itself
    parent = tmp_path / "host"
    cache.ensure(str(parent), local_model(tmp_path, "shared"))
    before = tree(parent)

    # WHEN evict-legacy runs on it
    result = evict(parent)

    # THEN nothing changed and nothing is reported
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and tree(parent) == before


def test_evict_legacy_from_several_pods_at_once_evicts_each_model_exactly_once(tmp_path):
    # GIVEN six models of the previous layout and a namespace's root
    parent, rels = legacy_parent(tmp_path, *(f"m{i}" for i in range(6)))
    cache.ensure(str(parent / "team-a"), local_model(tmp_path, "t"))
    kept = tree(parent / "team-a")

    # WHEN four agents run evict-legacy concurrently
    procs = [subprocess.Popen(agent_cmd("evict-legacy", "--cache-parent", parent), env=agent_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=60) for p in procs]

    # THEN all exit 0, every model was evicted by exactly one of them, and the namespace's root is intact
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in outputs]
    evicted = sorted(line.split(" ", 1)[1] for out, _ in outputs for line in out.splitlines()
                     if line.startswith("evicted "))
    assert evicted == sorted(rels)
    assert sorted(os.listdir(parent)) == [".locks", ".trash", "team-a"]
    assert os.listdir(parent / ".trash") == [] and tree(parent / "team-a") == kept


def test_evict_legacy_refuses_a_linked_trash_naming_it(tmp_path):
    # GIVEN a model of the previous layout, and <hostPath>/.trash replaced by a link to another directory
    parent, (rel,) = legacy_parent(tmp_path, "a")
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    os.rmdir(parent / ".trash")
    (parent / ".trash").symlink_to(victim)

    # WHEN evict-legacy runs THEN it refuses, naming .trash, and deletes nothing
    result = evict(parent)
    assert result.returncode == 1
    assert ".trash must be a real directory" in result.stderr
    assert (victim / "keep").is_dir() and layout.is_complete(str(parent / rel))
