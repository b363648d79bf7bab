"""Write the table of deployed resources that releases removed or renamed into docs/upgrades.md, from the golden
logical-ID snapshot (tests/golden/logical_ids.json): generated, so it is the synth diff, not prose.

    python tools/migrations_table.py          # rewrite the table between the markers
    python tools/migrations_table.py --check  # exit 1 when the page is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "tests" / "golden" / "logical_ids.json"
PAGE = REPO / "docs" / "upgrades.md"
START, END = "<!-- migrations:start -->", "<!-- migrations:end -->"


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


def render(page: str) -> str:
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table()}\n{END}{tail}"


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
