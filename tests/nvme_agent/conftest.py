from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid

import pytest

from hyperpod_inference import nvme_agent
from hyperpod_inference.nvme_agent import space

from ..fakes.hub import FakeHub

# the folder that contains the package directory `nvme_agent`, as the ConfigMap mount does
AGENT_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(nvme_agent.__file__)))

FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def moto_endpoint():
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://localhost:{port}"
    server.stop()


@pytest.fixture
def aws_env(moto_endpoint, monkeypatch, tmp_path):
    """Fake credentials + the moto endpoint, for the agent in-process and for subprocesses."""
    env = dict(FAKE_AWS, AWS_ENDPOINT_URL=moto_endpoint, AWS_CONFIG_FILE=str(tmp_path / "no-config"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


@pytest.fixture
def s3(aws_env):
    """A client that uploads objects without S3 additional checksums unless asked to (``ChecksumAlgorithm``): such
    objects are verified by their MD5 ETag. (boto3 >= 1.36 otherwise adds a CRC32 to every upload.)"""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", region_name="us-east-1", config=Config(request_checksum_calculation="when_required"))


@pytest.fixture
def s3_crc(aws_env):
    """A client with boto3's default upload behaviour: every object gets an S3 additional CRC32 checksum."""
    import boto3

    return boto3.client("s3", region_name="us-east-1")


@pytest.fixture
def bucket(s3):
    name = f"models-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
def hub():
    server = FakeHub(token="hf_test_secret_token")
    yield server
    server.close()


@pytest.fixture
def hf_env(hub, monkeypatch, tmp_path):
    env = {"HF_ENDPOINT": hub.url, "HF_TOKEN": hub.token, "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_ETAG_TIMEOUT": "5"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


@pytest.fixture(autouse=True)
def _no_disk_hook():
    yield
    space.disk_usage_hook = None


def agent_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "nvme_agent", *map(str, args)]


def agent_env(extra: dict | None = None, pythonpath: str = AGENT_PARENT) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HF_", "NVME_AGENT_"))}
    env.update(extra or {})
    env["PYTHONPATH"] = pythonpath
    return env


def run_agent(*args, env: dict | None = None, pythonpath: str = AGENT_PARENT, cwd: str | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(agent_cmd(*args), env=agent_env(env, pythonpath), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def victim_dir(tmp_path):
    """A directory outside the model (another model, another namespace) with one file in it."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.bin").write_bytes(b"other tenant's weights")
    return victim
