"""Write the generated tables of docs/upgrades.md: the deployed resources that releases removed, renamed or replaced
(from the golden logical-ID snapshot, tests/golden/logical_ids.json: the synth diff, not prose) and the support table
(operator, add-on, Helm chart, Kubernetes and aws-cdk-lib versions, from the facts and pyproject.toml).

    python tools/migrations_table.py          # rewrite the tables between their markers
    python tools/migrations_table.py --check  # exit 1 when the page is stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "tests" / "golden" / "logical_ids.json"
PAGE = REPO / "docs" / "upgrades.md"
PYPROJECT = REPO / "pyproject.toml"
START, END = "<!-- migrations:start -->", "<!-- migrations:end -->"
SUPPORT_START, SUPPORT_END = "<!-- support:start -->", "<!-- support:end -->"


def table() -> str:
    """Logical ID | type | the profiles whose synth lost it (one row per logical ID)."""
    migrations = json.loads(SNAPSHOT.read_text()).get("migrations", {})
    rows: dict[tuple[str, str], list[str]] = {}
    for key, rtype in migrations.items():
        profile, path = key.split(":", 1)
        rows.setdefault((path.rsplit("/", 1)[-1], rtype), []).append(profile)
    lines = ["| logical ID | type | removed or renamed in the synth of |", "|---|---|---|"]
    lines += [f"| `{lid}` | `{rtype}` | {', '.join(sorted(profiles))} |" for (lid, rtype), profiles in sorted(rows.items())]
    return "\n".join(lines)


def _dependency_range(name: str) -> str:
    """The version range pyproject.toml gives a runtime dependency (``aws-cdk-lib>=2.275.0,<3`` -> ``>=2.275.0,<3``)."""
    match = re.search(rf'"{re.escape(name)}([<>=!~][^"]*)"', PYPROJECT.read_text())
    if match is None:
        raise ValueError(f"pyproject.toml has no dependency {name}")
    return match.group(1)


def support_table() -> str:
    """One row per operator version this release installs: its add-on and Helm chart versions, the newer add-on
    versions that may be pinned unvalidated, the Kubernetes versions of the default kubectl layer, aws-cdk-lib."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from hyperpod_inference.facts import kubectl, operator

    kubernetes = ", ".join(kubectl.DEFAULT_LAYER.serves)
    cdk = _dependency_range("aws-cdk-lib").replace(",", ", ")
    lines = ["| operator | EKS add-on | Helm chart (appVersion) | CRD | Kubernetes | aws-cdk-lib |",
             "|---|---|---|---|---|---|"]
    for r in operator.RELEASES:
        addon = f"`{r.addon_version}`" if r.addon_version else "none known (pin `operator.addonVersion`)"
        crd = "validated" if r.crd_public else "not public (fields from docs; warned)"
        lines.append(f"| `{r.version}` | {addon} | `{r.chart_version}` ({r.app_version}) | {crd} | {kubernetes} "
                     f"| `{cdk}` |")
    newer = ", ".join(f"`{a}` ({v})" for a, v in operator.NEWER_ADDON_VERSIONS.items())
    lines += ["", f"Other add-on versions `operator.addonVersion` accepts without validation (with a warning): {newer}."]
    return "\n".join(lines)


def _between(page: str, start: str, end: str, body: str) -> str:
    head, rest = page.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def render(page: str) -> str:
    page = _between(page, START, END, table())
    if SUPPORT_START in page:
        page = _between(page, SUPPORT_START, SUPPORT_END, support_table())
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    page = PAGE.read_text()
    new = render(page)
    if args.check:
        return 0 if new == page else 1
    PAGE.write_text(new)
    print(f"wrote the migrations table into {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
