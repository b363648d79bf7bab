"""The real `cdk synth` CLI on the default app, and what a config error leaves behind (nothing)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CDK = REPO / "node_modules" / ".bin" / "cdk"

pytestmark = pytest.mark.e2e


def cdk_synth(outdir: Path, *extra: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    if not CDK.exists():
        pytest.fail("the CDK CLI is missing: run `make test` (it installs node_modules)")
    env = dict(os.environ)
    env.update({"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20", "CDK_DISABLE_CLI_TELEMETRY": "true",
                "PATH": f"{Path(os.sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"})
    env.pop("HYPERPOD_TRACEBACK", None)
    env.update(env_extra or {})
    return subprocess.run([str(CDK), "synth", "--no-notices", "-q", "-o", str(outdir), *extra], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_default_app_synthesizes_template_and_manifests_with_the_cli(tmp_path):
    out = tmp_path / "cdk.out"
    result = cdk_synth(out)
    assert result.returncode == 0, result.stderr[-3000:]
    template = json.loads((out / "HyperPodInference.template.json").read_text())
    assert any(r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource" for r in template["Resources"].values())
    manifests = sorted(p.name for p in (out / "manifests").glob("*.yaml"))
    assert manifests == ["inference-nvme-agent-code.yaml", "inference-qwen-chat-support.yaml",
                         "inference-qwen-chat.yaml", "namespaces.yaml"]
    cr = next(yaml.safe_load_all((out / "manifests" / "inference-qwen-chat.yaml").read_text()))
    assert cr["kind"] == "InferenceEndpointConfig" and cr["metadata"]["name"] == "qwen-chat"
    report = json.loads((out / "validation-report.json").read_text())
    assert all(r["conclusion"] == "success" for r in report["pluginReports"])


def test_config_error_exits_nonzero_with_one_readable_message_and_writes_nothing(tmp_path):
    bad = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
    bad["endpoints"][0]["model"]["huggingface"]["commitSHA"] = "abc"
    bad["env"]["account"] = "12"
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(bad))
    out = tmp_path / "cdk.out"
    result = cdk_synth(out, "-c", f"config={config}")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"{config}: env.account: must be a 12-digit AWS account ID" in result.stderr
    assert f"{config}: endpoints[0].model.huggingface.commitSHA: must be a full 40-character" in result.stderr
    written = [p for p in out.rglob("*") if p.is_file()] if out.exists() else []
    assert written == []


def test_traceback_only_when_asked(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("apiVersion: hyperpod-inference/v1\n")
    result = cdk_synth(tmp_path / "o", "-c", f"config={config}", env_extra={"HYPERPOD_TRACEBACK": "1"})
    assert result.returncode != 0 and "Traceback" in result.stderr
