"""Warm mode (`warm`): the readiness file, the content checks of the warm DaemonSet and its loop."""

from __future__ import annotations

import json
import os

from hyperpod_inference.nvme_agent import cache, layout, model_relative_dir, warm

from .conftest import free_port, run_agent
from .test_hf import make_repo
from .test_hf import spec_of as hf_spec
from .test_local import make_tree, spec_of
from .test_s3 import put_model
from .test_s3 import spec_of as s3_spec


def test_warm_writes_readiness_only_when_all_complete_and_check_follows(s3, bucket, hub, hf_env, aws_env, tmp_path):
    # GIVEN a models file listing an S3 and a Hub model
    put_model(s3, bucket)
    repo = make_repo(hub)
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"models": [s3_spec(bucket), hf_spec(repo)]}))
    root = tmp_path / "nvme"
    env = {**aws_env, **hf_env}
    check = ("check", "--cache-root", root, "--models-file", models)
    assert run_agent(*check, env=env).returncode == 1

    # WHEN warm runs one cycle
    result = run_agent("warm", "--cache-root", root, "--models-file", models, "--once", env=env)

    # THEN both models are complete, leased by the warm agent, and the readiness file exists
    assert result.returncode == 0, result.stderr
    ready = list(root.glob(".agent-ready-*"))
    assert len(ready) == 1
    hf_final = root / model_relative_dir(hf_spec(repo))
    assert (hf_final / ".leases" / warm.WARM_HOLDER).exists()
    assert run_agent(*check, env=env).returncode == 0

    # WHEN a file of the Hub model disappears and the Hub is unreachable
    os.unlink(hf_final / "config.json")
    assert run_agent(*check, env=env).returncode == 1
    down = dict(env, HF_ENDPOINT=f"http://127.0.0.1:{free_port()}")
    result = run_agent("warm", "--cache-root", root, "--models-file", models, "--once", env=down)

    # THEN the cycle fails and the readiness file is removed
    assert result.returncode == 1
    assert not ready[0].exists()

    # WHEN the Hub is back, the next cycle repairs the model into a fresh directory (a published directory that
    # fails its structural check is never resumed)
    result = run_agent("warm", "--cache-root", root, "--models-file", models, "--once", env=env)
    assert result.returncode == 0, result.stderr
    assert ready[0].exists()
    assert hub.count("GET", repo.repo_id, "config.json") == 2
    assert hub.count("GET", repo.repo_id, "model.safetensors") == 2


def test_warm_turns_garbage_collection_back_on_for_its_loop(tmp_path):
    # GIVEN the collector off, as `python -m nvme_agent` starts every command, and a models file with one local model
    import gc

    from hyperpod_inference.nvme_agent import cli

    src = tmp_path / "fsx" / "model"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")
    models = tmp_path / "models.json"
    models.write_text(json.dumps([{"source": "local", "path": str(src)}]))
    gc.disable()
    try:
        # WHEN `warm` runs a cycle
        code = cli.main(["warm", "--cache-root", str(tmp_path / "nvme"), "--models-file", str(models), "--once"])

        # THEN the model is warm and the loop runs with the collector on (a one-shot command leaves it off)
        assert code == 0
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_warm_re_hashes_a_complete_models_content_at_start_and_fetches_a_corrupt_one_again(tmp_path):
    # GIVEN a complete model whose weights were overwritten in place with same-size garbage (its structure, which a
    # hit checks, is intact)
    src = tmp_path / "fsx" / "m"
    files = make_tree(src)
    root = tmp_path / "nvme"
    final = cache.ensure(str(root), spec_of(src))
    path = os.path.join(final, "model-00001.safetensors")
    with open(path, "r+b") as fh:
        fh.write(b"\0" * 64)
    assert layout.is_complete(final)
    models = tmp_path / "models.json"
    models.write_text(json.dumps([spec_of(src)]))

    # WHEN the warm DaemonSet starts (one cycle)
    result = run_agent("warm", "--cache-root", root, "--models-file", models, "--once")

    # THEN it re-hashed the content, found the garbage, and fetched the model again
    assert result.returncode == 0, result.stderr
    assert "content check failed (model-00001.safetensors)" in result.stderr
    assert open(path, "rb").read() == files["model-00001.safetensors"]
