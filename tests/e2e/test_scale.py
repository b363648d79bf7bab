"""Scale: 100 endpoints of the `common` benchmark profile (benchmarks/gen_config.py) fit in one stack; 300 of the
`heavy` profile over 10 namespaces fit `stackLayout: perNamespace`, and a 301st endpoint moves nothing.

Synthesized in-process (no CLI, no cdk-nag) with the feature flags of cdk.json, so the templates are the ones
`cdk synth` writes. These are counts against CloudFormation and kubectl-provider limits, never timings; the synth
time is measured by benchmarks/scale.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml

from hyperpod_inference.app import build
from tests.golden.inventory import template_inventory
from tests.k8s_validation import crd_errors, is_custom_resource, require_crds
from tests.synth_helpers import gen_config

REPO = Path(__file__).resolve().parents[2]
MANIFEST_TYPE = "Custom::AWSCDK-EKS-KubernetesResource"
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_RESOURCES = 500
MAX_OUTPUTS = 200
MAX_MANIFEST_BYTES = 256 * 1024
MAX_RESOURCES_PER_ENDPOINT = 3  # common profile
GEN = gen_config()
CONTEXT = {k: v for k, v in json.loads((REPO / "cdk.json").read_text())["context"].items()
           if k not in ("config", "stackName")}


def synth(folder: Path, n: int, profile: str = "common", observability: dict[str, Any] | None = None,
          **options: Any) -> dict[str, dict[str, Any]]:
    """Template file name -> (template, size in bytes) for a generated config of n endpoints (``options``: of
    ``gen_config.dump``); the review manifests are written to ``<folder>/cdk.out/manifests/``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / f"{profile}-{n}.yaml"
    text = GEN.dump(n, profile, **options)
    if observability is not None:
        text = yaml.safe_dump(yaml.safe_load(text) | {"observability": observability}, sort_keys=False)
    config.write_text(text)
    out = folder / "cdk.out"
    app = cdk.App(outdir=str(out), context=CONTEXT)
    stack = build(app, str(config), nag=False)
    app.synth()
    stack.write_manifests(str(out))
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


# ------------------------------------------------------------------------------- fleets: 300 heavy endpoints, nested
FLEET = {"namespace_count": 10, "layout": "perNamespace"}
#: The fleet also has alarms: each endpoint's go to its namespace's nested stack, like its manifest.
FLEET_OBSERVABILITY = {"alarms": {"createTopic": True, "noInvocationsMinutes": 30}}


