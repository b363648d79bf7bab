"""What an upgrade does to the Kubernetes objects, read from two synthesized assemblies: for every manifest resource
(``KubernetesManifest``) its logical path, objects, ``prune`` and ``overwrite``, what it waits for, and which
Secrets, ConfigMaps and ServiceAccounts the pods of its workloads use; then :func:`upgrade_problems` replays the
update the way CloudFormation and aws-cdk-lib's kubectl handler run it.

The replay (order-independent: it holds for every order CloudFormation may choose within the dependencies):

- a manifest resource whose logical path is new is created (``kubectl create`` with ``overwrite=False``: an object
  that exists already fails the deploy; ``kubectl apply`` otherwise);
- one whose path exists in both is updated in place (``kubectl apply``, with ``prune`` deleting at once the objects
  the old copy had and the new one lacks);
- one whose path is gone is deleted in the cleanup phase, after every create and update (``kubectl delete`` of every
  object it listed, even one another manifest now declares).

A problem is: a pod's Secret, ConfigMap or ServiceAccount deleted while a pod may still use it (pruned in place while
a workload of another manifest still names it; deleted in the cleanup while the new state still names or declares
it), a workload applied before the objects it names can exist (not in its own manifest nor in one it waits for), an
object created over one that exists, or a DaemonSet deleted in place with nothing to take over its models.

Regenerate the fixture of the release before per-stack names only from that release's code:
``python -m tests.golden.upgrade BEFORE.json`` (it records ``default``, ``bench-hf-token`` and ``fleet-heavy``).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

MANIFEST_TYPE = "Custom::AWSCDK-EKS-KubernetesResource"
NESTED_TYPE = "AWS::CloudFormation::Stack"
#: Profiles of the golden inventory whose Kubernetes objects the upgrade test replays.
PROFILES = ("default", "bench-hf-token", "fleet-heavy")
BEFORE = Path(__file__).with_name("manifests_before_stack_names.json")

Key = str  # "Kind/namespace/name"


def _key(kind: str, namespace: str | None, name: str) -> Key:
    return f"{kind}/{namespace or ''}/{name}"


def _literal(value: Any) -> Any:
    """A manifest property as JSON text: ``Fn::Join`` of literals and tokens, tokens as ``TOKEN``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(p if isinstance(p, str) else "TOKEN" for p in parts)
    return json.dumps(value)


def pod_references(obj: dict[str, Any]) -> list[Key]:
    """The Secrets, ConfigMaps and ServiceAccount a workload's pods use (a DaemonSet's pod template, a Job's, the
    operator's pods of a custom resource through ``spec.kubernetes`` and ``spec.worker``)."""
    spec = obj.get("spec") or {}
    ns = (obj.get("metadata") or {}).get("namespace")
    pods: list[dict[str, Any]] = []
    if obj.get("kind") in ("DaemonSet", "Job", "Deployment", "StatefulSet"):
        pods.append((spec.get("template") or {}).get("spec") or {})
    elif obj.get("apiVersion", "").startswith("inference.sagemaker.aws.amazon.com/"):
        pods.append(spec.get("kubernetes") or {})
    refs: list[Key] = []
    for pod in pods:
        for volume in pod.get("volumes") or []:
            if "secret" in volume:
                refs.append(_key("Secret", ns, volume["secret"]["secretName"]))
            if "configMap" in volume:
                refs.append(_key("ConfigMap", ns, volume["configMap"]["name"]))
        if pod.get("serviceAccountName"):
            refs.append(_key("ServiceAccount", ns, pod["serviceAccountName"]))
    return sorted(set(refs))


def _objects(manifest: list[dict[str, Any]]) -> tuple[list[Key], dict[Key, list[Key]]]:
    keys, refs = [], {}
    for obj in manifest:
        meta = obj.get("metadata") or {}
        key = _key(obj["kind"], meta.get("namespace"), meta["name"])
        keys.append(key)
        if obj["kind"] == "ExternalSecret":  # the Secret it writes (creationPolicy Owner) goes with it
            keys.append(_key("Secret", meta.get("namespace"), obj["spec"]["target"]["name"]))
        used = pod_references(obj)
        if used or obj["kind"] == "DaemonSet":
            refs[key] = used
    return sorted(keys), refs


