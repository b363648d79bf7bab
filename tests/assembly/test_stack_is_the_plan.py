"""The stack is the plan: every AWS piece and every Kubernetes object the plan names (``plan.ownership``) is in the
synthesized templates and manifests once, and nothing is synthesized that the plan does not name, but for the
CDK-internal resources below (one synth of the default config, one of a perNamespace fleet, one with an Inference
Gateway)."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hyperpod_inference.plan.ownership import ManifestObject, planned_pieces, planned_units
from tests.synth_helpers import DEFAULT_CONFIG, Synth, gen_config, synth_config

#: CloudFormation types a stack holds that no plan names, each with why (they lie under INTERNAL_OWNERS only).
CDK_INTERNAL: dict[str, str] = {
    "AWS::Lambda::LayerVersion": "the kubectl layer the imported cluster carries (stack.py), and the AWS CLI layer of "
                                 "aws-cdk-lib's kubectl provider",
    "AWS::Lambda::Function": "the handlers of aws-cdk-lib's kubectl provider and of the checks' provider framework",
    "AWS::IAM::Role": "those handlers' execution roles",
    "AWS::IAM::Policy": "the handlers' policies (the checks' handlers read and invoke exactly the checked endpoints)",
    "AWS::Logs::LogGroup": "the checks' handlers' log groups",
    "AWS::StepFunctions::StateMachine": "the provider framework's waiter: a check polls until the endpoint answers",
    "AWS::CloudFormation::Stack": "aws-cdk-lib's kubectl provider, a nested stack of the cluster's stack",
}
#: The constructs those resources lie under: aws-cdk-lib's kubectl provider and the cluster's kubectl layer (beside
#: the construct), and the post-deploy check's provider, shared by every check of a stack with the same timeout (the
#: checks are the plan's: each stack with one has one provider per timeout, checked below).
INTERNAL_OWNERS = re.compile(r"(^|/)([^/]*-KubectlProvider(\.NestedStack)?|KubectlLayer|"
                             r"(?P<verify>EndpointVerificationProvider)\d+s\d+s)(/|$)")
_HASH = re.compile(r"-[0-9a-f]{10}$")


def fleet_config() -> dict[str, Any]:
    """A perNamespace fleet with what each piece of the plan needs: token syncs, the NVMe cache and its shared
    pieces, checks, capture, domains, a model reader in a stack group, KEDA's grants, alarms with a created topic."""
    data = gen_config().config(4, "heavy", namespace_count=2, layout="perNamespace")
    trigger = copy.deepcopy(__import__("yaml").safe_load(DEFAULT_CONFIG.read_text())["endpoints"][0]["autoScalingSpec"])
    data["endpoints"][0]["autoScalingSpec"] = trigger
    data["endpoints"].append({
        "name": "s3e", "namespace": "ns0", "stackGroup": "g1", "instanceType": "ml.g5.8xlarge", "runtime": "vllm",
        "sagemakerEndpointName": "s3e", "model": {"s3": {"bucket": "my-models", "prefix": "m/"}},
        "weightCache": {"mode": "daemonset"}})
    data["observability"] = {"dashboard": True, "alarms": {"createTopic": True}}
    return data


GATEWAY_CONFIG = Path(__file__).resolve().parents[1] / "fixtures" / "gateway.yaml"


@pytest.fixture(scope="module", params=["default", "fleet", "gateway"])
def synthesized(request, tmp_path_factory) -> Synth:
    config = {"default": DEFAULT_CONFIG, "gateway": GATEWAY_CONFIG}.get(request.param) or fleet_config()
    return synth_config(config, tmp_path_factory.mktemp(request.param), nag=False)


def resources(synth: Synth) -> list[tuple[str, str, cdk.Stack]]:
    """(construct path, CloudFormation type, stack) of every resource of the app's tree, each checked to be in its
    stack's template: together exactly the templates' resources."""
    found: list[tuple[str, str, cdk.Stack]] = []
    in_templates: dict[str, set[str]] = {}
    for node in synth.stack.node.find_all():
        if isinstance(node, cdk.CfnResource):
            stack = cdk.Stack.of(node)
            found.append((node.node.path, node.cfn_resource_type, stack))
            in_templates.setdefault(stack.template_file, set()).add(stack.resolve(node.logical_id))
    for file, ids in in_templates.items():
        template = json.loads((synth.outdir / file).read_text())
        assert set(template["Resources"]) == ids, file
    assert {p.name for p in synth.outdir.glob("*.template.json")} == set(in_templates)
    return found


