"""Upgrade safety: the logical IDs, nesting and physical names of what the default config and the benchmark profiles
deploy equal the committed snapshot; a protected resource that went away is named in CHANGELOG.md."""

from __future__ import annotations

import json

import pytest

from tests.golden import inventory

UPDATE = "python -m tests.golden.inventory --update"


@pytest.fixture(scope="module")
def synthesized(shared_synth) -> dict[str, dict]:
    # the session's synth of each profile (tests/golden/test_upgrade.py and the docs tests read the same ones)
    synths = {name: shared_synth(cfg, nag=False) for name, cfg in inventory.profiles().items()}
    return {name: inventory.template_inventory(s.outdir, s.template_file) for name, s in synths.items()}


@pytest.mark.parametrize("profile", list(inventory.profiles()))
def test_profile_deploys_the_snapshot_resources(synthesized: dict[str, dict], profile: str) -> None:
    # GIVEN the committed snapshot WHEN the profile is synthesized THEN every resource keeps its ID, type and name
    snap = inventory.load_snapshot()["profiles"].get(profile)
    assert snap is not None, f"profile {profile} has no snapshot; run {UPDATE}"
    now = synthesized[profile]
    removed = inventory.removed_protected(snap, now)
    assert not removed, (f"{profile}: deployed resources would be deleted or replaced: {json.dumps(removed)}; if "
                         f"intended, run {UPDATE} and give each one's migration in CHANGELOG.md")
    gateway_upgrades = inventory.gateway_addon_changes(snap, now)
    assert not gateway_upgrades, f"{profile}: {gateway_upgrades} (then run {UPDATE})"
    changed = {k: (snap.get(k), now.get(k)) for k in sorted(set(snap) | set(now)) if snap.get(k) != now.get(k)}
    assert not changed, f"{profile}: resources differ from the snapshot (run {UPDATE} if intended): {changed}"


def test_every_recorded_migration_is_in_the_changelog() -> None:
    # GIVEN protected resources the snapshot recorded as removed THEN CHANGELOG.md names each logical ID
    text = inventory.CHANGELOG.read_text() if inventory.CHANGELOG.exists() else ""
    missing = inventory.missing_migrations(inventory.load_snapshot().get("migrations", {}), text)
    assert not missing, f"CHANGELOG.md gives no migration for: {missing}"


def test_removed_protected_sees_a_moved_manifest_and_a_renamed_bucket() -> None:
    # GIVEN an inventory WHEN a manifest resource moves and a bucket gets another name THEN both are reported
    old = {"/ManifestA": {"type": "Custom::AWSCDK-EKS-KubernetesResource"},
           "/Bucket": {"type": "AWS::S3::Bucket", "names": {"BucketName": "a"}},
           "/Fn": {"type": "AWS::Lambda::Function"}}
    new = {"/Nested/ManifestA": {"type": "Custom::AWSCDK-EKS-KubernetesResource"},
           "/Bucket": {"type": "AWS::S3::Bucket", "names": {"BucketName": "b"}}}
    assert inventory.removed_protected(old, new) == {"/ManifestA": "Custom::AWSCDK-EKS-KubernetesResource",
                                                     "/Bucket": "AWS::S3::Bucket"}


def test_an_add_on_version_change_in_a_stack_with_gateways_is_called_out() -> None:
    # GIVEN a gateway stack's add-on at v2.1.0 WHEN a release moves it to another version THEN the check says to
    # delete the gateways first; a stack without gateways records no add-on version (its snapshot is unchanged)
    old = {"/OperatorAddon": {"type": "AWS::EKS::Addon", inventory.GATEWAY_ADDON_VERSION: "v2.1.0-eksbuild.1"}}
    new = {"/OperatorAddon": {"type": "AWS::EKS::Addon", inventory.GATEWAY_ADDON_VERSION: "v2.2.0-eksbuild.1"}}
    assert inventory.gateway_addon_changes(old, new) == [
        "/OperatorAddon: the operator add-on goes from v2.1.0-eksbuild.1 to v2.2.0-eksbuild.1 in a stack with "
        "Inference Gateways: delete every InferenceGatewayConfig before the add-on is upgraded "
        "(docs/inference-gateway.md#upgrading-the-add-on)"]
    assert inventory.gateway_addon_changes(old, old) == []
    assert inventory.gateway_addon_changes({"/OperatorAddon": {"type": "AWS::EKS::Addon"}}, new) == []


def test_only_the_gateway_profile_records_the_add_on_version() -> None:
    recorded = {name for name, entries in inventory.load_snapshot()["profiles"].items()
                if any(inventory.GATEWAY_ADDON_VERSION in e for e in entries.values())}
    assert recorded == {"gateway"}


