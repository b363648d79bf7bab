"""The Inference Gateway on the cluster: its InferenceGatewayConfig selects the endpoints' pods, is created after the
operator add-on and deleted before it (CloudFormation dependencies), the endpoints behind it wait for it, files mode
puts it in the custom-resources tier, and the outputs say how to check and reach it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from hyperpod_inference.facts import gateway as facts
from hyperpod_inference.facts import gitops
from tests.synth_helpers import load_yaml, synth_config

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "gateway.yaml"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def gateway_config(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(load_yaml(FIXTURE))
    data.update(changes)
    return data


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    # GIVEN the v3.7 fixture (one gateway, two schedulers over two endpoints) WHEN synthesized with cdk-nag
    return synth_config(FIXTURE, tmp_path_factory.mktemp("gateway"))


def manifest_holding(synth, kind: str, name: str) -> tuple[str, dict[str, Any]]:
    for logical_id, res in synth.resources(MANIFEST).items():
        text = str(res["Properties"]["Manifest"])
        if f'"kind":"{kind}"' in text and f'"name":"{name}"' in text:
            return logical_id, res
    raise AssertionError(f"no manifest holds {kind}/{name}")


def test_the_gateway_selects_each_endpoints_pods_port_and_model(synth) -> None:
    [gw] = [o for o in synth.objects() if o["kind"] == facts.KIND]
    assert gw["apiVersion"] == "inference.sagemaker.aws.amazon.com/v1alpha1"
    assert (gw["metadata"]["name"], gw["metadata"]["namespace"]) == ("chat-gw", "inference")
    spec = gw["spec"]
    assert spec["bbr"] == {"enabled": True} and spec["tls"] == {}
    assert [(s["name"], s["modelSelector"], s["targetPort"], s["modelName"], s["scheduler"]) for s in spec["schedulers"]] == [
        ("qwen", {"matchLabels": {"app": "qwen-chat"}}, 8000, "Qwen/Qwen2.5-7B-Instruct", "llm-d"),
        ("llama", {"matchLabels": {"app": "llama-chat"}}, 8000, "llama-chat", "epp")]
    assert spec["schedulers"][0]["weights"] == {"prefix": 2, "queue": 3, "kvCache": 2, "lru": 1}
    assert "endpoint" not in str(spec)
    # THEN the endpoints' own resources carry those labels' sources and serve those names
    crs = {o["metadata"]["name"]: o for o in synth.custom_resources() if o["kind"] == "InferenceEndpointConfig"}
    assert set(crs) == {"qwen-chat", "llama-chat"}
    for name, cr in crs.items():
        assert cr["spec"]["inferenceGateway"] == {"enabled": True, "name": "chat-gw"}, name
        assert cr["spec"]["worker"]["modelInvocationPort"]["containerPort"] == 8000
    assert "Qwen/Qwen2.5-7B-Instruct" in crs["qwen-chat"]["spec"]["worker"]["args"]
    assert "llama-chat" in crs["llama-chat"]["spec"]["worker"]["args"]


def test_the_gateway_is_created_after_the_operator_add_on_and_its_namespace(synth) -> None:
    gw_id, gw = manifest_holding(synth, facts.KIND, "chat-gw")
    [addon_id] = [k for k, r in synth.resources("AWS::EKS::Addon").items()
                  if r["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference"]
    assert addon_id in gw["DependsOn"]
    ns_id, _ = manifest_holding(synth, "Namespace", "inference")
    assert ns_id in gw["DependsOn"]
    # AND each endpoint behind it waits for it (so is deleted before it)
    for name in ("qwen-chat", "llama-chat"):
        _, ep = manifest_holding(synth, "InferenceEndpointConfig", name)
        assert gw_id in ep["DependsOn"], name


def test_the_outputs_give_the_status_and_address_commands(synth) -> None:
    outputs = synth.template["Outputs"]
    assert outputs["GatewayInferenceChatGwStatus"]["Value"] == (
        "kubectl get igwc chat-gw -n inference -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'")
    assert outputs["GatewayInferenceChatGwAddress"]["Value"] == (
        "kubectl get svc -n hyperpod-inference-system -l gateway.envoyproxy.io/owning-gateway-name=chat-gw "
        "-o jsonpath='{.items[0].status.loadBalancer.ingress[0].hostname}'")


def test_a_config_without_gateways_has_no_gateway_manifest_or_output(synth, tmp_path) -> None:
    data = gateway_config(gateways=[])
    for ep in data["endpoints"]:
        ep.pop("inferenceGateway")
    plain = synth_config(data, tmp_path, nag=False)
    assert not [o for o in plain.objects() if o["kind"] == facts.KIND]
    assert not [k for k in plain.template["Outputs"] if k.startswith("Gateway")]


def test_files_mode_writes_the_gateway_in_the_custom_resources_tier(tmp_path) -> None:
    # GIVEN the fixture delivered as files for Argo CD WHEN synthesized THEN the gateway is in a tier-4 file with
    # wave 4: after every object of the tiers before it (the operator's when it is a chart)
    data = gateway_config(manifests={"delivery": "files", "gitops": "argocd"})
    out = synth_config(data, tmp_path, nag=False)
    assert not out.resources(MANIFEST)
    folder = tmp_path / "manifests"
    [path] = [p for p in folder.glob("*.yaml") if "InferenceGatewayConfig" in p.read_text()]
    assert path.name == gitops.file_name(gitops.CUSTOM_RESOURCES, "inference-gateway-chat-gw")
    [obj] = [o for o in yaml.safe_load_all(path.read_text()) if o]
    assert obj["metadata"]["annotations"][gitops.ARGOCD_SYNC_WAVE] == str(gitops.CUSTOM_RESOURCES.index)
