"""The config schema documents every field (description and CRD path), and the committed schema file and the
generated config reference match the models."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

from hyperpod_inference.__main__ import schema_text
from hyperpod_inference.config import config_json_schema
from tests.docs.helpers import REPO, tool

reference = tool("config_reference")


def test_every_config_field_has_a_description_and_a_crd_path() -> None:
    # GIVEN the schema of the models WHEN every field is checked THEN none lacks a description or x-crd-path
    assert reference.undocumented(config_json_schema()) == []


def test_a_field_without_description_or_crd_path_is_reported() -> None:
    # GIVEN the schema with one field stripped of its description and another with a null path and no reason
    schema = copy.deepcopy(config_json_schema())
    env = schema["$defs"]["Env"]["properties"]
    del env["account"]["description"]
    del env["region"]["x-crd-path-reason"]
    # WHEN checked THEN both are named
    assert reference.undocumented(schema) == ["Env.account: no description",
                                              "Env.region: x-crd-path is null without x-crd-path-reason"]


def test_committed_schema_file_is_current() -> None:
    # GIVEN hyperpod.schema.json as committed THEN it is what `make schema` writes today (re-run it when this fails)
    assert (REPO / "hyperpod.schema.json").read_text() == schema_text(config_json_schema())


def test_config_reference_page_is_current() -> None:
    # GIVEN docs/config-reference.md THEN it is what tools/config_reference.py renders from the schema today
    assert (REPO / "docs" / "config-reference.md").read_text() == reference.render(config_json_schema())


def test_config_reference_lists_every_field() -> None:
    page = (REPO / "docs" / "config-reference.md").read_text()
    for name, obj, _ in reference.sections(config_json_schema()):
        for key in obj.get("properties", {}):
            assert f"| `{key}` |" in page, f"{name}.{key}"


def test_schema_command_writes_valid_json(tmp_path) -> None:
    # GIVEN the command `make schema` runs WHEN it writes the file THEN the file is JSON and nothing else
    out = tmp_path / "hyperpod.schema.json"
    done = subprocess.run([sys.executable, "-m", "hyperpod_inference", "schema", "-o", str(out)], cwd=REPO,
                          capture_output=True, text=True, check=True)
    assert json.loads(out.read_text())["title"].startswith("hyperpod-inference config")
    assert done.stdout == f"wrote {out}\n" and done.stderr == ""
    # and printed to stdout it is the same JSON alone
    printed = subprocess.run([sys.executable, "-m", "hyperpod_inference", "schema"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout
    assert json.loads(printed) == json.loads(out.read_text())


def test_make_schema_target_runs_the_two_generators() -> None:
    recipe = (REPO / "Makefile").read_text().split("\nschema:", 1)[1].split("\n\n", 1)[0]
    assert "-m hyperpod_inference schema -o hyperpod.schema.json" in recipe
    assert "tools/config_reference.py --schema hyperpod.schema.json --out docs/config-reference.md" in recipe
