"""The Inference Gateway controller: when an endpoint opts into a gateway (the plan's ``gateway_controller``), the
add-on's configurationValues gain ``inferenceGateway.enabled`` and the controller's IRSA role, merged with what the
library writes and under the user's own overrides; a pinned add-on below the gateway's is refused."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.facts import operator as operator_facts
from tests.constructs.test_operator import json_with_placeholders
from tests.synth_helpers import synth_config, with_endpoint_changes

DEFAULT = yaml.safe_load((Path(__file__).resolve().parents[2] / "hyperpod.yaml").read_text())


def gateway_config(**operator) -> dict:
    data = with_endpoint_changes(copy.deepcopy(DEFAULT), inferenceGateway={"enabled": True, "name": "chat-gw"})
    # the gateway the endpoint names, created outside the stack (an endpoint may name only a gateway the config knows)
    data["gateways"] = [{"name": "chat-gw", "namespace": data["endpoints"][0].get("namespace", "default"),
                         "external": True}]
    data["operator"] = {**(data.get("operator") or {}), "version": "v3.6", **operator}
    return data


def test_the_plan_decides_the_gateway_controller_from_the_endpoints():
    from hyperpod_inference.plan import PlanContext, plan_config

    def controller(data: dict) -> bool:
        config = parse_config(data)
        return plan_config(config, PlanContext.of(config, stack_name="HyperPodInference")).stack.operator \
            .gateway_controller

    assert controller(gateway_config()) is True
    off = with_endpoint_changes(gateway_config(), inferenceGateway={"enabled": False})
    assert controller(off) is False


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    overrides = {"inferenceGateway": {"replicas": 3}, "podLabels": {"team": "chat"}}
    return synth_config(gateway_config(addonConfigurationOverrides=overrides),
                        tmp_path_factory.mktemp("gw") / "out")


def test_the_add_on_configuration_merges_the_gateway_and_keeps_the_users_overrides(synth):
    (addon,) = [r for r in synth.resources("AWS::EKS::Addon").values()
                if r["Properties"]["AddonName"] == operator_facts.OPERATOR_ADDON_NAME]
    values = json_with_placeholders(addon["Properties"]["ConfigurationValues"])
    (role_id,) = [k for k, r in synth.resources("AWS::IAM::Role").items() if "GatewayControllerRole" in k]
    # THEN the gateway is enabled with the controller's role, beside the keys the library always writes
    assert values["inferenceGateway"] == {"enabled": True, "serviceAccount": {"roleArn": f"<GetAtt:{role_id}.Arn>"},
                                          "replicas": 3}
    assert values["executionRoleArn"].startswith("<GetAtt:") and values["alb"]["enabled"] is True
    # AND the user's own override keys survive
    assert values["podLabels"] == {"team": "chat"}
    assert addon["Properties"]["AddonVersion"] == "v2.0.0-eksbuild.2"


def test_the_controller_role_trusts_only_its_service_account_and_has_the_managed_policy(synth):
    (role,) = [r for k, r in synth.resources("AWS::IAM::Role").items() if "GatewayControllerRole" in k]
    text = str(role["Properties"]["AssumeRolePolicyDocument"])
    namespace, name = operator_facts.GATEWAY_SERVICE_ACCOUNT
    assert f"system:serviceaccount:{namespace}:{name}" in text
    assert operator_facts.GATEWAY_MANAGED_POLICY in str(role["Properties"]["ManagedPolicyArns"])


def test_without_a_gateway_no_controller_role_and_no_gateway_key(tmp_path):
    data = copy.deepcopy(DEFAULT)
    data["operator"] = {**(data.get("operator") or {}), "version": "v3.6"}
    synth = synth_config(data, tmp_path / "out")
    assert not [k for k in synth.resources("AWS::IAM::Role") if "GatewayControllerRole" in k]
    (addon,) = [r for r in synth.resources("AWS::EKS::Addon").values()
                if r["Properties"]["AddonName"] == operator_facts.OPERATOR_ADDON_NAME]
    assert "inferenceGateway" not in json_with_placeholders(addon["Properties"]["ConfigurationValues"])


def test_a_pinned_add_on_below_the_gateways_is_refused_naming_the_field():
    with pytest.raises(ConfigError) as err:
        parse_config(gateway_config(addonVersion="v2.0.0-eksbuild.1"))
    message = dict(err.value.problems)["operator.addonVersion"]
    assert "needs the add-on from v2.0.0-eksbuild.2" in message
    parse_config(gateway_config(addonVersion="v2.1.0-eksbuild.1"))
