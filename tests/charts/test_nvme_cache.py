"""The NVMe cache chart: the DaemonSet warms the endpoint's nodes with the same agent code the init container runs."""

from __future__ import annotations

import copy
import json

import cdk8s
import yaml

from hyperpod_inference.charts.endpoint import SecretRef
from hyperpod_inference.charts.nvme_cache import AGENT_CODE_CONFIGMAP, NvmeAgentCode, NvmeCache, NvmeCachePlan
from hyperpod_inference.config import parse_config
from hyperpod_inference.nvme_agent import agent_source_files, model_relative_dir
from tests.k8s_validation import k8s_errors
from tests.synth_helpers import DEFAULT_CONFIG

BASE = yaml.safe_load(DEFAULT_CONFIG.read_text())
TOKEN = SecretRef("hf-token", "token")


def plan_for(model=None, token=TOKEN, sa=None, **weight_cache):
    data = copy.deepcopy(BASE)
    ep = data["endpoints"][0]
    if model is not None:
        ep["model"] = model
    ep["weightCache"].update(weight_cache)
    return NvmeCachePlan(parse_config(data).endpoints[0], "us-west-2", token, sa)


def synth(plan):
    chart = cdk8s.Chart(cdk8s.App(), "support", disable_resource_name_hashes=True)
    NvmeCache(chart, "Cache", plan=plan)
    objs = chart.to_json()
    return {o["kind"]: o for o in objs}


def test_configmap_holds_exactly_the_agent_code_the_pods_run():
    plan = plan_for()
    objs = synth(plan)
    assert json.loads(objs["ConfigMap"]["data"]["models.json"]) == [plan.spec]
    assert set(objs["ConfigMap"]["data"]) == {"models.json"}  # the code is shared per namespace
    chart = cdk8s.Chart(cdk8s.App(), "code", disable_resource_name_hashes=True)
    NvmeAgentCode(chart, "Code", namespace="inference")
    (code,) = chart.to_json()
    assert code["metadata"] == {"name": AGENT_CODE_CONFIGMAP, "namespace": "inference",
                                "labels": {"app.kubernetes.io/managed-by": "hyperpod-inference-cdk",
                                           "app.kubernetes.io/name": "nvme-agent"}}
    assert code["data"] == agent_source_files() and k8s_errors(code, "1.28") == []
    code_volume = next(v for v in plan.volumes() if v["name"] == "nvme-agent-code")
    assert code_volume["configMap"]["name"] == AGENT_CODE_CONFIGMAP
    assert [i["key"] for i in code_volume["configMap"]["items"]] == sorted(agent_source_files())
    init = plan.init_containers()[0]
    assert init["command"][:4] == ["python3", "-m", "nvme_agent", "ensure"]
    assert {"name": "nvme-agent-code", "mountPath": "/opt/nvme-agent/nvme_agent", "readOnly": True} in init["volumeMounts"]
    assert {"name": "PYTHONPATH", "value": "/opt/nvme-agent"} in init["env"]
    # AND the agent leaves the runtime image's allocator settings alone, in the DaemonSet too
    warm = objs["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
    for container in (init, warm):
        assert not {"PYTHONMALLOC", "GLIBC_TUNABLES"} & {e["name"] for e in container["env"]}


def test_daemonset_runs_on_the_endpoint_instance_type_and_is_ready_only_when_warm():
    objs = synth(plan_for())
    ds = objs["DaemonSet"]
    assert k8s_errors(ds, "1.28") == [] and k8s_errors(objs["ConfigMap"], "1.28") == []
    pod = ds["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                            "values": ["ml.g5.8xlarge"]}]}]
    container = pod["containers"][0]
    assert container["command"][3] == "warm"
    assert container["readinessProbe"]["exec"]["command"][3] == "check"
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"},
                                      "limits": {"cpu": "2", "memory": "1Gi"}}
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}}
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert ds["metadata"]["namespace"] == "inference"
    policy = objs["NetworkPolicy"]
    assert k8s_errors(policy, "1.28") == []
    assert policy["spec"]["podSelector"]["matchLabels"] == ds["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"] and not policy["spec"].get("ingress")


def test_config_hash_changes_with_the_model_so_the_daemonset_rolls():
    a = synth(plan_for())["DaemonSet"]["spec"]["template"]["metadata"]["annotations"]
    model = copy.deepcopy(BASE["endpoints"][0]["model"])
    model["huggingface"]["commitSHA"] = "b" * 40
    b = synth(plan_for(model=model))["DaemonSet"]["spec"]["template"]["metadata"]["annotations"]
    assert a["hyperpod-inference/config-hash"] != b["hyperpod-inference/config-hash"]


def test_worker_volume_is_the_models_directory_and_token_reaches_agents_only():
    plan = plan_for()
    model_volume = next(v for v in plan.volumes() if v["name"] == "nvme-model")
    assert model_volume["hostPath"] == {"path": "/opt/dlami/nvme/" + model_relative_dir(plan.spec),
                                        "type": "DirectoryOrCreate"}
    pod = synth(plan)["DaemonSet"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert {"name": "HF_TOKEN_PATH", "value": "/var/run/secrets/hf-token/token"} in container["env"]
    assert {"name": "nvme-hf-token", "secret": {"secretName": "hf-token", "defaultMode": 0o400,
                                                "items": [{"key": "token", "path": "token"}]}} in pod["volumes"]


def test_s3_model_runs_the_daemonset_with_the_model_reader_service_account():
    plan = plan_for(model={"s3": {"bucket": "my-models", "prefix": "qwen/"}}, token=None, sa="qwen-chat-model-reader")
    pod = synth(plan)["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "qwen-chat-model-reader"
    assert pod["automountServiceAccountToken"] is False  # IRSA projects its own token; the agent needs no API access
    assert "HF_TOKEN" not in json.dumps(pod)
    assert plan.spec == {"source": "s3", "bucket": "my-models", "prefix": "qwen/", "region": "us-west-2"}
