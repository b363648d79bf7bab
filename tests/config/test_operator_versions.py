"""Operators v3.4 to v3.7 in the release table: the config accepts them with a warning, their typed fields (v3.6's
``inferenceGateway`` and ``podTemplateAnnotations``) are allowed from the version that adds them, the gateway and
intelligent routing are exclusive, and a toleration of HyperPod's node-health taint through ``specOverrides`` is warned
unless scoped to ``value: Schedulable``."""

from __future__ import annotations

import pytest

from hyperpod_inference.charts.endpoint import EndpointWiring, build_custom_resource
from hyperpod_inference.config import parse_config
from hyperpod_inference.config.warnings import config_warnings, endpoint_warnings
from hyperpod_inference.facts import operator as operator_facts
from tests.config.test_production_config import config, jumpstart
from tests.config.test_spec_overrides_versions import problems

WIRING = EndpointWiring(region="us-west-2", tls_output_s3_uri="s3://hyperpod-tls-111122223333-us-west-2",
                        certificate_arn="arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000",
                        hosted_zone_id="Z0123ABC")
GATEWAY = {"enabled": True, "name": "chat-gw"}
TAINT = operator_facts.NODE_HEALTH_TAINT_KEY


def with_external_gateway(data: dict) -> dict:
    """``data`` with the gateway GATEWAY names declared as created elsewhere (an endpoint may name only a gateway
    the config knows)."""
    data["gateways"] = [{"name": GATEWAY["name"], "namespace": "inference", "external": True}]
    return data


def with_operator(data: dict, **operator) -> dict:
    data["operator"] = {**(data.get("operator") or {}), **operator}
    return data


@pytest.mark.parametrize("version", ["v3.4", "v3.5", "v3.6", "v3.7"])
def test_a_later_version_is_accepted_with_a_warning_that_its_crd_is_not_public(version):
    data = config(version=version)
    if version == "v3.5":
        data["operator"]["addonVersion"] = "v1.5.0-eksbuild.1"
    cfg = parse_config(data)
    (warning,) = [w for w in config_warnings(cfg) if w.id == "operatorVersionUnvalidated"]
    assert warning.path == "operator.version" and "CRD text is not public" in warning.message
    assert "sourced from AWS's documentation" in warning.message


def test_a_validated_version_gets_no_such_warning():
    assert not [w for w in config_warnings(parse_config(config(version="v3.3")))
                if w.id == "operatorVersionUnvalidated"]


@pytest.mark.parametrize(("field", "value"), [("inferenceGateway", GATEWAY),
                                              ("podTemplateAnnotations", {"example.com/team": "chat"})])
@pytest.mark.parametrize("version", ["v3.3", "v3.5"])
def test_a_v3_6_field_below_v3_6_is_refused_naming_the_version_that_adds_it(field, value, version):
    data = config(version=version, **{field: value})
    if version == "v3.5":
        data["operator"]["addonVersion"] = "v1.5.0-eksbuild.1"
    message = problems(data)[f"endpoints[0].{field}"]
    assert f"needs operator.version v3.6 or later (have {version}" in message


def test_from_v3_6_the_typed_fields_land_at_their_paths():
    ep = parse_config(with_external_gateway(config(version="v3.6", inferenceGateway=GATEWAY,
                                                   podTemplateAnnotations={"example.com/team": "chat"}))).endpoints[0]
    spec = build_custom_resource(ep, WIRING)["spec"]
    assert spec["inferenceGateway"] == {"enabled": True, "name": "chat-gw"}
    assert spec["kubernetes"]["podTemplateAnnotations"] == {"example.com/team": "chat"}


def test_a_jumpstart_model_takes_the_gateway_but_not_pod_template_annotations():
    ep = parse_config(jumpstart(version="v3.7", inferenceGateway={"enabled": True})).endpoints[0]
    assert build_custom_resource(ep, WIRING)["spec"]["inferenceGateway"] == {"enabled": True}
    found = problems(jumpstart(version="v3.7", podTemplateAnnotations={"a": "b"}))
    assert "not a field of kind: JumpStartModel" in found["endpoints[0].podTemplateAnnotations"]


def test_the_gateway_and_intelligent_routing_on_one_endpoint_are_refused():
    found = problems(with_external_gateway(config(version="v3.6", inferenceGateway=GATEWAY,
                                                  intelligentRoutingSpec={"enabled": True})))
    assert "exclusive with intelligentRoutingSpec.enabled" in found["endpoints[0].inferenceGateway.enabled"]
    # AND either one alone (or the gateway turned off) passes
    assert problems(config(version="v3.6", inferenceGateway={"enabled": False},
                           intelligentRoutingSpec={"enabled": True})) == {}
    assert problems(with_external_gateway(config(version="v3.6", inferenceGateway=GATEWAY))) == {}


def test_v3_5_with_the_add_on_needs_a_pinned_add_on_version():
    found = problems(config(version="v3.5"))
    assert "no add-on version is known to ship operator v3.5" in found["operator.addonVersion"]
    assert problems(with_operator(config(version="v3.5"), addonVersion="v1.5.0-eksbuild.1")) == {}


def test_a_later_version_refuses_the_chart_install():
    found = problems(with_operator(config(version="v3.6"), install="chart", crdSource="crds"))
    assert "use install: addon or existing" in found["operator.version"]
    assert "Inference Gateway is installed by the add-on only" in found["operator.version"]


def health_warnings(tolerations: list[dict]) -> list[str]:
    ep = parse_config(config(version="v3.7", specOverrides={"tolerations": tolerations})).endpoints[0]
    return [w.path for w in endpoint_warnings(ep) if w.id == "healthTaintToleration"]


@pytest.mark.parametrize("toleration", [
    {"key": TAINT, "operator": "Exists", "effect": "NoSchedule"},
    {"key": TAINT, "operator": "Equal", "value": "Unschedulable"},
    {"operator": "Exists"},  # every taint, this one too
])
def test_a_toleration_of_the_node_health_taint_beyond_schedulable_is_warned(toleration):
    assert health_warnings([{"key": "nvidia.com/gpu", "operator": "Exists"}, toleration]) == [
        "specOverrides.tolerations[1]"]


@pytest.mark.parametrize("toleration", [
    {"key": TAINT, "operator": "Equal", "value": "Schedulable", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Exists"},
])
def test_a_toleration_scoped_to_schedulable_or_of_another_taint_is_not(toleration):
    assert health_warnings([toleration]) == []
