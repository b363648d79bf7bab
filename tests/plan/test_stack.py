"""What the plan decides for the whole stack before any endpoint (delivery, namespaces, operator, capture, domain)
and over all of them (observability), from the config alone."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from hyperpod_inference.config.loader import parse_config
from hyperpod_inference.facts import naming
from hyperpod_inference.plan import PlanContext, plan_config, plan_stack

REPO = Path(__file__).resolve().parents[2]
SCOPE = naming.name_scope("HyperPodInference", "Default")


def config_of(path: str = "hyperpod.yaml", **changes: Any) -> Any:
    data = yaml.safe_load((REPO / path).read_text())
    data.update(copy.deepcopy(changes))
    return parse_config(data, path)


def stack_plan(config: Any, **context: Any):
    return plan_stack(config, PlanContext.of(config, stack_name="HyperPodInference", **context))


def test_the_default_config_applies_its_manifests_and_creates_the_operator_capture_and_a_zone():
    plan = stack_plan(config_of())
    # THEN the stack applies the manifests itself, each object labelled with the stack's scope
    assert not plan.delivery.files and plan.delivery.gitops is None
    assert dict(plan.delivery.owner_labels)[naming.STACK_LABEL] == \
        PlanContext.of(config_of(), stack_name="HyperPodInference").kubernetes_scope
    # AND each owned namespace gets a manifest of its own
    assert [(u.unit, u.namespaces, u.legacy) for u in plan.namespaces] == [("namespace-inference", ("inference",), False)]
    # AND the add-on gets the execution role the stack names, with no literal ARN to write into a file
    assert plan.operator.install == "addon" and plan.operator.creates_dependencies
    assert plan.operator.execution_role_name == naming.execution_role_name(SCOPE, "us-west-2")
    assert (plan.operator.gated_role_name, plan.operator.execution_role_arn, plan.operator.preserve_on_delete) == \
        (None, None, False)
    # AND the capture bucket and analytics are named from the stack, the zone is created
    assert plan.capture is not None and plan.capture.bucket_name is None
    assert plan.capture.name_base == naming.capture_name_base(SCOPE, "111122223333", "us-west-2")
    assert plan.capture.analytics is not None and plan.capture.kms == "create"
    assert plan.domain is not None and plan.domain.zone_name == "example.com" and plan.domain.hosted_zone_id is None


def test_files_delivery_names_the_roles_the_operator_chart_writes_literally_and_keeps_the_addon():
    plan = stack_plan(config_of("tests/fixtures/files.yaml"))
    op = plan.operator
    assert plan.delivery.files and op.preserve_on_delete
    assert op.gated_role_name == naming.gated_model_role_name(SCOPE)
    assert op.execution_role_arn == naming.role_arn("aws", "111122223333", op.execution_role_name)
    assert op.gated_role_arn == naming.role_arn("aws", "111122223333", op.gated_role_name)
    # AND an imported zone and certificate are the plan's, as given
    assert plan.domain is not None and plan.domain.hosted_zone_id and plan.domain.certificate_arn


def test_an_existing_operator_gets_no_role_of_the_stack():
    config = config_of(operator={"install": "existing", "dependencies": "existing",
                                 "executionRoleArn": "arn:aws:iam::111122223333:role/SageMakerHyperPodInference-x"})
    op = stack_plan(config).operator
    assert op.install == "existing" and not op.creates_dependencies
    assert op.execution_role_name is None and op.gated_role_name is None


def test_the_legacy_namespaces_context_keeps_one_retained_manifest_for_every_namespace():
    config = config_of(namespaces=["inference", "research"])
    (unit,) = stack_plan(config, legacy_namespaces=True).namespaces
    assert (unit.unit, unit.namespaces, unit.legacy) == ("namespaces", ("inference", "research"), True)
    context = PlanContext.of(config, stack_name="HyperPodInference", legacy_namespaces=True)
    assert context.namespace_unit("research") == "namespaces"


def test_no_capture_or_domain_section_plans_neither():
    data = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
    for key in ("capture", "domain"):
        data.pop(key)
    for ep in data["endpoints"]:
        ep.pop("dataCapture"), ep.pop("domainName")
    plan = stack_plan(parse_config(data, "test"))
    assert plan.capture is None and plan.domain is None


def test_observability_is_planned_when_asked_for_or_given_a_topic():
    # GIVEN the default config (a dashboard) / THEN the plan observes its endpoint
    config = config_of()
    plan = plan_config(config, PlanContext.of(config, stack_name="HyperPodInference"))
    assert plan.observability is not None
    assert [o.key for o in plan.observability.endpoints] == ["inference/qwen-chat"]
    # AND with nothing asked for, nothing is planned, unless the construct was given an alarm topic
    quiet = config_of(observability={"dashboard": False})
    assert plan_config(quiet, PlanContext.of(quiet, stack_name="HyperPodInference")).observability is None
    topic = plan_config(quiet, PlanContext.of(quiet, stack_name="HyperPodInference", alarm_topic=True))
    assert topic.observability is not None
