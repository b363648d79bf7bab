"""Every Python snippet README.md shows runs as it is (from the repository root, where hyperpod.yaml is)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.composition.test_user_app import python_blocks

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("index", range(len(python_blocks(REPO / "README.md"))))
def test_readme_python_snippet_runs(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    block = python_blocks(REPO / "README.md")[index]
    monkeypatch.chdir(REPO)
    namespace: dict = {}
    exec(compile(block, f"README.md python block {index}", "exec"), namespace)  # noqa: S102 - the documented snippet
    if "assembly" in namespace:  # a synth snippet: it wrote its template and review manifests
        assert os.listdir(Path(namespace["assembly"].directory) / "manifests")


def test_readme_has_python_snippets() -> None:
    assert python_blocks(REPO / "README.md")
