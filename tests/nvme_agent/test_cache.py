"""The store (`cache`): a published directory is never written through, and a file list it cannot cache safely
fails the plan before anything is written."""

from __future__ import annotations

import json
import os

import pytest

from hyperpod_inference.nvme_agent import layout, model_relative_dir

from ..fakes.hub import Repo
from .conftest import run_agent, victim_dir
from .test_hf import COMMIT
from .test_hf import spec_of as hf_spec
from .test_s3 import put_model, s3_gets  # noqa: F401 - s3_gets: a fixture
from .test_s3 import spec_of as s3_spec


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
