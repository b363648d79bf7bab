"""Shared by the documentation tests: the repository, the documented pages and their fenced blocks."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "BENCHMARKS.md", *sorted((REPO / "docs").glob("*.md"))]


def tool(name: str) -> ModuleType:
    """A script under tools/ as a module."""
    if f"tools_{name}" in sys.modules:
        return sys.modules[f"tools_{name}"]
    spec = importlib.util.spec_from_file_location(f"tools_{name}", REPO / "tools" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"tools_{name}"] = module
    spec.loader.exec_module(module)
    return module


def fenced(path: Path, lang: str) -> list[str]:
    """The bodies of the ```<lang> blocks of a page."""
    return re.findall(rf"^```{lang}\n(.*?)^```", path.read_text(), flags=re.S | re.M)
