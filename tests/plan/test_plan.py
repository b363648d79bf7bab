"""The plan: what each endpoint needs and what endpoints share, decided from the config alone (no jsii kernel)."""

from __future__ import annotations

import copy
import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from hyperpod_inference.config.loader import parse_config
from hyperpod_inference.facts import naming
from hyperpod_inference.plan import PlanContext, plan_config, plan_endpoint, plan_shared
from hyperpod_inference.plan.endpoints import ModelRead, SecretRead

REPO = Path(__file__).resolve().parents[2]
ACCOUNT, REGION = "111122223333", "us-west-2"
SECRET = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hf-token-AbCdEf"
KEY_A = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/11111111-1111-1111-1111-111111111111"
KEY_B = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/22222222-2222-2222-2222-222222222222"


def default_data() -> dict[str, Any]:
    return yaml.safe_load((REPO / "hyperpod.yaml").read_text())


def endpoint(name: str, **changes: Any) -> dict[str, Any]:
    """A daemonset-cached Hugging Face endpoint of namespace ``inference`` with ``changes``."""
    ep: dict[str, Any] = {
        "name": name, "namespace": "inference", "instanceType": "ml.g5.8xlarge", "runtime": "vllm",
        "model": {"huggingface": {"modelId": "Qwen/Qwen2.5-7B-Instruct",
                                  "commitSHA": "a09a35458c702b33eeacc393d103063234e8bc28",
                                  "token": {"kubernetesSecret": {"name": "hf-token", "key": "token"}}}},
        "weightCache": {"mode": "daemonset", "hostPath": "/opt/dlami/nvme"},
    }
    ep.update(changes)
    return ep


def config_with(*endpoints: dict[str, Any], **top: Any) -> Any:
    data = default_data()
    data.pop("capture", None)
    data.pop("domain", None)
    data["endpoints"] = list(endpoints)
    data.update(top)
    return parse_config(copy.deepcopy(data), "test")


def planned(config: Any, stack_name: str = "HyperPodInference"):
    return plan_config(config, PlanContext.of(config, stack_name=stack_name))


def test_the_default_config_plans_each_endpoint_after_its_namespace_and_shared_pieces():
    # GIVEN the embedded default config (one daemonset-cached endpoint with a domain, capture and a check)
    config = parse_config(default_data(), "hyperpod.yaml")
    plan = planned(config)
    # THEN its custom resource's unit waits for the namespace, then the namespace's agent code
    (ep,) = plan.endpoints
    assert ep.unit == naming.endpoint_unit_name("inference", "qwen-chat")
    assert ep.depends_on == (naming.namespace_unit_name("inference"), ep.agent_code.unit)
    # AND it captures with ALB logs, has a post-deploy check with the runtime's payload and two outputs
    assert ep.captures and ep.alb_logs
    assert ep.verify is not None and ep.verify.endpoint_name == "qwen-chat"
    assert "messages" in json.loads(ep.verify.payload)  # vLLM's chat completion request, the preset's payload
    assert [o.construct_id for o in ep.outputs] == ["InferenceQwenChatStatus", "InferenceQwenChatInvoke"]
    assert shlex.split(ep.outputs[0].value)[:4] == ["kubectl", "describe", "inferenceendpointconfig", "qwen-chat"]
    # AND its warm DaemonSet and agent code are shared pieces of the namespace, in the enclosing stack
    assert [g.unit for g in plan.shared.warm_groups] == [ep.warm_unit]
    assert [c.unit for c, _ in plan.shared.agent_code] == [ep.agent_code.unit]
    assert plan.shared.warm_groups[0].scope_key == "" and ep.agent_code.home == ""


def test_a_plan_is_frozen():
    plan = planned(config_with(endpoint("a")))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.endpoints[0].unit = "other"  # type: ignore[misc]


def test_endpoints_naming_one_secret_share_one_token_sync_whose_role_reads_every_key():
    # GIVEN two endpoints of one namespace with the same Secrets Manager token, decrypted with two keys
    a = endpoint("a", model={"huggingface": {"modelId": "org/m", "commitSHA": "a" * 40,
                                             "token": {"secretsManagerArn": SECRET, "kmsKeyArn": KEY_A}}})
    b = copy.deepcopy(a) | {"name": "b"}
    b["model"]["huggingface"]["token"]["kmsKeyArn"] = KEY_B
    plan = planned(config_with(a, b))
    pa, pb = plan.endpoints
    # THEN both wait for one sync unit, whose role is one role for the sync (not per endpoint)
    assert pa.token_sync.unit == pb.token_sync.unit and pa.token_sync.unit in pa.depends_on
    assert pa.token_sync.role == pb.token_sync.role
    (shared,) = plan.shared.token_syncs
    assert shared.sync == pa.token_sync
    # AND the role reads the secret with each key
    assert shared.grants == (SecretRead(SECRET, KEY_A), SecretRead(SECRET, KEY_B))
    # AND the Secret the pods mount is the sync's, named under the stack's scope
    scope = PlanContext.of(config_with(a), stack_name="HyperPodInference").kubernetes_scope
    assert pa.token == pb.token and pa.token.name.startswith(f"{scope}-hf-token-")


