"""A small stand-in for Athena: DuckDB tables built from synthesized ``AWS::Glue::Table`` definitions, objects placed
under keys made from each table's ``storage.location.template`` (partition values read back by matching it), and
Athena SQL transpiled by sqlglot.

What it reproduces of the real readers:

* RegexSerDe: the table's ``input.regex`` as it is, matched against the *whole* line (Java ``Matcher.matches()``,
  here ``re.fullmatch``); a line that does not match is a row of NULLs; a group that does not parse as the column's
  type (``-`` in an ``int``) or did not take part is NULL;
* the OpenX JSON SerDe with ``case.insensitive``: keys are matched case-insensitively (lowercased here);
* partition projection: ``injected`` partitions are one path segment, ``date`` ones follow their Java date format.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import sqlglot

_SIMPLE = {"string": "VARCHAR", "int": "INTEGER", "bigint": "BIGINT", "double": "DOUBLE", "boolean": "BOOLEAN"}
_DATE_TOKENS = {"yyyy": r"\d{4}", "MM": r"\d{2}", "dd": r"\d{2}", "HH": r"\d{2}"}


def duckdb_type(hive: str) -> str:
    """A Hive/Glue column type as a DuckDB type (``struct<a:string>`` -> ``STRUCT("a" VARCHAR)``)."""
    hive = hive.strip()
    if hive in _SIMPLE:
        return _SIMPLE[hive]
    if hive.startswith("array<") and hive.endswith(">"):
        return f"{duckdb_type(hive[6:-1])}[]"
    if hive.startswith("struct<") and hive.endswith(">"):
        fields = []
        for part in _split_top(hive[7:-1]):
            name, _, typ = part.partition(":")
            fields.append(f'"{name}" {duckdb_type(typ)}')
        return f"STRUCT({', '.join(fields)})"
    raise ValueError(f"no DuckDB type for Glue type {hive!r}")


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


@dataclass
class GlueTable:
    """One ``AWS::Glue::Table`` ``TableInput``, as synthesized."""

    database: str
    input: dict[str, Any]

    @property
    def name(self) -> str:
        return self.input["Name"]

    @property
    def columns(self) -> list[tuple[str, str]]:
        return [(c["Name"], c["Type"]) for c in self.input["StorageDescriptor"]["Columns"]]

    @property
    def partition_keys(self) -> list[str]:
        return [k["Name"] for k in self.input["PartitionKeys"]]

    @property
    def serde(self) -> dict[str, Any]:
        return self.input["StorageDescriptor"]["SerdeInfo"]

    @property
    def location_template(self) -> str:
        return self.input["Parameters"]["storage.location.template"]

    def object_key(self, values: dict[str, str], file_name: str) -> str:
        """The object URI for these partition values: the location template filled in, plus the file name."""
        missing = set(self.partition_keys) - set(values)
        assert not missing, f"no value for partition(s) {missing}"
        uri = self.location_template
        for key, value in values.items():
            uri = uri.replace("${" + key + "}", value)
        assert "${" not in uri, uri
        return uri.rstrip("/") + "/" + file_name

    def partition_values(self, uri: str) -> dict[str, str] | None:
        """The partition values of an object URI, read back by matching the location template; None elsewhere."""
        params = self.input["Parameters"]
        pattern, rest = "", self.location_template
        for literal, key in re.findall(r"(.*?)\$\{([a-z_]+)\}", self.location_template):
            rest = rest[len(literal) + len(key) + 3:]
            kind = params[f"projection.{key}.type"]
            if kind == "date":
                segment = params[f"projection.{key}.format"]
                value = re.escape(segment)
                for token, rx in _DATE_TOKENS.items():
                    value = value.replace(token, rx)
            elif kind == "injected":
                value = r"[^/]+"
            else:
                raise AssertionError(f"projection type {kind} not modelled")
            pattern += re.escape(literal) + f"(?P<{key}>{value})"
        pattern += re.escape(rest.rstrip("/")) + r"/[^/]+"
        match = re.fullmatch(pattern, uri)
        return match.groupdict() if match else None


def glue_tables(template: dict[str, Any]) -> dict[str, GlueTable]:
    return {r["Properties"]["TableInput"]["Name"]: GlueTable(r["Properties"]["DatabaseName"], r["Properties"]["TableInput"])
            for r in template["Resources"].values() if r["Type"] == "AWS::Glue::Table"}


def _hive_value(text: str | None, hive_type: str) -> Any:
    """What the RegexSerDe makes of a group for a primitive column: unparsable or absent -> NULL."""
    if text is None:
        return None
    try:
        if hive_type in ("int", "bigint"):
            return int(text)
        if hive_type == "double":
            return float(text)
    except ValueError:
        return None
    return text


def regex_rows(table: GlueTable, lines: Iterable[str]) -> list[list[Any]]:
    """Apply the table's ``input.regex`` as it is, with whole-line match semantics."""
    regex = re.compile(table.serde["Parameters"]["input.regex"])
    types = [t for _, t in table.columns]
    assert regex.groups == len(types), "the RegexSerDe needs one group per column"
    rows = []
    for line in lines:
        match = regex.fullmatch(line)
        rows.append([None] * len(types) if match is None
                    else [_hive_value(v, t) for v, t in zip(match.groups(), types, strict=True)])
    return rows


