"""The cache's layout (`layout`): a complete model is used only when its structure matches its manifest exactly, and
the root's own directories must be real directories."""

from __future__ import annotations

import json
import os

import pytest

from hyperpod_inference.nvme_agent import cache, layout

from .conftest import run_agent, victim_dir
from .test_s3 import put_model, s3_gets  # noqa: F401 - s3_gets: a fixture
from .test_s3 import spec_of as s3_spec


def test_a_link_in_a_complete_model_makes_it_invalid_and_it_is_fetched_again(s3, bucket, tmp_path,
                                                                             s3_gets):  # noqa: F811
    # GIVEN a complete model whose config.json was replaced by a link to a file of the same size elsewhere
    files = put_model(s3, bucket)
    root = str(tmp_path / "nvme")
    final = cache.ensure(root, s3_spec(bucket))
    outside = tmp_path / "outside.json"
    outside.write_bytes(b"x" * len(files["config.json"]))
    os.unlink(os.path.join(final, "config.json"))
    os.symlink(outside, os.path.join(final, "config.json"))
    s3_gets.clear()

    # WHEN the structural check runs (a hit) and then ensure
    complete = layout.is_complete(final)
    cache.ensure(root, s3_spec(bucket))

    # THEN the model was not a hit; it was fetched again into a real directory and the link target is untouched
    assert complete is False
    assert s3_gets["config.json"] == 1
    assert not os.path.islink(os.path.join(final, "config.json"))
    assert open(os.path.join(final, "config.json"), "rb").read() == files["config.json"]
    assert outside.read_bytes() == b"x" * len(files["config.json"])


@pytest.mark.parametrize("kind", ["dir", "fifo"])
def test_a_manifest_replaced_by_a_directory_or_a_fifo_makes_the_model_invalid_and_it_is_fetched_again(tmp_path,
                                                                                                     kind):
    # GIVEN a complete model whose manifest.json was replaced by a directory or a FIFO (the model server mounts the
    # model read-write)
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (src / "w.bin").write_bytes(os.urandom(1000))
    spec = {"source": "local", "path": str(src)}
    root = tmp_path / "nvme"
    final = cache.ensure(str(root), spec)
    manifest = os.path.join(final, "manifest.json")
    os.unlink(manifest)
    os.mkdir(manifest) if kind == "dir" else os.mkfifo(manifest)

    # WHEN the agent ensures the model
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec), timeout=30)

    # THEN it was no hit (neither an error nor a wait): the model was fetched again, with a regular manifest
    assert result.returncode == 0, result.stderr
    assert os.path.isfile(manifest) and layout.is_complete(final)
    assert layout.read_manifest(final)["files"][0]["path"] == "w.bin"


@pytest.mark.parametrize("extra", ["file", "dir", "fifo"])
def test_an_extra_entry_in_a_complete_model_makes_it_invalid(s3, bucket, tmp_path, extra):
    # GIVEN a complete model
    put_model(s3, bucket)
    final = cache.ensure(str(tmp_path / "nvme"), s3_spec(bucket))
    assert layout.is_complete(final)

    # WHEN an entry the manifest does not list appears in it
    path = os.path.join(final, "planted")
    {"file": lambda: open(path, "w").close(), "dir": lambda: os.mkdir(path), "fifo": lambda: os.mkfifo(path)}[extra]()

    # THEN the model no longer passes the structural check
    assert layout.is_complete(final) is False


@pytest.mark.parametrize("name", [".trash", ".locks"])
def test_a_symlinked_trash_or_locks_directory_makes_the_agent_refuse_to_run(s3, bucket, tmp_path, aws_env, name):
    # GIVEN a cache root whose .trash (or .locks) is a link to another directory, and a model to evict or fetch
    put_model(s3, bucket)
    victim = victim_dir(tmp_path)
    root = tmp_path / "nvme"
    root.mkdir()
    (root / name).symlink_to(victim, target_is_directory=True)

    # WHEN the agent runs
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(s3_spec(bucket)), env=aws_env)

    # THEN it refuses, naming the directory, and the link's target is untouched
    assert result.returncode == 1
    assert f"{root / name} must be a real directory (a symlink)" in result.stderr
    assert sorted(os.listdir(victim)) == ["keep.bin"]
    assert not list(root.rglob(".complete"))


def test_a_trash_directory_that_is_a_file_makes_the_agent_refuse_to_run(tmp_path):
    # GIVEN a cache root whose .trash is a regular file
    root = tmp_path / "nvme"
    root.mkdir()
    (root / ".trash").write_text("")
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")

    # WHEN / THEN the agent refuses to run, naming it
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps({"source": "local", "path": str(src)}))
    assert result.returncode == 1
    assert f"{root / '.trash'} must be a real directory (not a directory)" in result.stderr