def test_alike_agent_pods_share_one_warm_daemonset_and_another_image_gets_its_own():
    # GIVEN three daemonset endpoints: two alike, one with its own agent image
    third = endpoint("c", weightCache={"mode": "daemonset", "hostPath": "/opt/dlami/nvme",
                                       "agentImage": "public.ecr.aws/docker/library/python:3.12-slim"})
    plan = planned(config_with(endpoint("b"), endpoint("a"), third))
    pb, pa, pc = plan.endpoints
    # THEN b and a join one warm DaemonSet, c another
    assert pa.warm_unit == pb.warm_unit != pc.warm_unit
    groups = {g.unit: [c.endpoint.name for c in g.caches] for g in plan.shared.warm_groups}
    assert groups == {pb.warm_unit: ["b", "a"], pc.warm_unit: ["c"]}
    # AND the namespace has one agent code unit, whose gc Job runs like the first endpoint by name
    ((code, gc),) = plan.shared.agent_code
    assert code.namespace == "inference" and gc.endpoint.name == "a"


def test_the_warm_daemonset_keeps_its_name_when_an_endpoint_joins_or_leaves():
    one = planned(config_with(endpoint("a"))).shared.warm_groups[0].unit
    two = planned(config_with(endpoint("a"), endpoint("b"))).shared.warm_groups[0].unit
    assert one == two


def test_an_s3_model_is_read_by_its_own_service_account_role_or_by_the_s3_csi_driver():
    s3 = {"s3": {"bucket": "my-models", "prefix": "qwen/", "kmsKeyArn": KEY_A}}
    cached = endpoint("cached", model=s3)
    mounted = endpoint("mounted", model=s3, weightCache={"mode": "off"})
    pc, pm = planned(config_with(cached, mounted)).endpoints
    # THEN the cached endpoint gets a reader service account whose role reads exactly the prefix
    assert pc.reader is not None and pc.reader.grant == ModelRead("my-models", "qwen/", KEY_A)
    assert pc.reader.role.service_account == pc.reader.service_account == pc.cache.service_account_name
    assert pc.reader.unit in pc.depends_on and pc.s3_csi_read is None
    # AND the operator-mounted one asks the S3 CSI driver's role for the same read, with no role of its own
    assert pm.reader is None and pm.s3_csi_read == ModelRead("my-models", "qwen/", KEY_A) and pm.cache is None


def test_files_delivery_gives_roles_their_names_and_kubectl_leaves_them_to_cloudformation():
    s3 = {"s3": {"bucket": "my-models", "prefix": "qwen/"}}
    kubectl = planned(config_with(endpoint("a", model=s3))).endpoints[0]
    files = planned(config_with(endpoint("a", model=s3), manifests={"delivery": "files"})).endpoints[0]
    assert kubectl.reader.role.role_name is None
    assert files.reader.role.role_name == naming.service_account_role_name(
        naming.name_scope("HyperPodInference", "Default"), "inference", "a", "ModelReader")


def test_per_namespace_layout_places_each_group_in_its_nested_stack_and_the_agent_code_in_the_namespaces():
    # GIVEN stackLayout perNamespace and an endpoint in a stack group
    plan = planned(config_with(endpoint("a", stackGroup="g1"), endpoint("b"), stackLayout="perNamespace"))
    pa, pb = plan.endpoints
    # THEN each endpoint goes to its namespace's (and group's) nested stack
    assert (pa.nested_stack, pa.scope_key) == (("inference", "g1"), "Namespace.inference.g1")
    assert (pb.nested_stack, pb.scope_key) == (("inference", None), "Namespace.inference")
    # AND the warm DaemonSets are per stack (their names carry it), the agent code is the namespace's, once
    assert pa.warm_unit != pb.warm_unit
    assert pa.agent_code == pb.agent_code and pa.agent_code.home == "Namespace.inference"


def test_an_explicit_scope_key_places_the_shared_pieces_in_that_stack():
    config = config_with(endpoint("a"))
    context = PlanContext.of(config, stack_name="HyperPodInference")
    here = plan_endpoint(config, config.endpoints[0], context)
    there = plan_endpoint(config, config.endpoints[0], context, scope_key="Other")
    assert there.scope_key == "Other" and there.nested_stack is None
    assert here.warm_unit != there.warm_unit
    assert plan_shared([there]).warm_groups[0].scope_key == "Other"


def test_acknowledged_warnings_carry_their_reason_and_the_rest_none():
    # GIVEN an unpinned Hugging Face model (warned) acknowledged with a reason, and a second unacknowledged one
    a = endpoint("a", model={"huggingface": {"modelId": "org/m"}})
    b = endpoint("b", model={"huggingface": {"modelId": "org/m"}})
    plain = planned(config_with(a, b)).endpoints
    ids = {w.annotation_id.split(":")[1] for w in plain[0].warnings}
    assert "unpinned" in ids, ids
    acked = planned(config_with(a, b, acknowledgeWarnings=[
        {"id": "unpinned", "endpoint": "inference/a", "reason": "a test model"}])).endpoints
    reasons = {w.annotation_id.split(":")[1]: w.reason for w in acked[0].warnings}
    assert reasons["unpinned"] == "a test model"
    assert {w.annotation_id.split(":")[1]: w.reason for w in acked[1].warnings}["unpinned"] is None
    # AND each warning names the endpoint and the unit it belongs to
    assert all(w.annotation_id.endswith(":" + acked[0].unit) for w in acked[0].warnings)
    assert all(w.where.startswith("endpoints inference/a: ") for w in acked[0].warnings)


def test_the_operator_side_of_the_whole_set():
    js = {"name": "js", "namespace": "team-js", "kind": "JumpStartModel", "instanceType": "ml.g5.8xlarge",
          "model": {"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}}}
    only_js = planned(config_with(js, namespaces=["inference", "team-js"])).shared
    both = planned(config_with(js, endpoint("a"), namespaces=["inference", "team-js"])).shared
    assert only_js.gated_namespaces == ("team-js",) and not only_js.custom_service_accounts
    assert both.custom_service_accounts
