"""Two stacks in one account and Region, and two HyperPodInference constructs in one stack, never choose the same
physical name (buckets, roles, key aliases), nor the same Kubernetes object: two stacks in one namespace, and two
constructs of one id under two parents, share no ``(kind, namespace, name)``; every object carries the owner labels
and is created, never adopted."""

from __future__ import annotations

import copy
import json
from typing import Any

import aws_cdk as cdk
import pytest

from hyperpod_inference import HyperPodInference, HyperPodInferenceStack, load_config, parse_config
from hyperpod_inference.charts.agent_bundle import AGENT_BUNDLE
from hyperpod_inference.facts import naming
from tests.synth_helpers import DEFAULT_CONFIG, gen_config

NAME_PROPERTIES = ("BucketName", "RoleName", "AliasName", "FunctionName")
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
GEN = gen_config()


def chosen_names(template: dict[str, Any]) -> list[str]:
    """Physical names that must be unique per account and Region (Glue tables and named queries are unique per
    database or workgroup, which are in here)."""
    out = []
    for res in template["Resources"].values():
        props = res.get("Properties", {})
        out += [props[p] for p in NAME_PROPERTIES if isinstance(props.get(p), str)]
        if res["Type"] == "AWS::Athena::WorkGroup":
            out.append(props["Name"])
        if res["Type"] == "AWS::Glue::Database":
            out.append(props["DatabaseInput"]["Name"])
    return out


def agent_configmaps(inference: HyperPodInference) -> set[str]:
    return {o["metadata"]["name"] for objs in inference.manifest_documents().values() for o in objs
            if o["kind"] == "ConfigMap" and AGENT_BUNDLE in (o.get("binaryData") or {})}


