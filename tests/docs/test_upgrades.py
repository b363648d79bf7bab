"""docs/upgrades.md's table of removed or renamed resources is generated from the golden snapshot, never stale."""

from __future__ import annotations

import importlib.util
import json

from tests.synth_helpers import REPO


def _tool():
    spec = importlib.util.spec_from_file_location("migrations_table", REPO / "tools" / "migrations_table.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_upgrades_page_lists_every_recorded_migration() -> None:
    tool = _tool()
    # THEN the page holds exactly the table the snapshot gives (run tools/migrations_table.py when this fails)
    assert tool.main(["--check"]) == 0, "docs/upgrades.md is stale: python tools/migrations_table.py"
    page = (REPO / "docs" / "upgrades.md").read_text()
    for key in json.loads(tool.SNAPSHOT.read_text())["migrations"]:
        assert f"`{key.rsplit('/', 1)[-1]}`" in page


def test_the_check_sees_a_stale_table(tmp_path, monkeypatch) -> None:
    tool = _tool()
    stale = tmp_path / "upgrades.md"
    stale.write_text(f"# Upgrades\n{tool.START}\n| old |\n{tool.END}\n")
    monkeypatch.setattr(tool, "PAGE", stale)
    assert tool.main(["--check"]) == 1
