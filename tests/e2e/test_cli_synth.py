"""The real `cdk synth` CLI on the default app, and what a config error leaves behind (nothing)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.facts import naming

from .conftest import REPO, cli_env, run_cdk

pytestmark = pytest.mark.e2e


def test_default_app_synthesizes_template_and_manifests_with_the_cli(synth_default: Path):
    # GIVEN the default app  WHEN `cdk synth` runs (the fixture fails the test on a non-zero exit)
    out = synth_default
    template = json.loads((out / "HyperPodInference.template.json").read_text())
    # THEN the template applies the manifests and the review copies are written, one file per chart
    assert any(r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource" for r in template["Resources"].values())
    manifests = sorted(p.name for p in (out / "manifests").glob("*.yaml"))
    scope = naming.kubernetes_scope("HyperPodInference", "HyperPodInference", "Default")
    code = naming.shared_unit_name("inference", "agent", f"{scope}-nvme-agent")
    assert len(manifests) == 4 and re.fullmatch(r"inference-warm-[0-9a-f]{8}\.yaml", manifests[2]), manifests
    assert [*manifests[:2], manifests[3]] == [f"{code}.yaml", "inference-qwen-chat.yaml", "namespace-inference.yaml"]
    cr = next(yaml.safe_load_all((out / "manifests" / "inference-qwen-chat.yaml").read_text()))
    assert cr["kind"] == "InferenceEndpointConfig" and cr["metadata"]["name"] == "qwen-chat"
    report = json.loads((out / "validation-report.json").read_text())
    assert all(r["conclusion"] == "success" for r in report["pluginReports"])


def synth_config(config: Path, outdir: Path, **env: str):
    return run_cdk(["synth", "-q", "-o", str(outdir), "-c", f"config={config}"], env=cli_env(**env), check=False)


def test_config_error_exits_nonzero_with_one_readable_message_and_writes_nothing(cdk_cli, tmp_path):
    bad = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
    bad["endpoints"][0]["model"]["huggingface"]["commitSHA"] = "abc"
    bad["env"]["account"] = "12"
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(bad))
    out = tmp_path / "cdk.out"
    result = synth_config(config, out, HYPERPOD_TRACEBACK="")  # empty: no traceback even if the caller set one
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"{config}: env.account: must be a 12-digit AWS account ID" in result.stderr
    assert f"{config}: endpoints[0].model.huggingface.commitSHA: must be a full 40-character" in result.stderr
    written = [p for p in out.rglob("*") if p.is_file()] if out.exists() else []
    assert written == []


def test_traceback_only_when_asked(cdk_cli, tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("apiVersion: hyperpod-inference/v1\n")
    result = synth_config(config, tmp_path / "o", HYPERPOD_TRACEBACK="1")
    assert result.returncode != 0 and "Traceback" in result.stderr
