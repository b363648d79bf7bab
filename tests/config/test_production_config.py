"""The production fields' cross-field rules: each invalid config is refused with the field's path and the rule; each
unwise-but-accepted one gives a warning with its stable ID."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.config.warnings import endpoint_warnings
from tests.synth_helpers import with_endpoint_changes

REPO = Path(__file__).resolve().parents[2]
DEFAULT = yaml.safe_load((REPO / "hyperpod.yaml").read_text())
DEFAULT["endpoints"][0].pop("autoScalingSpec")  # the default config's own trigger: each test sets what it tests
AMP = "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0123abcd"
CW = {"namespace": "AWS/SageMaker", "metricName": "Invocations", "targetValue": 100,
      "dimensions": [{"name": "EndpointName", "value": "qwen-chat"}, {"name": "VariantName", "value": "AllTraffic"}]}
#: The default config's old trigger: an ALB metric with no dimensions, which is never published.
ALB = {"namespace": "AWS/ApplicationELB", "metricName": "RequestCountPerTarget", "targetValue": 100}
PROM = {"serverAddress": AMP, "query": "sum(rate(vllm:num_requests_running[1m]))", "targetValue": 10}


def config(*, version: str | None = None, **changes):
    """The default config, its first endpoint changed (a value None deletes the key)."""
    data = with_endpoint_changes(DEFAULT, **changes)
    if version:
        data.setdefault("operator", {})["version"] = version
    return data


def jumpstart(**changes):
    base = {"kind": "JumpStartModel", "runtime": None, "model": {"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}}}
    return config(**{**base, **changes})


def s3(**extra):
    return {"s3": {"bucket": "my-models", "prefix": "llama/", **extra}}


NA = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["ml.g5.8xlarge", "ml.g5.12xlarge"]}]}]}}

# (id, config, expected path, words in the message)
INVALID = [
    ("no-placement", config(instanceType=None), "endpoints[0].instanceType", "exactly one of instanceType"),
    ("instance-type-and-types", config(instanceTypes=["ml.g5.8xlarge"]), "endpoints[0].instanceTypes",
     "exclusive with instanceType"),
    ("instance-type-and-affinity", config(nodeAffinity=NA), "endpoints[0].nodeAffinity", "exclusive with instanceType"),
    ("min-above-max", config(autoScalingSpec={"minReplicaCount": 4, "maxReplicaCount": 2}),
     "endpoints[0].autoScalingSpec", "must not exceed maxReplicaCount"),
    ("min-above-default-max", config(autoScalingSpec={"minReplicaCount": 6}), "endpoints[0].autoScalingSpec",
     "default is 5"),
    ("cloudwatch-needs-namespace", config(autoScalingSpec={"cloudWatchTrigger": {**CW, "namespace": None}}),
     "endpoints[0].autoScalingSpec.cloudWatchTrigger.namespace", ""),
    ("alb-trigger-without-dimensions", config(autoScalingSpec={"cloudWatchTrigger": ALB}),
     "endpoints[0].autoScalingSpec.cloudWatchTrigger.dimensions",
     "with no dimensions this trigger never gets a value. Scale on namespace: AWS/SageMaker, metricName: Invocations, "
     "dimensions EndpointName: qwen-chat and VariantName: AllTraffic"),
    ("alb-trigger-in-a-list", config(autoScalingSpec={"cloudWatchTriggerList": [CW, ALB]}),
     "endpoints[0].autoScalingSpec.cloudWatchTriggerList[1].dimensions", "prometheusTrigger over the pod metrics"),
    ("alb-trigger-no-sagemaker-name", config(sagemakerEndpointName=None, dataCapture=None, verify=None,
                                             autoScalingSpec={"cloudWatchTrigger": ALB}),
     "endpoints[0].autoScalingSpec.cloudWatchTrigger.dimensions", "AWS/SageMaker Invocations (set sagemakerEndpointName)"),
    ("sagemaker-trigger-without-variant", config(autoScalingSpec={"cloudWatchTrigger": {
        **CW, "dimensions": [{"name": "EndpointName", "value": "qwen-chat"}]}}),
     "endpoints[0].autoScalingSpec.cloudWatchTrigger.dimensions", "add VariantName (EndpointName: qwen-chat, "
                                                                   "VariantName: AllTraffic)"),
    ("sagemaker-trigger-without-a-sagemaker-endpoint", config(
        sagemakerEndpointName=None, dataCapture=None, verify=None,
        autoScalingSpec={"cloudWatchTrigger": {**CW, "dimensions": None}}),
     "endpoints[0].autoScalingSpec.cloudWatchTrigger.dimensions", "this endpoint has no sagemakerEndpointName"),
    ("router-alb-trigger", config(intelligentRoutingSpec={"enabled": True, "autoScalingSpec": {
        "cloudWatchTrigger": ALB}}),
     "endpoints[0].intelligentRoutingSpec.autoScalingSpec.cloudWatchTrigger.dimensions", "never gets a value"),
    ("cloudwatch-needs-metric", config(autoScalingSpec={"cloudWatchTriggerList": [{"namespace": "A", "targetValue": 1}]}),
     "endpoints[0].autoScalingSpec.cloudWatchTriggerList[0].metricName", "Field required"),
    ("cloudwatch-needs-target", config(autoScalingSpec={"cloudWatchTrigger": {"namespace": "A", "metricName": "M"}}),
     "endpoints[0].autoScalingSpec.cloudWatchTrigger.targetValue", "Field required"),
    ("prometheus-needs-query", config(autoScalingSpec={"prometheusTrigger": {"serverAddress": AMP, "targetValue": 1}}),
     "endpoints[0].autoScalingSpec.prometheusTrigger.query", "Field required"),
    ("prometheus-needs-workspace-url", config(autoScalingSpec={"prometheusTrigger": {**PROM,
                                                                                     "serverAddress": "http://prom:9090"}}),
     "endpoints[0].autoScalingSpec.prometheusTrigger.serverAddress", "Amazon Managed Prometheus workspace URL"),
    ("prometheus-other-region", config(intelligentRoutingSpec={"enabled": True, "autoScalingSpec": {
        "prometheusTriggerList": [{**PROM, "serverAddress": AMP.replace("us-west-2", "eu-west-1")}]}}),
     "endpoints[0].intelligentRoutingSpec.autoScalingSpec.prometheusTriggerList[0].serverAddress", "env.region"),
    ("two-autoscaling-specs", config(autoScalingSpec={"maxReplicaCount": 3},
                                     intelligentRoutingSpec={"enabled": True, "autoScalingSpec": {"maxReplicaCount": 3}}),
     "endpoints[0].intelligentRoutingSpec.autoScalingSpec", "give autoscaling once"),
    ("kv-cache-with-tgi", config(runtime="tgi", kvCacheSpec={"enableL1Cache": True}), "endpoints[0].kvCacheSpec",
     "runtime: tgi"),
    ("kv-cache-with-sglang", config(runtime="sglang", kvCacheSpec={}), "endpoints[0].kvCacheSpec", "runtime: sglang"),
    ("l2-without-spec", config(kvCacheSpec={"enableL2Cache": True}), "endpoints[0].kvCacheSpec", "needs l2CacheSpec"),
    ("l2-backend-case", config(kvCacheSpec={"l2CacheSpec": {"l2CacheBackend": "Redis"}}),
     "endpoints[0].kvCacheSpec.l2CacheSpec.l2CacheBackend", "'redis' or 'tieredstorage'"),
    ("requests-above-limits", config(resources={"requests": {"memory": "512Gi"}, "limits": {"memory": "100Gi"}}),
     "endpoints[0].resources.requests", "must not exceed limits"),
    ("gpu-request-not-limit", config(resources={"requests": {"nvidia.com/gpu": 4}, "limits": {"nvidia.com/gpu": 8}}),
     "endpoints[0].resources.requests", "requests = limits"),
    ("pd-requests-above-limits", config(pdSpec={"prefillSpec": {"resources": {"requests": {"cpu": "4"},
                                                                              "limits": {"cpu": "2"}}},
                                                "decodingSpec": {}}),
     "endpoints[0].pdSpec.prefillSpec.resources", "must not exceed limits"),
    ("shorthand-and-detailed", config(resources={"cpu": "4", "requests": {"cpu": "4"}}), "endpoints[0].resources.cpu",
     "not both"),
    ("gpus-twice", config(resources={"gpus": 2, "requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 2}}),
     "endpoints[0].resources.gpus", "give the accelerator count once"),
    ("args-port", config(args=["--port", "9000"]), "endpoints[0].args[0]", "use the config key port"),
    ("args-port-equals", config(args=["--max-model-len", "4096", "--port=9000"]), "endpoints[0].args[2]",
     "use the config key port"),
    ("args-host", config(args=["--host", "127.0.0.1"]), "endpoints[0].args[0]", "--host is set by the vllm preset"),
    ("args-model", config(args=["--model", "/x"]), "endpoints[0].args[0]", "use the config key model"),
    ("args-model-path", config(runtime="sglang", args=["--model-path=/x"]), "endpoints[0].args[0]", "config key model"),
    ("args-served-name", config(args=["--served-model-name", "x"]), "endpoints[0].args[0]", "name"),
    ("args-tp", config(args=["-tp", "2"]), "endpoints[0].args[0]", "resources.gpus"),
    ("args-tp-long", config(args=["--tensor-parallel-size=2"]), "endpoints[0].args[0]", "resources.gpus"),
    ("args-tp-sglang", config(runtime="sglang", args=["--tp", "2"]), "endpoints[0].args[0]", "resources.gpus"),
    ("args-tp-size", config(runtime="sglang", args=["--tp-size", "2"]), "endpoints[0].args[0]", "resources.gpus"),
    ("tgi-env-port", config(runtime="tgi", env={"PORT": "9000"}), "endpoints[0].env.PORT", "config key port"),
    ("tgi-env-shards", config(runtime="tgi", env={"NUM_SHARD": "2"}), "endpoints[0].env.NUM_SHARD", "resources.gpus"),
    ("tgi-env-model", config(runtime="tgi", env={"MODEL_ID": "x"}), "endpoints[0].env.MODEL_ID", "config key model"),
    ("tgi-env-hf-model", config(runtime="tgi", env={"HF_MODEL_ID": "x"}), "endpoints[0].env.HF_MODEL_ID", "model"),
    ("idle-timeout-on-v3.2", config(version="v3.2", loadBalancer={"idleTimeoutSeconds": 120}),
     "endpoints[0].loadBalancer.idleTimeoutSeconds", "needs operator.version v3.3"),
    ("image-cache-on-v3.2", config(version="v3.2", imageCache={"enabled": True}), "endpoints[0].imageCache",
     "needs operator.version v3.3"),
    ("health-check-twice", config(healthCheckPath="/health", loadBalancer={"healthCheckPath": "/ping"}),
     "endpoints[0].loadBalancer.healthCheckPath", "give the health check path once"),
    ("probes-on-jumpstart", jumpstart(probes={"livenessProbe": {"httpGet": {"port": 8080}}}), "endpoints[0].probes",
     "not a field of kind: JumpStartModel"),
    ("instance-types-on-jumpstart", jumpstart(instanceType=None, instanceTypes=["ml.g5.8xlarge"]),
     "endpoints[0].instanceTypes", "not a field of kind: JumpStartModel"),
    ("execution-role-on-iec", config(executionRole="arn:aws:iam::111122223333:role/jumpstart"),
     "endpoints[0].executionRole", "JumpStartModel only"),
    ("jumpstart-env-value-from", jumpstart(env={"A": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}}),
     "endpoints[0].env.A", "only string values"),
    ("command-without-custom", config(command=["python3", "serve.py"]), "endpoints[0].command", "runtime: custom"),
    ("neuron-needs-custom", config(instanceType="ml.trn1.32xlarge"), "endpoints[0].runtime", "runtime: custom"),
    ("nvidia-gpu-on-trainium", config(instanceType="ml.trn1.32xlarge", runtime="custom", image="my/neuron:1", port=8080,
                                      resources={"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 1}}),
     "endpoints[0].resources.requests", "nvidia.com/gpu does not exist on ml.trn1.32xlarge"),
    ("unknown-instance-type", config(instanceType="ml.m5.xlarge", runtime="custom", image="my/cpu-server:1", port=8080),
     "endpoints[0].resources.gpus",
     "ml.m5.xlarge has no accelerator facts"),
    ("candidates-disagree", config(instanceType=None, instanceTypes=["ml.p4d.24xlarge", "ml.g5.12xlarge"]),
     "endpoints[0].resources.gpus", "do not all agree"),
    ("affinity-without-instance-types", config(instanceType=None, nodeAffinity={
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}]}]}}),
     "endpoints[0].resources.gpus", "nodeAffinity does not restrict"),
    ("operator-cache-without-nvme", config(model=s3(), weightCache={"mode": "operator"}, instanceType="ml.m5.xlarge",
                                           resources={"gpus": 0}, runtime="custom", image="my/cpu-server:1",
                                           port=8080),
     "endpoints[0].weightCache.mode", "instance-store NVMe"),
    ("override-modelled-path", config(specOverrides={"worker": {"resources": {"limits": {"cpu": "2"}}}}),
     "endpoints[0].specOverrides.worker.resources.limits.cpu", "use resources"),
    ("override-replaces-modelled-subtree", config(specOverrides={"kubernetes": None}),
     "endpoints[0].specOverrides.kubernetes", "use weightCache"),
    ("override-replaces-array", config(specOverrides={"kubernetes": {"volumes": []}}),
     "endpoints[0].specOverrides.kubernetes.volumes", "use weightCache"),
    ("override-jumpstart-server", jumpstart(specOverrides={"server": {"instanceType": "ml.g5.2xlarge"}}),
     "endpoints[0].specOverrides.server.instanceType", "use instanceType"),
    ("probe-two-handlers", config(probes={"startupProbe": {"httpGet": {"port": 8000}, "tcpSocket": {"port": 8000}}}),
     "endpoints[0].probes.startupProbe", "exactly one of exec, httpGet"),
    ("env-two-sources", config(env={"A": {"valueFrom": {"secretKeyRef": {"name": "s", "key": "k"},
                                                        "fieldRef": {"fieldPath": "metadata.name"}}}}),
     "endpoints[0].env.A.valueFrom", "exactly one of secretKeyRef"),
    ("affinity-in-without-values", config(instanceType=None, resources={"gpus": 1}, nodeAffinity={
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In"}]}]}}),
     "endpoints[0].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0]", "needs values"),
    ("affinity-misspelled-instance-type-label", config(instanceType=None, resources={"gpus": 1}, nodeAffinity={
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [
            {"key": "node.kubernetes.io/instanceType", "operator": "In", "values": ["ml.g5.8xlarge"]}]}}]}),
     "endpoints[0].nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]",
     "it is node.kubernetes.io/instance-type"),
    ("initial-replica-count-not-offered", config(InitialReplicaCount=2), "endpoints[0].InitialReplicaCount",
     "unknown key"),
]


def _strip_nulls(node):
    """Nested ``None`` values in the table mean "leave the key out" (top-level ones are handled by config())."""
    if isinstance(node, dict):
        return {k: _strip_nulls(v) for k, v in node.items()
                if v is not None or k == "kubernetes"}  # specOverrides' null is a merge-patch delete
    if isinstance(node, list):
        return [_strip_nulls(v) for v in node]
    return node


@pytest.mark.parametrize(("case", "data", "path", "words"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_production_config_is_refused_naming_the_field(case, data, path, words):
    # GIVEN a config breaking one rule WHEN loaded THEN the error names the field's path and the rule
    with pytest.raises(ConfigError) as err:
        parse_config(_strip_nulls(data))
    problems = err.value.problems
    assert any(p == path and words in m for p, m in problems), problems


def test_a_field_the_release_table_dates_later_is_refused_with_no_rule_of_its_own(monkeypatch):
    # GIVEN the release table saying that a field the library already models (loadBalancer.routingAlgorithm, and a
    # field of a list's items, an autoscaling trigger's dimension value) first came with v3.3
    from hyperpod_inference.facts import operator as operator_facts

    since = {**operator_facts.FIELDS_SINCE, "spec.loadBalancer.routingAlgorithm": "v3.3",
             "spec.autoScalingSpec.cloudWatchTrigger.dimensions.value": "v3.3"}
    monkeypatch.setattr(operator_facts, "FIELDS_SINCE", since)
    # WHEN a v3.2 config sets them
    data = config(version="v3.2", loadBalancer={"routingAlgorithm": "least_outstanding_requests"},
                  autoScalingSpec={"minReplicaCount": 1, "maxReplicaCount": 2, "cloudWatchTrigger": CW})
    with pytest.raises(ConfigError) as err:
        parse_config(_strip_nulls(data))
    # THEN each is refused at its own path, naming the version (the rule reads the table, not a list of its own)
    problems = [(p, m) for p, m in err.value.problems if "needs operator.version" in m]
    assert problems == [
        ("endpoints[0].loadBalancer.routingAlgorithm", "needs operator.version v3.3 or later (have v3.2; "
                                                       "spec.loadBalancer.routingAlgorithm is not in its CRD)"),
        *((f"endpoints[0].autoScalingSpec.cloudWatchTrigger.dimensions[{i}].value",
           "needs operator.version v3.3 or later (have v3.2; spec.autoScalingSpec.cloudWatchTrigger.dimensions.value "
           "is not in its CRD)") for i in range(2)),
    ], err.value.problems


def test_the_issue_example_args_port_9000_is_refused_instead_of_rendering_two_ports():
    # GIVEN the reported config (args --port 9000 beside the preset's --port 8000) WHEN loaded THEN refused
    with pytest.raises(ConfigError) as err:
        parse_config(config(args=["--port", "9000"]))
    assert "endpoints[0].args[0]: --port is set by the vllm preset; use the config key port" in str(err.value)


def test_a_custom_runtime_may_pass_any_args_and_env():
    # GIVEN runtime: custom (no preset) WHEN args repeat preset flags THEN nothing to conflict with, accepted
    cfg = parse_config(config(runtime="custom", image="my/server:1", port=9000, args=["--port", "9000"],
                              env={"PORT": "9000"}, command=["serve"]))
    assert cfg.endpoints[0].args == ["--port", "9000"]


def test_instance_type_is_optional_when_instance_types_or_node_affinity_place_the_endpoint():
    # GIVEN candidates that agree (g5.8xlarge and g5.4xlarge: 1 GPU each) WHEN loaded THEN valid, 1 GPU derived
    ep = parse_config(config(instanceType=None, instanceTypes=["ml.g5.8xlarge", "ml.g5.4xlarge"])).endpoints[0]
    assert ep.instance_type is None and ep.accelerators == ("nvidia.com/gpu", 1)
    ep = parse_config(config(instanceType=None, nodeAffinity=NA, resources={"gpus": 1})).endpoints[0]
    assert ep.placement_types() == ["ml.g5.8xlarge", "ml.g5.12xlarge"] and ep.accelerators == ("nvidia.com/gpu", 1)


def test_the_existing_health_check_path_key_works_on_jumpstart_too():
    ep = parse_config(jumpstart(healthCheckPath="/ping")).endpoints[0]
    assert ep.health_check_path == "/ping"


def test_kv_cache_is_allowed_with_vllm_custom_and_jumpstart():
    for data in (config(kvCacheSpec={"enableL1Cache": True}),
                 config(runtime="custom", image="lmcache/vllm-openai:v0.3.7", port=8000, kvCacheSpec={}),
                 jumpstart(kvCacheSpec={"enableL2Cache": True, "l2CacheSpec": {"l2CacheBackend": "tieredstorage"}})):
        assert parse_config(data).endpoints[0].kv_cache_spec is not None


# --------------------------------------------------------------------------------------------------- warnings
def warning_ids(data) -> dict[str, str]:
    ep = parse_config(data).endpoints[0]
    return {w.id: w.path for w in endpoint_warnings(ep)}


WARNINGS = [
    ("placementRegistration", config(instanceType=None, instanceTypes=["ml.g5.8xlarge", "ml.g5.4xlarge"]),
     "instanceTypes"),
    ("replicasOutsideAutoscaling", config(replicas=1, autoScalingSpec={"minReplicaCount": 2, "maxReplicaCount": 4}),
     "replicas"),
    ("triggerSingleAndList", config(autoScalingSpec={"cloudWatchTrigger": CW, "cloudWatchTriggerList": [CW]}),
     "autoScalingSpec.cloudWatchTrigger"),
    ("activationWithMinReplicas", config(autoScalingSpec={"minReplicaCount": 1, "cloudWatchTrigger": {
        **CW, "activationTargetValue": 5}}), "autoScalingSpec.cloudWatchTrigger.activationTargetValue"),
    ("scaleToZeroVerify", config(autoScalingSpec={"minReplicaCount": 0, "cloudWatchTrigger": CW}),
     "autoScalingSpec.minReplicaCount"),
    ("kvCacheCustomRuntime", config(runtime="custom", image="lmcache/vllm-openai:v0.3.7", port=8000, kvCacheSpec={}),
     "kvCacheSpec"),
    ("l2CacheRedisIgnored", config(kvCacheSpec={"l2CacheSpec": {"l2CacheBackend": "redis"}}),
     "kvCacheSpec.l2CacheSpec.l2CacheBackend"),
    ("intelligentRouting", config(intelligentRoutingSpec={"enabled": True}), "intelligentRoutingSpec"),
    ("sagemakerFieldWithoutEndpoint", config(sagemakerEndpointName=None, verify=None, dataCapture=None,
                                             tags=[{"name": "team", "value": "a"}]), "tags"),
    ("deployTimeBeyondVerify", config(maxDeployTimeInSeconds=7200), "maxDeployTimeInSeconds"),
    ("weightCacheWithoutNvme", config(instanceType="ml.m5.xlarge", resources={"gpus": 0}, model=s3(),
                                      runtime="custom", image="my/cpu-server:1", port=8080,
                                      weightCache={"mode": "daemonset"}), "weightCache.mode"),
    ("specOverridesUnchecked", config(specOverrides={"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
                                      specOverridesUnchecked=True), "specOverridesUnchecked"),
]


@pytest.mark.parametrize(("wid", "data", "path"), WARNINGS, ids=[w[0] for w in WARNINGS])
def test_each_unwise_production_setting_warns_with_its_stable_id(wid, data, path):
    # GIVEN a valid but unwise setting WHEN the endpoint's warnings are listed THEN its ID appears at its path
    ids = warning_ids(data)
    assert ids.get(wid) == path, ids


def test_replicas_outside_the_intelligent_routing_autoscaling_range_warn_too():
    ids = warning_ids(config(replicas=9, intelligentRoutingSpec={"enabled": True, "autoScalingSpec": {
        "maxReplicaCount": 4}}))
    assert ids.get("replicasOutsideAutoscaling") == "replicas"


def test_the_default_endpoint_has_no_production_warning():
    # GIVEN none of the production fields WHEN warnings are listed THEN none of these IDs appear
    assert not set(warning_ids(config())) & {w[0] for w in WARNINGS}


def test_a_model_version_without_endpoint_name_warns_too():
    ids = warning_ids(config(sagemakerEndpointName=None, verify=None, dataCapture=None, modelVersion="1"))
    assert ids.get("sagemakerFieldWithoutEndpoint") == "modelVersion"


def test_the_spec_overrides_warning_lists_the_paths():
    ep = parse_config(config(specOverrides={"metricsSidecarResources": {"limits": {"cpu": "1"}},
                                            "lmcache": {"mode": "InProcess"}},
                             specOverridesUnchecked=True)).endpoints[0]
    (warning,) = [w for w in endpoint_warnings(ep) if w.id == "specOverridesUnchecked"]
    assert "spec.metricsSidecarResources.limits.cpu" in warning.message
    assert "spec.lmcache.mode" in warning.message


# ------------------------------------------------------------------------- operator.addonConfigurationOverrides
def operator_config(**operator):
    data = config()
    data["operator"] = {**data.get("operator", {}), **operator}
    return data


@pytest.mark.parametrize(("overrides", "path", "words"), [
    ({"executionRoleArn": "arn:aws:iam::111122223333:role/x"}, "operator.addonConfigurationOverrides.executionRoleArn",
     "use operator.executionRoleArn"),
    ({"keda": {"auth": {"aws": {"irsa": {"roleArn": "arn:aws:iam::111122223333:role/k"}}}}},
     "operator.addonConfigurationOverrides.keda.auth.aws.irsa.roleArn", "use operator.kedaRoleArn"),
    ({"alb": None}, "operator.addonConfigurationOverrides.alb", "set by the library"),
    ({"tlsCertificateS3Bucket": "b"}, "operator.addonConfigurationOverrides.tlsCertificateS3Bucket",
     "operator.tlsBucketName"),
])
def test_addon_overrides_are_refused_on_keys_the_library_sets(overrides, path, words):
    with pytest.raises(ConfigError) as err:
        parse_config(operator_config(addonConfigurationOverrides=overrides))
    assert any(p == path and words in m for p, m in err.value.problems), err.value.problems


def test_addon_overrides_need_the_addon_install():
    data = operator_config(install="existing", dependencies="existing",
                           executionRoleArn="arn:aws:iam::111122223333:role/SageMakerHyperPodInferenceOp",
                           addonConfigurationOverrides={"keda": {"resources": {}}})
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert ("operator.addonConfigurationOverrides", "only used with install: addon") in err.value.problems


def test_addon_overrides_elsewhere_are_accepted_merged_last_and_warned():
    from hyperpod_inference.config.warnings import config_warnings
    from hyperpod_inference.facts.production import merge_patch

    overrides = {"keda": {"resources": {"limits": {"memory": "1Gi"}}}, "logging": {"level": "debug"}}
    cfg = parse_config(operator_config(addonConfigurationOverrides=overrides))
    merged = merge_patch({"keda": {"enabled": True, "auth": {"aws": {}}}}, cfg.operator.addon_configuration_overrides)
    assert merged == {"keda": {"enabled": True, "auth": {"aws": {}}, "resources": {"limits": {"memory": "1Gi"}}},
                      "logging": {"level": "debug"}}
    ids = {w.id: w.message for w in config_warnings(cfg)}
    assert "keda.resources.limits.memory" in ids["addonConfigurationOverrides"]


@pytest.mark.parametrize(("version", "words"), [
    ("v1.5.0-eksbuild.1", "operator v3.4"), ("v2.0.0-eksbuild.2", "v2.x reads other configuration keys"),
    ("v2.1.0-eksbuild.1", "v2.x reads other configuration keys"),
])
def test_a_newer_addon_version_is_pinnable_with_a_warning(version, words):
    from hyperpod_inference.config.warnings import config_warnings

    cfg = parse_config(operator_config(addonVersion=version))
    (warning,) = [w for w in config_warnings(cfg) if w.id == "addonVersionUnvalidated"]
    assert words in warning.message and warning.path == "operator.addonVersion"
    assert not [w for w in config_warnings(parse_config(operator_config(addonVersion="v1.4.0-eksbuild.1")))
                if w.id == "addonVersionUnvalidated"]


def test_override_keys_with_dots_are_kept_whole():
    # GIVEN a key holding dots and a slash WHEN checked THEN it is one path segment, not a modelled path
    ep = parse_config(config(specOverrides={"metricsSidecarResources": {"kubernetes.volumes/x": "x"}},
                             specOverridesUnchecked=True))
    (warning,) = [w for w in endpoint_warnings(ep.endpoints[0]) if w.id == "specOverridesUnchecked"]
    assert "spec.metricsSidecarResources.kubernetes.volumes/x" in warning.message


def test_descriptions_come_from_attribute_docstrings_when_the_schema_is_made_as_pydantic_would_give_them():
    # GIVEN the same models twice: on the config's base (docstrings read when a schema is made) and with pydantic's
    # own use_attribute_docstrings: a docstring under a field, a field naming its own description, an inherited
    # field, a field redefined with a new docstring, a nested model and a field with no docstring
    from pydantic import BaseModel, ConfigDict, Field

    from hyperpod_inference.config.base import Strict, attribute_docstrings

    def family(base: type[BaseModel]) -> type[BaseModel]:
        class Inner(base):  # type: ignore[misc, valid-type]
            depth: int = 1
            """How deep.

            Indented second paragraph."""

        class Parent(base):  # type: ignore[misc, valid-type]
            kept: str = "a"
            """Inherited as it is."""
            redefined: str = "b"
            """The parent's words."""

        class Child(Parent):
            redefined: str = "c"
            """The child's words."""
            named: int = Field(default=0, description="Its own description.")
            """Not used: the field names one."""
            bare: int = 0
            inner: Inner | None = None
            """The nested model."""

        return Child

    class Pydantic(BaseModel):
        model_config = ConfigDict(alias_generator=Strict.model_config["alias_generator"], extra="forbid",
                                  use_attribute_docstrings=True)

    ours, theirs = family(Strict).model_json_schema(), family(Pydantic).model_json_schema()

    # THEN every property and nested model has the description pydantic gives it, and none was read at class creation
    def descriptions(schema: dict) -> dict[str, object]:
        return {f"{name}.{key}": p.get("description") for name, d in [("Child", schema), *schema["$defs"].items()]
                for key, p in d.get("properties", {}).items()}
    assert descriptions(ours) == descriptions(theirs)
    assert descriptions(ours)["Child.redefined"] == "The child's words."
    assert descriptions(ours)["Child.named"] == "Its own description."
    assert descriptions(ours)["Child.bare"] is None
    assert descriptions(ours)["Inner.depth"] == "How deep.\n\nIndented second paragraph."
    assert attribute_docstrings.cache_info().currsize > 0


