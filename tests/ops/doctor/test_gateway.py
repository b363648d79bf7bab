"""``operator.gateway``: with the Inference Gateway in the config, doctor checks that the add-on installs it (from
its first gateway version) and that its CRD is served, or that the stack's own add-on brings both; without a gateway
the check has nothing to say. Against the realistic account (tests/ops/conftest.py) and the fake Kubernetes API."""

from __future__ import annotations

from hyperpod_inference.facts import gateway as gateway_facts
from hyperpod_inference.facts import operator as operator_facts
from hyperpod_inference.ops.doctor.operator import GATEWAY_CRD
from tests.fake_aws import ACCOUNT, Account
from tests.ops.conftest import full_config, run_doctor

CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{GATEWAY_CRD}"
EXECUTION_ROLE = "arn:aws:iam::{account}:role/SageMakerHyperPodInferenceOperator"


def gateway_config(account: Account, base: dict, **operator) -> dict:
    """The full config on operator v3.6 with its first endpoint opted into a gateway (named by the operator)."""
    data = full_config(account, base)
    data["operator"] = {**(data.get("operator") or {}), "version": "v3.6", **operator}
    data["endpoints"][0]["inferenceGateway"] = {"enabled": True}
    return data


def existing(account: Account, base: dict) -> dict:
    return gateway_config(account, base, install="existing", dependencies="existing",
                          executionRoleArn=EXECUTION_ROLE.format(account=ACCOUNT))


def gateway_results(account: Account, data: dict) -> list[dict]:
    _, results = run_doctor(account, data, "--only", "operator.gateway")
    return [r for r in results if r["check"] == "operator.gateway"]


def test_without_a_gateway_the_check_says_nothing(account, init_config):
    assert gateway_results(account, full_config(account, init_config)) == []


def test_the_stacks_own_add_on_brings_the_gateway_and_its_crd(account, init_config):
    results = gateway_results(account, gateway_config(account, init_config))
    assert [r["status"] for r in results] == ["pass", "pass"]
    assert "the stack installs add-on v2.0.0-eksbuild.2 with the gateway enabled" in results[0]["detail"]
    assert "absent: the stack's add-on brings it" in results[1]["detail"]


def test_an_existing_add_on_older_than_the_gateway_fails_naming_the_version_to_update_to(account, init_config):
    # GIVEN install: existing on a cluster whose add-on is v1.4 (operator v3.3, no gateway) and no gateway CRD
    account.eks.add_addon(operator_facts.OPERATOR_ADDON_NAME, "v1.4.0-eksbuild.1")
    results = gateway_results(account, existing(account, init_config))
    # THEN both parts fail, the add-on's naming the first gateway version, the CRD's the configuration to enable
    assert [r["status"] for r in results] == ["fail", "fail"]
    assert f"from {gateway_facts.MIN_ADDON_VERSION}" in results[0]["detail"]
    assert f"--addon-version {gateway_facts.MIN_ADDON_VERSION}" in results[0]["fix"]
    assert "inferenceGateway.enabled: true" in results[1]["detail"]


def test_an_existing_add_on_with_the_gateway_and_its_crd_passes(account, init_config):
    account.eks.add_addon(operator_facts.OPERATOR_ADDON_NAME, "v2.1.0-eksbuild.1")
    account.kube.static[CRD_PATH] = {"kind": "CustomResourceDefinition", "spec": {"versions": [
        {"name": gateway_facts.CRD_VERSION, "served": True}]}}
    results = gateway_results(account, existing(account, init_config))
    assert [r["status"] for r in results] == ["pass", "pass"], results
    assert f"serves {gateway_facts.CRD_VERSION}" in results[1]["detail"]
