"""kubectl delivery (the default app): ordering so the operator outlives what it finalizes, review placeholders,
verification, the token never written anywhere, size limits."""

from __future__ import annotations

import base64
import json
import os
import re

import cdk8s
import pytest
from aws_cdk.assertions import Template

from hyperpod_inference.assembly.delivery import ManifestUnit
from hyperpod_inference.assembly.limits import MAX_MANIFEST_BYTES
from hyperpod_inference.charts.agent_bundle import agent_bundle
from hyperpod_inference.facts import naming
from tests.k8s_validation import _strict, require_crds
from tests.synth_helpers import DEFAULT_CONFIG, load_yaml, synth_config

KUBE = "Custom::AWSCDK-EKS-KubernetesResource"


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    return synth_config(DEFAULT_CONFIG, tmp_path_factory.mktemp("default"))


@pytest.fixture(scope="module")
def chart_mode(tmp_path_factory):
    """The default app with the operator installed as a chart from the reference CRDs (cdk-nag registered)."""
    data = load_yaml(DEFAULT_CONFIG)
    data["operator"] = {"install": "chart", "version": "v3.3", "crdSource": str(require_crds() / "v3.3")}
    return synth_config(data, tmp_path_factory.mktemp("chart"))


def depends(template: dict, logical: str) -> set[str]:
    dep = template["Resources"][logical].get("DependsOn", [])
    return set([dep] if isinstance(dep, str) else dep)


