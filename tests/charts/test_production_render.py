"""How the production fields render: defaults left to the API server, accelerators from the instance table, metrics
port from the runtime, env valueFrom, JumpStart fields, specOverrides merged last; each resource strictly valid."""

from __future__ import annotations

import copy

import pytest
import yaml

from hyperpod_inference.charts.endpoint import EndpointWiring, SecretRef, build_custom_resource
from hyperpod_inference.charts.overrides import merge_patch
from hyperpod_inference.config import parse_config
from hyperpod_inference.plan.cache import placement, tolerations
from tests.k8s_validation import _crd_schemas, crd_errors, require_crds
from tests.synth_helpers import DEFAULT_CONFIG, with_endpoint_changes

BASE = yaml.safe_load(DEFAULT_CONFIG.read_text())
BASE["endpoints"][0].pop("autoScalingSpec")  # the default config's own trigger: each test sets what it tests
WIRING = EndpointWiring(region="us-west-2", certificate_arn="arn:aws:acm:us-west-2:111122223333:certificate/0a1b",
                        hosted_zone_id="Z0123ABC", token_secret=SecretRef("hf-token", "token"))
PRODUCTION_KEYS = {"autoScalingSpec", "intelligentRoutingSpec", "kvCacheSpec", "metrics", "pdSpec", "instanceTypes",
                   "nodeAffinity", "tags", "maxDeployTimeInSeconds", "modelVersion", "modelCacheConfig"}


def endpoint(**changes):
    return parse_config(with_endpoint_changes(BASE, **{"dataCapture": None, **changes})).endpoints[0]


def render(**changes):
    cr = build_custom_resource(endpoint(**changes), WIRING)
    assert crd_errors(cr, "v3.3") == []
    return cr


def test_an_endpoint_without_production_keys_writes_none_of_them():
    # GIVEN the default endpoint WHEN rendered THEN no CRD default is written for a field the user did not set
    spec = render()["spec"]
    assert not PRODUCTION_KEYS & set(spec)
    assert spec["loadBalancer"] == {"healthCheckPath": "/health"}
    assert "probes" not in spec["worker"] and "requestLimits" not in spec["worker"]


def test_metrics_enabled_without_a_port_gets_the_runtime_port_not_the_crd_default():
    # GIVEN metrics enabled, no modelMetrics.port WHEN rendered THEN the preset's port (vLLM 8000), not 8080
    assert render(metrics={"enabled": True})["spec"]["metrics"] == {"enabled": True, "modelMetrics": {"port": 8000}}
    assert render(runtime="tgi", metrics={})["spec"]["metrics"] == {"modelMetrics": {"port": 8080}}
    given = render(metrics={"enabled": True, "modelMetrics": {"port": 9400, "path": "/m"}})["spec"]["metrics"]
    assert given == {"enabled": True, "modelMetrics": {"port": 9400, "path": "/m"}}
    assert render(metrics={"enabled": False})["spec"]["metrics"] == {"enabled": False}


@pytest.mark.parametrize(("instance", "resource", "count", "tp"), [
    ("ml.g5.8xlarge", "nvidia.com/gpu", "1", None), ("ml.g5.12xlarge", "nvidia.com/gpu", "4", "4"),
    ("ml.p5.48xlarge", "nvidia.com/gpu", "8", "8"), ("ml.p6e-gb200.36xlarge", "nvidia.com/gpu", "4", "4"),
])
def test_gpu_requests_and_tensor_parallelism_follow_the_instance_table(instance, resource, count, tp):
    worker = render(instanceType=instance)["spec"]["worker"]
    assert worker["resources"] == {"requests": {resource: count}, "limits": {resource: count}}
    args = worker["args"]
    assert (args[args.index("--tensor-parallel-size") + 1] if "--tensor-parallel-size" in args else None) == tp


