"""A seeded mutation fuzzer over the repository's own configs (hyperpod.yaml, tests/fixtures, the docs' YAML blocks):
whatever the file becomes, the loader returns a config or raises its own ConfigError, never anything else.

Each case mutates one seed a few times, on its text (a scalar swapped for one YAML may not construct, a tag, a line
dropped or doubled, an indentation changed, a control character, a cut) or on its parsed data (a value replaced by
another type, a huge number, a token-shaped key, thousands of keys, a deep list) dumped again. The cases are fixed by
their seed, so a failure names the case that reproduces it; every case is bounded (the loader's size limits)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from hyperpod_inference.config import ConfigError, load_config
from tests.docs.helpers import PAGES, fenced

REPO = Path(__file__).resolve().parents[2]
SEEDS: list[str] = [(REPO / "hyperpod.yaml").read_text(),
                    *(p.read_text() for p in sorted((REPO / "tests" / "fixtures").glob("*.yaml"))),
                    *(block for page in PAGES for block in fenced(page, "yaml"))]
CASES = 3000
SHARDS = 8
TOKEN = "hf_" + "Zq9" * 12

#: Scalars YAML resolves to a type their text may not hold, and other awkward scalars.
SCALARS = ["2025-02-30", "2025-13-01", "9" * 5000, "-" + "9" * 4400, "!!int abc", "!!bool maybe", "!!timestamp x",
           "!!float x", "!!binary 'a'", "!!binary aGVsbG8=", "!!python/int 1", "!mine 3", "!!set {a}", "!!omap 3",
           "!!null x", "!!str", "!!map x", "!!seq x", "0x", "0b2", "0o9", "1_000", ".nan", "-.inf", "1e999", "~",
           "null", "yes", "on", "<<", "*undefined", "&a x", "'unterminated", '"\\x"', '"\\ud800"', "@", "`", "%",
           "{", "[", "}", "]", "? x", "- x", "|", ">", "#", TOKEN, "ünïcødé", "\u2028", "\x85", "a: b: c", "",
           "12:30:00", "1:2:3:4", "2001-12-14t21:59:43.10-05:00", "!!timestamp 2025-02-30T00:00:00"]
VALUES: list[Any] = [None, True, 0, -1, 2**31, 10**40, 1.5, float("inf"), "", "x" * 2000, [], {}, [None], {"a": None},
                     [[[[[]]]]], {TOKEN: 1}, {1: 2}, {None: 1}, {"k": [1, {"x": TOKEN}]},
                     "2025-02-30", TOKEN, "\x00", "\ud7ff\ue000", "é" * 10, {f"k{i}": i for i in range(3000)},
                     list(range(3000))]


def _text_mutation(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True) or ["\n"]
    i = rng.randrange(len(lines))
    kind = rng.randrange(9)
    line = lines[i]
    if kind == 0 and ":" in line:  # a value replaced by an awkward scalar
        head = line.split(":", 1)[0]
        lines[i] = f"{head}: {rng.choice(SCALARS)}\n"
    elif kind == 1:
        del lines[i]
    elif kind == 2:
        lines.insert(i, line)
    elif kind == 3:  # indentation changed
        lines[i] = " " * rng.choice([0, 1, 2, 3, 5, 8]) + line.lstrip(" ")
    elif kind == 4:  # a character of any kind (control, surrogate-free Unicode, YAML indicator) inserted
        pos = rng.randrange(len(line) + 1)
        char = rng.choice(["\t", "\r", "\x00", "\x07", "\x85", "\u2028", "\ufeff", "\ufffe", "é", "\U0001f600", ":",
                           "#", "&", "*", "!", "|", ">", "'", '"', "{", "[", "-", "?", ",", "%", "@"])
        lines[i] = line[:pos] + char + line[pos:]
    elif kind == 5:  # cut
        return "".join(lines)[:rng.randrange(len(text) + 1)]
    elif kind == 6 and ":" in line:  # a key replaced by an awkward one
        indent = len(line) - len(line.lstrip(" "))
        lines[i] = " " * indent + rng.choice([TOKEN, "2025-02-30", "9" * 5000, "!!int x", "? [a]", "<<", "ünï",
                                              "x" * 300, "null", "1.5", "[a, b]", "{a: 1}"]) + ":" + \
            line.split(":", 1)[1]
    elif kind == 7:  # a tag put before a value
        lines[i] = line.replace(": ", f": {rng.choice(['!!int', '!!float', '!!bool', '!!timestamp', '!!binary', '!!str', '!x'])} ", 1)
    else:  # two lines swapped
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def _nodes(data: Any, out: list[tuple[Any, Any]]) -> None:
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            out += [(node, k) for k in node]
            stack += list(node.values())
        elif isinstance(node, list):
            out += [(node, i) for i in range(len(node))]
            stack += node


def _data_mutation(text: str, rng: random.Random) -> str:
    try:
        data = yaml.safe_load(text)
    except Exception:  # noqa: BLE001 - PyYAML's own load fails on what the loader turns into a ConfigError
        return text
    places: list[tuple[Any, Any]] = []
    _nodes(data, places)
    if not places:
        return yaml.safe_dump(rng.choice(VALUES))
    parent, key = rng.choice(places)
    if isinstance(parent, dict) and rng.random() < 0.3:
        parent[rng.choice([TOKEN, "zzUnknown", 7, None, "2025-02-30"])] = parent.pop(key)
    else:
        parent[key] = rng.choice(VALUES)
    try:
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=rng.random() < 0.5)
    except (yaml.YAMLError, ValueError):
        return text


def case_text(case: int) -> str:
    rng = random.Random(case)
    text = rng.choice(SEEDS)
    for _ in range(rng.randint(1, 3)):
        text = (_text_mutation if rng.random() < 0.7 else _data_mutation)(text, rng)
    return text


def test_the_seeds_are_the_repositorys_configs_and_they_load():
    # GIVEN the seeds / THEN there are the default config, the fixtures and the docs' blocks (the fuzz mutates real
    # configs, not a toy)
    assert len(SEEDS) >= 8
    assert SEEDS[0].startswith("# The embedded default config")
    # and the unmutated default config loads (a mutation, not the seed, is what the fuzz looks for)
    load_config(REPO / "hyperpod.yaml")


@pytest.mark.parametrize("shard", range(SHARDS))
def test_a_mutated_config_loads_or_is_a_config_error_never_a_traceback(tmp_path, shard):
    # GIVEN CASES / SHARDS mutated configs of this shard, each fixed by its case number
    path = tmp_path / "fuzzed.yaml"
    refused = 0
    for case in range(shard, CASES, SHARDS):
        text = case_text(case)
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        # WHEN each is loaded / THEN it validates or raises ConfigError; anything else names the case
        try:
            load_config(path)
        except ConfigError as err:
            refused += 1
            assert str(err), case
            assert TOKEN not in str(err), f"case {case} echoes a token: {str(err)[:300]}"
        except Exception as err:  # noqa: BLE001 - the point of the test
            pytest.fail(f"case {case}: {type(err).__name__}: {err}\n--- the config:\n{text[:2000]}")
    # and the mutations were not all harmless (most make a file the loader refuses)
    assert refused > (CASES // SHARDS) // 2