def kubernetes_objects(inference: HyperPodInference) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(kind, namespace, name) -> object, of every object the construct delivers."""
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for objs in inference.manifest_documents().values() for o in objs}


def existing_operator(data: dict[str, Any], first_stack: str) -> dict[str, Any]:
    """``data`` for a second construct on the same cluster: the operator (and its add-ons) of the first one."""
    data = copy.deepcopy(data)
    data["operator"] = {"install": "existing", "dependencies": "existing", "version": data["operator"]["version"],
                        "executionRoleArn": f"arn:aws:iam::111122223333:role/SageMakerHyperPodInference-{first_stack}"}
    return data


def test_two_stacks_in_one_account_and_region_choose_different_names() -> None:
    # GIVEN the default config deployed twice, as stacks A and B (B on the operator A installs)
    app = cdk.App()
    config = load_config(DEFAULT_CONFIG)
    a = HyperPodInferenceStack(app, "TeamA", config=config)
    data = _other_endpoint(existing_operator(config.model_dump(by_alias=True, exclude_none=True), "TeamA"))
    data["namespaces"] = []
    b = HyperPodInferenceStack(app, "TeamB", config=parse_config(data))
    assembly = app.synth()
    names_a = chosen_names(assembly.get_stack_by_name("TeamA").template)
    names_b = chosen_names(assembly.get_stack_by_name("TeamB").template)
    # THEN every name either chooses is its own (the retained buckets and the key alias included)
    assert names_a and not set(names_a) & set(names_b), set(names_a) & set(names_b)
    assert any(n.startswith("hyperpod-tls-teama-") for n in names_a)
    # AND the agent's code ConfigMaps differ (two stacks never delete each other's)
    assert agent_configmaps(a.inference) and not agent_configmaps(a.inference) & agent_configmaps(b.inference)


def _shared_namespace_config(prefix: str) -> dict[str, Any]:
    """Endpoints ``<prefix>0..2`` in the existing namespace ns0 that share everything a stack can share: one Secrets
    Manager token (a token sync), the daemonset cache (warm DaemonSet, models and code ConfigMaps, gc Job and RBAC)
    and, for the last, an S3 model (its own model-reader ServiceAccount)."""
    data = GEN.config(3, "hf-token", namespace_count=1)
    data["namespaces"] = []
    for ep in data["endpoints"]:
        ep["name"] = f"{prefix}{ep['name'][1:]}"
    data["endpoints"][2]["model"] = {"s3": {"bucket": "my-models", "prefix": "m/"}}
    return data


@pytest.fixture(scope="module")
def two_stacks_one_namespace() -> tuple[cdk.App, HyperPodInferenceStack, HyperPodInferenceStack]:
    app = cdk.App()
    a = HyperPodInferenceStack(app, "TeamA", config=parse_config(_shared_namespace_config("a")))
    b = HyperPodInferenceStack(app, "TeamB", config=parse_config(existing_operator(_shared_namespace_config("b"),
                                                                                   "TeamA")))
    app.synth()
    return app, a, b


def test_two_stacks_in_one_namespace_share_no_kubernetes_object(two_stacks_one_namespace) -> None:
    # GIVEN stacks TeamA and TeamB with different endpoints in one existing namespace, each with a token sync, warm
    # DaemonSets, the agent's code and gc, and a model-reader ServiceAccount
    _, a, b = two_stacks_one_namespace
    objects_a, objects_b = kubernetes_objects(a.inference), kubernetes_objects(b.inference)
    kinds = {k[0] for k in objects_a}
    assert {"ExternalSecret", "SecretStore", "ServiceAccount", "DaemonSet", "ConfigMap", "NetworkPolicy", "Job",
            "Role", "RoleBinding", "InferenceEndpointConfig"} <= kinds, kinds
    # THEN no (kind, namespace, name) is in both: neither deploy re-points, nor either destroy deletes, the other's
    assert not set(objects_a) & set(objects_b), sorted(set(objects_a) & set(objects_b))
    # AND nor is any Secret the ExternalSecrets write (the one the other stack's pods mount)
    def secrets(objs: dict) -> set[str]:
        return {o["spec"]["target"]["name"] for k, o in objs.items() if k[0] == "ExternalSecret"}
    assert secrets(objects_a) and not secrets(objects_a) & secrets(objects_b)


def test_every_object_carries_the_owner_labels_and_its_stacks_scope_in_its_name(two_stacks_one_namespace) -> None:
    # GIVEN the two stacks THEN every object is labelled managed-by this library and with its own stack's scope
    _, a, b = two_stacks_one_namespace
    for stack in (a, b):
        scope = stack.inference.kubernetes_scope
        for (kind, _ns, name), obj in kubernetes_objects(stack.inference).items():
            labels = obj["metadata"]["labels"]
            assert labels[naming.MANAGED_BY_LABEL] == naming.MANAGED_BY_VALUE, (kind, name)
            assert labels[naming.STACK_LABEL] == scope, (kind, name)
            # AND every name the library chooses starts with the scope (a custom resource is named by the user)
            if kind != "InferenceEndpointConfig":
                assert name.startswith(scope + "-"), (kind, name)


def test_every_manifest_is_created_so_an_existing_object_fails_the_deploy(two_stacks_one_namespace) -> None:
    # GIVEN the synthesized stacks THEN every manifest resource creates its objects (Overwrite false): kubectl create
    # fails on an object that exists instead of adopting it
    app, a, _ = two_stacks_one_namespace
    template = app.synth().get_stack_by_name("TeamA").template
    manifests = {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == MANIFEST}
    assert len(manifests) >= 5
    assert all(p.get("Overwrite") is False for p in manifests.values()), {k: p.get("Overwrite")
                                                                          for k, p in manifests.items()}


def test_the_adopt_flag_applies_the_manifests_onto_existing_objects_for_a_migration() -> None:
    # GIVEN the documented migration flag WHEN the stack is built with it
    app = cdk.App(context={"hyperpod-inference:adoptExisting": "true"})
    HyperPodInferenceStack(app, "TeamA", config=load_config(DEFAULT_CONFIG))
    template = app.synth().get_stack_by_name("TeamA").template
    manifests = {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == MANIFEST}
    # THEN every manifest applies (adopting what exists), except the namespace, which is always created
    assert {k: p.get("Overwrite") for k, p in manifests.items() if not k.startswith("ManifestNamespace")} and all(
        p.get("Overwrite") is True for k, p in manifests.items() if not k.startswith("ManifestNamespace"))
    assert all(p.get("Overwrite") is False for k, p in manifests.items() if k.startswith("ManifestNamespace"))


def _files_config() -> Any:
    data = json.loads(load_config(DEFAULT_CONFIG).model_dump_json(by_alias=True, exclude_none=True))
    data["manifests"] = {"delivery": "files"}
    data["namespaces"] = []
    data["domain"] = {**data["domain"], "hostedZoneId": "Z0123456789ABCDEFGHIJ",
                      "certificateArn": "arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000-1111-2222-3333"}
    for ep in data["endpoints"]:
        ep.pop("verify", None)
    return data


def _other_endpoint(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its endpoint under other names (endpoint, SageMaker endpoint, domain name)."""
    ep = data["endpoints"][0]
    ep.update(name="other-chat", sagemakerEndpointName="other-chat", domainName="other.example.com")
    return data


