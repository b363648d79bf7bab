"""What the stack owns, as the plan names it, from the config alone (tests/assembly/test_stack_is_the_plan.py finds
each in the synth)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from hyperpod_inference.config.loader import parse_config
from hyperpod_inference.plan import PlanContext, plan_config
from hyperpod_inference.plan.ownership import ManifestObject, planned_pieces, planned_units

REPO = Path(__file__).resolve().parents[2]


def plan_of(path: str = "hyperpod.yaml", **changes: Any):
    data = yaml.safe_load((REPO / path).read_text())
    data.update(copy.deepcopy(changes))
    config = parse_config(data, path)
    return plan_config(config, PlanContext.of(config, stack_name="HyperPodInference"))


def test_the_default_config_owns_its_namespace_endpoint_and_shared_nvme_pieces():
    plan = plan_of()
    units = {u.unit: u for u in planned_units(plan)}
    (ep,) = plan.endpoints
    assert list(units) == ["namespace-inference", ep.unit, ep.agent_code.unit, ep.warm_unit]
    assert units[ep.unit].objects == (ManifestObject("InferenceEndpointConfig", "inference", "qwen-chat"),)
    # AND the content-named objects are named by their stem
    assert [(o.kind, o.hashed) for o in units[ep.agent_code.unit].objects if o.hashed] == [("ConfigMap", True),
                                                                                         ("Job", True)]
    # AND the AWS pieces: the operator's, a manifest per unit, the check, capture, zone, KEDA, the dashboard
    paths = [p.path for p in planned_pieces(plan)]
    assert paths == ["TlsBucket", "ExecutionRole", "DependencyRoles", "DependencyAddons", "OperatorAddon",
                     "ManifestNamespaceInference", "ManifestInferenceQwenChat", "ManifestInferenceAgentC9c4b212",
                     "ManifestInferenceWarm67c76aff", "VerifyInferenceQwenChat", "DataCapture", "CaptureAnalytics",
                     "Domain", "KedaTriggers", "Observability"]


def test_files_delivery_and_an_existing_operator_own_no_manifest_check_or_operator_piece():
    plan = plan_of("tests/fixtures/files.yaml", operator={
        "install": "existing", "dependencies": "existing",
        "executionRoleArn": "arn:aws:iam::111122223333:role/SageMakerHyperPodInference-x"},
        observability={"dashboard": False})
    paths = [p.path for p in planned_pieces(plan)]
    # THEN only the roles the endpoints' service accounts assume and the capture pieces are the stack's (the zone
    # and certificate are imported); the manifests are files
    assert not [p for p in paths if p.startswith(("Manifest", "Verify", "ExecutionRole", "OperatorAddon"))]
    assert "DataCapture" in paths and "Domain" not in paths
    assert all(u.objects for u in planned_units(plan))
