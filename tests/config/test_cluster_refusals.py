"""What the cluster would refuse after a deploy, refused by the config instead: requests beyond the instance,
placement values no node carries, probe ports nothing serves, tags SageMaker refuses, autoscaling ranges that never
run a pod; and the unwise-but-accepted ones warned. Each case names the YAML path and the rule."""

from __future__ import annotations

import pytest

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.config.warnings import endpoint_warnings
from hyperpod_inference.facts import instances
from tests.config.test_production_config import config, jumpstart


def problems(data) -> dict[str, str]:
    try:
        parse_config(data, "hyperpod.yaml")
    except ConfigError as err:
        return dict(err.problems)
    return {}


def warnings_of(data) -> dict[str, str]:
    ep = parse_config(data).endpoints[0]
    return {w.id: f"{w.path}: {w.message}" for w in endpoint_warnings(ep)}


def affinity(*values: str, operator: str = "In") -> dict:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "node.kubernetes.io/instance-type", "operator": operator, "values": list(values)}]}]}}


# (id, config, path, words): each is accepted by the code before these rules and fails on the cluster
REFUSED = [
    ("gpus-above-the-instance", config(instanceType="ml.g5.12xlarge", resources={"gpus": 8}),
     "endpoints[0].resources.gpus", "ml.g5.12xlarge has 4"),
    ("gpu-limit-above-the-instance", config(instanceType="ml.g5.12xlarge", resources={
        "requests": {"nvidia.com/gpu": 6}, "limits": {"nvidia.com/gpu": 6}}),
     "endpoints[0].resources.limits.nvidia.com/gpu", "has 4"),
    ("cpu-above-the-instance", config(resources={"cpu": "32"}), "endpoints[0].resources.cpu",
     "more than ml.g5.8xlarge can give a pod"),
    ("memory-above-what-is-left-after-the-reserve", config(resources={"memory": "127Gi"}),
     "endpoints[0].resources.memory", "after the node's reserve"),
    ("memory-limit-alone-is-the-request", config(resources={"limits": {"memory": "200Gi"}}),
     "endpoints[0].resources.limits.memory", "more than"),
    ("smallest-candidate-decides", config(instanceType=None, instanceTypes=["ml.g5.12xlarge", "ml.g5.24xlarge"],
                                          resources={"cpu": "60"}),
     "endpoints[0].resources.cpu", "the smallest candidate (ml.g5.12xlarge, ml.g5.24xlarge)"),
    ("instance-type-typo-at-instance-type", config(instanceType="ml.g5.12xlarg"), "endpoints[0].instanceType",
     "did you mean ml.g5.12xlarge?"),
    ("instance-types-typo", config(instanceType=None, instanceTypes=["ml.g5.8xlarge", "ml.g6.8xlarg"]),
     "endpoints[0].instanceTypes[1]", "did you mean ml.g6.8xlarge?"),
    ("affinity-value-without-ml-prefix", config(instanceType=None, nodeAffinity=affinity("g5.8xlarge")),
     "endpoints[0].nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].values[0]", "did you mean ml.g5.8xlarge?"),
    ("affinity-not-in-value-typo", config(instanceType=None, resources={"gpus": 1}, nodeAffinity={
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [
            {"key": "node.kubernetes.io/instance-type", "operator": "NotIn", "values": ["ml.p4d.24xlarg"]}]}}]}),
     "endpoints[0].nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]"
     ".values[0]", "did you mean ml.p4d.24xlarge?"),
    ("pd-decode-memory-above-the-instance", config(pdSpec={
        "prefillSpec": {"replicas": 1}, "decodingSpec": {"resources": {"requests": {"memory": "200Gi"}}}}),
     "endpoints[0].pdSpec.decodingSpec.resources.requests.memory", "more than ml.g5.8xlarge can give a pod"),
    ("jumpstart-instance-type-typo", jumpstart(instanceType="ml.g5.8xlarg"), "endpoints[0].instanceType",
     "did you mean ml.g5.8xlarge?"),
    ("readiness-probe-on-another-port", config(probes={"readinessProbe": {"httpGet": {"path": "/health",
                                                                                      "port": 9000}}}),
     "endpoints[0].probes.readinessProbe.httpGet.port", "serves port 8000"),
    ("liveness-probe-on-an-unknown-named-port", config(probes={"livenessProbe": {"tcpSocket": {"port": "metrics"}}}),
     "endpoints[0].probes.livenessProbe.tcpSocket.port", "named http"),
    ("tag-key-aws-prefix", config(tags=[{"name": "aws:team", "value": "a"}]), "endpoints[0].tags[0]",
     "reserved by AWS"),
    ("tag-key-repeated", config(tags=[{"name": "team", "value": "a"}, {"name": "team", "value": "b"}]),
     "endpoints[0].tags[1].name", "duplicate tag key"),
    ("autoscaling-zero-to-zero", config(autoScalingSpec={
        "minReplicaCount": 0, "maxReplicaCount": 0,
        "cloudWatchTrigger": {"namespace": "A", "metricName": "M", "targetValue": 1}}),
     "endpoints[0].autoScalingSpec", "maxReplicaCount 0 never runs a pod"),
]


