"""docs/config-reference.md from the config file's JSON Schema: one section per object, every field with its type,
default, description and the CRD path it maps to.

    python tools/config_reference.py [--schema hyperpod.schema.json] [--out docs/config-reference.md]

Without ``--schema`` the schema comes from the installed models (what ``make schema`` writes to the file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HEADER = """# Config reference

Generated from the config file's JSON Schema (`hyperpod.schema.json`, written by `make schema`) by
`tools/config_reference.py`; do not edit by hand (a test fails when this page is stale).

At the end of this page you know every key of the config file: its type, its default, what it does and where it lands
in the operator's custom resource. Point your editor at the schema to get the same help while typing: the first line of
your config file is

```yaml
# yaml-language-server: $schema=./hyperpod.schema.json
```

(the YAML extension of VS Code and other editors using yaml-language-server read it; give the path relative to the
config file). `python -m hyperpod_inference validate my-cluster.yaml` checks a file with the full rules.

**CRD path**: where the value is written, verbatim, in the operator's resource (`spec....` is absolute; a path without
`spec.` is relative to the object the section is used at, because the CRD repeats that shape in several places).
`—` means no CRD field takes the value as it is, followed by why: the AWS side of the stack, or a value the library
turns into one or more CRD fields. **Default** `—` means the key is optional and absent by default; `required` means
it must be given.
"""


def _escape(text: str) -> str:
    """Table-cell text: pipes escaped, one line, reStructuredText ``code`` as Markdown `code`."""
    return text.replace("``", "`").replace("|", "\\|").replace("\n", " ")


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _anchor(name: str) -> str:
    return name.lower()


def type_text(s: dict[str, Any]) -> str:
    """A short, readable type: enums listed, references linked, nullable collapsed, bounds shown."""
    if "$ref" in s:
        name = _ref_name(s["$ref"])
        return f"[{name}](#{_anchor(name)})"
    if "anyOf" in s:
        branches = [b for b in s["anyOf"] if b.get("type") != "null"]
        return " or ".join(type_text(b) for b in branches) or "null"
    if "const" in s:
        return f"`{json.dumps(s['const'])}`"
    if "enum" in s:
        return " | ".join(f"`{v}`" for v in s["enum"])
    kind = s.get("type")
    if kind == "array":
        inner = type_text(s.get("items", {}))
        return f"list of {inner}" + _bounds(s, "minItems", "maxItems", " items")
    if kind == "object":
        extra = s.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"map of {type_text(extra)}"
        return "object"
    text = kind or "any"
    if kind == "string":
        text += _bounds(s, "minLength", "maxLength", " chars")
    if kind in ("integer", "number"):
        lo, hi = s.get("minimum", s.get("exclusiveMinimum")), s.get("maximum", s.get("exclusiveMaximum"))
        if lo is not None or hi is not None:
            text += f" {'' if lo is None else lo}–{'' if hi is None else hi}"
    return text


def _bounds(s: dict[str, Any], lo_key: str, hi_key: str, unit: str) -> str:
    lo, hi = s.get(lo_key), s.get(hi_key)
    if lo is None and hi is None:
        return ""
    return f" ({'' if lo is None else lo}–{'' if hi is None else hi}{unit})"


def default_text(name: str, prop: dict[str, Any], required: set[str]) -> str:
    if name in required:
        return "required"
    if "default" in prop:
        return f"`{json.dumps(prop['default'])}`"
    return "—"


def crd_text(prop: dict[str, Any]) -> str:
    path = prop.get("x-crd-path")
    if path:
        return f"`{path}`"
    return f"— ({prop.get('x-crd-path-reason', '')})"


def _refs(s: Any) -> list[str]:
    """The definitions a schema fragment names, in order."""
    out: list[str] = []
    if isinstance(s, dict):
        if "$ref" in s:
            out.append(_ref_name(s["$ref"]))
        for value in s.values():
            out += _refs(value)
    elif isinstance(s, list):
        for value in s:
            out += _refs(value)
    return out


def sections(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any], list[str]]]:
    """(name, object schema, YAML paths it is used at), the root first, then each definition in reading order."""
    defs = schema.get("$defs", {})
    used_at: dict[str, list[str]] = {"(root)": ["(the file)"]}
    order = ["(root)"]
    queue: list[tuple[str, dict[str, Any], str]] = [("(root)", schema, "")]
    while queue:
        name, obj, at = queue.pop(0)
        for key, prop in (obj.get("properties") or {}).items():
            path = f"{at}.{key}" if at else key
            if prop.get("type") == "array" or any(b.get("type") == "array" for b in prop.get("anyOf", [])):
                path += "[]"
            for ref in dict.fromkeys(_refs(prop)):
                if ref not in used_at:
                    used_at[ref] = []
                    order.append(ref)
                    queue.append((ref, defs[ref], path))
                if path not in used_at[ref]:
                    used_at[ref].append(path)
    return [(n, schema if n == "(root)" else defs[n], used_at[n]) for n in order]


def undocumented(schema: dict[str, Any]) -> list[str]:
    """Fields lacking a description, or an ``x-crd-path`` (a path, or null with ``x-crd-path-reason``)."""
    out = []
    for name, obj, _used in sections(schema):
        for key, prop in (obj.get("properties") or {}).items():
            if not str(prop.get("description") or "").strip():
                out.append(f"{name}.{key}: no description")
            if "x-crd-path" not in prop:
                out.append(f"{name}.{key}: no x-crd-path")
            elif prop["x-crd-path"] is None and not str(prop.get("x-crd-path-reason") or "").strip():
                out.append(f"{name}.{key}: x-crd-path is null without x-crd-path-reason")
    return out


def render(schema: dict[str, Any]) -> str:
    out = [HEADER]
    count = 0
    for name, obj, used in sections(schema):
        title = "The file" if name == "(root)" else name
        out.append(f"\n## {title}\n")
        if name != "(root)":
            out.append("Used at: " + ", ".join(f"`{p}`" for p in used) + "\n")
        if obj.get("description"):
            out.append(_escape(obj["description"]) + "\n")
        required = set(obj.get("required", []))
        out.append("| key | type | default | description | CRD path |")
        out.append("|---|---|---|---|---|")
        for key, prop in (obj.get("properties") or {}).items():
            count += 1
            out.append(f"| `{key}` | {_escape(type_text(prop))} | {_escape(default_text(key, prop, required))} | "
                       f"{_escape(prop.get('description', ''))} | {_escape(crd_text(prop))} |")
    out.append(f"\n{count} fields.\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schema", help="a schema file (default: the installed models' schema)")
    parser.add_argument("--out", default="docs/config-reference.md")
    args = parser.parse_args(argv)
    if args.schema:
        schema = json.loads(Path(args.schema).read_text())
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from hyperpod_inference.config import config_json_schema

        schema = config_json_schema()
    Path(args.out).write_text(render(schema))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