def test_a_trainium_endpoint_requests_neuron_devices_and_no_nvidia_gpu():
    # GIVEN ml.trn1.32xlarge (16 Neuron devices) with a custom Neuron image WHEN rendered THEN aws.amazon.com/neuron
    cr = render(instanceType="ml.trn1.32xlarge", runtime="custom", image="my/neuronx-vllm:1", port=8080)
    resources = cr["spec"]["worker"]["resources"]
    assert resources == {"requests": {"aws.amazon.com/neuron": "16"}, "limits": {"aws.amazon.com/neuron": "16"}}
    assert "tolerations" not in cr["spec"]  # model pods get tolerations only through specOverrides
    ep = endpoint(instanceType="ml.trn1.32xlarge", runtime="custom", image="my/neuronx-vllm:1", port=8080)
    assert tolerations(ep) == [{"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}]


def test_an_unknown_instance_type_takes_the_given_gpu_count():
    worker = render(instanceType="ml.m5.xlarge", resources={"gpus": 0, "cpu": "2"}, runtime="custom",
                    image="my/cpu-server:1", port=8080)["spec"]["worker"]
    assert worker["resources"] == {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}


def test_detailed_requests_and_limits_are_taken_as_written_plus_the_implied_gpus():
    worker = render(resources={"requests": {"cpu": "6", "memory": "30Gi"}, "limits": {"memory": "32Gi"}})["spec"]["worker"]
    assert worker["resources"] == {"requests": {"cpu": "6", "memory": "30Gi", "nvidia.com/gpu": "1"},
                                   "limits": {"memory": "32Gi", "nvidia.com/gpu": "1"}}


def test_instance_types_and_node_affinity_place_the_endpoint_and_its_nvme_daemonset():
    # GIVEN two candidates that agree WHEN rendered THEN instanceTypes is written and no instanceType
    cr = render(instanceType=None, instanceTypes=["ml.g5.8xlarge", "ml.g5.4xlarge"])
    assert cr["spec"]["instanceTypes"] == ["ml.g5.8xlarge", "ml.g5.4xlarge"] and "instanceType" not in cr["spec"]
    assert cr["spec"]["worker"]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    ep = endpoint(instanceType=None, instanceTypes=["ml.g5.8xlarge", "ml.g5.4xlarge"])
    assert placement(ep)["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][0]["values"] == ["ml.g5.8xlarge", "ml.g5.4xlarge"]
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}]}]}}
    cr = render(instanceType=None, nodeAffinity=affinity, resources={"gpus": 2})
    assert cr["spec"]["nodeAffinity"] == affinity
    assert placement(endpoint(instanceType=None, nodeAffinity=affinity, resources={"gpus": 2})) == affinity


def test_a_node_affinity_with_only_preferred_terms_leaves_the_nvme_daemonset_unrestricted():
    affinity = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}]}}]}
    assert placement(endpoint(instanceType=None, nodeAffinity=affinity, resources={"gpus": 1})) == {}


def test_env_value_from_renders_as_a_core_env_var():
    cr = render(env={"PLAIN": "1", "SECRET": {"valueFrom": {"secretKeyRef": {"name": "api", "key": "k"}}}})
    env = cr["spec"]["worker"]["environmentVariables"]
    assert {"name": "PLAIN", "value": "1"} in env
    assert {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "api", "key": "k"}}} in env


def test_command_working_dir_and_port_name_render_on_the_worker():
    worker = render(runtime="custom", image="my/server:1", port=9000, command=["serve"], workingDir="/srv",
                    portName="grpc")["spec"]["worker"]
    assert worker["command"] == ["serve"] and worker["workingDir"] == "/srv"
    assert worker["modelInvocationPort"] == {"containerPort": 9000, "name": "grpc"}


def test_jumpstart_fields_render_where_its_crd_has_them():
    cr = render(kind="JumpStartModel", runtime=None, healthCheckPath="/ping", env={"SM_NUM_GPUS": "1"},
                model={"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b", "modelVersion": "2.1.0",
                                     "additionalConfigs": [{"name": "a", "value": "b"}],
                                     "gatedModelDownloadRole": "arn:aws:iam::111122223333:role/gated"}},
                acceleratorPartitionType="mig-1g.10gb", acceleratorPartitionValidation=False,
                executionRole="arn:aws:iam::111122223333:role/exec", maxDeployTimeInSeconds=1800)
    spec = cr["spec"]
    assert spec["server"] == {"instanceType": "ml.g5.8xlarge", "acceleratorPartitionType": "mig-1g.10gb",
                              "executionRole": "arn:aws:iam::111122223333:role/exec",
                              "validations": {"acceleratorPartitionValidation": False}}
    assert spec["model"]["modelVersion"] == "2.1.0" and spec["model"]["additionalConfigs"] == [{"name": "a", "value": "b"}]
    assert spec["environmentVariables"] == [{"name": "SM_NUM_GPUS", "value": "1"}]
    assert spec["loadBalancer"] == {"healthCheckPath": "/ping"} and spec["maxDeployTimeInSeconds"] == 1800
    assert crd_errors(cr, "v3.2") == []


def test_s3_prefetch_is_written_only_when_set():
    s3 = {"s3": {"bucket": "my-models", "prefix": "llama/"}}
    assert "prefetchEnabled" not in render(model=s3)["spec"]["modelSourceConfig"]
    assert render(model={"s3": {**s3["s3"], "prefetch": True}})["spec"]["modelSourceConfig"]["prefetchEnabled"] is True


