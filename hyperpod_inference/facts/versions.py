"""Versions compare as versions: ``"v3.10"`` is later than ``"v3.3"`` (as strings it sorts before it)."""

from __future__ import annotations

import re
from functools import total_ordering

_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:-([0-9A-Za-z.-]+))?$")


@total_ordering
class Version:
    """A dotted version with an optional ``v`` and an optional suffix (``v1.4.0-eksbuild.1``).

    Compares by its numeric parts (missing parts count as 0, so ``v3.3 == v3.3.0``), then by the suffix's own
    dotted numbers (``eksbuild.2 > eksbuild.1``). Compares with strings too: ``Version("v3.10") > "v3.3"``.
    """

    __slots__ = ("_key", "text")

    def __init__(self, text: str) -> None:
        match = _VERSION.match(text) if isinstance(text, str) else None
        if not match:
            raise ValueError(f"not a version: {text!r} (expected e.g. v3.3 or v1.4.0-eksbuild.1)")
        self.text = text
        numbers = [int(n) for n in match.group(1).split(".")]
        while len(numbers) > 1 and numbers[-1] == 0:
            numbers.pop()
        suffix = tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.-]", match.group(2))) if match.group(2) else ()
        self._key = (tuple(numbers), suffix)

    @staticmethod
    def _of(other: object) -> Version | None:
        if isinstance(other, Version):
            return other
        if isinstance(other, str):
            return Version(other)
        return None

    def __eq__(self, other: object) -> bool:
        try:
            o = self._of(other)
        except ValueError:  # a string that is no version is simply not equal
            return False
        return NotImplemented if o is None else self._key == o._key

    def __lt__(self, other: object) -> bool:
        o = self._of(other)
        return NotImplemented if o is None else self._key < o._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Version({self.text!r})"

    def __str__(self) -> str:
        return self.text


def version_key(text: str) -> Version:
    """A sort key: ``sorted(["v3.10", "v3.3"], key=version_key) == ["v3.3", "v3.10"]``."""
    return Version(text)
