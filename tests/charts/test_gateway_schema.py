"""The gateway's JSON Schema, written from the library's model of an InferenceGatewayConfig spec: every example of
AWS's lab pages and gateway documentation validates, the admission errors they document are refused, and every
InferenceGatewayConfig the library writes validates."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from hyperpod_inference.config.gateway import GatewaySpec, gateway_spec_schema
from hyperpod_inference.facts import gateway as facts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gateway"
EXAMPLES = [d for d in yaml.safe_load_all((FIXTURES / "examples.yaml").read_text()) if d]
FRAGMENTS = [d for d in yaml.safe_load_all((FIXTURES / "fragments.yaml").read_text()) if d]


def errors(spec: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(gateway_spec_schema())
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.validator}" for e in validator.iter_errors(spec))


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(gateway_spec_schema())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e['metadata']['namespace']}-{len(e['spec']['schedulers'])}")
def test_every_published_example_validates(example: dict[str, Any]) -> None:
    # GIVEN an InferenceGatewayConfig as AWS publishes it THEN its kind is the library's and its spec validates,
    # against the schema and the model
    assert (example["apiVersion"], example["kind"]) == (facts.API_VERSION, facts.KIND)
    assert errors(example["spec"]) == []
    GatewaySpec.model_validate(example["spec"])


def test_the_documentations_fragment_is_refused_for_its_missing_tls_alone() -> None:
    spec = copy.deepcopy(FRAGMENTS[0]["spec"])
    assert errors(spec) == [": required"]
    spec["tls"] = {}
    assert errors(spec) == []


def two_schedulers() -> dict[str, Any]:
    return copy.deepcopy(next(e for e in EXAMPLES if len(e["spec"]["schedulers"]) == 2)["spec"])


def test_a_spec_without_tls_is_refused() -> None:
    spec = two_schedulers()
    del spec["tls"]
    assert errors(spec) == [": required"]


def test_two_schedulers_without_the_router_are_refused() -> None:
    spec = two_schedulers()
    spec["bbr"]["enabled"] = False
    assert errors(spec) == ["bbr.enabled: const"]


def test_an_unknown_field_of_the_spec_or_a_scheduler_is_refused() -> None:
    spec = two_schedulers()
    spec["routing"] = {}
    spec["schedulers"][0]["schedulr"] = "epp"
    assert errors(spec) == [": additionalProperties", "schedulers.0: additionalProperties"]


def test_lru_on_epp_and_weights_with_a_config_map_are_refused() -> None:
    spec = two_schedulers()
    spec["schedulers"][0].update(scheduler="epp", weights={"lru": 1})
    spec["schedulers"][1].update(weights={"queue": 1}, configMapRef={"name": "picker"})
    assert errors(spec) == ["schedulers.0.weights: not", "schedulers.1: not"]
    spec["schedulers"][0]["scheduler"] = "llm-d"
    del spec["schedulers"][1]["weights"]
    assert errors(spec) == []


def test_the_model_refuses_what_the_schema_refuses() -> None:
    spec = two_schedulers()
    spec["bbr"]["enabled"] = False
    with pytest.raises(ValueError, match=facts.BBR_REQUIRED_MESSAGE):
        GatewaySpec.model_validate(spec)