def test_loading_a_config_reads_no_model_source():
    # GIVEN a fresh interpreter
    import subprocess
    import sys

    code = ("import inspect, sys\n"
            "calls = []\n"
            "real = inspect.findsource\n"
            "inspect.findsource = lambda obj: calls.append(obj) or real(obj)\n"
            "from hyperpod_inference.config import load_config\n"
            "load_config('hyperpod.yaml')\n"
            "sys.exit(len(calls))\n")

    # WHEN it imports the config models and loads hyperpod.yaml
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], timeout=120)

    # THEN no source was read (inspect.findsource is under every inspect.getsource*: descriptions are read only
    # when a schema is made)
    assert done.returncode == 0


def test_a_load_balancer_trigger_with_its_dimensions_is_accepted():
    # GIVEN the ALB metric with the target group named (the user found it after a deploy) THEN the rule lets it be
    target_group = {"name": "TargetGroup", "value": "targetgroup/k8s-inference-qwenchat/0123456789abcdef"}
    cfg = parse_config(config(autoScalingSpec={"cloudWatchTrigger": {**ALB, "dimensions": [target_group]}}))
    assert cfg.endpoints[0].auto_scaling_spec.cloud_watch_trigger.dimensions[0].name == "TargetGroup"
    # AND a namespace the table does not know is the user's to judge
    assert parse_config(config(autoScalingSpec={"cloudWatchTrigger": {
        "namespace": "AWS/SQS", "metricName": "ApproximateNumberOfMessagesVisible", "targetValue": 5}}))


def test_the_default_config_scales_on_a_metric_whose_every_dimension_it_knows():
    # GIVEN hyperpod.yaml as shipped WHEN loaded THEN its trigger reads the SageMaker endpoint's Invocations by the
    # endpoint's own sagemakerEndpointName and the one variant a HyperPod endpoint has
    ep = parse_config(yaml.safe_load((REPO / "hyperpod.yaml").read_text())).endpoints[0]
    trigger = ep.auto_scaling_spec.cloud_watch_trigger
    assert (trigger.namespace, trigger.metric_name) == ("AWS/SageMaker", "Invocations")
    assert {d.name: d.value for d in trigger.dimensions} == {"EndpointName": ep.sagemaker_endpoint_name,
                                                             "VariantName": "AllTraffic"}
