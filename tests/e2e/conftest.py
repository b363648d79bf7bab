"""Fixtures for the end-to-end tests: the real CDK CLI, a moto server on loopback, synthesized cloud assemblies."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CDK = REPO / "node_modules" / ".bin" / "cdk"
STACK_NAME = "HyperPodInference"
MOTO_ACCOUNT = "123456789012"  # moto's default account
MOTO_REGION = "us-west-2"

# Variables that could point the CLI or boto3 at a real account, or change how they resolve credentials.
_AWS_VARS = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
             "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CA_BUNDLE",
             "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_CLOUDFORMATION")


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for the CDK CLI: this venv first on PATH (cdk.json runs ``python3 app.py``), quiet jsii."""
    env = {k: v for k, v in os.environ.items() if k not in _AWS_VARS}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] = "20"
    env["CDK_DISABLE_CLI_TELEMETRY"] = "true"
    env.update(extra)
    return env


def run_cdk(args: list[str], *, env: dict[str, str] | None = None, cwd: Path = REPO,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the repo's CDK CLI; on failure (with ``check``) fail the test with the CLI's output."""
    proc = subprocess.run([str(CDK), *args, "--no-notices"], cwd=cwd, env=env or cli_env(), text=True,
                          capture_output=True, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        pytest.fail(f"cdk {' '.join(args)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}"
                    f"\n--- stderr\n{proc.stderr[-12000:]}", pytrace=False)
    return proc


def synth(config: Path | str, outdir: Path) -> Path:
    """``cdk synth`` of the repo's app with ``-c config=<config>`` into ``outdir`` (nag errors fail the synth)."""
    run_cdk(["synth", "-q", "-o", str(outdir), "-c", f"config={config}"])
    return outdir


@pytest.fixture(scope="session")
def cdk_cli() -> Path:
    if not CDK.exists():
        pytest.fail(f"{CDK.relative_to(REPO)} is missing: run `make deps` (npm install)", pytrace=False)
    return CDK


@pytest.fixture(scope="session")
def synth_default(cdk_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cloud assembly of the default app (hyperpod.yaml: kubectl delivery, every feature on)."""
    return synth(REPO / "hyperpod.yaml", tmp_path_factory.mktemp("synth-default"))


@pytest.fixture(scope="session")
def synth_files(cdk_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cloud assembly of tests/fixtures/files.yaml (files delivery)."""
    return synth(REPO / "tests" / "fixtures" / "files.yaml", tmp_path_factory.mktemp("synth-files"))


@pytest.fixture(scope="session")
def synth_chart(cdk_cli: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cloud assembly of hyperpod.yaml with the operator installed as a chart (operator.install: chart, v3.3, the
    reference CRDs as crdSource): the operator's own Deployment, RBAC and webhook objects are in its manifests."""
    import yaml

    from tests.k8s_validation import require_crds

    data = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
    data["operator"] = {"install": "chart", "version": "v3.3", "crdSource": str(require_crds() / "v3.3")}
    folder = tmp_path_factory.mktemp("synth-chart")
    config = folder / "chart.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return synth(config, folder / "assembly")


# ----------------------------------------------------------------------------------------------------- moto server
@dataclass(frozen=True)
class MotoServer:
    port: int
    log: Path

    @property
    def endpoint(self) -> str:
        # localhost (not 127.0.0.1): the CLI's S3 client then reaches the bootstrap bucket by path on this host.
        return f"http://localhost:{self.port}"

    def env(self, home: Path) -> dict[str, str]:
        """CLI environment aimed at this server only, with fake credentials and no shared config files."""
        return cli_env(
            AWS_ENDPOINT_URL=self.endpoint,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_SESSION_TOKEN="testing",
            AWS_REGION=MOTO_REGION,
            AWS_DEFAULT_REGION=MOTO_REGION,
            AWS_CONFIG_FILE=str(home / "aws-config"),
            AWS_SHARED_CREDENTIALS_FILE=str(home / "aws-credentials"),
            AWS_EC2_METADATA_DISABLED="true",
        )

    def client(self, service: str):  # noqa: ANN201 - a boto3 client
        import boto3

        return boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                     region_name=MOTO_REGION).client(service, endpoint_url=self.endpoint)


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_moto_server(folder: Path) -> Iterator[MotoServer]:
    """``moto_server`` on a free loopback port (its log in ``folder``), stopped on exit."""
    exe = shutil.which("moto_server", path=str(VENV_BIN)) or pytest.fail("moto_server not in the venv", pytrace=False)
    port = _free_loopback_port()
    log = folder / "moto_server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    server = MotoServer(port, log)
    try:
        for _ in range(300):  # bounded: up to ~60 s for the server to answer
            if proc.poll() is not None:
                pytest.fail(f"moto_server exited {proc.returncode}:\n{log.read_text()[-4000:]}", pytrace=False)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        else:
            pytest.fail(f"moto_server did not answer on port {port}", pytrace=False)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """``moto_server`` on a free loopback port for the whole session; stopped at the end."""
    with running_moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server
