"""docs/architecture.md's layout section names what the package holds: it cannot go stale."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "hyperpod_inference"
PAGE = REPO / "docs" / "architecture.md"


def layout_block(text: str) -> str:
    section = text[text.index("## Layout of the repository"):]
    return section[section.index("```\n") + 4:section.index("\n```", section.index("```\n") + 4)]


def listed(block: str) -> tuple[set[str], set[str], dict[str, str]]:
    """(folders, top-level modules) named under ``hyperpod_inference/``, and the text describing each entry."""
    lines = block.splitlines()
    start = lines.index("hyperpod_inference/")
    folders, modules, texts = set(), set(), {}
    current = None
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        head = line[2:].split("  ")[0]
        if head and not line.startswith("   "):
            current = head
            for name in (n.strip() for n in head.split(",")):
                (folders if name.endswith("/") else modules).add(name.rstrip("/"))
        texts[current] = f"{texts.get(current, '')} {line}"
    return folders, modules, texts


def test_the_layout_names_every_folder_and_top_level_module_of_the_package():
    folders, modules, _ = listed(layout_block(PAGE.read_text()))
    assert folders == {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert modules == {p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}


def test_the_layout_names_every_module_of_the_plan_and_of_the_composition():
    _, _, texts = listed(layout_block(PAGE.read_text()))
    for folder in ("plan", "assembly"):
        named = set(re.findall(r"[a-z0-9_]+\.py", texts[f"{folder}/"]))
        assert named == {p.name for p in (PACKAGE / folder).glob("*.py") if p.name != "__init__.py"}, folder


def test_the_layout_check_sees_a_missing_folder_and_module():
    # GIVEN the page without the ops/ line and without limits.py / THEN the lists miss them
    block = layout_block(PAGE.read_text())
    folders, _, _ = listed("\n".join(line for line in block.splitlines() if not line.startswith("  ops/")))
    assert "ops" not in folders and "config" in folders
    _, _, texts = listed(block.replace("limits.py", "limits"))
    assert "limits.py" not in texts["assembly/"] and "delivery.py" in texts["assembly/"]


def described(block: str, folder: str) -> str:
    """The text describing ``folder`` (``ops/``) under ``hyperpod_inference/``: its line and the ones continuing it."""
    lines = block.splitlines()
    out: list[str] = []
    for line in lines[lines.index("hyperpod_inference/") + 1:]:
        if not line.startswith("  "):
            break
        if not line.startswith("   "):  # the next entry
            if out:
                break
            if line[2:].split("  ")[0] == folder:
                out.append(line)
        elif out:
            out.append(line)
    return " ".join(out)


def test_the_layout_names_every_module_of_doctor():
    # GIVEN the ops/ text of the layout / THEN it names each module of the doctor package (its families included)
    named = set(re.findall(r"[a-z0-9_]+\.py", described(layout_block(PAGE.read_text()), "ops/")))
    assert named >= {p.name for p in (PACKAGE / "ops" / "doctor").glob("*.py") if p.name != "__init__.py"}
    # AND the check sees a module the text does not name
    assert "model.py" not in set(re.findall(r"[a-z0-9_]+\.py", described(layout_block(PAGE.read_text()).replace(
        "model.py", "model"), "ops/")))
