"""Text from outside (an AWS error's message, a proxy's HTML error page, an exception) made fit for one line of a
table, a JSON field, a stderr message or a YAML comment: its words on one line, no control character, bounded."""

from __future__ import annotations

import re
from html.parser import HTMLParser

#: The longest text :func:`one_line` returns by default (an AWS error message is rarely longer than this).
MAX_CHARS = 240
#: Characters a YAML file may hold (YAML 1.1 c-printable, as PyYAML's reader checks it); whitespace is folded first.
_NOT_PRINTABLE = re.compile("[^\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_HTML = re.compile(r"<\s*(!doctype|html|head|body|title|h[1-6]|p|div|pre|center)\b", re.IGNORECASE)


class _HtmlText(HTMLParser):
    """The text of an HTML page: its title and what its body shows (no script or style)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._hidden += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in ("script", "style") and self._hidden > 0

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def one_line(text: object, limit: int = MAX_CHARS) -> str:
    """``text`` on one line of at most ``limit`` characters: an HTML page reduced to its text, every run of
    whitespace (line breaks of any kind included) one space, control and non-printable characters dropped, the end
    cut with ``...`` when longer."""
    value = str(text)
    if _HTML.search(value):
        page = _HtmlText()
        try:
            page.feed(value)
            page.close()
            value = " ".join(page.parts)
        except Exception:  # noqa: BLE001 - a malformed page keeps its raw text (still folded below)
            pass
    value = _NOT_PRINTABLE.sub("", " ".join(value.split()))
    if len(value) > limit:
        value = value[:max(limit - 3, 0)].rstrip() + "..."
    return value
