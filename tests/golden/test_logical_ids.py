"""Upgrade safety: the logical IDs, nesting and physical names of what the default config and the benchmark profiles
deploy equal the committed snapshot; a protected resource that went away is named in CHANGELOG.md."""

from __future__ import annotations

import json

import pytest

from tests.golden import inventory

UPDATE = "python -m tests.golden.inventory --update"


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("golden")
    return {name: inventory.synth_inventory(cfg, out / name) for name, cfg in inventory.profiles().items()}


@pytest.mark.parametrize("profile", list(inventory.profiles()))
def test_profile_deploys_the_snapshot_resources(synthesized: dict[str, dict], profile: str) -> None:
    # GIVEN the committed snapshot WHEN the profile is synthesized THEN every resource keeps its ID, type and name
    snap = inventory.load_snapshot()["profiles"].get(profile)
    assert snap is not None, f"profile {profile} has no snapshot; run {UPDATE}"
    now = synthesized[profile]
    removed = inventory.removed_protected(snap, now)
    assert not removed, (f"{profile}: deployed resources would be deleted or replaced: {json.dumps(removed)}; if "
                         f"intended, run {UPDATE} and give each one's migration in CHANGELOG.md")
    changed = {k: (snap.get(k), now.get(k)) for k in sorted(set(snap) | set(now)) if snap.get(k) != now.get(k)}
    assert not changed, f"{profile}: resources differ from the snapshot (run {UPDATE} if intended): {changed}"


def test_every_recorded_migration_is_in_the_changelog() -> None:
    # GIVEN protected resources the snapshot recorded as removed THEN CHANGELOG.md names each logical ID
    text = inventory.CHANGELOG.read_text() if inventory.CHANGELOG.exists() else ""
    missing = [key for key in inventory.load_snapshot().get("migrations", {})
               if key.rsplit("/", 1)[-1] not in text]
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
