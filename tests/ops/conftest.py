"""The realistic account of :mod:`tests.fake_aws` on a loopback moto server for ``init`` and ``doctor`` in the test's
process (:meth:`~tests.fake_aws.Account.session` fills moto's gaps through botocore's event hooks), and the project's
fake Kubernetes API for the checks inside the cluster. What the account holds, and each answer it gives where moto
differs from AWS: :mod:`tests.fake_aws`."""

from __future__ import annotations

import copy
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from moto.server import ThreadedMotoServer

from tests.fake_aws import ENDPOINT_NAME, HYPERPOD, KUBE_TOKEN, MODEL_BUCKET, REGION, ZONE, Account, build_account
from tests.fakes import hub_repos as repos
from tests.fakes.hub_repos import model_hub  # noqa: F401 - a fixture: the Hub on loopback
from tests.nvme_agent.fake_kube import FakeKube


@pytest.fixture(scope="session")
def moto_url() -> Any:
    """One moto server on 127.0.0.1 for the session; each test resets it."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def account(moto_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
            model_hub: Any) -> Any:  # noqa: F811 - the fixture imported above
    """The account on moto, its cluster's fake Kubernetes API, and the Hub on loopback (``HF_ENDPOINT``: doctor's
    model checks never reach the real Hub from a test)."""
    for var, value in {"AWS_ENDPOINT_URL": moto_url, "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}.items():
        monkeypatch.setenv(var, value)
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "KUBECONFIG", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    # moto's backends live in the process, shared by every server: start from an empty account
    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=30).close()
    kube = FakeKube(token=KUBE_TOKEN)
    try:
        acct = Account(url=moto_url, tmp=tmp_path, kube=kube)
        build_account(acct)
        yield acct
    finally:
        kube.close()


@pytest.fixture
def init_config(account: Account) -> dict:
    """What ``init`` wrote from the account (it exits 0)."""
    status, path = run_init(account)
    assert status == 0
    return yaml.safe_load(path.read_text())


def full_config(account: Account, base: dict) -> dict:
    """``base`` (what init wrote) with what a user adds: the namespace, two endpoints (an S3 model with a custom
    domain, a Hugging Face model of the Hub on loopback with a Secrets Manager token), capture with a KMS key, the imported zone and
    certificate, and alarms to the account's topic."""
    data = copy.deepcopy(base)
    data["endpoints"] = [
        {"name": "qwen-s3", "namespace": "inference", "instanceType": "ml.g5.8xlarge", "replicas": 2,
         "runtime": "vllm", "model": {"s3": {"bucket": MODEL_BUCKET, "prefix": "qwen/"}},
         "domainName": ENDPOINT_NAME},
        {"name": "qwen-hf", "namespace": "inference", "instanceType": "ml.p5.48xlarge", "replicas": 1,
         "resources": {"gpus": 4},  # Qwen2.5-7B's 28 attention heads split over 4 GPUs, not 8
         "runtime": "vllm", "model": {"huggingface": {
             "modelId": repos.QWEN_7B, "commitSHA": repos.commit(repos.QWEN_7B),
             "token": {"secretsManagerArn": account.ids["secret"]}}}},
    ]
    data["capture"] = {"kms": account.ids["kms_key"]}
    data["domain"] = {"zoneName": ZONE, "hostedZoneId": account.ids["zone_id"],
                      "certificateArn": account.ids["certificate"]}
    data["observability"] = {"alarms": {"snsTopicArn": account.ids["alarm_topic"]}}
    return data


def run_doctor(account: Account, data: dict, *extra: str, kubeconfig: bool = True) -> tuple[int, list[dict]]:
    """``doctor --json`` on ``data`` with the fixture's session: (exit status, the results)."""
    import argparse
    import contextlib
    import io

    from hyperpod_inference.ops import cli

    path = account.tmp / "doctor.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    parser = argparse.ArgumentParser()
    cli.add_parsers(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["doctor", "-c", str(path), "--json",
                              "--kubeconfig", str(account.kubeconfig if kubeconfig else account.tmp / "none"),
                              *extra])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.run_doctor(args, session=account.session())
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


def run_init(account: Account, *extra: str, output: Path | None = None) -> tuple[int, Path]:
    import argparse

    from hyperpod_inference.ops import cli

    path = output or account.tmp / "hyperpod.local.yaml"
    parser = argparse.ArgumentParser()
    cli.add_parsers(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["init", "--hyperpod-cluster", HYPERPOD, "--region", REGION, "-o", str(path), *extra])
    return cli.run_init(args, session=account.session()), path
