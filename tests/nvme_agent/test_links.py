"""The agent never follows a link it did not make, and refuses file lists it cannot cache safely."""

from __future__ import annotations

import json
import os

import pytest

from hyperpod_inference.nvme_agent import cache, layout, model_relative_dir

from .conftest import run_agent
from .fake_hub import Repo
from .test_hf import COMMIT
from .test_hf import spec_of as hf_spec
from .test_s3 import put_model, s3_gets  # noqa: F401 - s3_gets: a fixture
from .test_s3 import spec_of as s3_spec


def victim_dir(tmp_path):
    """A directory outside the model (another model, another namespace) with one file in it."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.bin").write_bytes(b"other tenant's weights")
    return victim


def test_a_symlinked_directory_planted_in_an_unmarked_model_dir_is_not_written_through(s3, bucket, tmp_path,
                                                                                        aws_env):
    # GIVEN a model with a file in a sub-directory, and its unmarked published directory (the model server mounts it
    # read-write) holding a link named like that sub-directory, pointing at another directory
    files = put_model(s3, bucket, files={"config.json": b"{}", "sub/weights.bin": os.urandom(5000)})
    victim = victim_dir(tmp_path)
    root = tmp_path / "nvme"
    final = root / model_relative_dir(s3_spec(bucket))
    final.mkdir(parents=True)
    (final / "sub").symlink_to(victim, target_is_directory=True)

    # WHEN the agent ensures the model
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(s3_spec(bucket)), env=aws_env)

    # THEN nothing was written through the link, and the model is complete with a real sub-directory
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(victim)) == ["keep.bin"]
    assert not (final / "sub").is_symlink()
    assert (final / "sub" / "weights.bin").read_bytes() == files["sub/weights.bin"]
    assert layout.is_complete(str(final))


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


def local_spec(src, mount):
    return {"source": "local", "path": str(src), "mount": str(mount)}


def test_a_local_link_escaping_the_mount_fails_the_plan_naming_it(tmp_path):
    # GIVEN a model directory on the node mount with a link to a secret outside the mount
    mount = tmp_path / "fsx"
    src = mount / "models" / "m"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")
    secret = tmp_path / "etc" / "shadow"
    secret.parent.mkdir()
    secret.write_text("root:$6$secret")
    (src / "tokenizer.json").symlink_to(secret)
    root = tmp_path / "nvme"

    # WHEN the agent ensures it
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(local_spec(src, mount)))

    # THEN it fails naming the link and its target, and copied nothing
    assert result.returncode == 1
    assert f"tokenizer.json is a link to {secret}, outside the mount {mount}" in result.stderr
    assert not [p for p in root.rglob("*") if p.is_file() and ".locks" not in p.parts and p.name != layout.ROOT_MARKER]


def test_a_local_link_inside_the_mount_is_copied_as_a_regular_file(tmp_path):
    # GIVEN a model whose weights are links to blobs elsewhere on the same mount (a Hub-style snapshot), and a
    # directory link inside the mount
    mount = tmp_path / "fsx"
    blobs = mount / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "abc").write_bytes(b"weights")
    (blobs / "tok").mkdir()
    (blobs / "tok" / "vocab.txt").write_bytes(b"vocab")
    src = mount / "models" / "m"
    src.mkdir(parents=True)
    (src / "model.safetensors").symlink_to("../../blobs/abc")
    (src / "tokenizer").symlink_to(blobs / "tok", target_is_directory=True)
    root = tmp_path / "nvme"

    # WHEN the agent ensures it
    final = cache.ensure(str(root), local_spec(src, mount))

    # THEN the links' targets are copied as regular files under the links' names
    assert not os.path.islink(os.path.join(final, "model.safetensors"))
    assert open(os.path.join(final, "model.safetensors"), "rb").read() == b"weights"
    assert not os.path.islink(os.path.join(final, "tokenizer"))
    assert open(os.path.join(final, "tokenizer", "vocab.txt"), "rb").read() == b"vocab"
    assert cache.verify(str(root), local_spec(src, mount)) == ("ok", [])


def test_without_a_mount_local_links_must_stay_inside_the_model_path(tmp_path):
    # GIVEN a local spec without "mount" and a link to a file beside the model directory
    src = tmp_path / "fsx" / "m"
    src.mkdir(parents=True)
    (tmp_path / "fsx" / "beside").write_text("x")
    (src / "w.bin").symlink_to(tmp_path / "fsx" / "beside")

    # WHEN / THEN the plan fails naming the link
    with pytest.raises(RuntimeError, match="w.bin is a link to .*outside the mount"):
        cache.ensure(str(tmp_path / "nvme"), {"source": "local", "path": str(src)})


@pytest.mark.parametrize("keys", [["x", "./x"], ["a//b", "a/b"], ["a", "a/b"]])
def test_colliding_s3_keys_fail_the_plan_naming_them_before_anything_is_written(s3, bucket, tmp_path, aws_env, keys):
    # GIVEN objects whose keys normalize to the same file (or to a file and a directory of the same name)
    for key in keys:
        s3.put_object(Bucket=bucket, Key="qwen/" + key, Body=b"1")
    root = tmp_path / "nvme"

    # WHEN the agent ensures the model
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(s3_spec(bucket)), env=aws_env)

    # THEN it fails naming the keys, and no model directory (partial or published) was made
    assert result.returncode == 1
    assert "the model's files cannot be cached" in result.stderr
    for key in keys:
        assert repr("qwen/" + key) in result.stderr
    assert not (root / model_relative_dir(s3_spec(bucket))).parent.exists()


@pytest.mark.parametrize("name", ["manifest.json", "./manifest.json", "./.complete", ".leases/x", "..", "../x"])
def test_reserved_and_escaping_hub_file_names_fail_the_plan_naming_them(hub, hf_env, tmp_path, name):
    # GIVEN a Hub repo listing a file name that is reserved by the cache or leaves the model directory
    repo = hub.add(Repo("acme/evil", COMMIT, {"config.json": b"{}", name: b"planted"}))
    root = tmp_path / "nvme"

    # WHEN the agent ensures it
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(hf_spec(repo)), env=hf_env)

    # THEN the plan fails naming the file, before anything is fetched or written
    assert result.returncode == 1
    assert "the model's files cannot be cached" in result.stderr and repr(name) in result.stderr
    assert hub.count("GET", repo.repo_id, "config.json") == 0
    assert not (root / model_relative_dir(hf_spec(repo))).parent.exists()
