"""Compatibility matrix: the agent's default path against the botocore and huggingface_hub versions runtime images
carry (their own versions cannot be looked up here), each in its own venv from PyPI, the agent as a subprocess.

The venvs live under ``NVME_AGENT_COMPAT_DIR`` (default ``~/.cache/hyperpod-inference-cdk/agent-compat``) and are
reused; pip reuses its own cache. Without PyPI the tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from boto3.s3.transfer import TransferConfig

from hyperpod_inference.nvme_agent import layout, model_relative_dir

from .conftest import AGENT_PARENT, agent_env
from .test_hf import make_repo
from .test_hf import spec_of as hf_spec
from .test_s3 import put_model
from .test_s3 import spec_of as s3_spec

MiB = 1024 * 1024
BOTOCORE = {"botocore-1.34.162": "botocore==1.34.162", "botocore-latest": "botocore"}
HUB = {"hub-0.30": "huggingface_hub==0.30.*", "hub-latest-0.x": "huggingface_hub<1", "hub-latest": "huggingface_hub"}


def compat_dir() -> Path:
    return Path(os.environ.get("NVME_AGENT_COMPAT_DIR") or Path.home() / ".cache" / "hyperpod-inference-cdk" /
                "agent-compat")


def venv_python(name: str, requirement: str) -> str:
    """The interpreter of a venv holding ``requirement`` (made once, then reused)."""
    root = compat_dir() / name
    python = root / "bin" / "python"
    marker = root / ".requirement"
    if not (python.exists() and marker.exists() and marker.read_text() == requirement):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True, capture_output=True)
        result = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                 requirement], capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            if os.environ.get("CI"):
                pytest.fail(f"pip install {requirement} failed: {result.stderr[-2000:]}")
            pytest.skip(f"pip install {requirement} failed (PyPI unreachable?): {result.stderr[-300:]}")
        marker.write_text(requirement)
    return str(python)


def run_in(python: str, *args, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "nvme_agent", *map(str, args)], env=agent_env(env, AGENT_PARENT),
                          capture_output=True, text=True, timeout=120)


def version_of(python: str, module: str) -> str:
    return subprocess.run([python, "-c", f"import {module}; print({module}.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("name", sorted(BOTOCORE))
def test_the_default_s3_path_works_on_botocore(name, s3, s3_crc, bucket, aws_env, tmp_path):
    # GIVEN a venv with only that botocore, and a model of MD5-, CRC32- and multipart-verified objects
    python = venv_python(name, BOTOCORE[name])
    files = put_model(s3, bucket)
    crc = os.urandom(70_000)
    s3_crc.put_object(Bucket=bucket, Key="qwen/crc.bin", Body=crc)
    big = os.urandom(11 * MiB)
    (tmp_path / "big").write_bytes(big)
    s3.upload_file(str(tmp_path / "big"), bucket, "qwen/multi.bin",
                   Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB))
    files.update({"crc.bin": crc, "multi.bin": big})
    root = tmp_path / "nvme"

    # WHEN that Python runs the agent's ensure, then verify
    result = run_in(python, "ensure", "--cache-root", root, "--model", json.dumps(s3_spec(bucket)), env=aws_env)

    # THEN the model is complete, byte for byte, and verifies
    assert result.returncode == 0, f"botocore {version_of(python, 'botocore')}: {result.stderr}"
    final = root / model_relative_dir(s3_spec(bucket))
    for rel, data in files.items():
        assert (final / rel).read_bytes() == data
    algos = {f["path"]: f["checksum"]["algo"] for f in layout.read_manifest(str(final))["files"]}
    assert algos["config.json"] == "md5" and algos["multi.bin"] == "s3-multipart-md5"
    verify = run_in(python, "verify", "--cache-root", root, "--model", json.dumps(s3_spec(bucket)), env=aws_env)
    assert verify.returncode == 0, verify.stderr


@pytest.mark.parametrize("name", sorted(HUB))
def test_the_hub_path_works_on_huggingface_hub(name, hub, hf_env, tmp_path):
    # GIVEN a venv with only that huggingface_hub, and a private repo with an LFS file
    python = venv_python(name, HUB[name])
    repo = make_repo(hub)
    root = tmp_path / "nvme"

    # WHEN that Python runs the agent's ensure
    result = run_in(python, "ensure", "--cache-root", root, "--model", json.dumps(hf_spec(repo)), env=hf_env)

    # THEN the model is complete and verified (sha256 for LFS, git sha1 otherwise)
    assert result.returncode == 0, f"huggingface_hub {version_of(python, 'huggingface_hub')}: {result.stderr}"
    final = root / model_relative_dir(hf_spec(repo))
    for rel, data in repo.files.items():
        assert (final / rel).read_bytes() == data
    assert not (final / ".cache").exists()
    verify = run_in(python, "verify", "--cache-root", root, "--model", json.dumps(hf_spec(repo)), env=hf_env)
    assert verify.returncode == 0, verify.stderr


def test_an_image_without_the_sources_module_names_the_agent_image_setting(tmp_path):
    # GIVEN a venv with botocore only (no huggingface_hub)
    python = venv_python("botocore-latest", BOTOCORE["botocore-latest"])
    spec = {"source": "huggingface", "modelId": "acme/x", "revision": "main"}

    # WHEN the agent has to download a Hub model
    result = run_in(python, "ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec), env={})

    # THEN it exits 3 naming the module and weightCache.agentImage
    assert result.returncode == 3
    assert "huggingface_hub" in result.stderr and "weightCache.agentImage" in result.stderr
