"""The ``gateways`` section: each refusal names its field (a failing and a passing config per rule), and a valid
gateway's endpoints are resolved."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.config.cross_rules import ConfigView
from hyperpod_inference.config.gateway_rules import gateway_install
from hyperpod_inference.facts import gateway as facts
from tests.synth_helpers import load_yaml

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gateway.yaml"


def base() -> dict[str, Any]:
    """The v3.7 fixture: one gateway, two schedulers (llm-d with lru, epp) over two opted-in endpoints."""
    return copy.deepcopy(load_yaml(FIXTURE))


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        parse_config(data)
    except ConfigError as err:
        return err.problems
    return []


def at(data: dict[str, Any], path: str) -> list[str]:
    return [m for p, m in problems(data) if p == path]


def test_the_fixture_is_valid() -> None:
    # GIVEN the v3.7 fixture THEN it loads with its gateway and both schedulers naming endpoints
    config = parse_config(base())
    assert [s.endpoint for s in config.gateways[0].schedulers] == ["qwen-chat", "llama-chat"]


# --- rules of the gateway itself -------------------------------------------------------------------------------
def test_two_schedulers_without_bbr_are_refused_naming_bbr_enabled() -> None:
    data = base()
    data["gateways"][0]["bbr"] = {"enabled": False}
    assert at(data, "gateways[0].bbr.enabled") == [f"must be true with 2 schedulers ({facts.BBR_REQUIRED_MESSAGE})"]
    del data["gateways"][0]["bbr"]
    assert at(data, "gateways[0].bbr.enabled"), "an absent bbr is written disabled: refused the same"
    # passing: one scheduler without the router
    data["gateways"][0]["schedulers"].pop()
    data["endpoints"][1].pop("inferenceGateway", None)
    assert problems(data) == []


def test_lru_on_epp_is_refused_naming_the_weight() -> None:
    data = base()
    data["gateways"][0]["schedulers"][1]["weights"]["lru"] = 1
    assert at(data, "gateways[0].schedulers[1].weights.lru") == [
        "is valid only with scheduler: llm-d (this scheduler is epp)"]
    # passing: lru on llm-d (the fixture's first scheduler) and on the default scheduler
    del data["gateways"][0]["schedulers"][1]["scheduler"]
    assert problems(data) == []


def test_a_misspelt_scheduler_key_is_refused_with_the_nearest_field() -> None:
    data = base()
    data["gateways"][0]["schedulers"][0]["schedulr"] = data["gateways"][0]["schedulers"][0].pop("scheduler")
    assert at(data, "gateways[0].schedulers[0].schedulr") == ["unknown key; did you mean scheduler?"]


def test_weights_and_config_map_ref_exclude_each_other() -> None:
    data = base()
    data["gateways"][0]["schedulers"][0]["configMapRef"] = {"name": "picker"}
    assert at(data, "gateways[0].schedulers[0].configMapRef") == [
        "weights and configMapRef are mutually exclusive: give one"]
    del data["gateways"][0]["schedulers"][0]["weights"]
    assert problems(data) == []


def test_tls_is_required_unless_the_domain_imports_a_certificate() -> None:
    data = base()
    del data["gateways"][0]["tls"]
    assert at(data, "gateways[0].tls") == [
        "required: {} (the gateway issues a certificate with cert-manager), {acmArn: ...}, or domain.certificateArn "
        "(an imported certificate) for the gateway to use"]
    data["domain"] = {"zoneName": "example.com",
                      "certificateArn": "arn:aws:acm:us-west-2:111122223333:certificate/12345678-1234-1234-1234-123456789012"}
    assert problems(data) == []


def test_a_scheduler_without_endpoint_needs_a_selector_and_a_model_name() -> None:
    data = base()
    data["gateways"][0]["schedulers"][1] = {"name": "other", "scheduler": "epp"}
    data["endpoints"][1].pop("inferenceGateway")
    assert {p for p, _ in problems(data)} == {"gateways[0].schedulers[1].modelSelector",
                                              "gateways[0].schedulers[1].modelName"}
    data["gateways"][0]["schedulers"][1].update(modelSelector={"matchLabels": {"app": "other"}}, modelName="other/m")
    assert problems(data) == []


def test_an_endpoint_scheduler_takes_no_selector() -> None:
    data = base()
    data["gateways"][0]["schedulers"][0]["modelSelector"] = {"matchLabels": {"app": "x"}}
    assert at(data, "gateways[0].schedulers[0].modelSelector") == [
        "endpoint and modelSelector are mutually exclusive: give one"]


def test_model_names_are_unique_in_a_gateway() -> None:
    data = base()
    data["gateways"][0]["schedulers"][1]["modelName"] = "Qwen/Qwen2.5-7B-Instruct"
    assert at(data, "gateways[0].schedulers[0].endpoint") == [
        "serves model 'Qwen/Qwen2.5-7B-Instruct', as schedulers[1] does (must be unique)"]


def test_an_external_gateway_takes_only_name_and_namespace() -> None:
    data = base()
    data["gateways"].append({"name": "shared-gw", "namespace": "inference", "external": True, "tls": {}})
    assert at(data, "gateways[1].tls") == ["an external gateway takes only name and namespace"]
    del data["gateways"][1]["tls"]
    assert problems(data) == []


# --- the operator and the add-on -------------------------------------------------------------------------------
def test_a_gateway_on_an_operator_without_spec_inference_gateway_is_refused() -> None:
    data = base()
    data["operator"]["version"] = "v3.3"
    for ep in data["endpoints"]:
        ep.pop("inferenceGateway", None)
    assert at(data, "gateways[0]") == ["needs operator v3.6 or later (operator.version is v3.3)"]


def test_a_gateway_needs_the_add_on_that_ships_it() -> None:
    data = base()
    data["operator"]["addonVersion"] = "v2.0.0-eksbuild.1"
    assert at(data, "gateways[0]") == [
        f"needs the add-on {facts.MIN_ADDON_VERSION} or later (operator.addonVersion is v2.0.0-eksbuild.1)"]
    data["operator"]["addonVersion"] = facts.MIN_ADDON_VERSION
    assert at(data, "gateways[0]") == []


def test_a_gateway_with_the_operator_chart_is_refused() -> None:
    # GIVEN a v3.7 config with the operator chart THEN refused (the operator section refuses chart 2.7.0 too)
    data = base()
    data["operator"] = {"install": "chart", "version": data["operator"]["version"], "crdSource": "crds"}
    assert any("Inference Gateway is installed by the add-on only" in m for _, m in problems(data))
    # AND the gateway rule itself refuses a chart install of any version that has spec.inferenceGateway
    config = parse_config(base())
    view = ConfigView.of(config.model_copy(update={"operator": config.operator.model_copy(update={"install": "chart"})}))
    assert [(e["loc"], e["type"].message_template) for e in gateway_install(view)] == [(
        ("gateways", 0), "the Inference Gateway is installed by the EKS add-on only: operator.install addon (or "
                         "existing, with the add-on's gateway enabled)")]


# --- the endpoints behind it -----------------------------------------------------------------------------------
def test_a_scheduler_endpoint_must_exist_in_the_gateways_namespace() -> None:
    data = base()
    data["gateways"][0]["schedulers"][0]["endpoint"] = "nope"
    data["endpoints"][0].pop("inferenceGateway")
    assert at(data, "gateways[0].schedulers[0].endpoint") == [
        "no endpoint 'nope' in the gateway's namespace inference"]
    data = base()
    data["endpoints"][0]["namespace"] = "other"
    data["endpoints"][0].pop("inferenceGateway")
    assert at(data, "gateways[0].schedulers[0].endpoint") == [
        "no endpoint 'qwen-chat' in the gateway's namespace inference (it is in namespace other)"]


def test_an_endpoint_behind_a_gateway_that_opts_out_or_names_another_is_refused() -> None:
    data = base()
    data["endpoints"][0]["inferenceGateway"] = {"enabled": False}
    assert at(data, "endpoints[0].inferenceGateway.enabled") == [
        "must be true (or absent with inferenceGateway): gateways[0] routes to this endpoint"]
    data["endpoints"][0]["inferenceGateway"] = {"enabled": True, "name": "other-gw"}
    assert at(data, "endpoints[0].inferenceGateway.name") == [
        "is 'other-gw', but gateways[0] (chat-gw) routes to this endpoint"]


def test_an_endpoint_named_by_a_scheduler_is_opted_in_by_the_library() -> None:
    # GIVEN the fixture without the endpoints' own inferenceGateway WHEN loaded THEN each is opted in to chat-gw
    data = base()
    for ep in data["endpoints"]:
        ep.pop("inferenceGateway")
    config = parse_config(data)
    assert [(ep.inference_gateway.enabled, ep.inference_gateway.name) for ep in config.endpoints] == [
        (True, "chat-gw"), (True, "chat-gw")]


def test_intelligent_routing_on_an_endpoint_behind_a_gateway_is_refused() -> None:
    data = base()
    data["endpoints"][0].pop("inferenceGateway")
    data["endpoints"][0]["intelligentRoutingSpec"] = {"enabled": True}
    assert at(data, "endpoints[0].intelligentRoutingSpec.enabled") == [
        "exclusive with the Inference Gateway: gateways[0] (chat-gw) routes to this endpoint"]
    data["endpoints"][0]["intelligentRoutingSpec"] = {"enabled": False}
    assert problems(data) == []


def test_an_endpoints_gateway_name_must_be_a_gateway_of_its_namespace_or_external() -> None:
    data = base()
    data["endpoints"].append({**copy.deepcopy(data["endpoints"][0]), "name": "third",
                              "inferenceGateway": {"enabled": True, "name": "elsewhere"}})
    assert at(data, "endpoints[2].inferenceGateway.name") == [
        "no gateway 'elsewhere' in namespace inference: add it to gateways (or with external: true when it is "
        "created elsewhere)"]
    data["gateways"].append({"name": "elsewhere", "namespace": "inference", "external": True})
    assert problems(data) == []


def test_a_jumpstart_endpoint_cannot_be_named_by_endpoint() -> None:
    data = base()
    data["endpoints"][1] = {"name": "llama-chat", "namespace": "inference", "kind": "JumpStartModel",
                            "instanceType": "ml.g5.8xlarge",
                            "model": {"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}}}
    assert at(data, "gateways[0].schedulers[1].endpoint") == [
        "llama-chat is a JumpStartModel: its pods' labels and port are not known; give modelSelector, targetPort "
        "and modelName"]


@pytest.mark.parametrize(("runtime", "image", "message"), [
    ("vllm", "vllm/vllm-openai:v0.9.1", "the Inference Gateway needs vllm 0.9.2 or later; the image "
                                        "vllm/vllm-openai:v0.9.1 is 0.9.1"),
    ("sglang", "lmsysorg/sglang:v0.3.5-cu124", "the Inference Gateway needs sglang 0.3.5.post1 or later; the image "
                                               "lmsysorg/sglang:v0.3.5-cu124 is 0.3.5"),
    ("custom", "my.registry/vllm-openai:0.8.5", "the Inference Gateway needs vllm 0.9.2 or later; the image "
                                                "my.registry/vllm-openai:0.8.5 is 0.8.5"),
])
def test_a_model_server_older_than_the_gateway_needs_is_refused(runtime: str, image: str, message: str) -> None:
    data = base()
    data["endpoints"][0].update(runtime=runtime, image=image)
    if runtime == "custom":
        data["endpoints"][0]["port"] = 8000
        data["gateways"][0]["schedulers"][0]["modelName"] = "qwen"
    assert at(data, "endpoints[0].image") == [message]


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.9.2", "lmsysorg/sglang:v0.3.5.post1-cu124",
                                   "vllm/vllm-openai:latest", "vllm/vllm-openai@sha256:" + "a" * 64])
def test_a_model_server_at_the_minimum_or_of_unknown_version_passes(image: str) -> None:
    data = base()
    data["endpoints"][0].update(runtime="sglang" if "sglang" in image else "vllm", image=image)
    assert problems(data) == []


def test_the_runtime_presets_are_new_enough_for_the_gateway() -> None:
    # GIVEN the fixture (vllm and sglang presets) THEN no runtime problem: the preset tags name versions above the
    # minimums
    assert facts.runtime_version("vllm:0.14.0-gpu-py312") == (0, 14, 0, 0)
    assert problems(base()) == []
