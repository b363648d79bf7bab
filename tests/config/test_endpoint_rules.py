"""The rules of one endpoint: each refusal with its exact path and message, and the warnings no other test pins.

The production fields' refusals are tested by their words in ``test_production_config.py``; this table pins the
whole message of each rule of ``Endpoint`` that a word test leaves open, so moving a rule cannot change what a user
reads."""

from __future__ import annotations

import pytest

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.config.warnings import endpoint_warnings
from hyperpod_inference.facts import production as prod_facts
from tests.config.test_production_config import config, jumpstart, s3

HF = {"huggingface": {"modelId": "Qwen/Qwen2.5-7B-Instruct", "commitSHA": "a09a35458c702b33eeacc393d103063234e8bc28"}}
FSX = {"fsx": {"fileSystemId": "fs-0123456789abcdef0", "path": "/models/llama"}}

# (case, config, path, the whole message)
REFUSED = [
    ("jumpstart-source-on-iec", config(model={"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}}),
     "endpoints[0].model.jumpstart", "a jumpstart source needs kind: JumpStartModel"),
    ("other-source-on-jumpstart", jumpstart(model=HF), "endpoints[0].model.huggingface",
     "kind: JumpStartModel takes only a jumpstart source"),
    ("iec-field-on-jumpstart", jumpstart(image="my/server:1"), "endpoints[0].image",
     "not a field of kind: JumpStartModel (JumpStart picks the container and places it on instanceType)"),
    ("jumpstart-field-on-iec", config(acceleratorPartitionValidation=True), "endpoints[0].acceleratorPartitionValidation",
     "not a field of kind: InferenceEndpointConfig (JumpStartModel only)"),
    ("daemonset-on-jumpstart", jumpstart(weightCache={"mode": "daemonset"}), "endpoints[0].weightCache.mode",
     "daemonset needs spec.kubernetes, which kind: JumpStartModel does not have"),
    ("jumpstart-env-value-from", jumpstart(env={"A": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}}),
     "endpoints[0].env.A", "kind: JumpStartModel takes only string values (no valueFrom)"),
    ("jumpstart-env-too-many", jumpstart(env={f"V{i}": "x" for i in range(prod_facts.JSM_ENV_MAX + 1)}),
     "endpoints[0].env", f"kind: JumpStartModel takes at most {prod_facts.JSM_ENV_MAX} variables"),
    ("no-placement", config(instanceType=None), "endpoints[0].instanceType",
     "give exactly one of instanceType, instanceTypes, nodeAffinity"),
    ("jumpstart-without-instance-type", jumpstart(instanceType=None), "endpoints[0].instanceType",
     "required with kind: JumpStartModel"),
    ("two-placements", config(instanceTypes=["ml.g5.8xlarge"]), "endpoints[0].instanceTypes",
     "exclusive with instanceType (give exactly one of instanceType, instanceTypes, nodeAffinity)"),
    ("instance-type-typo", config(instanceType="ml.g5.8xlarg"), "endpoints[0].instanceType",
     "ml.g5.8xlarg is not a known HyperPod cluster instance type; did you mean ml.g5.8xlarge?"),
    ("instance-type-unlike-any", config(instanceType="ml.zzzzzz.q"), "endpoints[0].instanceType",
     "ml.zzzzzz.q is not a known HyperPod cluster instance type (HyperPod nodes carry ml.* instance types)"),
    ("neuron-preset", config(instanceType="ml.trn1.32xlarge"), "endpoints[0].runtime",
     "Neuron instances need runtime: custom with a Neuron image (the presets are CUDA images)"),
    ("more-gpus-than-the-instance", config(resources={"gpus": 4}), "endpoints[0].resources.gpus",
     "4 nvidia.com/gpu requested, and ml.g5.8xlarge has 1: the pod never schedules"),
    ("probe-on-another-port", config(probes={"livenessProbe": {"httpGet": {"port": 9000}}}),
     "endpoints[0].probes.livenessProbe.httpGet.port",
     "the container serves port 8000 (named http); a probe on 9000 finds nothing there and never succeeds"),
    ("duplicate-tag", config(tags=[{"name": "team", "value": "a"}, {"name": "team", "value": "b"}]),
     "endpoints[0].tags[1].name", "duplicate tag key 'team' (also tags[0]); SageMaker refuses repeated keys"),
    ("custom-without-image", config(runtime="custom", port=8080), "endpoints[0].image", "required with runtime: custom"),
    ("custom-without-port", config(runtime="custom", image="my/server:1"), "endpoints[0].port",
     "required with runtime: custom"),
    ("command-with-a-preset", config(command=["python3", "serve.py"]), "endpoints[0].command",
     "only with runtime: custom (the runtime preset sets the command)"),
    ("kv-cache-with-tgi", config(runtime="tgi", kvCacheSpec={"enableL1Cache": True}), "endpoints[0].kvCacheSpec",
     "not supported with runtime: tgi (the operator's KV cache is LMCache in vLLM)"),
    ("preset-flag", config(args=["--port", "9000"]), "endpoints[0].args[0]",
     "--port is set by the vllm preset; use the config key port instead"),
    ("tgi-preset-env", config(runtime="tgi", env={"NUM_SHARD": "2"}), "endpoints[0].env.NUM_SHARD",
     "NUM_SHARD is set by the tgi preset; use the config key resources.gpus instead"),
    ("capture-without-endpoint-name", config(sagemakerEndpointName=None, verify=None),
     "endpoints[0].sagemakerEndpointName",
     "required by dataCapture.sagemakerEndpoint (tier 1 captures at the SageMaker endpoint)"),
    ("verify-without-endpoint-name", config(sagemakerEndpointName=None, dataCapture=None),
     "endpoints[0].sagemakerEndpointName", "required by verify (it invokes the SageMaker endpoint)"),
    ("daemonset-fsx-without-node-path", config(model=FSX, weightCache={"mode": "daemonset"}),
     "endpoints[0].model.fsx.nodePath",
     "required with weightCache.mode: daemonset (the agent copies from the node's FSx mount)"),
    ("operator-cache-of-a-hub-model", config(weightCache={"mode": "operator"}), "endpoints[0].weightCache.mode",
     "operator mode caches S3/FSx/JumpStart sources; for a Hugging Face model use daemonset"),
    ("operator-cache-placement-unknown", config(model=s3(), weightCache={"mode": "operator"}, instanceType=None,
                                                resources={"gpus": 1}, nodeAffinity={
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}]}]}}),
     "endpoints[0].weightCache.mode", "operator mode needs instances with instance-store NVMe (the operator's cache "
     "does not support EBS-only instances); the placement is not known to have it"),
    ("override-of-a-written-path", config(specOverrides={"replicas": 2}), "endpoints[0].specOverrides.replicas",
     "spec.replicas is written or modelled by the library; use replicas"),
    ("fsx-path-with-dot-segments", config(model={"fsx": {**FSX["fsx"], "path": "/models/../etc"}}),
     "endpoints[0].model.fsx.path", "must not contain '.' or '..' segments (a folder of the file system, written as "
     "an absolute path from its root)"),
]


