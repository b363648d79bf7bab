"""``cluster.object-owners``: every Kubernetes object the plan says the stack would create is free, or already this
stack's (labelled ``hyperpod-inference/stack: <its scope>``); one of another stack, or without an owner label, fails
naming it and its owner. The objects and the scope are those a synth of the same config delivers."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml

from hyperpod_inference.config import parse_config
from hyperpod_inference.facts import naming
from hyperpod_inference.ops.aws import Aws
from hyperpod_inference.ops.doctor.base import Context
from hyperpod_inference.ops.doctor.kubernetes import PlannedObject, planned_objects
from tests.fake_aws import Account
from tests.ops.conftest import full_config, run_doctor, run_init

CHECK = "cluster.object-owners"
#: The Kubernetes scope of stack HyperPodInference (docs/ownership.md; the synth test below checks doctor's).
SCOPE = "hyperpodinference-fb994a"
CR = "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/inference/inferenceendpointconfigs/qwen-s3"


@pytest.fixture
def data(account: Account) -> dict:
    """The full config (two endpoints in ``inference``, one with a Secrets Manager token), the first one with the
    daemonset cache of an S3 model (a model reader, a warm DaemonSet and the agent's gc)."""
    status, path = run_init(account)
    assert status == 0
    out = full_config(account, yaml.safe_load(path.read_text()))
    out["endpoints"][0]["weightCache"] = {"mode": "daemonset"}
    return out


def _objects(data: dict) -> list[PlannedObject]:
    ctx = Context(parse_config(data), Aws("us-west-2"), stack_name="HyperPodInference")
    return planned_objects(ctx.plan())


def _put(account: Account, obj: PlannedObject | str, labels: dict[str, str] | None) -> str:
    path = obj if isinstance(obj, str) else obj.path
    name = path.rsplit("/", 1)[-1]
    meta: dict[str, Any] = {"name": name, "namespace": "inference"}
    if labels is not None:
        meta["labels"] = labels
    account.kube.static[path] = {"metadata": meta}
    return path


def _owners(results: list[dict]) -> list[dict]:
    return [r for r in results if r["check"] == CHECK]


def test_absent_objects_pass_as_free_and_the_check_is_in_the_json(account, data):
    # GIVEN none of the objects exists / WHEN doctor --json runs
    status, results = run_doctor(account, data)
    # THEN the check reports each object the plan names, each free, and nothing fails
    owners = _owners(results)
    assert status == 0
    assert {r["resource"] for r in owners} == {o.resource for o in _objects(data)}
    assert {r["status"] for r in owners} == {"pass"}
    assert all(r["detail"].startswith("free: the stack creates it") for r in owners)
    kinds = {r["resource"].split()[0] for r in owners}
    assert kinds == {"InferenceEndpointConfig", "ServiceAccount", "SecretStore", "ExternalSecret", "Secret",
                     "DaemonSet", "NetworkPolicy", "Role", "RoleBinding"}
    # AND each was one metadata GET of its own path
    gets = [p for m, p, _, _ in account.kube.requests if m == "GET"]
    assert all(gets.count(o.path) == 1 for o in _objects(data))


def test_objects_this_stack_deployed_pass(account, data):
    # GIVEN every object exists, labelled as this stack's (a second run of doctor after a deploy)
    for obj in _objects(data):
        _put(account, obj, naming.owner_labels(SCOPE))
    # WHEN doctor runs / THEN each passes as already deployed by this stack
    status, results = run_doctor(account, data, "--only", CHECK)
    owners = _owners(results)
    assert status == 0 and len(owners) == len(_objects(data))
    assert all(r["status"] == "pass" and r["detail"].startswith(
        f"already deployed by this stack (hyperpod-inference/stack={SCOPE})") for r in owners), owners


def test_an_endpoint_of_another_stack_fails_naming_it_and_its_owner(account, data):
    # GIVEN the custom resource inference/qwen-s3 exists, deployed by stack TeamB
    _put(account, CR, naming.owner_labels("teamb-0a1b2c"))
    # WHEN doctor runs
    status, results = run_doctor(account, data)
    # THEN only this check fails, on that object, naming its owner and the fixes (another name, or delete it)
    failed = [r for r in results if r["status"] == "fail"]
    assert status == 1
    assert [(r["check"], r["resource"]) for r in failed] == [(CHECK, "InferenceEndpointConfig inference/qwen-s3")]
    assert "hyperpod-inference/stack=teamb-0a1b2c" in failed[0]["detail"] and SCOPE in failed[0]["detail"]
    assert "AlreadyExists" in failed[0]["detail"]
    assert "endpoints[0].name" in failed[0]["fix"]
    assert "kubectl delete inferenceendpointconfigs qwen-s3 -n inference" in failed[0]["fix"]


@pytest.mark.parametrize("kind", ["ExternalSecret", "Secret", "DaemonSet", "ServiceAccount"])
def test_an_object_without_owner_labels_fails(account, data, kind):
    # GIVEN an object of the stack's (a name the library chooses) made by hand, without labels
    [obj] = [o for o in _objects(data) if o.kind == kind][:1]
    _put(account, obj, None)
    # WHEN doctor runs / THEN it fails naming the object and that it has no owner label
    status, results = run_doctor(account, data, "--only", CHECK)
    failed = [r for r in results if r["status"] == "fail"]
    assert status == 1
    assert [r["resource"] for r in failed] == [f"{kind} inference/{obj.name}"]
    assert "no owner label" in failed[0]["detail"]
    assert f"kubectl delete {obj.plural} {obj.name} -n inference" in failed[0]["fix"]
    if kind == "Secret":
        assert "External Secrets Operator overwrites" in failed[0]["detail"]


def test_an_endpoint_of_a_release_before_per_stack_labels_warns(account, data):
    # GIVEN inference/qwen-s3 labelled managed-by this library but not with a stack (as earlier releases wrote it)
    _put(account, CR, {naming.MANAGED_BY_LABEL: naming.MANAGED_BY_VALUE})
    # WHEN doctor runs / THEN it warns (this stack or another may have deployed it), and the run passes
    status, results = run_doctor(account, data, "--only", CHECK)
    [warned] = [r for r in results if r["status"] == "warn"]
    assert status == 0
    assert warned["resource"] == "InferenceEndpointConfig inference/qwen-s3"
    assert f"labels it {SCOPE}" in warned["fix"] and "endpoints[0].name" in warned["fix"]


def test_an_answer_other_than_found_or_absent_skips_that_object(account, data, monkeypatch):
    # GIVEN the API answers 500 for one object (the fake answers 200 or 404 only)
    target = _objects(data)[0]
    read = Context.kube_get

    def kube_get(self, path, *, metadata_only=False):
        return (500, {}) if path == target.path else read(self, path, metadata_only=metadata_only)

    monkeypatch.setattr(Context, "kube_get", kube_get)
    # WHEN doctor runs / THEN that object skips with the answer, the others pass, and the run passes
    status, results = run_doctor(account, data, "--only", CHECK)
    owners = {r["resource"]: r for r in _owners(results)}
    assert owners[target.resource]["status"] == "skip" and "answered 500" in owners[target.resource]["detail"]
    assert {r["status"] for k, r in owners.items() if k != target.resource} == {"pass"}
    assert status == 0


# ------------------------------------------------------------------------------------------ against a synth
def _delivered(config_path: Path, stack_name: str | None = None) -> tuple[str, dict[tuple[str, str, str], dict]]:
    from hyperpod_inference.app import build

    stack = build(cdk.App(), str(config_path), stack_name=stack_name, nag=False)
    objects = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
               for objs in stack.inference.manifest_documents().values() for o in objs}
    return stack.inference.kubernetes_scope, objects


