"""The post-deploy check runs again whenever the endpoint's custom resource changes, and only then."""

from __future__ import annotations

from tests.synth_helpers import DEFAULT_CONFIG, load_yaml, synth_config

VERIFY = "Custom::SageMakerEndpointVerification"


def nonces(template: dict) -> list[str]:
    return [r["Properties"]["Nonce"] for r in template["Resources"].values() if r["Type"] == VERIFY]


def test_a_changed_endpoint_changes_the_checks_properties_and_an_unchanged_one_does_not(tmp_path) -> None:
    # GIVEN the default config, synthesized twice, and once with another replica count
    data = load_yaml(DEFAULT_CONFIG)
    first = nonces(synth_config(data, tmp_path / "a", nag=False).template)
    again = nonces(synth_config(data, tmp_path / "b", nag=False).template)
    data["endpoints"][0]["replicas"] = 2
    changed = nonces(synth_config(data, tmp_path / "c", nag=False).template)
    # THEN the same endpoint gives the same property (no re-run), a changed one another (CloudFormation updates the
    # check, so it waits and invokes again)
    assert len(first) == 1 and first == again
    assert changed != first
