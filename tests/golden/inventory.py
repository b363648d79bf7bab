"""The deployed-resource inventory the golden logical-ID test compares: for each profile, every resource of every
template (the stack and its nested stacks) with its logical ID, type, nesting, literal physical name and, for the
stateful types, the other properties whose change replaces the resource.

Regenerate the snapshot after an intended change with ``python -m tests.golden.inventory --update``. A removed,
renamed or replaced resource of a protected type (a moved ``KubernetesManifest`` is deleted with ``kubectl delete``;
a retained bucket, key, alias, zone, role or log group is orphaned or recreated) is recorded under ``migrations`` and
the test then requires CHANGELOG.md to name it with its migration.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).with_name("logical_ids.json")
CHANGELOG = REPO / "CHANGELOG.md"

#: Resource types whose removal, rename or replacement loses something deployed (a moved manifest is deleted with
#: ``kubectl delete``; a bucket, key, alias, zone, role or log group is orphaned, recreated or emptied).
PROTECTED_TYPES = (
    "Custom::AWSCDK-EKS-KubernetesResource",
    "AWS::S3::Bucket",
    "AWS::KMS::Key",
    "AWS::KMS::Alias",
    "AWS::IAM::Role",
    "AWS::Route53::HostedZone",
    "AWS::Logs::LogGroup",
)

#: The operator's add-on, and the kind whose objects must be deleted before that add-on is upgraded or removed.
OPERATOR_ADDON = "amazon-sagemaker-hyperpod-inference"
GATEWAY_KIND = '"kind":"InferenceGatewayConfig"'
#: The inventory key of the add-on version of a stack that holds Inference Gateways.
GATEWAY_ADDON_VERSION = "addonVersionUnderGateways"

#: Properties that carry a physical name the library chooses.
NAME_PROPERTIES = ("BucketName", "RoleName", "AliasName", "Name", "FunctionName", "AddonName", "DomainName",
                   "LogGroupName")

#: Per protected AWS type, the properties besides its name whose change replaces the resource under the same logical
#: ID: the type's ``createOnlyProperties`` in the CloudFormation resource schema (a test checks this table against the
#: schemas cfn-lint ships). ``AWS::KMS::Key`` has none there, but its schema says a change of ``KeySpec``,
#: ``KeyUsage`` or ``MultiRegion`` fails the update whatever the UpdateReplacePolicy, and ``Origin`` cannot change
#: either: those are recorded too.
REPLACING_PROPERTIES: dict[str, tuple[str, ...]] = {
    "AWS::S3::Bucket": ("BucketNamePrefix", "BucketNamespace"),
    "AWS::KMS::Key": ("KeySpec", "KeyUsage", "MultiRegion", "Origin"),
    "AWS::KMS::Alias": (),
    "AWS::IAM::Role": ("Path",),
    "AWS::Route53::HostedZone": ("DelegationSetId",),
    "AWS::Logs::LogGroup": (),
}
#: The name property of each protected AWS type (also create-only).
NAME_OF_TYPE: dict[str, str] = {
    "AWS::S3::Bucket": "BucketName",
    "AWS::KMS::Alias": "AliasName",
    "AWS::IAM::Role": "RoleName",
    "AWS::Route53::HostedZone": "Name",
    "AWS::Logs::LogGroup": "LogGroupName",
}



def profiles() -> dict[str, Any]:
    """Profile name -> config (a path or a dict): the default config, the files fixture, the benchmark profiles and
    a perNamespace fleet."""
    from tests.synth_helpers import gen_config

    gen = gen_config()
    out: dict[str, Any] = {"default": REPO / "hyperpod.yaml", "files": REPO / "tests" / "fixtures" / "files.yaml"}
    for profile in gen.PROFILES:
        out[f"bench-{profile}"] = gen.config(3, profile)
    # stackLayout perNamespace: the nested stacks' logical IDs (a moved manifest is deleted with kubectl delete)
    out["fleet-heavy"] = gen.config(4, "heavy", namespace_count=2, layout="perNamespace")
    # an Inference Gateway (v3.7, two schedulers over two endpoints): its add-on version is recorded too
    out["gateway"] = REPO / "tests" / "fixtures" / "gateway.yaml"
    return out


def _name(value: Any) -> str | None:
    """A physical name as written in the template: literal, or its intrinsic in compact JSON."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _nested_template(outdir: Path, assets: dict[str, Any], resource: dict[str, Any]) -> str | None:
    """The assembly file of a nested stack resource, found through its TemplateURL's asset hash."""
    url = json.dumps((resource.get("Properties") or {}).get("TemplateURL"))
    for asset_hash, asset in assets.get("files", {}).items():
        if f"{asset_hash}.json" in url:
            return asset["source"]["path"]
    return None


