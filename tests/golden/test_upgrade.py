"""The deploy order of an upgrade never leaves a running pod without its Secret, code or DaemonSet: replayed from the
manifests of the release before per-stack names to today's, and from a fleet to the same fleet reordered or without
its first group (a shared manifest that moved would delete what the pods use)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.golden import inventory, upgrade
from tests.synth_helpers import gen_config

GEN = gen_config()


def _manifest(objects: list[str], refs: dict[str, list[str]] | None = None, *, after: list[str] | None = None,
              prune: bool = True, overwrite: bool = False) -> dict[str, Any]:
    return {"objects": sorted(objects), "refs": refs or {}, "after": after or [], "prune": prune,
            "overwrite": overwrite}


#: A namespace's token sync and an endpoint mounting its Secret.
OLD = {
    "/ManifestSync": _manifest(["ExternalSecret/ns/t1", "Secret/ns/t1"]),
    "/ManifestEp": _manifest(["InferenceEndpointConfig/ns/ep"], {"InferenceEndpointConfig/ns/ep": ["Secret/ns/t1"]},
                             after=["/ManifestSync"]),
}


def test_a_rename_into_a_new_manifest_the_endpoint_waits_for_is_safe() -> None:
    # GIVEN the sync renamed into a new manifest, the endpoint mounting the new Secret and waiting for it
    new = {"/ManifestSyncNew": _manifest(["ExternalSecret/ns/s-t1", "Secret/ns/s-t1"]),
           "/ManifestEp": _manifest(["InferenceEndpointConfig/ns/ep"],
                                    {"InferenceEndpointConfig/ns/ep": ["Secret/ns/s-t1"]}, after=["/ManifestSyncNew"])}
    # THEN nothing a pod uses is deleted before the pods roll (the old sync goes in the cleanup)
    assert upgrade.upgrade_problems(OLD, new) == []


def test_a_rename_inside_a_pruned_manifest_deletes_the_secret_while_the_endpoint_still_mounts_it() -> None:
    # GIVEN the same rename kept in the old manifest resource (kubectl apply --prune deletes the old Secret at once)
    new = {"/ManifestSync": _manifest(["ExternalSecret/ns/s-t1", "Secret/ns/s-t1"]),
           "/ManifestEp": _manifest(["InferenceEndpointConfig/ns/ep"],
                                    {"InferenceEndpointConfig/ns/ep": ["Secret/ns/s-t1"]}, after=["/ManifestSync"])}
    # THEN the replay names the Secret deleted while the endpoint's pods mount it
    (problem,) = upgrade.upgrade_problems(OLD, new)
    assert "pruned in place, Secret/ns/t1 is deleted while /ManifestEp" in problem


def test_a_manifest_moved_with_its_objects_deletes_them_in_the_cleanup_and_fails_to_create_them() -> None:
    # GIVEN the sync moved to another stack under the same names
    new = {"/Nested/ManifestSync": _manifest(["ExternalSecret/ns/t1", "Secret/ns/t1"]),
           "/ManifestEp": _manifest(["InferenceEndpointConfig/ns/ep"], {"InferenceEndpointConfig/ns/ep": ["Secret/ns/t1"]},
                                    after=["/Nested"]),
           "__stacks__": {"/Nested": []}}
    problems = upgrade.upgrade_problems(OLD, new)
    # THEN the create fails on the existing objects, and the old copy's delete would remove what the new one declares
    assert any("creates Secret/ns/t1, which exists already" in p for p in problems), problems
    assert any("/ManifestSync leaves the template: its delete removes Secret/ns/t1" in p for p in problems), problems


def test_an_endpoint_that_does_not_wait_for_its_secret_is_a_problem() -> None:
    new = {"/ManifestSyncNew": _manifest(["ExternalSecret/ns/s-t1", "Secret/ns/s-t1"]),
           "/ManifestEp": _manifest(["InferenceEndpointConfig/ns/ep"],
                                    {"InferenceEndpointConfig/ns/ep": ["Secret/ns/s-t1"]})}
    assert upgrade.upgrade_problems(OLD, new) == [
        "/ManifestEp: InferenceEndpointConfig/ns/ep uses Secret/ns/s-t1 of /ManifestSyncNew without waiting for it"]


def test_a_daemonset_pruned_in_place_with_nothing_to_take_over_is_a_problem() -> None:
    old = {"/ManifestWarm": _manifest(["DaemonSet/ns/w1"], {"DaemonSet/ns/w1": []})}
    new = {"/ManifestWarm": _manifest(["ConfigMap/ns/x"]), "/ManifestWarmNew": _manifest(["DaemonSet/ns/w2"])}
    assert upgrade.upgrade_problems(old, new) == [
        "/ManifestWarm: pruned in place, DaemonSet/ns/w1 is deleted with no DaemonSet to take over"]


@pytest.fixture(scope="module")
def today(shared_synth) -> dict[str, dict[str, Any]]:
    # the session's synth of each profile, as tests/golden/test_logical_ids.py reads it
    every = inventory.profiles()
    synths = {name: shared_synth(every[name], nag=False) for name in upgrade.PROFILES}
    return {name: upgrade.manifest_inventory(s.outdir, s.template_file) for name, s in synths.items()}


@pytest.mark.parametrize("profile", upgrade.PROFILES)
def test_upgrading_from_the_release_before_per_stack_names_keeps_every_pods_secret_code_and_daemonset(
        today: dict[str, dict[str, Any]], profile: str) -> None:
    # GIVEN the manifests as the release before per-stack names deployed them, and today's
    before = json.loads(upgrade.BEFORE.read_text())[profile]
    # WHEN the update is replayed THEN every renamed object comes in a new manifest, created (and the pods rolled
    # onto it) before the old manifest is deleted in the cleanup, and nothing is created over an existing object
    assert upgrade.upgrade_problems(before, today[profile]) == []
    # AND the rename happened: no shared object keeps its old name
    old_shared = {o for e in before.values() if "objects" in e for o in e["objects"]
                  if o.split("/")[0] in ("ExternalSecret", "DaemonSet", "Job")}
    new_objects = {o for e in today[profile].values() if "objects" in e for o in e["objects"]}
    assert old_shared and not old_shared & new_objects


def _fleet() -> dict[str, Any]:
    """A perNamespace fleet whose first endpoint of ns0 (e0) and of ns1 (e1) are in stackGroup ``first``."""
    cfg = GEN.config(6, "heavy", namespace_count=2, layout="perNamespace")
    for ep in cfg["endpoints"][:2]:
        ep["stackGroup"] = "first"
    return cfg


def _shared(inv: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Logical path -> objects of the shared manifests (agent code and gc, token syncs, warm DaemonSets)."""
    return {p: e["objects"] for p, e in inv.items() if p != "__stacks__"
            and any(o.split("/")[0] in ("ExternalSecret", "DaemonSet", "Job") for o in e["objects"])}


