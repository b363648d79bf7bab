"""The realized stack is the plan: every unit the plan names is delivered, in the stacks it names, with the
dependencies it names, and nothing else is (one synth per configuration)."""

from __future__ import annotations

import dataclasses

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