#: Kinds whose names depend on their content (the agent code and models ConfigMaps, the gc Job) or that another
#: check reads (namespaces).
UNCHECKED_KINDS = {"ConfigMap", "Job", "Namespace"}


@pytest.mark.parametrize("stack_name", [None, "team-a"])
def test_the_objects_and_the_scope_are_those_a_synth_of_the_config_delivers(account, data, tmp_path, stack_name):
    # GIVEN the config (with stackName or without), plus a JumpStart model in another namespace
    data = copy.deepcopy(data)
    if stack_name:
        data["stackName"] = stack_name
    data["endpoints"].append({"name": "js", "namespace": "other", "kind": "JumpStartModel",
                              "instanceType": "ml.g5.8xlarge",
                              "model": {"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}}})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    # WHEN the app synthesizes it and doctor plans it (as the CLI does: no --stack-name)
    scope, delivered = _delivered(path)
    ctx = Context(parse_config(data), Aws("us-west-2"))
    planned = planned_objects(ctx.plan())
    # THEN doctor's scope is the stack's, and the stack labels its objects with it
    assert ctx.kubernetes_scope == scope
    assert (scope == SCOPE) == (stack_name is None)
    assert {o["metadata"]["labels"][naming.STACK_LABEL] for o in delivered.values()} == {scope}
    # AND every object doctor reads is one the stack delivers (same apiVersion), or the Secret an ExternalSecret
    # of the stack writes; every delivered object whose name does not depend on its content is read
    written = {("Secret", ns, o["spec"]["target"]["name"]) for (kind, ns, _), o in delivered.items()
               if kind == "ExternalSecret"}
    keys = {(o.kind, o.namespace, o.name) for o in planned}
    assert len(keys) == len(planned)
    assert keys == {k for k in delivered if k[0] not in UNCHECKED_KINDS} | written
    for o in planned:
        if o.kind != "Secret":
            assert delivered[(o.kind, o.namespace, o.name)]["apiVersion"] == o.api_version, o
    assert {k[0] for k in keys} >= {"InferenceEndpointConfig", "JumpStartModel", "ExternalSecret", "DaemonSet"}
