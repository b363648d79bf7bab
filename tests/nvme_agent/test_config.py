"""The agent's settings: one AgentConfig from flags and environment; private accelerations are opt-in, probed and
fall back."""

from __future__ import annotations

import logging

import pytest

from hyperpod_inference.nvme_agent import cli, s3_fetch, s3_source
from hyperpod_inference.nvme_agent.config import AgentConfig

MiB = 1024 * 1024


def test_flags_win_over_the_environment_and_unset_knobs_keep_their_defaults():
    # GIVEN knobs in the environment
    env = {"NVME_AGENT_CONCURRENCY": "4", "NVME_AGENT_CHUNK_SIZE": str(8 * MiB), "NVME_AGENT_DIRECT_IO": "0"}

    # WHEN a flag sets one of them too
    config = AgentConfig.from_env(env, concurrency=2, chunk_size=None)

    # THEN the flag wins, the others come from the environment, the rest are defaults (fast read off)
    assert (config.concurrency, config.chunk_size, config.direct_io, config.fast_read) == (2, 8 * MiB, False, False)
    assert AgentConfig.from_env({}).parallel(s3_source.CONCURRENCY) == 16
    assert AgentConfig.from_env({}).parallel(8) == 8


@pytest.mark.parametrize("name,value,message", [
    ("NVME_AGENT_DIRECT_IO", "yes", "NVME_AGENT_DIRECT_IO must be 0 or 1, got 'yes'"),
    ("NVME_AGENT_CONCURRENCY", "many", "NVME_AGENT_CONCURRENCY must be an integer, got 'many'"),
    ("NVME_AGENT_CHUNK_SIZE", "1024", "NVME_AGENT_CHUNK_SIZE must be at least 1048576, got 1024"),
])
def test_a_bad_knob_in_the_environment_is_refused_naming_it(name, value, message):
    with pytest.raises(ValueError, match=message):
        AgentConfig.from_env({name: value})


def test_the_cli_reads_its_settings_through_agent_config(monkeypatch):
    # GIVEN a knob in the environment and another as a flag
    monkeypatch.setenv("NVME_AGENT_FAST_READ", "1")
    args = cli.build_parser().parse_args(["ensure", "--cache-root", "/x", "--model", "{}", "--concurrency", "3"])

    # WHEN the CLI builds its settings THEN both are there
    config = cli._options(args)
    assert (config.concurrency, config.fast_read) == (3, True)


def test_fast_read_falls_back_to_the_public_path_when_its_probe_fails_and_logs_once(caplog):
    # GIVEN a response body without the private attributes the fast path needs (another botocore or HTTP client)
    class Body:
        def readinto(self, buffer):
            return 0

    settings = AgentConfig(fast_read=True)

    # WHEN the fast reader is probed for two responses
    with caplog.at_level(logging.INFO, logger="nvme_agent"):
        results = [s3_fetch._fast_reader(Body(), settings) for _ in range(2)]

    # THEN it declines both (the public readinto is used) and says so once
    assert results == [None, None]
    assert sum("fast read unavailable" in r.getMessage() for r in caplog.records) == 1
    assert s3_fetch._readinto_of(Body()) is not None