@pytest.mark.parametrize(("case", "data", "path", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_each_endpoint_rule_refuses_with_its_path_and_whole_message(case, data, path, message):
    # GIVEN an endpoint breaking one rule WHEN the config is loaded THEN that rule's problem is reported, word for word
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert [m for p, m in err.value.problems if p == path] == [message], err.value.problems


def test_one_endpoint_breaking_several_rules_gets_each_problem_in_the_rules_order():
    # GIVEN a JumpStart endpoint without an instance type, with a model-server image and a daemonset cache
    data = jumpstart(instanceType=None, image="my/server:1", weightCache={"mode": "daemonset"})
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    # THEN the kind's fields, the kind's cache, then the placement: one line each, in that order
    assert [p for p, _ in err.value.problems if p.startswith("endpoints[0].")] == [
        "endpoints[0].image", "endpoints[0].weightCache.mode", "endpoints[0].instanceType"]


def _warnings(data) -> dict[str, tuple[str, str]]:
    return {w.id: (w.path, w.message) for w in endpoint_warnings(*_endpoint_and_config(data))}


def _endpoint_and_config(data):
    parsed = parse_config(data)
    return parsed.endpoints[0], parsed


def test_alarm_tuning_on_an_endpoint_without_a_sagemaker_name_warns_that_only_prometheus_watches_it():
    # GIVEN alarms going to a created topic and an endpoint tuning its alarms without a SageMaker endpoint name
    data = config(sagemakerEndpointName=None, verify=None, dataCapture=None, alarms={"p99LatencyMs": 2000})
    data["observability"] = {"alarms": {"createTopic": True}}
    # THEN it is warned: CloudWatch alarms cannot find its metrics
    assert _warnings(data)["alarmsNeedEndpointName"] == (
        "alarms", "CloudWatch alarms read AWS/SageMaker metrics by endpoint name: this endpoint has no "
                  "sagemakerEndpointName, so only Prometheus alerting rules (with prometheusWorkspaceArn) watch it")
    # AND with its alarms turned off it is not
    data["endpoints"][0]["alarms"] = {"enabled": False}
    assert "alarmsNeedEndpointName" not in _warnings(data)


def test_a_cache_root_shared_across_namespaces_warns():
    # GIVEN the daemonset cache with one root for every namespace
    data = config(weightCache={"mode": "daemonset", "shareAcrossNamespaces": True})
    # THEN it is warned, naming the root the namespaces share
    assert _warnings(data)["shareAcrossNamespaces"] == (
        "weightCache.shareAcrossNamespaces", "every namespace's models share one cache root (/opt/dlami/nvme): this "
                                             "endpoint's pods mount the models of other namespaces, and theirs mount "
                                             "this one's")
