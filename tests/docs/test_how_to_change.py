"""docs/architecture.md's "How to change it": every file it names exists, every name it gives beside a file is
defined there, and each change's list keeps the count its heading gives, within the project's target."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.facts import operator

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "architecture.md"

#: The five usual changes, by their headings' words, and the most files each may always touch: the issue's targets
#: for a CRD field (4) and an operator version (3), the others as measured. An operator version touches 5, README's
#: and hyperpod.yaml's lists of the versions included (the target is not met; the page says so).
MOST_FILES = {
    "A new CRD field": 4,
    "A new warning": 4,
    "A new AWS resource for a feature": 3,
    "A new operator version": 5,
    "A new dashboard widget": 2,
}
TARGETS = {"A new CRD field": 4, "A new operator version": 3}
#: ``path`` ``Name``: a file, and a name defined in it.
_PAIR = re.compile(r"`((?:hyperpod_inference|tests|tools|docs)/[\w/.-]+\.py)` `([A-Za-z_][A-Za-z0-9_]*)`")
#: A file of the repository named in backticks.
_FILE = re.compile(r"`((?:hyperpod_inference|tests|tools|docs)/[\w/.-]+|[\w.-]+\.(?:md|json|yaml|py))`")
_ITEM = re.compile(r"^(\d+)\. `([^`]+)`", re.M)


def section(text: str) -> str:
    start = text.index("## How to change it")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def changes(text: str) -> dict[str, tuple[int, list[str], str]]:
    """Heading words -> (the count the heading gives, the numbered files in order, the whole text of the change)."""
    out = {}
    for block in section(text).split("\n### ")[1:]:
        heading, _, body = block.partition("\n")
        match = re.fullmatch(r"(.+?): (\d+) files?(?: \(.*\))?", heading.strip())
        assert match, f"heading without a count: {heading!r}"
        items = _ITEM.findall(body)
        assert [int(n) for n, _ in items] == list(range(1, len(items) + 1)), heading
        out[match[1]] = (int(match[2]), [path for _, path in items], block)
    return out


def defined_names(path: Path) -> set[str]:
    """The names a module defines at its top level (classes, functions, assignments) and in its classes."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def missing(text: str) -> list[str]:
    """The files the section names that do not exist, and the names it gives beside a file that is not where they
    are defined."""
    body = section(text)
    problems = [f for f in sorted(set(_FILE.findall(body))) if not (REPO / f).exists()]
    for rel, name in sorted(set(_PAIR.findall(body))):
        path = REPO / rel
        if path.exists() and name not in defined_names(path):
            problems.append(f"{name} is not defined in {rel}")
    return problems


def test_the_section_names_the_five_usual_changes_each_within_its_count():
    # GIVEN the page's "How to change it"
    found = changes(PAGE.read_text())
    # THEN it has the five usual changes, each listing as many files as its heading says, at most the measured count
    # (and the target, where the project set one and meets it)
    assert set(found) == set(MOST_FILES)
    for name, (count, files, _) in found.items():
        assert len(files) == count, (name, files)
        assert count <= MOST_FILES[name], (name, count)
    assert found["A new CRD field"][0] <= TARGETS["A new CRD field"]


def test_a_missed_target_is_said_on_the_page():
    # GIVEN the changes whose count is above the project's target / THEN their heading says the target is not met
    for name, (count, _, block) in changes(PAGE.read_text()).items():
        if count > TARGETS.get(name, count):
            assert f"(target {TARGETS[name]}, not met)" in block.splitlines()[0], name


def test_every_file_and_registry_the_section_names_is_where_it_says():
    # GIVEN the section / THEN every file it names exists, and each name beside a file (FIELDS_SINCE, RELEASES, the
    # warnings' registry, the plan's pieces, the dashboard layout's row) is defined in that file
    assert missing(PAGE.read_text()) == []
    pairs = set(_PAIR.findall(section(PAGE.read_text())))
    assert {("hyperpod_inference/facts/operator.py", "FIELDS_SINCE"),
            ("hyperpod_inference/facts/operator.py", "RELEASES"),
            ("hyperpod_inference/config/warnings.py", "ENDPOINT_WARNINGS"),
            ("hyperpod_inference/plan/ownership.py", "planned_pieces"),
            ("hyperpod_inference/constructs/cloudwatch_layout.py", "endpoint_row")} <= pairs


def test_the_checks_see_a_missing_file_a_misplaced_name_and_a_list_longer_than_its_heading():
    text = PAGE.read_text()
    moved = text.replace("`hyperpod_inference/facts/operator.py` `FIELDS_SINCE`",
                         "`hyperpod_inference/facts/production.py` `FIELDS_SINCE`")
    assert "FIELDS_SINCE is not defined in hyperpod_inference/facts/production.py" in missing(moved)
    assert "hyperpod_inference/config/gone.py" in missing(text.replace("config/warning_rules.py", "config/gone.py"))
    longer = text.replace("### A new warning: 4 files", "### A new warning: 3 files")
    with pytest.raises(AssertionError):
        for name, (count, files, _) in changes(longer).items():
            assert len(files) == count, name


def test_the_version_lists_readers_see_are_the_release_tables():
    # GIVEN README's "Operator versions targeted" line and hyperpod.yaml's comment beside operator.version (two of
    # the five files a new operator version touches) / THEN each names exactly the supported versions; README gives
    # each one's add-on and chart version
    readme = (REPO / "README.md").read_text()
    line = readme[readme.index("Operator versions targeted:"):].split("\n\n", 1)[0]
    assert tuple(re.findall(r"\*\*(v[\d.]+)\*\*", line)) == operator.OPERATOR_VERSIONS
    for release in operator.RELEASES:
        assert f"chart {release.chart_version}" in line, release.version
        assert release.addon_version is None or f"`{release.addon_version}`" in line, release.version
    default = (REPO / "hyperpod.yaml").read_text()
    (version_line,) = [x for x in default.splitlines() if x.strip().startswith("version:")
                       and yaml.safe_load(x.split("#")[0].strip())["version"] in operator.OPERATOR_VERSIONS]
    assert version_line.split("#", 1)[1].strip() == " | ".join(operator.OPERATOR_VERSIONS)