def owner_of(path: str, planned: list[str]) -> str | None:
    """The planned piece ``path`` (relative to the construct) lies under: the longest planned path it starts with."""
    under = [p for p in planned if path == p or path.startswith(p + "/")]
    return max(under, key=len) if under else None


def test_each_planned_aws_piece_is_synthesized_and_nothing_else_is(synthesized):
    # GIVEN the plan the construct realized, and every resource of the synthesized templates
    inference = synthesized.stack.inference
    plan = inference.plan
    pieces = planned_pieces(plan)
    planned = [p.path for p in pieces]
    assert len(set(planned)) == len(planned)  # each piece once
    base = inference.node.path + "/"
    owned: Counter[str] = Counter()
    unplanned, providers = [], set()
    for path, rtype, stack in resources(synthesized):
        internal = INTERNAL_OWNERS.search(path)
        owner = owner_of(path[len(base):], planned) if path.startswith(base) else None
        if owner is not None:
            owned[owner] += 1
        elif internal is not None and rtype in CDK_INTERNAL:
            if internal.group("verify"):
                providers.add((stack.node.path, internal.group(2)))
        else:
            unplanned.append(f"{rtype} {path}")
    # THEN every resource is a planned piece's, or a CDK-internal one
    assert unplanned == []
    # AND every planned piece made resources
    assert [p for p in planned if not owned[p]] == []
    # AND each stack with a post-deploy check has one check provider per timeout, no other stack has one
    with_checks = {(inference.homes.home(p.scope_key).node.path if p.scope_key else synthesized.stack.node.path,
                    f"EndpointVerificationProvider{p.verify.timeout_minutes * 60}s30s")
                   for p in plan.endpoints if p.verify is not None}
    assert providers == with_checks


def _matches(obj: dict[str, Any], planned: ManifestObject) -> bool:
    meta = obj["metadata"]
    if (obj["kind"], meta.get("namespace") or "") != (planned.kind, planned.namespace):
        return False
    name = meta["name"]
    return bool(_HASH.search(name)) and name[:-11] == planned.name if planned.hashed else name == planned.name


def test_each_planned_manifest_and_object_is_synthesized_once_and_nothing_else_is(synthesized):
    # GIVEN the manifests the plan names and the review copies the synth wrote
    units = planned_units(synthesized.stack.inference.plan)
    manifests = synthesized.manifests
    # THEN there is one manifest per planned unit and no other
    assert sorted(manifests) == sorted(u.unit for u in units)
    # AND each holds exactly the objects the plan names for it, each once
    for unit in units:
        assert unit.objects is not None
        objs = list(manifests[unit.unit])
        for planned in unit.objects:
            matching = [o for o in objs if _matches(o, planned)]
            assert len(matching) == 1, (unit.unit, planned)
            objs.remove(matching[0])
        assert objs == [], unit.unit
    # AND no object is in two manifests
    names = Counter((o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in synthesized.objects())
    assert [k for k, n in names.items() if n > 1] == []


def test_the_check_fails_on_a_resource_the_plan_does_not_name(tmp_path: Path):
    # GIVEN the default stack with one resource added under the construct that no plan names
    from hyperpod_inference.app import build

    app = cdk.App(outdir=str(tmp_path))
    stack = build(app, str(DEFAULT_CONFIG), nag=False)
    cdk.CfnResource(stack.inference, "Unplanned", type="AWS::SNS::Topic")
    app.synth()
    base = stack.inference.node.path + "/"
    planned = [p.path for p in planned_pieces(stack.inference.plan)]
    # WHEN its resources are matched with the plan / THEN that one has no planned piece, the rest have
    paths = [n.node.path[len(base):] for n in stack.inference.node.find_all() if isinstance(n, cdk.CfnResource)]
    assert [p for p in paths if owner_of(p, planned) is None] == ["Unplanned"]
