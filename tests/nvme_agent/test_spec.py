"""Model specs (`spec`): every model's cache directory."""

from __future__ import annotations

import re

from hyperpod_inference.nvme_agent import model_relative_dir

from .test_hf import COMMIT


def test_model_relative_dir_is_deterministic_and_safe():
    # GIVEN specs of both sources WHEN computing their cache dirs THEN they follow <source-key>/<revision>
    assert model_relative_dir({"source": "s3", "bucket": "my-bucket", "prefix": "qwen/"}) == "s3--my-bucket--qwen/latest"
    assert model_relative_dir({"source": "s3", "bucket": "my-bucket", "prefix": "/qwen"}) == "s3--my-bucket--qwen/latest"
    assert model_relative_dir({"source": "huggingface", "modelId": "acme/tiny", "revision": COMMIT}) == \
        f"hf--acme--tiny/{COMMIT}"
    assert model_relative_dir({"source": "huggingface", "modelId": "acme/tiny"}) == "hf--acme--tiny/main"
    # AND lossy slugs get a hash, so distinct sources never share a directory, and every label is DNS-safe
    specs = [
        {"source": "s3", "bucket": "my.bucket", "prefix": "Models/Qwen2.5/"},
        {"source": "s3", "bucket": "my-bucket", "prefix": "models-qwen2-5/"},
        {"source": "s3", "bucket": "my-bucket", "prefix": "models/qwen2-5/"},
        {"source": "huggingface", "modelId": "Qwen/Qwen2.5-7B-Instruct", "revision": "main"},
        {"source": "huggingface", "modelId": "qwen/qwen2-5-7b-instruct", "revision": "main"},
        {"source": "huggingface", "modelId": "acme/" + "x" * 120, "revision": "release/v1.0"},
    ]
    dirs = [model_relative_dir(s) for s in specs]
    assert len(set(dirs)) == len(dirs)
    for d in dirs:
        for label in d.split("/"):
            assert re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", label), label
    assert dirs == [model_relative_dir(s) for s in specs]
