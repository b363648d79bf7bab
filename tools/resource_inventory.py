"""The resource inventory of docs/quickstart.md from a synth of the default config: every resource type of the stack
(nested stacks included), how many, and whether `cdk destroy` deletes or keeps it.

    python tools/resource_inventory.py [--cdk-out cdk.out] [--page docs/quickstart.md]

Without ``--cdk-out`` it synthesizes the embedded hyperpod.yaml in-process (no AWS account needed). The table is
written between the page's ``<!-- inventory:start -->`` and ``<!-- inventory:end -->`` lines.
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
STACK = "HyperPodInference"


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


def resources(outdir: Path, template: Path) -> list[dict[str, Any]]:
    """Every resource of a template and of its nested stacks."""
    out = []
    for res in json.loads(template.read_text()).get("Resources", {}).values():
        out.append(res)
        nested = _nested_file(outdir, res) if res["Type"] == "AWS::CloudFormation::Stack" else None
        if nested is not None:
            out += resources(outdir, nested)
    return out


def rows(outdir: Path, stack: str = STACK) -> list[tuple[str, int, str]]:
    """(type, count, on destroy), sorted by type."""
    counts = Counter((r["Type"], on_destroy(r)) for r in resources(outdir, outdir / f"{stack}.template.json"))
    return sorted((rtype, n, fate) for (rtype, fate), n in counts.items())


def render(table: list[tuple[str, int, str]]) -> str:
    lines = ["| type | count | on `cdk destroy` |", "|---|---|---|"]
    lines += [f"| `{rtype}` | {n} | {fate} |" for rtype, n, fate in table]
    lines.append(f"| **total** | {sum(n for _, n, _ in table)} | |")
    return "\n".join(lines)


def replace_block(page: str, table: str) -> str:
    if START not in page or END not in page:
        raise ValueError(f"the page has no {START} ... {END} block")
    return re.sub(rf"{re.escape(START)}.*?{re.escape(END)}", lambda _: f"{START}\n{table}\n{END}", page, flags=re.S)


def synth_default(outdir: Path) -> Path:
    """Synthesize hyperpod.yaml as the app does (cdk-nag off: it changes no resource) into ``outdir``."""
    sys.path.insert(0, str(REPO))
    import aws_cdk as cdk

    from hyperpod_inference.app import build

    app = cdk.App(outdir=str(outdir))
    build(app, str(REPO / "hyperpod.yaml"), nag=False)
    app.synth()
    return outdir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cdk-out", help="a synthesized cloud assembly (default: synthesize hyperpod.yaml)")
    parser.add_argument("--page", default=str(REPO / "docs" / "quickstart.md"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        outdir = Path(args.cdk_out) if args.cdk_out else synth_default(Path(tmp))
        table = render(rows(outdir))
    page = Path(args.page)
    page.write_text(replace_block(page.read_text(), table))
    print(f"wrote the inventory into {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