ALIAS = "AWS::KMS::Alias"
ROLE = "AWS::IAM::Role"


def test_a_renamed_alias_or_role_under_the_same_logical_id_is_a_replacement_the_changelog_must_name() -> None:
    # GIVEN a snapshot with a key alias and a role WHEN a release renames both under the same logical IDs
    old = {"/KeyAlias": {"type": ALIAS, "names": {"AliasName": "alias/a-data-capture"}},
           "/ExecutionRole": {"type": ROLE, "names": {"RoleName": "SageMakerHyperPodInference-a-us-west-2"}}}
    new = {"/KeyAlias": {"type": ALIAS, "names": {"AliasName": "alias/b-data-capture"}},
           "/ExecutionRole": {"type": ROLE, "names": {"RoleName": "SageMakerHyperPodInference-b-us-west-2"}}}
    # THEN the check reports both as replaced
    removed = inventory.removed_protected(old, new)
    assert removed == {"/KeyAlias": ALIAS, "/ExecutionRole": ROLE}
    # AND once recorded, the changelog check fails until CHANGELOG.md names each logical ID with its migration
    recorded = {f"default:{path}": rtype for path, rtype in removed.items()}
    assert set(inventory.missing_migrations(recorded, "## Unreleased\n- nothing about it\n")) == set(recorded)
    named = "- **Migration**: `KeyAlias` and `ExecutionRole` get new names; ..."
    assert inventory.missing_migrations(recorded, named) == []


def test_a_changed_replacement_causing_property_is_reported_and_an_unchanged_one_is_not() -> None:
    # GIVEN a role with a path and a hosted zone WHEN the role's path changes and the zone stays
    zone = {"type": "AWS::Route53::HostedZone", "names": {"Name": "example.com."}}
    old = {"/Role": {"type": ROLE, "names": {"RoleName": "r"}, "replacing": {"Path": "/a/"}}, "/Zone": zone}
    new = {"/Role": {"type": ROLE, "names": {"RoleName": "r"}, "replacing": {"Path": "/b/"}}, "/Zone": dict(zone)}
    # THEN only the role is reported
    assert inventory.removed_protected(old, new) == {"/Role": ROLE}


def test_the_inventory_records_names_and_replacing_properties_of_stateful_resources(tmp_path) -> None:
    # GIVEN a template with a named log group, a key with a key spec and a role with a path
    template = {"Resources": {
        "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": "/hp/x", "RetentionInDays": 7}},
        "Key": {"Type": "AWS::KMS::Key", "Properties": {"KeySpec": "SYMMETRIC_DEFAULT", "Description": "d"}},
        "Role": {"Type": ROLE, "Properties": {"RoleName": "r", "Path": "/hp/", "Description": "d"}},
    }}
    (tmp_path / "t.json").write_text(json.dumps(template))
    # WHEN its inventory is taken
    inv = inventory.template_inventory(tmp_path, "t.json", assets={})
    # THEN names and replacement-causing properties are recorded, nothing else
    assert inv == {"/Logs": {"type": "AWS::Logs::LogGroup", "names": {"LogGroupName": "/hp/x"}},
                   "/Key": {"type": "AWS::KMS::Key", "replacing": {"KeySpec": "SYMMETRIC_DEFAULT"}},
                   "/Role": {"type": ROLE, "names": {"RoleName": "r"}, "replacing": {"Path": "/hp/"}}}


@pytest.mark.parametrize("rtype", sorted(inventory.REPLACING_PROPERTIES))
def test_the_replacing_properties_are_the_cloudformation_schemas_create_only_ones(rtype: str) -> None:
    # GIVEN the CloudFormation resource schema of a protected type (as cfn-lint ships it)
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", rtype).schema
    create_only = {p.removeprefix("/properties/") for p in schema.get("createOnlyProperties", [])}
    # THEN the table records exactly its create-only properties (the name among them), or for a KMS key the ones
    # whose change its schema says fails the update
    recorded = set(inventory.REPLACING_PROPERTIES[rtype]) | ({inventory.NAME_OF_TYPE[rtype]}
                                                            if rtype in inventory.NAME_OF_TYPE else set())
    if rtype == "AWS::KMS::Key":
        assert not create_only
        for prop in ("KeySpec", "KeyUsage", "MultiRegion"):
            assert "update request fails" in schema["properties"][prop]["description"]
        assert recorded == {"KeySpec", "KeyUsage", "MultiRegion", "Origin"}
    else:
        assert recorded == create_only
    assert set(inventory.NAME_OF_TYPE.values()) <= set(inventory.NAME_PROPERTIES)
