"""PNG previews of the CloudWatch dashboards a synth produced: the grid, each widget's title and what it plots.

    python tools/dashboard_preview.py --cdk-out cdk.out [--docs-png docs/dashboard-preview.png]

Writes ``<cdk-out>/dashboards/<dashboard name>.png`` for every ``AWS::CloudWatch::Dashboard`` in the templates, so
a reviewer sees the layout without an AWS account; ``--docs-png`` copies the first one there. Deploy-time values in
a body (``Fn::Join`` parts) show as ``<LogicalId.Attr>``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

UNIT_W = 56  # pixels per grid column (24 columns)
UNIT_H = 34  # pixels per grid row
MARGIN = 12
FONT_PATHS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",)
BOLD_PATHS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",)
COLORS = {"text": "#f4f6f8", "metric": "#ffffff", "alarm": "#fff4f0"}


def _font(paths: tuple[str, ...], size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    for path in paths:
        if Path(path).exists():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default()


def _flatten(value: Any) -> str:
    """A DashboardBody: a string, or ``Fn::Join`` of strings and references (shown as placeholders)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_flatten(p) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "<" + ".".join(value["Fn::GetAtt"]) + ">"
    return "<?>"


def dashboards(cdk_out: Path) -> dict[str, dict[str, Any]]:
    """Dashboard name (or logical ID) -> its body, from every template in ``cdk_out``."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(cdk_out.glob("*.template.json")):
        for logical_id, res in json.loads(path.read_text()).get("Resources", {}).items():
            if res.get("Type") != "AWS::CloudWatch::Dashboard":
                continue
            props = res.get("Properties", {})
            name = props.get("DashboardName") if isinstance(props.get("DashboardName"), str) else logical_id
            out[name] = json.loads(_flatten(props["DashboardBody"]))
    return out


def widget_lines(widget: dict[str, Any]) -> tuple[str, list[str]]:
    """A widget's title and one line per thing it shows (metric names with their statistic, SEARCH expressions,
    markdown lines)."""
    props = widget.get("properties", {})
    if widget.get("type") == "text":
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", props.get("markdown", "")).replace("**", "")  # [text](url) -> text
        lines = [ln.lstrip("#").strip() for ln in text.replace(" · ", "\n").splitlines() if ln.strip()]
        return (lines[0] if lines else "text"), lines[1:]
    lines, previous = [], None
    for row in props.get("metrics", []):
        options = row[-1] if row and isinstance(row[-1], dict) else {}
        if "expression" in options:
            expr = options["expression"]
            lines.append(f"{options.get('label', '')}: {expr.split('MetricName=')[-1][:60]}")
            continue
        name = previous if row and row[0] == "..." else (row[1] if len(row) > 1 else "?")
        previous = name
        stat = options.get("stat", props.get("stat", ""))
        lines.append(f"{name} ({stat})" if stat else name)
    return props.get("title", widget.get("type", "")), lines


def render(body: dict[str, Any], title: str, path: Path) -> Path:
    widgets = body.get("widgets", [])
    rows = max((w["y"] + w["height"] for w in widgets), default=1)
    image = Image.new("RGB", (24 * UNIT_W + 2 * MARGIN, rows * UNIT_H + 2 * MARGIN + 30), "#e9ecef")
    draw = ImageDraw.Draw(image)
    bold, small = _font(BOLD_PATHS, 13), _font(FONT_PATHS, 11)
    draw.text((MARGIN, 8), f"CloudWatch dashboard {title} (layout preview)", fill="#212529", font=_font(BOLD_PATHS, 15))
    for w in widgets:
        x0, y0 = MARGIN + w["x"] * UNIT_W, MARGIN + 30 + w["y"] * UNIT_H
        x1, y1 = x0 + w["width"] * UNIT_W - 4, y0 + w["height"] * UNIT_H - 4
        draw.rectangle((x0, y0, x1, y1), fill=COLORS.get(w.get("type", ""), "#ffffff"), outline="#adb5bd")
        head, lines = widget_lines(w)
        chars = max(8, (x1 - x0 - 12) // 7)
        draw.text((x0 + 6, y0 + 4), head[:chars], fill="#0b5394", font=bold)
        for i, line in enumerate(lines[: max(0, (y1 - y0 - 24) // 15)]):
            draw.text((x0 + 8, y0 + 22 + i * 15), line[:chars], fill="#343a40", font=small)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cdk-out", default="cdk.out")
    parser.add_argument("--docs-png", default=None, help="also copy the first preview here")
    args = parser.parse_args(argv)
    cdk_out = Path(args.cdk_out)
    written = [render(body, name, cdk_out / "dashboards" / f"{name}.png")
               for name, body in dashboards(cdk_out).items()]
    for path in written:
        print(path)
    if args.docs_png and written:
        shutil.copyfile(written[0], args.docs_png)
    if not written:
        print(f"no CloudWatch dashboard in {cdk_out} (observability.dashboard: false?)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
