"""Scale: 100 endpoints of the `common` benchmark profile (benchmarks/gen_config.py) fit in one stack.

Synthesized in-process (no CLI, no cdk-nag) with the feature flags of cdk.json, so the templates are the ones
`cdk synth` writes. These are counts against CloudFormation and kubectl-provider limits, never timings; the synth
time is measured by benchmarks/scale.py.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hyperpod_inference.app import build

REPO = Path(__file__).resolve().parents[2]
MANIFEST_TYPE = "Custom::AWSCDK-EKS-KubernetesResource"
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_RESOURCES = 500
MAX_OUTPUTS = 200
MAX_MANIFEST_BYTES = 256 * 1024
MAX_RESOURCES_PER_ENDPOINT = 3  # common profile


def _gen_config() -> Any:
    spec = importlib.util.spec_from_file_location("gen_config", REPO / "benchmarks" / "gen_config.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _gen_config()
CONTEXT = {k: v for k, v in json.loads((REPO / "cdk.json").read_text())["context"].items()
           if k not in ("config", "stackName")}


def synth(folder: Path, n: int, profile: str = "common") -> dict[str, dict[str, Any]]:
    """Template file name -> (template, size in bytes) for a generated config of n endpoints."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / f"{profile}-{n}.yaml"
    config.write_text(GEN.dump(n, profile))
    out = folder / "cdk.out"
    app = cdk.App(outdir=str(out), context=CONTEXT)
    build(app, str(config), nag=False)
    app.synth()
    return {p.name: {"template": json.loads(p.read_text()), "bytes": p.stat().st_size}
            for p in sorted(out.glob("*.template.json"))}


def top_level(templates: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (name,) = [n for n in templates if not n.endswith(".nested.template.json")]
    return templates[name]


@pytest.fixture(scope="module")
def hundred(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return synth(tmp_path_factory.mktemp("scale-100"), 100)


def test_hundred_endpoints_synthesize_every_endpoint(hundred: dict[str, dict[str, Any]]) -> None:
    resources = top_level(hundred)["template"]["Resources"].values()
    # one manifest per endpoint, plus one per namespace
    assert sum(1 for r in resources if r["Type"] == MANIFEST_TYPE) == 100 + len(GEN.NAMESPACES)


def test_templates_under_size_and_resource_limits(hundred: dict[str, dict[str, Any]]) -> None:
    for name, t in hundred.items():
        assert t["bytes"] < MAX_TEMPLATE_BYTES, f"{name}: {t['bytes']} bytes"
        assert len(t["template"]["Resources"]) < MAX_RESOURCES, f"{name}: {len(t['template']['Resources'])} resources"


def test_outputs_within_limit(hundred: dict[str, dict[str, Any]]) -> None:
    for name, t in hundred.items():
        outputs = t["template"].get("Outputs", {})
        assert len(outputs) <= MAX_OUTPUTS, f"{name}: {len(outputs)} outputs"
    # over the limit the stack folds each endpoint's outputs into one; nothing is dropped
    outputs = top_level(hundred)["template"]["Outputs"]
    endpoint_outputs = [k for k in outputs if k.endswith("Outputs")]
    assert len(endpoint_outputs) == 100
    assert "kubectl describe inferenceendpointconfig e5 -n research" in outputs["ResearchE5Outputs"]["Value"]
    assert "https://e5.example.com/" in outputs["ResearchE5Outputs"]["Value"]


def test_every_manifest_under_kubectl_provider_limit(hundred: dict[str, dict[str, Any]]) -> None:
    for name, t in hundred.items():
        for logical_id, r in t["template"]["Resources"].items():
            if r["Type"] != MANIFEST_TYPE:
                continue
            manifest = r["Properties"]["Manifest"]
            size = len(manifest) if isinstance(manifest, str) else len(json.dumps(manifest, separators=(",", ":")))
            assert size < MAX_MANIFEST_BYTES, f"{name}: {logical_id}: {size} bytes"


def test_common_profile_resources_per_endpoint(tmp_path: Path) -> None:
    one = synth(tmp_path / "n1", 1)
    eleven = synth(tmp_path / "n11", 11)
    per_endpoint = (len(top_level(eleven)["template"]["Resources"]) - len(top_level(one)["template"]["Resources"])) / 10
    assert per_endpoint <= MAX_RESOURCES_PER_ENDPOINT
    # the kubectl provider's nested stack does not grow with the endpoints
    nested = {n: len(t["template"]["Resources"]) for n, t in one.items() if n.endswith(".nested.template.json")}
    assert nested == {n: len(t["template"]["Resources"]) for n, t in eleven.items()
                      if n.endswith(".nested.template.json")}
