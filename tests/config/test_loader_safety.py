"""The config loader refuses what YAML would silently accept or what would exhaust memory or the stack: duplicate keys,
files that are not UTF-8, files over 1 MiB, more than 100 aliases, more than 50,000 nodes or nesting deeper than 32,
as written or once aliases are expanded."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_inference.config import ConfigError, load_config, loader
from hyperpod_inference.config.loader import MAX_ALIASES, MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TEXT = (REPO / "hyperpod.yaml").read_text()


def _write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "hyperpod.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_a_duplicate_key_is_refused_naming_both_lines(tmp_path):
    # GIVEN a config whose env mapping names `region` twice (lines 3 and 4)
    text = "apiVersion: hyperpod-inference/v1\nenv:\n  region: us-west-2\n  region: eu-west-1\n  account: '111122223333'\n"
    # WHEN it is loaded
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text))
    # THEN the error names the second occurrence's line and the first's, instead of keeping the last value
    message = str(err.value)
    assert "line 4, column 3" in message
    assert "duplicate key 'region' (first at line 3)" in message


def test_a_duplicate_key_in_the_default_config_is_refused(tmp_path):
    # GIVEN the default config with its first endpoint's instanceType given twice
    line = next(ln for ln in DEFAULT_TEXT.splitlines() if ln.strip().startswith("instanceType:"))
    text = DEFAULT_TEXT.replace(line, f"{line}\n{line}", 1)
    # WHEN / THEN the loader refuses it
    with pytest.raises(ConfigError, match="duplicate key 'instanceType'"):
        load_config(_write(tmp_path, text))


def test_a_merge_key_may_be_overridden_by_an_explicit_key(tmp_path):
    # GIVEN a mapping that merges an anchor and then overrides one of its keys (a merge, not a duplicate)
    text = DEFAULT_TEXT + "\nx-defaults: &d {a: 1}\n"
    from hyperpod_inference.config.loader import load_yaml_text

    # WHEN the YAML is parsed
    data = load_yaml_text(text + "x-use: {<<: *d, a: 2}\n")
    # THEN the explicit key wins, as YAML merge keys define
    assert data["x-use"] == {"a": 2}


def test_a_file_that_is_not_utf8_is_a_config_error(tmp_path):
    # GIVEN the default config saved as Latin-1 with an accented character in a comment on line 2
    text = DEFAULT_TEXT.replace("\n", "\n# caf\u00e9\n", 1)
    path = _write(tmp_path, text.encode("latin-1"))
    # WHEN it is loaded
    with pytest.raises(ConfigError) as err:
        load_config(path)
    # THEN it is a ConfigError naming the line and saying it is not UTF-8 (not a UnicodeDecodeError traceback)
    assert "line 2: not UTF-8: byte 0xe9" in str(err.value)


def test_a_file_over_one_mib_is_refused(tmp_path):
    # GIVEN the default config padded with a comment to just over 1 MiB
    text = DEFAULT_TEXT + "#" + "x" * (MAX_FILE_BYTES - len(DEFAULT_TEXT.encode()))
    assert len(text.encode()) == MAX_FILE_BYTES + 1
    # WHEN / THEN the loader refuses it by size
    with pytest.raises(ConfigError, match="larger than 1048576 bytes"):
        load_config(_write(tmp_path, text))


def test_a_file_of_exactly_one_mib_is_read(tmp_path):
    # GIVEN the default config padded to exactly 1 MiB
    text = DEFAULT_TEXT + "#" + "x" * (MAX_FILE_BYTES - len(DEFAULT_TEXT.encode()) - 1)
    # WHEN it is loaded THEN it validates like the default
    assert load_config(_write(tmp_path, text)).endpoints


def test_more_than_100_aliases_are_refused(tmp_path):
    # GIVEN a config with an anchor referenced 101 times
    aliases = "\n".join("  - *a" for _ in range(MAX_ALIASES + 1))
    text = DEFAULT_TEXT + f"\nx-anchor: &a 1\nx-refs:\n{aliases}\n"
    # WHEN / THEN the loader refuses it, naming the limit
    with pytest.raises(ConfigError, match="refused: more than 100 aliases"):
        load_config(_write(tmp_path, text))


def test_100_aliases_are_allowed_by_the_loader(tmp_path):
    # GIVEN exactly 100 alias references (the limit)
    aliases = "\n".join("  - *a" for _ in range(MAX_ALIASES))
    text = DEFAULT_TEXT + f"\nx-anchor: &a 1\nx-refs:\n{aliases}\n"
    # WHEN loaded THEN the loader passes it on, and only validation objects to the unknown keys
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text))
    assert "x-refs: unknown key" in str(err.value)
    assert "more than 100 aliases" not in str(err.value)


def test_an_alias_bomb_is_refused_by_its_expanded_size(tmp_path):
    # GIVEN a "billion laughs" document: 20 levels, each a list of two aliases of the level before (2^20 nodes)
    lines = ["l0: &l0 [x, x]"] + [f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]" for i in range(1, 21)]
    # WHEN / THEN it is refused before any construction or validation, naming the node limit
    with pytest.raises(ConfigError, match=f"more than {MAX_NODES} YAML nodes once aliases are expanded"):
        load_config(_write(tmp_path, "\n".join(lines) + "\n"))


def test_a_recursive_alias_is_refused(tmp_path):
    # GIVEN a list that contains itself
    # WHEN / THEN the loader refuses it with a clear message
    with pytest.raises(ConfigError, match="recursive structure"):
        load_config(_write(tmp_path, "a: &a [*a]\n"))


def _no_node_is_built(monkeypatch):
    """Makes building the document's nodes fail the test: what is refused must be refused on the parser's events."""
    def refuse(self):
        raise AssertionError("the loader built the document's nodes")
    for cls in {loader._ConfigYamlLoader, loader._FastConfigYamlLoader}:
        monkeypatch.setattr(cls, "get_single_node", refuse)


@pytest.mark.parametrize("style", ["flow sequences", "flow mappings", "block mappings"])
def test_a_deeply_nested_file_is_a_config_error_before_any_node_is_built(tmp_path, monkeypatch, style):
    # GIVEN a 10 KB file nested thousands deep (or just past the limit, in block style)
    text = {"flow sequences": "x: " + "[" * 5000 + "]" * 5000,
            "flow mappings": "x: " + "{a: " * 2000 + "1" + "}" * 2000,
            "block mappings": "".join("  " * i + "a:\n" for i in range(MAX_DEPTH + 1)) + "  " * (MAX_DEPTH + 1) + "b: 1\n",
            }[style]
    _no_node_is_built(monkeypatch)
    # WHEN it is loaded THEN it is a ConfigError naming the depth limit and the line (not a RecursionError traceback)
    with pytest.raises(ConfigError, match=rf"line 1, column \d+: refused: mappings and sequences nested more than "
                                          rf"{MAX_DEPTH} deep" if style != "block mappings" else
                       rf"line {MAX_DEPTH + 1}, column \d+: refused: mappings and sequences nested more than {MAX_DEPTH}"):
        load_config(_write(tmp_path, text))


def test_nesting_up_to_the_limit_is_left_to_validation(tmp_path):
    # GIVEN an unknown key nested exactly MAX_DEPTH deep (the top-level mapping is the first level)
    text = DEFAULT_TEXT + "x-deep: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    # WHEN loaded THEN the loader passes it on, and only validation objects to the unknown key
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, text))
    assert "x-deep: unknown key" in str(err.value)


def test_an_alias_placed_deep_is_refused_by_its_expanded_depth(tmp_path):
    # GIVEN a node 20 deep and an alias of it placed 20 deep: 40 levels once expanded, each part within the limit
    text = "x-a: &a " + "[" * 20 + "]" * 20 + "\nx-b: " + "[" * 20 + "*a" + "]" * 20 + "\n"
    # WHEN / THEN the loader refuses it, naming the expanded depth
    with pytest.raises(ConfigError, match=f"nested more than {MAX_DEPTH} deep once aliases are expanded"):
        load_config(_write(tmp_path, text))


def test_a_one_mib_file_of_flat_values_is_refused_at_the_node_limit_before_any_node_is_built(tmp_path, monkeypatch):
    # GIVEN files of flat values just under 1 MiB: a list of short scalars past the node limit (but under the
    # previous limit of 100,000), and a list of half a million
    items = "".join(f"- v{i:06}\n" for i in range(MAX_NODES + 10_000))
    values = ["x-values:\n" + items, "x-values: [" + ",".join("1" for _ in range(500_000)) + "]\n"]
    _no_node_is_built(monkeypatch)
    for text in values:
        assert MAX_FILE_BYTES // 2 < len(text.encode()) <= MAX_FILE_BYTES
        # WHEN each is loaded THEN it is refused on the parser's events, naming the node limit
        with pytest.raises(ConfigError, match=f"refused: more than {MAX_NODES} YAML nodes"):
            load_config(_write(tmp_path, text))
