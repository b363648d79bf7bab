"""stackLayout: perNamespace puts each namespace's (and stackGroup's) manifests, roles and outputs in a nested stack of
its own, with one kubectl provider for the app, cdk-nag clean, in the operator's order, within per-template limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from hyperpod_inference.assembly.limits import template_size_problems
from hyperpod_inference.config import ConfigError, parse_config
from tests.synth_helpers import Synth, gen_config, synth_config

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
NESTED = "AWS::CloudFormation::Stack"



GEN = gen_config()


def fleet_config() -> dict[str, Any]:
    """Heavy endpoints e0, e2 in ns0, e1, e3 in ns1, and ns1/e4 in stackGroup big."""
    cfg = GEN.config(5, "heavy", namespace_count=2, layout="perNamespace")
    cfg["endpoints"][4]["namespace"] = "ns1"
    cfg["endpoints"][4]["stackGroup"] = "big"
    return cfg


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    # cdk-nag on: a finding in any stack, nested ones included, makes the synth raise
    return synth_config(fleet_config(), tmp_path_factory.mktemp("fleet"), nag=True)


def nested_templates(s: Synth) -> dict[str, dict[str, Any]]:
    """Nested stack construct id -> its template, for the namespace stacks."""
    inference = s.stack.inference
    return {nested.node.id: json.loads((s.outdir / nested.template_file).read_text())
            for nested in inference.nested_stacks.values()}


def test_one_nested_stack_per_namespace_and_stack_group(fleet: Synth) -> None:
    # GIVEN endpoints in ns0, ns1 and ns1 with stackGroup big  WHEN synthesized perNamespace
    # THEN there is one nested stack per (namespace, group), and each holds exactly its endpoints' manifests and roles
    assert set(fleet.stack.inference.nested_stacks) == {("ns0", None), ("ns1", None), ("ns1", "big")}
    templates = nested_templates(fleet)
    assert set(templates) == {"Namespace.ns0", "Namespace.ns1", "Namespace.ns1.big"}
    endpoint_manifests = {
        sid: sorted(k for k, r in t["Resources"].items()
                    if r["Type"] == MANIFEST and not any(shared in k for shared in (
                        "Reader", "Agent", "Token", "Warm")))
        for sid, t in templates.items()}
    def endpoints(sid: str) -> list[str]:  # ManifestNs0E2<hash> -> Ns0E2
        return [m[len("Manifest"):-8] for m in endpoint_manifests[sid]]

    assert endpoints("Namespace.ns0") == ["Ns0E0", "Ns0E2"]
    assert endpoints("Namespace.ns1") == ["Ns1E1", "Ns1E3"]
    assert endpoints("Namespace.ns1.big") == ["Ns1E4"]
    roles = [k for k, r in templates["Namespace.ns1.big"]["Resources"].items() if r["Type"] == "AWS::IAM::Role"]
    assert any(k.startswith("Ns1Token") for k in roles)  # the group's own token sync (its stack's names)
    # AND each nested stack has its own token sync and warm DaemonSet (a shared piece never spans two templates)
    for t in templates.values():
        assert sum(k.startswith("ManifestNs") and "Token" in k for k, r in t["Resources"].items()
                   if r["Type"] == MANIFEST) == 1
        assert sum("Warm" in k for k, r in t["Resources"].items() if r["Type"] == MANIFEST) == 1
    # the parent keeps the namespaces, the operator and the shared storage; no endpoint manifest
    parent_manifests = [k for k, r in fleet.resources(MANIFEST).items()]
    assert all(k.startswith("ManifestNamespace") for k in parent_manifests), parent_manifests


def test_every_nested_stack_uses_the_parents_kubectl_provider(fleet: Synth) -> None:
    # GIVEN manifests in three nested stacks  THEN the assembly has one kubectl provider stack, and every manifest's
    # service token is a parameter passed from the parent (the provider's framework function)
    provider_templates = [p.name for p in fleet.outdir.glob("*KubectlProvider*.nested.template.json")]
    assert len(provider_templates) == 1, provider_templates
    for sid, template in nested_templates(fleet).items():
        params = template.get("Parameters", {})
        for logical_id, r in template["Resources"].items():
            if r["Type"] == MANIFEST:
                token = r["Properties"]["ServiceToken"]
                assert set(token) == {"Ref"} and token["Ref"] in params, (sid, logical_id, token)
                assert "KubectlProvider" in token["Ref"]
        assert not any("KubectlProvider" in k for k, r in template["Resources"].items() if r["Type"] == NESTED)


def test_nested_stacks_come_after_the_operator_and_their_namespace(fleet: Synth) -> None:
    # GIVEN the operator add-on and namespace manifests in the parent  THEN each nested stack resource depends on
    # them (created after; CloudFormation deletes the nested stack, so its custom resources, first)
    nested = {k: r for k, r in fleet.resources(NESTED).items() if "KubectlProvider" not in k}
    assert len(nested) == 3
    operator = [k for k, r in fleet.resources("AWS::EKS::Addon").items() if r["Properties"]["AddonName"] ==
                "amazon-sagemaker-hyperpod-inference"]
    assert len(operator) == 1
    for logical_id, r in nested.items():
        deps = r.get("DependsOn", [])
        assert operator[0] in deps, (logical_id, deps)
        ns = "Ns0" if "ns0" in logical_id else "Ns1"
        assert any(d.startswith(f"ManifestNamespace{ns}") for d in deps), (logical_id, deps)


def test_parent_outputs_one_describe_stacks_command_per_nested_stack(fleet: Synth) -> None:
    # GIVEN three nested stacks  THEN the parent has one output per nested stack naming it in describe-stacks,
    # and the per-endpoint outputs live in the nested stacks
    outputs = fleet.template["Outputs"]
    stack_outputs = {k: v for k, v in outputs.items() if k.endswith("StackOutputs")}
    assert set(stack_outputs) == {"NamespaceNs0StackOutputs", "NamespaceNs1StackOutputs",
                                  "NamespaceNs1GroupBigStackOutputs"}
    value = stack_outputs["NamespaceNs1GroupBigStackOutputs"]["Value"]["Fn::Join"][1]
    assert value[0] == "aws cloudformation describe-stacks --stack-name '"
    assert value[1]["Ref"] in fleet.resources(NESTED)
    assert not any(k.endswith("Status") for k in outputs)
    big = nested_templates(fleet)["Namespace.ns1.big"]["Outputs"]
    assert {"Ns1E4Status", "Ns1E4Invoke", "Ns1E4Verification"} <= set(big)


def test_template_labels_name_each_nested_template_by_namespace_and_group(fleet: Synth, tmp_path: Path) -> None:
    # GIVEN the nested templates' labels  WHEN one of them is over 1 MB  THEN the problem names its namespace and
    # group and says how to split it
    labels = fleet.stack.inference.template_labels()
    assert set(labels) == {n.template_file for n in fleet.stack.inference.nested_stacks.values()}
    big_file = fleet.stack.inference.nested_stacks[("ns1", "big")].template_file
    (tmp_path / big_file).write_bytes(b" " * (1024 * 1024 + 1))
    (problem,) = template_size_problems(str(tmp_path), labels)
    assert "namespace ns1 (stackGroup big)" in problem
    assert "another stackGroup" in problem


def test_a_nested_stack_over_500_resources_fails_the_synth_naming_its_namespace(tmp_path: Path) -> None:
    # GIVEN a perNamespace stack whose ns0 nested stack gets 500 more resources
    from hyperpod_inference.stack import HyperPodInferenceStack

    config = parse_config(GEN.config(2, "hf-token", namespace_count=2, layout="perNamespace"))
    app = cdk.App(outdir=str(tmp_path))
    stack = HyperPodInferenceStack(app, "Fleet", config=config)
    nested = stack.inference.nested_stacks[("ns0", None)]
    for i in range(500):
        cdk.CfnResource(nested, f"Filler{i}", type="AWS::SNS::Topic")
    # WHEN synthesized  THEN the synth fails naming the namespace and the stackGroup way out
    with pytest.raises(Exception, match=r"namespace ns0 has 50\d resources; CloudFormation allows 500 \(give some "
                                        r"endpoints of namespace ns0 another stackGroup"):
        app.synth()


def test_stack_group_needs_the_per_namespace_layout() -> None:
    # GIVEN a stackGroup with the default single layout  THEN a config error names the field and the rule
    cfg = GEN.config(1, "common")
    cfg["endpoints"][0]["stackGroup"] = "g1"
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    assert ("endpoints[0].stackGroup", "only with stackLayout: perNamespace (it names a nested stack of the "
            "endpoint's namespace)") in err.value.problems


def test_a_nested_stack_over_200_outputs_folds_its_endpoints_outputs(tmp_path: Path) -> None:
    # GIVEN 101 common endpoints in one namespace, perNamespace: 100 with a domain (status and invoke outputs), the
    # last without (status only), so 201 outputs
    from hyperpod_inference.stack import HyperPodInferenceStack

    cfg = GEN.config(101, "common", namespace_count=1, layout="perNamespace")
    del cfg["endpoints"][100]["domainName"]
    config = parse_config(cfg)
    app = cdk.App(outdir=str(tmp_path))
    stack = HyperPodInferenceStack(app, "Fleet", config=config)
    # WHEN synthesized
    app.synth()
    nested = stack.inference.nested_stacks[("ns0", None)]
    outputs = json.loads((tmp_path / nested.template_file).read_text())["Outputs"]
    # THEN the nested stack holds one joined output per endpoint, within the limit; the parent keeps its own
    assert sorted(k for k in outputs if not k.endswith("Outputs")) == ["Ns0E100Status"]
    assert len(outputs) == 101
    assert "kubectl describe inferenceendpointconfig e7 -n ns0" in outputs["Ns0E7Outputs"]["Value"]
    parent = json.loads((tmp_path / "Fleet.template.json").read_text())["Outputs"]
    assert "NamespaceNs0StackOutputs" in parent and not any(k.startswith("Ns0E") for k in parent)
