"""The config loader refuses what YAML would silently accept or what would exhaust memory: duplicate keys, files that
are not UTF-8, files over 1 MiB, more than 100 aliases, more than 100,000 nodes once aliases are expanded."""

from __future__ import annotations

from pathlib import Path

import pytest

from hyperpod_inference.config import ConfigError, load_config
from hyperpod_inference.config.loader import MAX_ALIASES, MAX_FILE_BYTES, MAX_NODES

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
