"""What the loader says about a file it cannot use: a scalar YAML cannot construct is a config error with its line and
column (never a traceback); a key that looks like a token is never repeated; unknown keys are listed up to a cap and
counted beyond it, with the suggestion work bounded by the cap."""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.config import ConfigError, load_config, suggest
from hyperpod_inference.config.loader import MAX_SHOWN_PROBLEMS, parse_config
from hyperpod_inference.facts import production as prod_facts

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TEXT = (REPO / "hyperpod.yaml").read_text()
#: The line of the first endpoint's ``replicas: 1`` in hyperpod.yaml (column 15 is its value).
REPLICAS_LINE = DEFAULT_TEXT.splitlines().index("    replicas: 1") + 1
TOKEN = "hf_" + "Ab1" * 12


def _load(tmp_path: Path, text: str) -> ConfigError:
    path = tmp_path / "hyperpod.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    return err.value


UNCONSTRUCTIBLE = {
    "an impossible date": ("2025-02-30", "a date"),
    "an integer of 5,000 digits": ("9" * 5000, "5,000 digits"),
    "!!int abc": ("!!int abc", "an integer"),
    "!!bool maybe": ("!!bool maybe", "true or false"),
    "!!timestamp x": ("!!timestamp x", "a date"),
    "!!float x": ("!!float x", "a number"),
    "!!binary of bad base64": ("!!binary 'a'", "base64"),
    "a Python tag": ("!!python/int 1", "python/int"),
    "an unknown local tag": ("!mine 3", "!mine"),
    "!!int of a token": (f"!!int {TOKEN}", "an integer"),
}


@pytest.mark.parametrize("case", UNCONSTRUCTIBLE)
def test_a_scalar_yaml_cannot_construct_is_a_config_error_with_line_and_column(tmp_path, case):
    # GIVEN the default config with the first endpoint's replicas replaced by a scalar PyYAML cannot construct
    value, says = UNCONSTRUCTIBLE[case]
    if case == "an integer of 5,000 digits" and not hasattr(sys, "get_int_max_str_digits"):
        pytest.skip("Python 3.10 reads integers of any length")
    text = DEFAULT_TEXT.replace("    replicas: 1\n", f"    replicas: {value}\n", 1)
    # WHEN it is loaded
    err = _load(tmp_path, text)
    # THEN one config error names the file, the line and column of the value and what it should be; it is short and
    # never repeats a token
    [(where, message)] = err.problems
    assert err.source.endswith("hyperpod.yaml")
    assert where == f"line {REPLICAS_LINE}, column 15", message
    assert says in message
    assert TOKEN not in str(err) and len(str(err)) < 400


def test_an_unconstructible_key_is_a_config_error_too(tmp_path):
    # GIVEN a mapping key that is an impossible date / WHEN loaded / THEN a config error at the key's line
    err = _load(tmp_path, DEFAULT_TEXT.replace("    replicas: 1\n", "    replicas: 1\n    2025-02-30: x\n", 1))
    assert err.problems[0][0] == f"line {REPLICAS_LINE + 1}, column 5"


def test_a_token_shaped_unknown_key_is_never_echoed_and_named_by_its_line(tmp_path):
    # GIVEN an endpoint with a key that looks like a Hugging Face token (pasted where a key goes)
    text = DEFAULT_TEXT.replace("    replicas: 1\n", f"    replicas: 1\n    {TOKEN}: x\n", 1)
    # WHEN it is loaded
    err = _load(tmp_path, text)
    # THEN the token appears nowhere in the error, and the unknown key is named by its line
    assert TOKEN not in str(err)
    assert ("endpoints[0]", f"an unknown key at line {REPLICAS_LINE + 1} (it looks like a Hugging Face token, so it "
                            "is not repeated here)") in err.problems


def test_a_token_shaped_key_in_spec_overrides_is_never_echoed(tmp_path):
    # GIVEN a token-shaped key inside specOverrides (a free-form mapping checked against the operator's CRD)
    text = DEFAULT_TEXT.replace("    replicas: 1\n", f"    replicas: 1\n    specOverrides:\n      {TOKEN}: 1\n", 1)
    # WHEN it is loaded / THEN the token is not in the error; the mapping and the key's line are
    err = _load(tmp_path, text)
    assert TOKEN not in str(err)
    assert any(path == "endpoints[0].specOverrides" and message.startswith(f"has a key (line {REPLICAS_LINE + 2}) "
                                                                           "that looks like a Hugging Face token")
               for path, message in err.problems), err.problems


def test_a_token_shaped_key_of_already_parsed_data_is_not_echoed_either():
    # GIVEN parsed data (no file, so no line) with a token-shaped unknown key
    data = yaml.safe_load(DEFAULT_TEXT)
    data["env"][TOKEN] = 1
    # WHEN it is validated / THEN the key is not repeated
    with pytest.raises(ConfigError) as err:
        parse_config(data, "data")
    assert TOKEN not in str(err.value)
    assert ("env", "an unknown key (it looks like a Hugging Face token, so it is not repeated here)") in err.value.problems


def _count_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every difflib comparison the suggestions make (config/suggest.py and facts/production.py both call
    ``difflib.get_close_matches`` through the module), recorded."""
    assert suggest.difflib is prod_facts.difflib is difflib
    calls: list[str] = []
    real = difflib.get_close_matches

    def counted(word, *args, **kwargs):
        calls.append(word)
        return real(word, *args, **kwargs)

    monkeypatch.setattr(difflib, "get_close_matches", counted)
    return calls


@pytest.mark.parametrize("where", ["specOverrides", "endpoint", "env", "top level"])
def test_24000_unknown_keys_are_listed_up_to_the_cap_and_counted(tmp_path, monkeypatch, where):
    # GIVEN 24,000 unknown keys in one mapping (about the most the node limit lets a file hold)
    data = yaml.safe_load(DEFAULT_TEXT)
    many = {f"zzunknown{i}": 1 for i in range(24_000)}
    {"specOverrides": lambda: data["endpoints"][0].__setitem__("specOverrides", many),
     "endpoint": lambda: data["endpoints"][0].update(many), "env": lambda: data["env"].update(many),
     "top level": lambda: data.update(many)}[where]()
    calls = _count_calls(monkeypatch)
    # WHEN it is loaded
    err = _load(tmp_path, yaml.safe_dump(data, sort_keys=False))
    # THEN the first keys are listed one by one, the rest counted in one line; the message is short; and the
    # suggestions compared only the listed keys (bounded work, not one comparison per key)
    listed = prod_facts.MAX_UNKNOWN_LISTED
    message = str(err)
    assert "and 23,990 more" in message, message[-500:]
    assert len(re.findall(r"zzunknown\d+", message)) == 2 * listed if where == "specOverrides" else listed
    assert len(message) < 200 * (listed + 2)
    assert len(calls) <= 3 * listed


def test_a_config_with_more_problems_than_the_cap_prints_them_counted(tmp_path):
    # GIVEN 3,000 invalid namespace names (each its own problem)
    data = yaml.safe_load(DEFAULT_TEXT)
    data["namespaces"] = [f"Bad_{i}" for i in range(3000)]
    # WHEN it is loaded / THEN every problem is kept, the message lists the first ones and counts the rest
    err = _load(tmp_path, yaml.safe_dump(data, sort_keys=False))
    assert len(err.problems) >= 3000
    lines = str(err).splitlines()
    assert len(lines) == MAX_SHOWN_PROBLEMS + 1
    assert re.fullmatch(rf".*: and {len(err.problems) - MAX_SHOWN_PROBLEMS:,} more problems", lines[-1])
