"""The stack never adopts an existing namespace: one manifest resource per owned namespace, created with kubectl's
create (overwrite false), and the documented migration from the single namespaces manifest of earlier releases."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.synth_helpers import DEFAULT_CONFIG, load_yaml, synth_config

KUBECTL_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"


def manifest_objects(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of a manifest resource (a JSON string when it holds no deploy-time value)."""
    manifest = res["Properties"]["Manifest"]
    return json.loads(manifest) if isinstance(manifest, str) else []


def namespace_holders(template: dict[str, Any]) -> dict[str, list[str]]:
    """Manifest resources that hold a Namespace: logical ID -> the namespace names."""
    out = {}
    for logical_id, res in template["Resources"].items():
        if res["Type"] == KUBECTL_RESOURCE:
            names = [o["metadata"]["name"] for o in manifest_objects(res) if o["kind"] == "Namespace"]
            if names:
                out[logical_id] = names
    return out


@pytest.fixture(scope="module")
def two_namespaces(tmp_path_factory: pytest.TempPathFactory):
    data = load_yaml(DEFAULT_CONFIG)
    data["namespaces"] = ["inference", "research"]
    return synth_config(data, tmp_path_factory.mktemp("ns"), nag=False)


def test_each_namespace_has_its_own_manifest_resource_that_creates_never_applies(two_namespaces) -> None:
    # GIVEN two owned namespaces WHEN synthesized
    holders = namespace_holders(two_namespaces.template)
    # THEN one resource each, with overwrite false: the kubectl handler runs `kubectl create`, so an existing
    # namespace fails the deploy (AlreadyExists) and is never adopted, and so never deleted with the stack
    assert sorted(holders.values()) == [["inference"], ["research"]]
    for logical_id in holders:
        assert two_namespaces.template["Resources"][logical_id]["Properties"]["Overwrite"] is False


def test_removing_one_namespace_removes_only_its_own_resource(two_namespaces, shared_synth) -> None:
    # GIVEN the same config without research WHEN synthesized THEN only research's resource goes (prune of one
    # namespace deletes that namespace alone, as the config asked)
    one = shared_synth(DEFAULT_CONFIG, nag=False)
    before, after = namespace_holders(two_namespaces.template), namespace_holders(one.template)
    assert [before[k] for k in set(before) - set(after)] == [["research"]]
    assert all(before[k] == v for k, v in after.items())


def test_migration_from_the_single_namespaces_manifest_keeps_the_namespace(tmp_path, shared_synth) -> None:
    # GIVEN the golden snapshot of the previous release: its single ManifestNamespaces resource held the namespace
    from tests.golden import inventory

    previous = inventory.load_snapshot()["migrations"]
    legacy_ids = [k.rsplit("/", 1)[-1] for k in previous if k.startswith("default:") and "ManifestNamespaces" in k]
    assert legacy_ids, "the snapshot records the removed ManifestNamespaces resource as a migration"
    # WHEN step 1 of the documented migration synthesizes (-c hyperpod-inference:legacyNamespaces=retain)
    import aws_cdk as cdk

    from hyperpod_inference.app import build

    app = cdk.App(outdir=str(tmp_path / "step1"), context={"hyperpod-inference:legacyNamespaces": "retain"})
    stack = build(app, str(DEFAULT_CONFIG), nag=False)
    template = app.synth().get_stack_by_name(stack.stack_name).template
    holders = namespace_holders(template)
    # THEN the previous release's resource is there, unchanged in ID, and retained: removing it in step 2 (the
    # default synth, which no longer has it) leaves the namespace in the cluster
    assert list(holders) == legacy_ids and holders[legacy_ids[0]] == ["inference"]
    assert template["Resources"][legacy_ids[0]]["DeletionPolicy"] == "Retain"
    # AND the default synth (step 2) no longer has it: the resource removed is exactly the retained one
    default = shared_synth(DEFAULT_CONFIG, nag=False)
    assert legacy_ids[0] not in default.template["Resources"]
