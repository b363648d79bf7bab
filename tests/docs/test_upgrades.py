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


def _sections(text: str) -> list[str]:
    import re

    return re.findall(r"^## (\S+)", text, flags=re.M)


def test_the_changelog_has_a_section_per_release_and_the_package_version_is_the_newest() -> None:
    # GIVEN CHANGELOG.md and pyproject.toml
    import re

    sections = _sections((REPO / "CHANGELOG.md").read_text())
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), flags=re.M).group(1)
    # THEN "Unreleased" is on top, then the releases newest first, the first of them the package's version
    assert sections[0] == "Unreleased"
    assert sections[1] == version
    assert "0.1.0" in sections and "0.2.0" in sections
    releases = [tuple(int(n) for n in s.split(".")) for s in sections[1:]]
    assert releases == sorted(releases, reverse=True)


def test_the_support_table_names_every_release_of_the_release_table_with_kubernetes_and_cdk_versions() -> None:
    # GIVEN the release table and the default kubectl layer
    from hyperpod_inference.facts import kubectl, operator

    table = _tool().support_table()
    page = (REPO / "docs" / "upgrades.md").read_text()
    # THEN each operator version's row gives its add-on and chart versions, the layer's Kubernetes versions and the
    # aws-cdk-lib range, and the page shows that table
    for release in operator.RELEASES:
        row = next(line for line in table.splitlines() if line.startswith(f"| `{release.version}` |"))
        assert (f"`{release.addon_version}`" if release.addon_version else "none known") in row
        assert f"`{release.chart_version}`" in row
        assert ", ".join(kubectl.DEFAULT_LAYER.serves) in row and "`>=2.275.0, <3`" in row
    for newer in operator.NEWER_ADDON_VERSIONS:
        assert f"`{newer}`" in table
    assert table in page


def test_the_upgrades_page_names_the_tls_bucket_replacement_with_both_names_and_cdk_diff() -> None:
    # GIVEN the default config's TLS bucket in the golden snapshot (its name since 0.2.0)
    snapshot = json.loads(_tool().SNAPSHOT.read_text())
    now = snapshot["profiles"]["default"]["/TlsBucketEF8951C2"]["names"]["BucketName"]
    page = (REPO / "docs" / "upgrades.md").read_text()
    # THEN the page tells to run cdk diff, and names the logical ID with the 0.1.0 and the current name
    assert "cdk diff" in page and "requires replacement" in page
    assert "`TlsBucketEF8951C2`" in page
    assert "`hyperpod-tls-111122223333-us-west-2`" in page and f"`{now}`" in page