def template_inventory(outdir: Path, template_file: str, nesting: str = "", assets: dict | None = None,
                       ) -> dict[str, dict[str, Any]]:
    """``<nesting>/<logicalId>`` -> {type, names, deletionPolicy} for one template and its nested stacks."""
    if assets is None:
        assets = {}
        for path in outdir.glob("*.assets.json"):
            assets.setdefault("files", {}).update(json.loads(path.read_text()).get("files", {}))
    template = json.loads((outdir / template_file).read_text())
    out: dict[str, dict[str, Any]] = {}
    resources = template.get("Resources", {})
    gateways = any(GATEWAY_KIND in json.dumps((r.get("Properties") or {}).get("Manifest", ""))
                   .replace("\\", "").replace(" ", "") for r in resources.values())
    for logical_id, res in sorted(resources.items()):
        props = res.get("Properties") or {}
        names = {p: _name(props[p]) for p in NAME_PROPERTIES if props.get(p) is not None}
        replacing = {p: _name(props[p]) for p in REPLACING_PROPERTIES.get(res["Type"], ()) if props.get(p) is not None}
        entry: dict[str, Any] = {"type": res["Type"]}
        if names:
            entry["names"] = names
        if replacing:
            entry["replacing"] = replacing
        if res.get("DeletionPolicy"):
            entry["deletionPolicy"] = res["DeletionPolicy"]
        if gateways and res["Type"] == "AWS::EKS::Addon" and props.get("AddonName") == OPERATOR_ADDON:
            entry[GATEWAY_ADDON_VERSION] = _name(props.get("AddonVersion"))
        out[f"{nesting}/{logical_id}"] = entry
        nested = _nested_template(outdir, assets, res) if res["Type"] == "AWS::CloudFormation::Stack" else None
        if nested:
            out.update(template_inventory(outdir, nested, f"{nesting}/{logical_id}", assets))
    return out


def synth_inventory(config: Any, outdir: Path) -> dict[str, dict[str, Any]]:
    from tests.synth_helpers import synth_config

    result = synth_config(config, outdir, nag=False)
    return template_inventory(outdir, f"{result.stack.artifact_id}.template.json")


def current() -> dict[str, dict[str, dict[str, Any]]]:
    with tempfile.TemporaryDirectory() as tmp:
        return {name: synth_inventory(cfg, Path(tmp) / name) for name, cfg in profiles().items()}


def load_snapshot() -> dict[str, Any]:
    return json.loads(SNAPSHOT.read_text()) if SNAPSHOT.exists() else {"profiles": {}, "migrations": {}}


def removed_protected(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``<path>`` -> type for protected resources in ``old`` that ``new`` lacks, or has with another type, another
    physical name or another replacement-causing property (a replacement under the same logical ID)."""
    gone = {}
    for path, entry in old.items():
        if entry["type"] not in PROTECTED_TYPES:
            continue
        now = new.get(path)
        if (now is None or now["type"] != entry["type"] or now.get("names") != entry.get("names")
                or now.get("replacing") != entry.get("replacing")):
            gone[path] = entry["type"]
    return gone


def gateway_addon_changes(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[str]:
    """The operator add-on version changes of a stack with Inference Gateways, each as a sentence: every
    InferenceGatewayConfig must be deleted before the add-on is upgraded (docs/upgrades.md)."""
    out = []
    for path, entry in old.items():
        before, after = entry.get(GATEWAY_ADDON_VERSION), (new.get(path) or {}).get(GATEWAY_ADDON_VERSION)
        if before is not None and after is not None and before != after:
            out.append(f"{path}: the operator add-on goes from {before} to {after} in a stack with Inference "
                       "Gateways: delete every InferenceGatewayConfig before the add-on is upgraded "
                       "(docs/inference-gateway.md#upgrading-the-add-on)")
    return out


def missing_migrations(migrations: dict[str, str], changelog: str) -> list[str]:
    """The recorded migrations (``<profile>:<path>``) whose logical ID ``changelog`` does not name."""
    return [key for key in migrations if key.rsplit("/", 1)[-1] not in changelog]


def update() -> list[str]:
    """Rewrite the snapshot from a fresh synth; returns the protected resources newly recorded as migrations."""
    snap = load_snapshot()
    new = current()
    migrations: dict[str, str] = dict(snap.get("migrations", {}))
    added = []
    for profile, inventory in new.items():
        for path, rtype in removed_protected(snap["profiles"].get(profile, {}), inventory).items():
            key = f"{profile}:{path}"
            if key not in migrations:
                migrations[key] = rtype
                added.append(key)
    SNAPSHOT.write_text(json.dumps({"profiles": new, "migrations": dict(sorted(migrations.items()))}, indent=1,
                                   sort_keys=True) + "\n")
    return added


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite tests/golden/logical_ids.json")
    args = parser.parse_args(argv)
    if not args.update:
        parser.error("nothing to do: pass --update")
    for key in update():
        print(f"protected resource removed or renamed: {key} -- CHANGELOG.md must name its logical ID and migration")
    return 0


if __name__ == "__main__":
    sys.exit(main())
