"""The realized stack is the plan: every unit the plan names is delivered, in the stacks it names, with the
dependencies it names, and nothing else is (one synth per configuration)."""

from __future__ import annotations

import dataclasses
import json

import aws_cdk as cdk
import pytest

from tests.synth_helpers import gen_config, synth_config


@pytest.fixture(scope="module", params=["default", "fleet"])
def synthesized(request, tmp_path_factory):
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    config = repo / "hyperpod.yaml" if request.param == "default" else \
        gen_config().config(6, "hf-token", namespace_count=2, layout="perNamespace")
    return synth_config(config, tmp_path_factory.mktemp(request.param), nag=False).stack.inference


def test_every_unit_the_plan_names_is_delivered_and_no_other(synthesized):
    inference = synthesized
    plans = inference.plans
    shared = inference.shared
    planned = {u for p in plans for u in (p.unit, *p.depends_on)}
    planned |= {g.unit for g in shared.warm_groups} | {c.unit for c, _ in shared.agent_code}
    delivered = {u.name for u in inference.units} - {"operator"}
    assert delivered == planned


def test_each_custom_resource_waits_for_exactly_the_units_its_plan_names(synthesized):
    units = {u.name: u for u in synthesized.units}
    for plan in synthesized.plans:
        assert units[plan.unit].depends_on == list(plan.depends_on), plan.label
    for group in synthesized.shared.warm_groups:
        assert units[group.unit].depends_on == list(group.depends_on)


def test_each_piece_lies_in_the_stack_its_plan_names(synthesized):
    # GIVEN the manifests as delivered / THEN each endpoint's lies in the nested stack of its plan (or the
    # enclosing stack), and each warm DaemonSet in the stack of the first endpoint of its group
    inference = synthesized
    units = {u.name: u for u in inference.units}

    def stack_of(unit_name):
        return cdk.Stack.of(units[unit_name].resource)

    for plan in inference.plans:
        expected = inference.nested_stacks[plan.nested_stack] if plan.nested_stack else inference.stack
        assert stack_of(plan.unit) is expected, plan.label
    for group in inference.shared.warm_groups:
        first = next(p for p in inference.plans if p.warm_unit == group.unit)
        assert stack_of(group.unit) is stack_of(first.unit)


def test_what_add_endpoint_returns_is_frozen_and_carries_its_plan(synthesized):
    added = next(iter(synthesized.endpoints.values()))
    assert added.plan is not None and added.plan.unit == added.chart_name
    with pytest.raises(dataclasses.FrozenInstanceError):
        added.verification = None  # type: ignore[misc]


def test_a_token_syncs_role_decrypts_with_every_key_its_endpoints_name(tmp_path):
    # GIVEN two endpoints of one namespace naming one Secrets Manager token with two different keys
    import copy
    from pathlib import Path

    import yaml

    repo = Path(__file__).resolve().parents[2]
    data = yaml.safe_load((repo / "hyperpod.yaml").read_text())
    secret = "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-token-AbCdEf"
    keys = [f"arn:aws:kms:us-west-2:111122223333:key/{n * 8}-{n * 4}-{n * 4}-{n * 4}-{n * 12}" for n in "12"]
    first = copy.deepcopy(data["endpoints"][0])
    first["model"]["huggingface"]["token"] = {"secretsManagerArn": secret, "kmsKeyArn": keys[0]}
    second = copy.deepcopy(first) | {"name": "qwen-two", "sagemakerEndpointName": "qwen-two",
                                     "domainName": "two.example.com"}
    second["model"]["huggingface"]["token"] = {"secretsManagerArn": secret, "kmsKeyArn": keys[1]}
    data["endpoints"] = [first, second]
    synth = synth_config(data, tmp_path, nag=False)
    (sync,) = {p.token_sync.unit for p in synth.stack.inference.plans}
    # WHEN the app is synthesized / THEN the sync's one reader role reads the secret and decrypts with both keys
    roles = [r for r in synth.resources("AWS::IAM::Role").values()
             if "Reader for inference/" in r["Properties"].get("Description", "")]
    assert len(roles) == 1
    policies = [p["Properties"]["PolicyDocument"]["Statement"] for p in synth.resources("AWS::IAM::Policy").values()
                if "Reader" in json.dumps(p["Properties"].get("Roles"))]
    text = json.dumps(policies)
    assert secret in text and all(k in text for k in keys), sync