@pytest.fixture(scope="module")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out: Path = tmp_path_factory.mktemp("fleets")
    reordered = _fleet()
    reordered["endpoints"].reverse()
    without_first = _fleet()
    without_first["endpoints"] = [ep for ep in without_first["endpoints"] if ep.get("stackGroup") != "first"]
    return {name: upgrade.synth_manifest_inventory(copy.deepcopy(cfg), out / name)
            for name, cfg in (("fleet", _fleet()), ("reordered", reordered), ("without-first", without_first))}


def test_reordering_a_fleets_endpoints_moves_no_shared_manifest(fleets: dict[str, dict[str, Any]]) -> None:
    # GIVEN a fleet and the same fleet with its endpoints in reverse order
    # THEN every shared manifest keeps its logical path and its objects, and the update deletes nothing in use
    assert _shared(fleets["fleet"]) and _shared(fleets["reordered"]) == _shared(fleets["fleet"])
    assert upgrade.upgrade_problems(fleets["fleet"], fleets["reordered"]) == []


def test_removing_a_fleets_first_group_moves_no_shared_manifest(fleets: dict[str, dict[str, Any]]) -> None:
    # GIVEN the fleet without the group holding each namespace's first endpoint
    shared, left = _shared(fleets["fleet"]), _shared(fleets["without-first"])
    # THEN the shared manifests left are those of the fleet, unmoved: each namespace's code and gc in the namespace's
    # own nested stack, the other groups' syncs and DaemonSets where they were
    assert left and all(shared.get(p) == objs for p, objs in left.items()), set(left) - set(shared)
    code = sorted(p for p, objs in shared.items() if any(o.startswith("Job/") for o in objs))
    assert len(code) == 2 and all("/Namespacens0" in p or "/Namespacens1" in p for p in code)
    assert all("first" not in p.split("/")[1] for p in code), code
    assert code == sorted(p for p, objs in left.items() if any(o.startswith("Job/") for o in objs))
    # AND the update deletes nothing a remaining pod uses
    assert upgrade.upgrade_problems(fleets["fleet"], fleets["without-first"]) == []