def closure(template: dict, logical: str) -> set[str]:
    seen, todo = set(), [logical]
    while todo:
        for d in depends(template, todo.pop()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def logical_of(synth, construct) -> str:
    return synth.stack.get_logical_id(construct.node.default_child)


def test_custom_resource_is_applied_after_operator_support_objects_and_namespace(default):
    t = default.template
    cr = logical_of(default, default.stack.manifest_resources["inference-qwen-chat"])
    # (what its pods mount: the agent code of the NVMe cache)
    code_unit = naming.shared_unit_name("inference", "agent", f"{default.stack.inference.kubernetes_scope}-nvme-agent")
    support = logical_of(default, default.stack.manifest_resources[code_unit])
    namespaces = logical_of(default, default.stack.manifest_resources["namespace-inference"])
    addon = [k for k, v in t["Resources"].items() if v["Type"] == "AWS::EKS::Addon"
             and v["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference"][0]
    deps_addons = [k for k, v in t["Resources"].items() if v["Type"] == "AWS::EKS::Addon" and k != addon]
    before_cr = closure(t, cr)
    # THEN creation order: dependency add-ons -> operator add-on -> support objects -> custom resource
    assert {addon, support, namespaces} <= before_cr
    assert set(deps_addons) <= closure(t, addon)
    assert namespaces in closure(t, support)
    # and CloudFormation deletes in reverse: the custom resource goes before the operator that finalizes it


def test_verification_waits_for_the_custom_resource(default):
    t = default.template
    cr = logical_of(default, default.stack.manifest_resources["inference-qwen-chat"])
    verify = [k for k, v in t["Resources"].items() if v["Type"] == "Custom::SageMakerEndpointVerification"
              and v["Properties"].get("EndpointName") == "qwen-chat"]
    assert len(verify) == 1 and cr in closure(t, verify[0])
    assert "InferenceQwenChatVerification" in t["Outputs"]


def test_review_manifests_show_deploy_time_values_as_placeholders(default):
    text = json.dumps(default.manifests)
    assert "${Token[" not in text
    spec = default.manifests["inference-qwen-chat"][0]["spec"]
    assert re.fullmatch(r"<DomainCertificate[0-9A-F]{8}>", spec["tlsConfig"]["customCertificateConfig"]["acmArn"])
    assert re.fullmatch(r"<DomainHostedZone[0-9A-F]{8}>", spec["dnsConfig"]["hostedZoneId"])


def test_applied_manifests_resolve_the_same_values_through_cloudformation(default):
    manifests = default.template["Resources"]
    cr = logical_of(default, default.stack.manifest_resources["inference-qwen-chat"])
    body = json.dumps(manifests[cr]["Properties"]["Manifest"])
    assert "DomainCertificate" in body and "Ref" in body


def test_created_zone_outputs_its_name_servers_for_delegation(default):
    out = default.template["Outputs"]["DomainNameServers"]
    assert "NameServers" in json.dumps(out["Value"])
    assert "delegat" in out["Description"].lower()


def test_no_token_or_secret_value_is_written_anywhere(tmp_path, monkeypatch):
    # GIVEN a token in the environment and a Secrets Manager token source
    secret_value = "hf_" + "Zq8" * 12
    monkeypatch.setenv("HF_TOKEN", secret_value)
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", secret_value)
    data = load_yaml(DEFAULT_CONFIG)
    data["endpoints"][0]["model"]["huggingface"]["token"] = {
        "secretsManagerArn": "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-token-AbCdEf"}
    s = synth_config(data, tmp_path / "out")
    # WHEN every file of the cloud assembly is scanned  THEN no token-shaped string and not the value itself
    pattern = re.compile(rb"hf_[A-Za-z0-9]{30,}")
    scanned = 0
    for root, _dirs, files in os.walk(s.outdir):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or os.path.getsize(path) > 50_000_000:
                continue
            blob = open(path, "rb").read()
            scanned += 1
            assert not pattern.search(blob), path
            assert secret_value.encode() not in blob, path
    assert scanned > 5
    assert any(o["kind"] == "ExternalSecret" for o in s.objects())


def test_two_namespaces_get_two_token_roles_each_reading_only_its_secret(tmp_path):
    data = load_yaml(DEFAULT_CONFIG)
    base = data["endpoints"][0]
    data["namespaces"] = ["team-a", "team-b"]
    data["endpoints"] = []
    for ns, secret in (("team-a", "hf-a-AbCdEf"), ("team-b", "hf-b-GhIjKl")):
        ep = json.loads(json.dumps(base))
        ep.update(namespace=ns, name=f"chat-{ns}", sagemakerEndpointName=f"chat-{ns}", domainName=f"{ns}.example.com")
        ep["model"]["huggingface"]["token"] = {
            "secretsManagerArn": f"arn:aws:secretsmanager:us-west-2:111122223333:secret:{secret}"}
        data["endpoints"].append(ep)
    s = synth_config(data, tmp_path / "out", nag=False)
    t = Template.from_stack(s.stack)
    for ns, secret in (("team-a", "hf-a-AbCdEf"), ("team-b", "hf-b-GhIjKl")):
        policies = [p for p in t.find_resources("AWS::IAM::Policy").values()
                    if "secretsmanager:GetSecretValue" in json.dumps(p) and secret in json.dumps(p)]
        assert len(policies) == 1
        assert json.dumps(policies[0]).count("arn:aws:secretsmanager") == 1
        trust = [r for r in t.find_resources("AWS::IAM::Role").values()
                 if re.search(rf"system:serviceaccount:{ns}:[a-z0-9-]+-hf-token-[0-9a-f]{{10}}-reader", json.dumps(r))]
        assert len(trust) == 1


def test_size_check_names_the_manifest_that_is_too_big(default):
    # GIVEN a synthetic chart with one huge ConfigMap  WHEN the size limits are checked  THEN it is named
    delivery = default.stack.inference.delivery
    chart = cdk8s.Chart(delivery.k8s_app, "oversized", disable_resource_name_hashes=True)
    cdk8s.ApiObject(chart, "big", api_version="v1", kind="ConfigMap",
                    metadata=cdk8s.ApiObjectMetadata(name="big", namespace="inference")).add_json_patch(
        cdk8s.JsonPatch.add("/data", {"blob": "x" * (MAX_MANIFEST_BYTES + 1)}))
    delivery.units["oversized"] = ManifestUnit("oversized", chart)
    try:
        problems = delivery.size_problems()
        at_synth = default.stack.inference.node.validate()  # what app.synth() runs: it fails on any of these
    finally:
        del delivery.units["oversized"]
    assert len(problems) == 1 and problems[0].startswith("manifest 'oversized' is ")
    assert at_synth == problems
    assert delivery.size_problems() == []


def test_chart_mode_orders_operator_chart_before_custom_resources(chart_mode):
    s = chart_mode
    t = s.template
    operator = logical_of(s, s.stack.manifest_resources["operator"])
    cr = logical_of(s, s.stack.manifest_resources["inference-qwen-chat"])
    assert operator in closure(t, cr)
    dependency_addons = {k for k, v in t["Resources"].items() if v["Type"] == "AWS::EKS::Addon"}
    assert dependency_addons and dependency_addons <= closure(t, operator)
    helm = {k for k, v in t["Resources"].items() if v["Type"] == "Custom::AWSCDK-EKS-HelmChart"}
    assert len(helm) == 2 and helm <= closure(t, operator)
    kinds = {o["kind"] for o in s.manifests["operator"]}
    assert {"CustomResourceDefinition", "Deployment", "ServiceAccount", "ClusterRole"} <= kinds


def test_chart_mode_applies_the_operator_chart_whose_namespace_helm_creates_and_creates_everything_else(chart_mode):
    # GIVEN chart mode: the ALB controller and KEDA Helm releases create hyperpod-inference-system before the chart
    s = chart_mode
    operator = logical_of(s, s.stack.manifest_resources["operator"])
    assert any(o["kind"] == "Namespace" for o in s.manifests["operator"])
    # THEN the operator chart is applied (a create would fail on the namespace Helm made), every other manifest created
    overwrite = {k: v["Properties"].get("Overwrite") for k, v in s.resources(KUBE).items()}
    assert overwrite.pop(operator) is True
    assert overwrite and all(v is False for v in overwrite.values()), overwrite


def test_template_size_check_names_the_template_over_one_megabyte(tmp_path):
    from hyperpod_inference.stack import MAX_TEMPLATE_BYTES, template_size_problems

    (tmp_path / "Small.template.json").write_text("{}")
    (tmp_path / "Big.template.json").write_text(" " * (MAX_TEMPLATE_BYTES + 1))
    problems = template_size_problems(str(tmp_path))
    assert len(problems) == 1 and problems[0].startswith("template Big.template.json is ")


def test_chart_mode_crds_have_no_descriptions_and_still_validate_the_custom_resources(chart_mode):
    import jsonschema

    s = chart_mode
    shipped = [o for o in s.manifests["operator"] if o["kind"] == "CustomResourceDefinition"]
    assert shipped and '"description"' not in json.dumps([c["spec"]["versions"] for c in shipped])
    iec = next(c for c in shipped if c["spec"]["names"]["kind"] == "InferenceEndpointConfig")
    schema = _strict(next(v for v in iec["spec"]["versions"] if v["name"] == "v1")["schema"]["openAPIV3Schema"])
    cr = s.manifests["inference-qwen-chat"][0]
    body = json.loads(json.dumps({k: v for k, v in cr.items() if k != "metadata"}))  # a copy: the fixture is shared
    # placeholders (<...>) stand where CloudFormation fills in the certificate and zone; give concrete values
    body["spec"]["tlsConfig"]["customCertificateConfig"]["acmArn"] = "arn:aws:acm:us-west-2:111122223333:certificate/0a1b"
    body["spec"]["dnsConfig"]["hostedZoneId"] = "Z0123ABC"
    assert list(jsonschema.Draft7Validator(schema).iter_errors(body)) == []
    body["spec"]["replica"] = 2
    assert list(jsonschema.Draft7Validator(schema).iter_errors(body))


def test_private_api_endpoint_runs_the_kubectl_handler_in_the_subnets(tmp_path):
    # GIVEN a cluster with a private API endpoint  WHEN synthesized with cdk-nag  THEN the handler is in the VPC
    data = load_yaml(DEFAULT_CONFIG)
    data["cluster"]["kubectlSubnetIds"] = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
    data["cluster"]["kubectlSecurityGroupId"] = "sg-0123456789abcdef0"
    s = synth_config(data, tmp_path / "out")
    nested = [p for p in s.outdir.glob("*KubectlProvider*.nested.template.json")]
    assert len(nested) == 1
    handler = [r for r in json.loads(nested[0].read_text())["Resources"].values()
               if r["Type"] == "AWS::Lambda::Function" and "VpcConfig" in r["Properties"]]
    assert handler and "subnet-0123456789abcdef0" in json.dumps(handler[0]["Properties"]["VpcConfig"])


def test_agent_code_is_applied_once_per_namespace_before_the_endpoints_that_use_it(default):
    t = default.template
    scope = default.stack.inference.kubernetes_scope
    code = logical_of(default, default.stack.manifest_resources[naming.shared_unit_name("inference", "agent",
                                                                                           f"{scope}-nvme-agent")])
    (warm,) = [r for n, r in default.stack.manifest_resources.items() if n.startswith("inference-warm-")]
    cr = logical_of(default, default.stack.manifest_resources["inference-qwen-chat"])
    assert code in closure(t, logical_of(default, warm)) and code in closure(t, cr)
    # AND it is applied without pruning, so an agent change leaves the previous code ConfigMap for the pods that
    # still mount it (every other manifest prunes what its chart dropped)
    assert "PruneLabel" not in t["Resources"][code]["Properties"]
    assert "aws.cdk.eks/prune-" not in json.dumps(t["Resources"][code]["Properties"]["Manifest"])
    assert "PruneLabel" in t["Resources"][cr]["Properties"]
    bodies = [json.dumps(r["Properties"]["Manifest"]) for r in default.resources(KUBE).values()]
    bundle = base64.b64encode(agent_bundle()).decode()[:64]  # the shipped code itself, not a reference to its key
    assert sum(bundle in b for b in bodies) == 1


def test_a_unit_delivered_before_a_unit_it_depends_on_still_waits_for_it():
    # GIVEN kubectl delivery to an imported cluster, and unit `late` named as a dependency by `early` before `late`
    # itself is delivered (the agent code of a namespace is built at synth, after its endpoints)
    import aws_cdk as cdk
    from aws_cdk import aws_eks as eks
    from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer

    from hyperpod_inference.assembly.delivery import ManifestDelivery

    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="111122223333", region="us-west-2"))
    cluster = eks.Cluster.from_cluster_attributes(
        stack, "C", cluster_name="c", kubectl_role_arn="arn:aws:iam::111122223333:role/k",
        kubectl_layer=KubectlV33Layer(stack, "L"))
    delivery = ManifestDelivery(cluster)

    def unit(name):
        chart = delivery.chart(name)
        cdk8s.ApiObject(chart, "Cm", api_version="v1", kind="ConfigMap", metadata={"name": name, "namespace": "n"})
        return chart

    early = delivery.deliver(stack, "early", unit("early"), depends_on=["late"])
    late = delivery.deliver(stack, "late", unit("late"))
    other = delivery.deliver(stack, "other", unit("other"), depends_on=["late"])

    # THEN both units that name it depend on it in the template, whichever was delivered first
    template = Template.from_stack(stack).to_json()
    late_id = stack.get_logical_id(late.resource.node.default_child)
    for waiting in (early, other):
        assert late_id in depends(template, stack.get_logical_id(waiting.resource.node.default_child))
    assert not depends(template, late_id)