def _lower_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k.lower(): _lower_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lower_keys(v) for v in value]
    return value


@dataclass
class Catalog:
    """Objects by URI and the DuckDB tables over them."""

    tables: dict[str, GlueTable]
    workdir: Path
    objects: dict[str, bytes] = field(default_factory=dict)

    def put(self, table: str, values: dict[str, str], file_name: str, body: bytes) -> str:
        uri = self.tables[table].object_key(values, file_name)
        self.objects[uri] = body
        return uri

    def connect(self) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        for table in self.tables.values():
            self._load(con, table)
        return con

    def _load(self, con: duckdb.DuckDBPyConnection, table: GlueTable) -> None:
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{table.database}"')
        qualified = f'"{table.database}"."{table.name}"'
        columns = [(n, duckdb_type(t)) for n, t in table.columns]
        ddl = ", ".join([f'"{n}" {t}' for n, t in columns] + [f'"{k}" VARCHAR' for k in table.partition_keys])
        con.execute(f"CREATE TABLE {qualified} ({ddl})")
        location = table.input["StorageDescriptor"]["Location"]
        library = table.serde["SerializationLibrary"]
        for uri, body in sorted(self.objects.items()):
            if not uri.startswith(location):
                continue
            partitions = table.partition_values(uri)
            if partitions is None:
                continue  # another tier's object under the same capture prefix
            text = (gzip.decompress(body) if uri.endswith(".gz") else body).decode()
            lines = [line for line in text.split("\n") if line]
            extra = [partitions[k] for k in table.partition_keys]
            if library == "org.apache.hadoop.hive.serde2.RegexSerDe":
                rows = [row + extra for row in regex_rows(table, lines)]
                marks = ", ".join("?" * (len(columns) + len(extra)))
                con.executemany(f"INSERT INTO {qualified} VALUES ({marks})", rows)
            elif library == "org.openx.data.jsonserde.JsonSerDe":
                assert table.serde["Parameters"].get("case.insensitive") == "TRUE"
                path = self.workdir / f"{table.name}-{len(list(self.workdir.iterdir()))}.jsonl"
                path.write_text("\n".join(json.dumps(_lower_keys(json.loads(line))) for line in lines))
                spec = "{" + ", ".join(f"'{n}': '{t}'" for n, t in columns) + "}"
                names = ", ".join(f'"{n}"' for n, _ in columns)
                marks = ", ".join("?" * len(extra))
                con.execute(f"INSERT INTO {qualified} SELECT {names}, {marks} FROM read_json(?, columns={spec}, "
                            "format='newline_delimited')", [*extra, str(path)])
            else:
                raise AssertionError(f"SerDe {library} not modelled")


def run_named_query(con: duckdb.DuckDBPyConnection, athena_sql: str, parameters: list[Any]) -> list[tuple]:
    """Transpile an Athena query to DuckDB with sqlglot and run it with its ``?`` parameters."""
    (duck_sql,) = sqlglot.transpile(athena_sql, read="athena", write="duckdb")
    return con.execute(duck_sql, parameters).fetchall()
