"""The resource inventory of docs/quickstart.md from a synth of the default config: every resource type of the stack
(nested stacks included), how many, and whether `cdk destroy` deletes or keeps it; then each resource it keeps, by
name.

    python tools/resource_inventory.py [--cdk-out cdk.out] [--page docs/quickstart.md]

Without ``--cdk-out`` it synthesizes the embedded hyperpod.yaml in-process as ``make synth`` does (the feature flags
of cdk.json's context included: they decide, for one, that aws-cdk-lib's kubectl provider gets log groups of its
own; no AWS account needed). The tables are written between the page's ``<!-- inventory:start -->`` and
``<!-- inventory:end -->`` lines and its ``<!-- kept:start -->`` and ``<!-- kept:end -->`` lines. CDK's version
report (``AWS::CDK::Metadata``, which the CLI adds) is not counted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- inventory:start -->", "<!-- inventory:end -->"
KEPT_START, KEPT_END = "<!-- kept:start -->", "<!-- kept:end -->"
STACK = "HyperPodInference"
#: CDK's version report: not a resource of the stack's own.
NOT_COUNTED = {"AWS::CDK::Metadata"}
#: The property holding a resource's name, by type (for the kept resources).
NAME_PROPERTY = {"AWS::S3::Bucket": "BucketName", "AWS::KMS::Alias": "AliasName", "AWS::Logs::LogGroup": "LogGroupName",
                 "AWS::Route53::HostedZone": "Name", "AWS::EKS::Addon": "AddonName"}


def _nested_file(outdir: Path, resource: dict[str, Any]) -> Path | None:
    """The assembly file of a nested stack, found through its TemplateURL's asset hash."""
    url = json.dumps((resource.get("Properties") or {}).get("TemplateURL"))
    for assets in outdir.glob("*.assets.json"):
        for asset_hash, asset in json.loads(assets.read_text()).get("files", {}).items():
            if f"{asset_hash}.json" in url:
                return outdir / asset["source"]["path"]
    return None


def on_destroy(resource: dict[str, Any]) -> str:
    """What `cdk destroy` does with a resource, from its template entry."""
    if resource.get("DeletionPolicy") in ("Retain", "RetainExceptOnCreate"):
        return "kept (DeletionPolicy Retain)"
    if (resource.get("Properties") or {}).get("PreserveOnDelete") is True:
        return "kept (PreserveOnDelete: the add-on stays installed)"
    return "deleted"


def resources(outdir: Path, template: Path, where: str = "the stack") -> list[tuple[str, str, dict[str, Any]]]:
    """(where, logical ID, resource) of every resource of a template and of its nested stacks (``where``: the stack,
    or the nested stack by its logical ID in its parent)."""
    out = []
    for logical_id, res in json.loads(template.read_text()).get("Resources", {}).items():
        if res["Type"] in NOT_COUNTED:
            continue
        out.append((where, logical_id, res))
        nested = _nested_file(outdir, res) if res["Type"] == "AWS::CloudFormation::Stack" else None
        if nested is not None:
            # CDK's nested stack logical IDs are <id>NestedStack<id>NestedStackResource<hash>: named by <id>
            out += resources(outdir, nested, f"nested stack `{logical_id.split('NestedStack', 1)[0]}`")
    return out


def rows(outdir: Path, stack: str = STACK) -> list[tuple[str, int, str]]:
    """(type, count, on destroy), sorted by type."""
    counts = Counter((r["Type"], on_destroy(r)) for _, _, r in resources(outdir, outdir / f"{stack}.template.json"))
    return sorted((rtype, n, fate) for (rtype, fate), n in counts.items())


def _text(value: Any) -> str:
    """A template value as text: ``Ref`` as ``<LogicalId>``, ``Fn::Join`` of such parts joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_text(p) for p in parts)
    return json.dumps(value)


def kept_rows(outdir: Path, stack: str = STACK) -> list[tuple[str, str, str, str]]:
    """(type, name, where, on destroy) of every resource `cdk destroy` keeps, sorted; a log group's name carries its
    retention."""
    out = []
    for where, logical_id, res in resources(outdir, outdir / f"{stack}.template.json"):
        fate = on_destroy(res)
        if fate == "deleted":
            continue
        props = res.get("Properties") or {}
        name = _text(props[NAME_PROPERTY[res["Type"]]]) if NAME_PROPERTY.get(res["Type"]) in props else logical_id
        if "RetentionInDays" in props:
            name += f" ({props['RetentionInDays']} days)"
        out.append((res["Type"], name, where, fate))
    return sorted(out)


def render(table: list[tuple[str, int, str]]) -> str:
    lines = ["| type | count | on `cdk destroy` |", "|---|---|---|"]
    lines += [f"| `{rtype}` | {n} | {fate} |" for rtype, n, fate in table]
    lines.append(f"| **total** | {sum(n for _, n, _ in table)} | |")
    return "\n".join(lines)


def render_kept(table: list[tuple[str, str, str, str]]) -> str:
    lines = ["| type | name (or logical ID) | in | why it stays |", "|---|---|---|---|"]
    lines += [f"| `{rtype}` | `{name}` | {where} | {fate.removeprefix('kept (').removesuffix(')')} |"
              for rtype, name, where, fate in table]
    return "\n".join(lines)


def replace_block(page: str, table: str, start: str = START, end: str = END) -> str:
    if start not in page or end not in page:
        raise ValueError(f"the page has no {start} ... {end} block")
    return re.sub(rf"{re.escape(start)}.*?{re.escape(end)}", lambda _: f"{start}\n{table}\n{end}", page, flags=re.S)


def render_page(page: str, outdir: Path, stack: str = STACK) -> str:
    """``page`` with both generated blocks from the assembly in ``outdir``."""
    page = replace_block(page, render(rows(outdir, stack)))
    return replace_block(page, render_kept(kept_rows(outdir, stack)), KEPT_START, KEPT_END)


def cdk_json_context() -> dict[str, Any]:
    """The context of cdk.json (the feature flags ``make synth`` runs the app with)."""
    return json.loads((REPO / "cdk.json").read_text())["context"]


def synth_default(outdir: Path) -> Path:
    """Synthesize hyperpod.yaml as ``make synth`` does (cdk.json's context; cdk-nag off: it changes no resource) into
    ``outdir``, the review manifests included (``tools/diagram.py`` draws them)."""
    sys.path.insert(0, str(REPO))
    import aws_cdk as cdk

    from hyperpod_inference.app import build

    app = cdk.App(outdir=str(outdir), context=cdk_json_context())
    stack = build(app, str(REPO / "hyperpod.yaml"), nag=False)
    stack.write_manifests(app.synth().directory)
    return outdir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cdk-out", help="a synthesized cloud assembly (default: synthesize hyperpod.yaml)")
    parser.add_argument("--page", default=str(REPO / "docs" / "quickstart.md"))
    args = parser.parse_args(argv)
    page = Path(args.page)
    with tempfile.TemporaryDirectory() as tmp:
        outdir = Path(args.cdk_out) if args.cdk_out else synth_default(Path(tmp))
        text = render_page(page.read_text(), outdir)
    page.write_text(text)
    print(f"wrote the inventory into {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