@pytest.fixture(scope="module")
def fleet_300(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fleet-300")
    synth(folder, 300, "heavy", observability=FLEET_OBSERVABILITY, **FLEET)
    return folder / "cdk.out"


def _templates(out: Path) -> dict[str, dict[str, Any]]:
    return {p.name: {"template": json.loads(p.read_text()), "bytes": p.stat().st_size}
            for p in sorted(out.glob("*.template.json"))}


@pytest.mark.e2e
def test_300_heavy_endpoints_over_10_namespaces_synthesize_within_every_limit(fleet_300: Path) -> None:
    # GIVEN 300 heavy endpoints (token, NVMe cache, all capture tiers, verify, 100 domains) over 10 namespaces
    templates = _templates(fleet_300)
    namespace_stacks = [n for n in templates if "Namespace" in n and n.endswith(".nested.template.json")]
    # THEN one nested stack per namespace holds its endpoints' manifests, each template within CloudFormation's limits
    assert len(namespace_stacks) == 10
    manifests = 0
    for name, t in templates.items():
        resources = t["template"]["Resources"]
        assert t["bytes"] < MAX_TEMPLATE_BYTES, f"{name}: {t['bytes']} bytes"
        assert len(resources) < MAX_RESOURCES, f"{name}: {len(resources)} resources"
        assert len(t["template"].get("Outputs", {})) <= MAX_OUTPUTS, name
        for logical_id, r in resources.items():
            if r["Type"] == MANIFEST_TYPE:
                manifests += 1
                size = len(json.dumps(r["Properties"]["Manifest"], separators=(",", ":")))
                assert size < MAX_MANIFEST_BYTES, f"{name}: {logical_id}: {size} bytes"
    # a manifest per endpoint; per namespace its namespace, the agent code, one token sync and one warm DaemonSet
    # (the endpoints of a namespace read one secret and run alike agent pods: shared, not one per endpoint)
    assert manifests == 300 + 10 * 4
    # one kubectl provider for the app
    assert len([n for n in templates if "KubectlProvider" in n]) == 1


@pytest.mark.e2e
def test_300_heavy_endpoints_get_a_dashboard_row_each_within_cloudwatch_limits(fleet_300: Path) -> None:
    # GIVEN the 300-endpoint fleet with the default dashboard THEN its dashboards (100 rows each, in the top-level
    # template) stay within CloudWatch's 500 widgets and together plot every endpoint's SageMaker endpoint once
    templates = _templates(fleet_300)
    dashboards = [r for t in templates.values() for r in t["template"]["Resources"].values()
                  if r["Type"] == "AWS::CloudWatch::Dashboard"]
    assert len(dashboards) == 3
    plotted = []
    for d in dashboards:
        body = json.loads(d["Properties"]["DashboardBody"])
        assert len(body["widgets"]) <= 500
        plotted += [w["properties"]["metrics"][0][3] for w in body["widgets"]
                    if w["type"] == "metric" and w["properties"]["metrics"][0][0] == "AWS/SageMaker"]
    assert len(plotted) == len(set(plotted)) == 300
    # and every endpoint's alarms (error rate, p99, no invocations, the composite) sit in its namespace's stack
    composites = {n: sum(1 for r in t["template"]["Resources"].values() if r["Type"] == "AWS::CloudWatch::CompositeAlarm")
                  for n, t in templates.items()}
    assert sum(composites.values()) == 300
    assert all(count == 30 for n, count in composites.items() if count), composites


@pytest.mark.e2e
def test_300_heavy_endpoints_custom_resources_validate_strictly(fleet_300: Path) -> None:
    require_crds()
    objs = [o for f in sorted((fleet_300 / "manifests").glob("*.yaml")) for o in yaml.safe_load_all(f.read_text())
            if o and is_custom_resource(o)]
    assert len(objs) == 300
    errors = {o["metadata"]["name"]: crd_errors(o, "v3.3") for o in objs}
    assert {k: v for k, v in errors.items() if v} == {}


@pytest.mark.e2e
def test_adding_one_endpoint_changes_no_existing_logical_id_type_or_nesting(
        fleet_300: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    # GIVEN the 300-endpoint fleet  WHEN a 301st endpoint is added (to ns0)
    folder = tmp_path_factory.mktemp("fleet-301")
    synth(folder, 301, "heavy", observability=FLEET_OBSERVABILITY, **FLEET)
    before = template_inventory(fleet_300, "HyperPodInference.template.json")
    after = template_inventory(folder / "cdk.out", "HyperPodInference.template.json")
    # THEN every resource keeps its nesting path, logical ID and type; only the new endpoint's resources are added
    assert {k: v["type"] for k, v in before.items()} == {k: after[k]["type"] for k in before if k in after}
    assert set(before) <= set(after)
    added = sorted(set(after) - set(before))
    # the 301st row starts a 4th dashboard (100 rows each); the first three keep their bodies' endpoints
    (dashboard,) = [k for k in added if after[k]["type"] == "AWS::CloudWatch::Dashboard"]
    assert dashboard.startswith("/ObservabilityDashboard4")
    added = [k for k in added if after[k]["type"] != "AWS::CloudWatch::Dashboard"]
    assert added and all("Ns0E300" in k.rsplit("/", 1)[1] for k in added), added
    assert all(k.startswith(next(iter(added)).rsplit("/", 1)[0]) for k in added)  # all in ns0's nested stack