def manifest_inventory(outdir: Path, template_file: str, nesting: str = "", assets: dict | None = None,
                       parents: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """``<nesting>/<logicalId>`` -> {objects, prune, overwrite, refs, after} of every manifest resource of a template
    and its nested stacks; ``after``: the paths it waits for (its DependsOn, its nested stacks' DependsOn), before
    transitive closure."""
    from tests.golden.inventory import _nested_template

    if assets is None:
        assets = {}
        for path in outdir.glob("*.assets.json"):
            assets.setdefault("files", {}).update(json.loads(path.read_text()).get("files", {}))
    resources = json.loads((outdir / template_file).read_text()).get("Resources", {})
    out: dict[str, dict[str, Any]] = {}
    for logical_id, res in sorted(resources.items()):
        path = f"{nesting}/{logical_id}"
        depends = res.get("DependsOn") or []
        after = [f"{nesting}/{d}" for d in ([depends] if isinstance(depends, str) else depends)]
        if res["Type"] == MANIFEST_TYPE:
            props = res["Properties"]
            keys, refs = _objects(json.loads(_literal(props["Manifest"])))
            out[path] = {"objects": keys, "refs": refs, "prune": bool(props.get("PruneLabel")),
                         "overwrite": props.get("Overwrite") in (True, "true"), "after": [*after, *parents]}
        elif res["Type"] == NESTED_TYPE:
            nested = _nested_template(outdir, assets, res)
            if nested:
                out.update(manifest_inventory(outdir, nested, path, assets, (*parents, *after)))
                out.setdefault("__stacks__", {})[path] = [*after, *parents]
    return out


def synth_manifest_inventory(config: Any, outdir: Path) -> dict[str, dict[str, Any]]:
    from tests.synth_helpers import synth_config

    result = synth_config(config, outdir, nag=False)
    return manifest_inventory(outdir, f"{result.stack.artifact_id}.template.json")


def _closure(inv: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    """Manifest path -> every manifest path it (transitively) waits for; waiting for a nested stack is waiting for
    every manifest in it."""
    stacks: dict[str, list[str]] = inv.get("__stacks__", {})
    manifests = {p: e for p, e in inv.items() if p != "__stacks__"}

    def expand(paths: list[str]) -> set[str]:
        out: set[str] = set()
        for p in paths:
            if p in stacks:
                out |= {m for m in manifests if m.startswith(p + "/")}
            elif p in manifests:
                out.add(p)
        return out

    direct = {p: expand(e["after"]) for p, e in manifests.items()}
    done: dict[str, set[str]] = {}

    def visit(p: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if p in done:
            return done[p]
        acc = set(direct[p])
        for q in direct[p]:
            if q not in seen:
                acc |= visit(q, seen | {p})
        done[p] = acc
        return acc

    return {p: visit(p) for p in manifests}


def upgrade_problems(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[str]:
    """What goes wrong when the stack of ``old`` (a :func:`manifest_inventory`) is updated to ``new``."""
    old = {p: e for p, e in old.items() if p != "__stacks__"}
    waits = _closure(new)
    new_m = {p: e for p, e in new.items() if p != "__stacks__"}
    old_objects = {o for e in old.values() for o in e["objects"]}
    new_owner = {o: p for p, e in new_m.items() for o in e["objects"]}
    declared = old_objects | set(new_owner)
    new_refs = {r for e in new_m.values() for refs in e["refs"].values() for r in refs}
    problems: list[str] = []
    for path, entry in new_m.items():
        before = old.get(path)
        if before is None and not entry["overwrite"]:
            for obj in entry["objects"]:
                if obj in old_objects:
                    problems.append(f"{path}: creates {obj}, which exists already (the deploy fails)")
        for workload, refs in entry["refs"].items():
            for ref in refs:
                owner = new_owner.get(ref)
                if ref in declared and owner is None:
                    problems.append(f"{path}: {workload} uses {ref}, which the new state no longer declares")
                elif owner is not None and owner != path and owner not in waits[path]:
                    problems.append(f"{path}: {workload} uses {ref} of {owner} without waiting for it")
        if before is not None and entry["prune"]:
            dropped = set(before["objects"]) - set(entry["objects"])
            for obj in sorted(dropped):
                users = [f"{p}: {w}" for p, e in old.items() if p != path
                         for w, refs in e["refs"].items() if obj in refs]
                if users:
                    problems.append(f"{path}: pruned in place, {obj} is deleted while {', '.join(users)} uses it")
                if obj.startswith("DaemonSet/") and not any(o.startswith("DaemonSet/") for o in entry["objects"]):
                    problems.append(f"{path}: pruned in place, {obj} is deleted with no DaemonSet to take over")
    for path, entry in old.items():
        if path in new_m:
            continue
        for obj in entry["objects"]:
            if obj in new_owner:
                problems.append(f"{path} leaves the template: its delete removes {obj}, which {new_owner[obj]} "
                                "now declares")
            elif obj in new_refs:
                problems.append(f"{path} leaves the template: its delete removes {obj}, which the new pods use")
    return problems


def main(argv: list[str]) -> int:
    from tests.golden.inventory import profiles

    target = Path(argv[0]) if argv else BEFORE
    every = profiles()
    with tempfile.TemporaryDirectory() as tmp:
        data = {name: synth_manifest_inventory(every[name], Path(tmp) / name) for name in PROFILES}
    target.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
