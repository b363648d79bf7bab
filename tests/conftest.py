import os

import pytest

# jsii flags Node 20 as end-of-life on every start; the value lists majors to silence.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")


@pytest.fixture(scope="session")
def shared_synth(tmp_path_factory: pytest.TempPathFactory):
    """``shared_synth(config, nag=...)``: the session's one synth of that config with those options
    (tests/synth_helpers.py ``SynthCache``); imported here only when a test asks for it (it starts jsii)."""
    from tests.synth_helpers import SynthCache

    return SynthCache(tmp_path_factory)
