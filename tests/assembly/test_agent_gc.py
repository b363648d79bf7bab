"""The agent code manifest of each namespace carries the gc Job that removes the previous code ConfigMaps, built from
the namespace's agent pods once every endpoint is known."""

from __future__ import annotations

import copy
import json

import pytest

from hyperpod_inference.facts import naming
from tests.k8s_validation import validate_all
from tests.synth_helpers import DEFAULT_CONFIG, load_yaml, synth_config

KUBE = "Custom::AWSCDK-EKS-KubernetesResource"
OWN_IMAGE = "111122223333.dkr.ecr.us-west-2.amazonaws.com/my-vllm:1"


@pytest.fixture(scope="module")
def two_namespaces(tmp_path_factory):
    """The default app plus: in its namespace, a daemonset-cached endpoint named before it with its own image, added
    after it; a namespace `plain` whose endpoint has no daemonset cache."""
    data = load_yaml(DEFAULT_CONFIG)
    first = data["endpoints"][0]
    plain_fields = ("name", "namespace", "instanceType", "replicas", "runtime", "model", "weightCache")
    second = {k: copy.deepcopy(v) for k, v in first.items() if k in plain_fields}
    second.update(name="a-chat", image=OWN_IMAGE, instanceType="ml.g5.12xlarge")
    plain = {k: copy.deepcopy(v) for k, v in first.items() if k in plain_fields}
    plain.update(name="plain-chat", namespace="plain", weightCache={"mode": "off"})
    data["namespaces"] = ["inference", "plain"]
    data["endpoints"] = [first, second, plain]
    return synth_config(data, tmp_path_factory.mktemp("gc"))


def test_the_code_manifest_holds_the_gc_job_built_from_the_first_agent_pod_of_the_namespace(two_namespaces):
    s = two_namespaces
    code_unit = naming.shared_unit_name("inference", "agent", f"{s.stack.inference.kubernetes_scope}-nvme-agent")
    objs = s.manifests[code_unit]

    # THEN the namespace's code manifest holds the code ConfigMap and the gc Job with its ServiceAccount, Role and
    # RoleBinding, all valid
    assert sorted(o["kind"] for o in objs) == ["ConfigMap", "Job", "NetworkPolicy", "Role", "RoleBinding", "ServiceAccount"]
    assert validate_all(objs, "v3.3") == []
    (job,) = [o for o in objs if o["kind"] == "Job"]
    (code,) = [o for o in objs if o["kind"] == "ConfigMap"]
    pod = job["spec"]["template"]["spec"]
    command = pod["containers"][0]["command"]
    assert command[6] == "gc" and command[command.index("--current") + 1] == code["metadata"]["name"]
    # AND it takes the image and nodes of the namespace's first agent pod by endpoint name (a-chat, added second)
    assert pod["containers"][0]["image"] == OWN_IMAGE
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["ml.g5.12xlarge"]
    # AND it is in the same manifest resource as the code (no new CloudFormation resource), still applied unpruned
    # and before every endpoint of the namespace
    code_id = s.stack.get_logical_id(s.stack.manifest_resources[code_unit].node.default_child)
    manifests = s.resources(KUBE)
    assert [i for i, r in manifests.items() if "batch/v1" in json.dumps(r["Properties"]["Manifest"])] == [code_id]
    assert "PruneLabel" not in manifests[code_id]["Properties"]
    for name in ("inference-qwen-chat", "inference-a-chat"):
        endpoint = s.stack.get_logical_id(s.stack.manifest_resources[name].node.default_child)
        assert code_id in manifests[endpoint]["DependsOn"]


def test_a_namespace_without_daemonset_cached_endpoints_gets_no_code_and_no_gc_job(two_namespaces):
    s = two_namespaces
    # THEN namespace `plain` has no agent code manifest and no Job at all
    assert not [name for name in s.manifests if name.startswith("plain-agent-")]
    plain = [o for objs in s.manifests.values() for o in objs if (o.get("metadata") or {}).get("namespace") == "plain"]
    assert plain and not [o for o in plain if o["kind"] in ("Job", "ConfigMap", "Role", "NetworkPolicy")]


def test_no_other_pod_of_the_library_runs_under_the_gc_service_account(two_namespaces):
    # GIVEN every object of every manifest of the app (endpoints, warm DaemonSets, code, token syncs)
    def service_accounts(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "serviceAccountName":
                    yield where, value
                else:
                    yield from service_accounts(value, where)
        elif isinstance(node, list):
            for item in node:
                yield from service_accounts(item, where)

    objs = [o for manifest in two_namespaces.manifests.values() for o in manifest]
    (gc_sa,) = [o["metadata"]["name"] for o in objs
                if o["kind"] == "ServiceAccount" and o["metadata"]["name"].endswith("-gc")]
    named = [(where, sa) for o in objs for where, sa in service_accounts(o, f"{o['kind']}/{o['metadata']['name']}")]

    # THEN the gc Job is the one object that names the gc ServiceAccount (the others name their own or none, the
    # namespace's default)
    assert {o["kind"] for o in objs} >= {"DaemonSet", "InferenceEndpointConfig", "Job"}
    assert [where for where, sa in named if sa == gc_sa] == [
        next(f"Job/{o['metadata']['name']}" for o in objs if o["kind"] == "Job")]