# ------------------------------------------------------------------------------------------------ specOverrides
OVERRIDES = {
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "lmcache": {"mode": "MultiProcess"},
    "metricsSidecarResources": {"limits": {"memory": "256Mi"}},
    "s3UploaderResources": {"requests": {"cpu": "100m"}},
}


def test_spec_overrides_merge_last_next_to_what_the_library_writes():
    # GIVEN overrides for fields newer operators have WHEN rendered THEN merged into spec, the rest untouched
    plain = build_custom_resource(endpoint(), WIRING)
    cr = build_custom_resource(endpoint(specOverrides=OVERRIDES, specOverridesUnchecked=True), WIRING)
    assert cr["spec"]["tolerations"] == OVERRIDES["tolerations"]
    assert cr["spec"]["lmcache"] == {"mode": "MultiProcess"}
    assert {k: v for k, v in cr["spec"].items() if k not in OVERRIDES} == \
        {k: v for k, v in plain["spec"].items() if k not in OVERRIDES}
    assert crd_errors(plain, "v3.3") == []  # validated before overrides (the overrides are fields the CRD lacks)


def _crd_has(kind: str, version: str, path: list[str]) -> bool:
    node = _crd_schemas(str(require_crds()), version)[("inference.sagemaker.aws.amazon.com/v1", kind)]["properties"]["spec"]
    for p in path:
        node = (node.get("properties") or {}).get(p)
        if node is None:
            return False
    return True


@pytest.mark.parametrize("version", ["v3.2", "v3.3"])
def test_no_override_path_used_in_the_tests_exists_in_the_crds(version):
    # GIVEN the override paths the tests use WHEN looked up in both CRDs THEN absent (else it is a field to model)
    from hyperpod_inference.facts.production import override_leaves

    leaves = override_leaves(OVERRIDES)
    assert len(leaves) == 4
    for leaf in leaves:
        assert not _crd_has("InferenceEndpointConfig", version, list(leaf)), leaf
        assert not _crd_has("JumpStartModel", version, list(leaf)), leaf


def test_merge_patch_follows_rfc_7386():
    # RFC 7386 appendix A examples
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}) == {"a": {"b": "d"}}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch([1, 2], {"a": "b", "c": None}) == {"a": "b"}
    assert merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}


def test_the_documented_production_example_loads_renders_and_validates():
    # GIVEN the complete example of docs/production-settings.md WHEN loaded and rendered THEN strictly valid, with
    # exactly the warning the page announces
    import re
    from pathlib import Path

    from hyperpod_inference.config.warnings import endpoint_warnings

    page = (Path(__file__).resolve().parents[2] / "docs" / "production-settings.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if b.startswith("endpoints:"))
    data = copy.deepcopy(BASE)
    data["endpoints"] = yaml.safe_load(block)["endpoints"]
    ep = parse_config(data).endpoints[0]
    assert [w.id for w in endpoint_warnings(ep)] == ["placementRegistration"]
    cr = build_custom_resource(ep, WIRING)
    assert crd_errors(cr, "v3.3") == []
    spec = cr["spec"]
    assert spec["autoScalingSpec"]["minReplicaCount"] == 0 and spec["instanceTypes"] == ["ml.g5.12xlarge",
                                                                                         "ml.g6.12xlarge"]
    assert spec["worker"]["resources"]["limits"] == {"nvidia.com/gpu": "4"}
    assert spec["metrics"]["modelMetrics"] == {"port": 8000}


def test_a_whole_stack_with_production_fields_synthesizes_and_its_review_manifest_shows_the_overrides(tmp_path):
    # GIVEN the documented example plus specOverrides beside the default endpoint WHEN synthesized (cdk-nag on)
    import re
    from pathlib import Path

    from tests.synth_helpers import synth_config

    page = (Path(__file__).resolve().parents[2] / "docs" / "production-settings.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", page, re.S) if b.startswith("endpoints:"))
    data = copy.deepcopy(BASE)
    (ep,) = yaml.safe_load(block)["endpoints"]
    ep["specOverrides"] = {"tolerations": OVERRIDES["tolerations"]}
    ep["specOverridesUnchecked"] = True  # tolerations come with operator v3.7; the config stays on v3.3
    data["endpoints"].append(ep)
    synth = synth_config(data, tmp_path / "out")
    # THEN the review manifest carries the custom resource with the production fields and the override
    (cr,) = [o for o in synth.custom_resources() if o["metadata"]["name"] == "llama-chat"]
    assert cr["spec"]["tolerations"] == OVERRIDES["tolerations"]
    assert cr["spec"]["autoScalingSpec"]["cloudWatchTrigger"]["metricName"] == "Invocations"
    assert crd_errors({**cr, "spec": {k: v for k, v in cr["spec"].items() if k != "tolerations"}}, "v3.3") == []
