"""The real `cdk synth -c config=a.yaml,b.yaml`: one stack per file, review manifests per stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.assembly.test_several_configs import cluster_config, write

from .conftest import run_cdk

pytestmark = pytest.mark.e2e


def test_cli_synth_of_two_config_files_gives_two_stacks_and_manifests_per_stack(cdk_cli: Path, tmp_path: Path):
    # GIVEN two config files for clusters in two regions
    a = write(tmp_path, "a.yaml", cluster_config("hp-west", "us-west-2", prefix="w"))
    b = write(tmp_path, "b.yaml", cluster_config("hp-east", "us-east-1", prefix="e"))
    out = tmp_path / "cdk.out"
    # WHEN the CLI synthesizes them in one run (cdk-nag on; a failure fails the test)
    run_cdk(["synth", "-q", "-o", str(out), "-c", f"config={a},{b}"])
    # THEN one stack per file, each with its review manifests under manifests/<stack>/
    artifacts = json.loads((out / "manifest.json").read_text())["artifacts"]
    stacks = {k: v["environment"] for k, v in artifacts.items() if v["type"] == "aws:cloudformation:stack"}
    assert stacks == {"HyperPodInference-hp-west": "aws://111122223333/us-west-2",
                      "HyperPodInference-hp-east": "aws://111122223333/us-east-1"}
    for name in stacks:
        assert sorted(p.name for p in (out / "manifests" / name).glob("*.yaml"))
    assert not list((out / "manifests").glob("*.yaml"))