@pytest.mark.parametrize(("data", "path", "words"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_what_the_cluster_would_refuse_is_refused_at_its_path(data, path, words):
    # GIVEN a config the cluster (or SageMaker) would refuse after a deploy WHEN validated
    found = problems(data)
    # THEN refused at the field's path, with the rule
    assert path in found, found
    assert words in found[path], found[path]


def test_the_typo_is_no_longer_reported_at_resources_gpus():
    # GIVEN the typo WHEN validated THEN the message points at instanceType, not at resources.gpus
    found = problems(config(instanceType="ml.g5.12xlarg"))
    assert "endpoints[0].resources.gpus" not in found


@pytest.mark.parametrize("changes", [
    {"probes": {"readinessProbe": {"httpGet": {"path": "/health", "port": 8000}}}},
    {"probes": {"startupProbe": {"httpGet": {"path": "/health", "port": "http"}}}},
    {"instanceType": "ml.g5.12xlarge", "resources": {"gpus": 4, "cpu": "40", "memory": "150Gi"}},
    {"instanceType": None, "nodeAffinity": affinity("ml.g5.8xlarge", "ml.g6.8xlarge")},
    {"tags": [{"name": "team", "value": "a"}, {"name": "cost-center", "value": "b"}]},
], ids=["probe-on-the-served-port", "probe-on-the-named-port", "requests-that-fit", "known-affinity-values",
        "unique-tags"])
def test_what_fits_passes(changes):
    assert problems(config(**changes)) == {}


def test_the_node_reserve_follows_the_eks_ami():
    # GIVEN a g5.8xlarge (32 vCPUs, 128 GiB) THEN 60+10+5+5+28*2.5 = 150 millicores and 255+11*250+100 MiB are kept
    cpu, memory = instances.allocatable(instances.INSTANCES["ml.g5.8xlarge"])
    assert cpu == pytest.approx(32 - 0.150)
    assert memory == 128 * 2**30 - (255 + 11 * 250 + 100) * 2**20
    # and a small node runs at most 110 pods
    assert instances.reserved_memory_mib(8) == 255 + 11 * 110 + 100


def test_every_table_entry_has_vcpus_and_memory():
    assert all(f.vcpus > 0 and f.memory_gib > 0 for f in instances.INSTANCES.values())
    assert (instances.INSTANCES["ml.g5.12xlarge"].vcpus, instances.INSTANCES["ml.g5.12xlarge"].memory_gib) == (48, 192)


# --- warned ---------------------------------------------------------------------------------------------------
WARNED = [
    ("requestNearInstanceLimit", config(resources={"cpu": "30"}), "resources.cpu: 30 is within 10%"),
    ("kvawareWithoutKvCache", config(intelligentRoutingSpec={"enabled": True, "routingStrategy": "kvaware"}),
     "intelligentRoutingSpec.routingStrategy: kvaware"),
    ("metricsPortUnserved", config(metrics={"enabled": True, "modelMetrics": {"port": 9400}}),
     "metrics.modelMetrics.port: port 9400 is not the port the model server serves (8000"),
]


@pytest.mark.parametrize(("wid", "data", "words"), WARNED, ids=[w[0] for w in WARNED])
def test_unwise_settings_are_warned_with_their_id(wid, data, words):
    found = warnings_of(data)
    assert wid in found and found[wid].startswith(words), found


def test_kvaware_with_a_kv_cache_and_the_served_metrics_port_are_not_warned():
    found = warnings_of(config(intelligentRoutingSpec={"enabled": True, "routingStrategy": "kvaware"},
                               kvCacheSpec={"enableL1Cache": True},
                               metrics={"enabled": True, "modelMetrics": {"port": 8000}}))
    assert not {"kvawareWithoutKvCache", "metricsPortUnserved", "requestNearInstanceLimit"} & set(found)


@pytest.mark.parametrize(("version", "refused"), [("1.29", True), ("1.39", True), ("1.33", False), ("1.37", False)])
def test_a_kubernetes_version_no_published_kubectl_layer_serves_is_refused(version, refused):
    data = config()
    data["cluster"] = {**data["cluster"], "kubernetesVersion": version}
    found = problems(data)
    assert ("cluster.kubernetesVersion" in found) is refused, found
    if refused:
        assert "no published kubectl layer serves Kubernetes" in found["cluster.kubernetesVersion"]