def test_two_constructs_in_one_stack_choose_different_names() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Platform", env=cdk.Environment(account="111122223333", region="us-west-2"))
    data = _files_config()
    HyperPodInference(stack, "Blue", config=parse_config(data))
    HyperPodInference(stack, "Green", config=parse_config(_other_endpoint(existing_operator(data, "Platform-Blue"))))
    names = chosen_names(app.synth().get_stack_by_name("Platform").template)
    assert len(names) == len(set(names)), sorted(names)


def test_two_constructs_of_one_id_under_two_parents_share_no_kubernetes_object() -> None:
    # GIVEN one stack with constructs Blue/Inference and Green/Inference (one id, two parents), in one namespace
    app = cdk.App()
    stack = cdk.Stack(app, "Platform", env=cdk.Environment(account="111122223333", region="us-west-2"))
    data = _files_config()
    blue = HyperPodInference(_parent(stack, "Blue"), "Inference", config=parse_config(data))
    green = HyperPodInference(_parent(stack, "Green"), "Inference",
                              config=parse_config(_other_endpoint(existing_operator(data, "Platform-Inference"))))
    # THEN their Kubernetes scopes differ and no object of one is an object of the other
    assert blue.kubernetes_scope != green.kubernetes_scope
    shared = set(kubernetes_objects(blue)) & set(kubernetes_objects(green))
    assert kubernetes_objects(blue) and not shared, sorted(shared)


def _parent(stack: cdk.Stack, construct_id: str):
    from constructs import Construct

    return Construct(stack, construct_id)


def test_two_stacks_delivering_one_object_to_one_cluster_fail_the_synth_naming_each_other() -> None:
    # GIVEN two stacks on one cluster that both list namespace inference and both deploy endpoint qwen-chat (the
    # names the user chooses, which no scope can keep apart)
    app = cdk.App()
    config = load_config(DEFAULT_CONFIG)
    HyperPodInferenceStack(app, "TeamA", config=config)
    HyperPodInferenceStack(app, "TeamB", config=parse_config(existing_operator(
        config.model_dump(by_alias=True, exclude_none=True), "TeamA")))
    # WHEN synthesized THEN it fails, each naming the other and the objects both would own
    with pytest.raises(Exception, match=r"(?s)\[TeamA/Default\] Kubernetes objects also delivered to this cluster by "
                                        r"TeamB/Default: Namespace inference, InferenceEndpointConfig inference/qwen-chat"
                                        r".*\[TeamB/Default\] .* by TeamA/Default"):
        app.synth()
