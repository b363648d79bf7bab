"""The session's shared synths (tests/synth_helpers.py ``SynthCache``): one per config and options, and no test
can change what the next one gets."""

from __future__ import annotations

import copy

import pytest

from tests.synth_helpers import DEFAULT_CONFIG, SynthCache, _cache_key, load_yaml


def test_the_key_is_the_config_and_the_options() -> None:
    data = load_yaml(DEFAULT_CONFIG)
    reordered = dict(reversed(list(copy.deepcopy(data).items())))
    changed = copy.deepcopy(data)
    changed["endpoints"][0]["name"] += "-x"
    # THEN the same content is one key, whatever the order of its keys; another option, another content or the
    # file instead of its content (relative paths resolve against the file) is another
    assert _cache_key(data, True) == _cache_key(reordered, True)
    assert len({_cache_key(data, True), _cache_key(data, False), _cache_key(changed, True),
                _cache_key(DEFAULT_CONFIG, True)}) == 4


def test_each_caller_gets_its_own_copy_and_a_write_into_the_assembly_is_caught(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # GIVEN a cache (its own, not the session's) and the default config synthesized through it
    cache = SynthCache(tmp_path_factory)
    first = cache(DEFAULT_CONFIG, nag=False)
    # WHEN a test changes what it got back
    first.template["Resources"].clear()
    first.manifests.clear()
    # THEN the next caller gets the same assembly, untouched
    second = cache(DEFAULT_CONFIG, nag=False)
    assert second.outdir == first.outdir
    assert second.template["Resources"] and second.manifests
    # AND a file written into the shared assembly fails the next caller
    (second.outdir / second.template_file).write_text("{}")
    with pytest.raises(AssertionError, match="wrote into the shared"):
        cache(DEFAULT_CONFIG, nag=False)
