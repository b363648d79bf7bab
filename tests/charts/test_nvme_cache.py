"""The NVMe cache chart: the DaemonSet warms the endpoint's nodes with the same agent code the init container runs."""

from __future__ import annotations

import base64
import copy
import hashlib
import json

import cdk8s
import yaml

from hyperpod_inference.charts.agent_bundle import (
    AGENT_BUNDLE,
    BOOTSTRAP,
    agent_code_hash,
    bundle_files,
    shipped_source_files,
)
from hyperpod_inference.charts.endpoint import SecretRef
from hyperpod_inference.charts.nvme_cache import (
    AGENT_CODE_CONFIGMAP,
    READY_FILE,
    READY_WAIT_SECONDS,
    NvmeAgentCode,
    NvmeAgentGc,
    NvmeCache,
    NvmeCachePlan,
    agent_code_configmap_name,
    agent_code_labels,
    agent_image,
)
from hyperpod_inference.config import parse_config
from hyperpod_inference.nvme_agent import agent_source_files, model_relative_dir
from hyperpod_inference.nvme_agent.config import TOKEN_DIR
from tests.k8s_validation import k8s_errors
from tests.synth_helpers import DEFAULT_CONFIG

BASE = yaml.safe_load(DEFAULT_CONFIG.read_text())
TOKEN = SecretRef("hf-token", "token")


def plan_for(model=None, token=TOKEN, sa=None, namespace=None, **plan_kwargs):
    data = copy.deepcopy(BASE)
    ep = data["endpoints"][0]
    if model is not None:
        ep["model"] = model
    if namespace is not None:
        ep["namespace"] = namespace
        data["namespaces"] = [namespace]
    return NvmeCachePlan(parse_config(data).endpoints[0], "us-west-2", token, sa, **plan_kwargs)


def synth(plan):
    chart = cdk8s.Chart(cdk8s.App(), "support", disable_resource_name_hashes=True)
    NvmeCache(chart, "Cache", plan=plan)
    objs = chart.to_json()
    return {o["kind"]: o for o in objs}


def code_chart(**kwargs):
    chart = cdk8s.Chart(cdk8s.App(), "code", disable_resource_name_hashes=True)
    NvmeAgentCode(chart, "Code", namespace="inference", **kwargs)
    (code,) = chart.to_json()
    return code


def test_the_agent_code_configmap_is_immutable_named_by_its_hash_and_holds_the_stripped_agent():
    # GIVEN the agent code ConfigMap of a namespace, named with a prefix
    code = code_chart(name_prefix="my-stack-nvme-agent")

    # THEN it is immutable, named <prefix>-<content hash>, and its one key is the bundle of the shipped files
    assert k8s_errors(code, "1.28") == []
    assert code["immutable"] is True
    assert code["metadata"]["name"] == f"my-stack-nvme-agent-{agent_code_hash()[:10]}"
    bundle = base64.b64decode(code["binaryData"][AGENT_BUNDLE])
    assert hashlib.sha256(bundle).hexdigest() == agent_code_hash()
    assert bundle_files(bundle) == shipped_source_files()
    assert set(shipped_source_files()) == set(agent_source_files())
    # AND the default prefix keeps the previous name's stem
    assert code_chart()["metadata"]["name"] == agent_code_configmap_name() == (
        f"{AGENT_CODE_CONFIGMAP}-{agent_code_hash()[:10]}")


def test_the_pods_run_the_agent_through_the_bootstrap_pinned_to_the_code_hash():
    # GIVEN an endpoint's plan and its DaemonSet
    plan = plan_for(code_configmap_prefix="my-stack-nvme-agent")
    objs = synth(plan)
    assert json.loads(objs["ConfigMap"]["data"]["models.json"]) == [plan.spec]
    warm = objs["DaemonSet"]["spec"]["template"]["spec"]
    init = plan.init_containers()[0]

    # THEN the init container, the warm container and its readiness probe all run the bootstrap with the code hash
    bundle_path = f"/opt/nvme-agent/{AGENT_BUNDLE}"
    for command, verb in ((init["command"], "ensure"), (warm["containers"][0]["command"], "warm"),
                          (warm["containers"][0]["readinessProbe"]["exec"]["command"], "check")):
        assert command[:7] == ["python3", "-I", "-c", BOOTSTRAP, agent_code_hash(), bundle_path, verb]
    # AND the code volume is the hash-named ConfigMap, mounted read-only where the bootstrap reads it
    for volumes in (plan.volumes(), warm["volumes"]):
        code_volume = next(v for v in volumes if v["name"] == "nvme-agent-code")
        # (its one key, the bundle, appears as <mount>/<AGENT_BUNDLE>)
        assert code_volume["configMap"] == {"name": agent_code_configmap_name("my-stack-nvme-agent")}
    for mounts in (init["volumeMounts"], warm["containers"][0]["volumeMounts"]):
        assert {"name": "nvme-agent-code", "mountPath": "/opt/nvme-agent", "readOnly": True} in mounts
    # AND the agent leaves the runtime image's allocator settings alone
    for container in (init, warm["containers"][0]):
        assert not {"PYTHONMALLOC", "GLIBC_TUNABLES", "PYTHONPATH"} & {e["name"] for e in container.get("env", ())}
    # AND the bootstrap is short: it is in every agent container's command (the loader is in the hashed bundle)
    assert len(BOOTSTRAP) < 300


def test_an_fsx_models_agent_path_is_written_in_one_spelling():
    # GIVEN FSx sources whose folder is written with repeated and trailing slashes, or as the file system's root
    fsx = {"fileSystemId": "fs-0123456789abcdef0", "nodePath": "/fsx"}
    # WHEN their agent specs are made THEN the path is normalized under the mount, never the node's root
    assert plan_for(model={"fsx": {**fsx, "path": "//models//qwen/"}}).spec == {
        "source": "local", "path": "/fsx/models/qwen", "mount": "/fsx"}
    assert plan_for(model={"fsx": {**fsx, "path": "//"}}).spec == {"source": "local", "path": "/fsx", "mount": "/fsx"}


def test_each_namespace_gets_its_own_cache_root_unless_shared():
    # GIVEN the same model served in two namespaces
    plans = [plan_for(namespace=ns) for ns in ("team-a", "team-b")]

    # THEN each namespace's agent containers see only <hostPath>/<namespace> as their root (a subPath of the cache
    # volume) and <hostPath>/.usage, and its model server only the model's directory
    for plan, ns in zip(plans, ("team-a", "team-b"), strict=True):
        assert next(v for v in plan.volumes() if v["name"] == "nvme-cache-root")["hostPath"]["path"] == \
            "/opt/dlami/nvme"
        model = next(v for v in plan.volumes() if v["name"] == "nvme-model")["hostPath"]["path"]
        assert model == f"/opt/dlami/nvme/{ns}/{model_relative_dir(plan.spec)}"
        (fill,) = plan.init_containers()
        pod = synth(plan)["DaemonSet"]["spec"]["template"]["spec"]
        for container in (fill, pod["containers"][0]):
            cache = [m for m in container["volumeMounts"] if m["name"] == "nvme-cache-root"]
            assert cache == [{"name": "nvme-cache-root", "mountPath": "/cache", "subPath": ns},
                             {"name": "nvme-cache-root", "mountPath": "/usage", "subPath": ".usage"}]
            command = container["command"]
            assert command[command.index("--usage-dir"):command.index("--usage-dir") + 4] == [
                "--usage-dir", "/usage", "--root-name", ns]
        # AND by default no container mounts hostPath itself (no init container evicts the previous layout)
        assert "initContainers" not in pod
        assert k8s_errors(synth(plan)["DaemonSet"], "1.28") == []
    # AND share_across_namespaces puts them in one root again (the usage record named _shared, nothing legacy)
    shared = plan_for(namespace="team-a", share_across_namespaces=True)
    (fill,) = shared.init_containers()
    assert [m for m in fill["volumeMounts"] if m["mountPath"] == "/cache"] == [
        {"name": "nvme-cache-root", "mountPath": "/cache"}]
    assert fill["command"][fill["command"].index("--root-name") + 1] == "_shared"
    assert "initContainers" not in synth(shared)["DaemonSet"]["spec"]["template"]["spec"]


def _cache_mounts_of(pod_spec):
    """Every container's (init ones too) mounts of the cache volume: (container, mountPath, subPath)."""
    volume = next(v["name"] for v in pod_spec["volumes"] if v["name"] == "nvme-cache-root")
    return [(c["name"], m["mountPath"], m.get("subPath"))
            for c in [*pod_spec.get("initContainers", ()), *pod_spec["containers"]]
            for m in c["volumeMounts"] if m["name"] == volume]


def test_the_default_warm_daemonset_mounts_only_its_namespaces_folder_of_the_node_cache():
    # GIVEN a namespace's warm DaemonSet with the default weightCache
    pod = synth(plan_for(namespace="team-a"))["DaemonSet"]["spec"]["template"]["spec"]
    # THEN every mount of the node cache is the namespace's folder or the usage records: never hostPath itself, so
    # never another namespace's folder
    assert _cache_mounts_of(pod) == [("warm", "/cache", "team-a"), ("warm", "/usage", ".usage")]


def test_evicting_the_previous_layout_is_a_one_time_opt_in_that_alone_mounts_hostpath():
    # GIVEN the same endpoint with weightCache.evictLegacyLayout: true
    data = copy.deepcopy(BASE)
    data["endpoints"][0].update(namespace="team-a")
    data["namespaces"] = ["team-a"]
    default = NvmeCachePlan(parse_config(data).endpoints[0], "us-west-2", TOKEN, None)
    data["endpoints"][0]["weightCache"]["evictLegacyLayout"] = True
    plan = NvmeCachePlan(parse_config(data).endpoints[0], "us-west-2", TOKEN, None)
    pod = synth(plan)["DaemonSet"]["spec"]["template"]["spec"]

    # THEN its warm pods start with the evict-legacy init container, the one container that mounts hostPath itself
    (legacy,) = pod["initContainers"]
    assert legacy["command"][6:] == ["evict-legacy", "--cache-parent", "/cache-parent"]
    assert _cache_mounts_of(pod) == [("nvme-evict-legacy", "/cache-parent", None), ("warm", "/cache", "team-a"),
                                     ("warm", "/usage", ".usage")]
    assert k8s_errors(synth(plan)["DaemonSet"], "1.28") == []
    # AND it is a DaemonSet of its own (turning the option off again goes back to the default's name)
    assert plan.warm_name != default.warm_name
    # AND with one cache root shared by every namespace there is nothing to evict: no init container
    data["endpoints"][0]["weightCache"]["shareAcrossNamespaces"] = True
    shared = NvmeCachePlan(parse_config(data).endpoints[0], "us-west-2", TOKEN, None, share_across_namespaces=True)
    assert "initContainers" not in synth(shared)["DaemonSet"]["spec"]["template"]["spec"]


def test_daemonset_runs_on_the_endpoint_instance_type_and_is_ready_only_when_warm():
    objs = synth(plan_for())
    ds = objs["DaemonSet"]
    assert k8s_errors(ds, "1.28") == [] and k8s_errors(objs["ConfigMap"], "1.28") == []
    pod = ds["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                            "values": ["ml.g5.8xlarge"]}]}]
    container = pod["containers"][0]
    assert container["command"][6] == "warm"
    assert container["readinessProbe"]["exec"]["command"][6] == "check"
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


def test_the_models_configmap_is_immutable_and_named_by_its_content_so_new_models_are_a_new_configmap():
    # GIVEN one warm DaemonSet's plan, and the same plan serving another commit
    model = copy.deepcopy(BASE["endpoints"][0]["model"])
    model["huggingface"]["commitSHA"] = "b" * 40
    a, b = synth(plan_for(name_scope="s-0a1b2c")), synth(plan_for(model=model, name_scope="s-0a1b2c"))
    # THEN the models ConfigMap cannot be edited (what the root agent copies comes only from a deploy) ...
    for objs in (a, b):
        cm, ds = objs["ConfigMap"], objs["DaemonSet"]
        assert cm["immutable"] is True and k8s_errors(cm, "1.28") == []
        # ... is named after the DaemonSet and its content, and is the ConfigMap the DaemonSet mounts
        assert cm["metadata"]["name"] == f"{ds['metadata']['name']}-models-" + hashlib.sha256(
            cm["data"]["models.json"].encode()).hexdigest()[:10]
        (volume,) = [v for v in ds["spec"]["template"]["spec"]["volumes"] if v["name"] == "models"]
        assert volume["configMap"]["name"] == cm["metadata"]["name"]
    # AND other models are another ConfigMap under the same (unrenamed) DaemonSet
    assert a["DaemonSet"]["metadata"]["name"] == b["DaemonSet"]["metadata"]["name"]
    assert a["DaemonSet"]["metadata"]["name"].startswith("s-0a1b2c-nvme-warm-")
    assert a["ConfigMap"]["metadata"]["name"] != b["ConfigMap"]["metadata"]["name"]


def test_worker_volume_is_the_models_directory_and_token_reaches_agents_only():
    plan = plan_for()
    model_volume = next(v for v in plan.volumes() if v["name"] == "nvme-model")
    assert model_volume["hostPath"] == {"path": "/opt/dlami/nvme/inference/" + model_relative_dir(plan.spec),
                                        "type": "DirectoryOrCreate"}
    pod = synth(plan)["DaemonSet"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    # the agent reads the token from its default path, the Secret's mount: no variable names it
    assert {"name": "nvme-hf-token", "mountPath": TOKEN_DIR, "readOnly": True} in container["volumeMounts"]
    assert "env" not in container
    assert {"name": "nvme-hf-token", "secret": {"secretName": "hf-token", "defaultMode": 0o400}} in pod["volumes"]
    # AND a Secret whose key is not `token` is projected to the same file
    other = plan_for(token=SecretRef("my-secret", "hf"))
    assert {"name": "nvme-hf-token", "secret": {"secretName": "my-secret", "defaultMode": 0o400, "items": [
        {"key": "hf", "path": "token"}]}} in other.volumes()


def test_s3_model_runs_the_daemonset_with_the_model_reader_service_account():
    plan = plan_for(model={"s3": {"bucket": "my-models", "prefix": "qwen/"}}, token=None, sa="qwen-chat-model-reader")
    pod = synth(plan)["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "qwen-chat-model-reader"
    assert pod["automountServiceAccountToken"] is False  # IRSA projects its own token; the agent needs no API access
    assert "HF_TOKEN" not in json.dumps(pod)
    assert plan.spec == {"source": "s3", "bucket": "my-models", "prefix": "qwen/", "region": "us-west-2"}


def test_the_init_container_leases_the_model_under_the_pods_name():
    # GIVEN an endpoint's plan without the lease sidecar
    plan = plan_for(lease_sidecar=False)
    (init,) = plan.init_containers()

    # THEN ensure takes a lease named after the pod (its host name): its default, so the command names no holder
    assert init["command"][6] == "ensure" and "--lease-holder" not in init["command"]
    # AND it is a plain init container: it ends, and nothing keeps the lease after its TTL
    assert "restartPolicy" not in init and "startupProbe" not in init and "--hold" not in init["command"]


def test_by_default_the_init_container_is_a_native_sidecar_holding_the_pods_lease():
    # GIVEN an endpoint's plan (the lease sidecar is the default)
    plan = plan_for()
    (fill,) = plan.init_containers()

    # THEN the one agent container is a native sidecar (restartPolicy: Always) running `ensure --hold`: it fetches
    # the model, then keeps the pod's lease (@hostname, ensure's default holder) until the pod ends
    assert fill["name"] == "nvme-cache-fill" and fill["restartPolicy"] == "Always"
    command = fill["command"]
    assert command[6] == "ensure" and command[command.index("--hold") + 1] == READY_FILE
    assert "--lease-holder" not in command
    # AND the model server starts only once its startup probe finds the ready file, run with the agent's python3
    assert fill["startupProbe"] == {"exec": {"command": ["python3", "-I", READY_FILE]}, "periodSeconds": 1,
                                    "failureThreshold": READY_WAIT_SECONDS}
    # AND the ready file is in the pod's own emptyDir (new with each pod), not on the node
    tmp = next(m for m in fill["volumeMounts"] if READY_FILE.startswith(m["mountPath"] + "/"))
    assert next(v for v in plan.volumes() if v["name"] == tmp["name"]) == {"name": tmp["name"], "emptyDir": {}}
    # AND a pod with these init containers and volumes is valid on Kubernetes 1.29 (native sidecars' floor)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "inference"},
           "spec": {"containers": [{"name": "model", "image": "img"}], "initContainers": [fill],
                    "volumes": list(plan.volumes())}}
    assert k8s_errors(pod, "1.29") == []


def test_the_watermark_is_named_only_when_it_differs_from_the_agents_default():
    # GIVEN the config's default watermark, which is the agent's (so the command can leave it out)
    from hyperpod_inference.config.models import WeightCache
    from hyperpod_inference.nvme_agent.config import DEFAULT_MIN_FREE_PERCENT

    assert WeightCache().min_free_percent == DEFAULT_MIN_FREE_PERCENT
    (fill,) = plan_for().init_containers()
    assert "--min-free-percent" not in fill["command"]
    # WHEN an endpoint keeps 25 % free THEN its init container and its warm DaemonSet say so
    data = copy.deepcopy(BASE)
    data["endpoints"][0]["weightCache"]["minFreePercent"] = 25
    plan = NvmeCachePlan(parse_config(data).endpoints[0], "us-west-2", TOKEN, None)
    (fill,) = plan.init_containers()
    warm = synth(plan)["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
    for command in (fill["command"], warm["command"]):
        assert command[command.index("--min-free-percent") + 1] == "25"


def gc_chart(plan):
    """The code chart of a namespace as the stack builds it: the code ConfigMap and the gc Job's objects."""
    chart = cdk8s.Chart(cdk8s.App(), "code", disable_resource_name_hashes=True)
    NvmeAgentCode(chart, "Code", namespace=plan.endpoint.namespace, name_prefix=plan.code_configmap_prefix)
    NvmeAgentGc(chart, "Gc", plan=plan)
    return {o["kind"]: o for o in chart.to_json()}


def _arg(command, flag):
    return command[command.index(flag) + 1]


def test_the_gc_job_runs_the_hashed_bootstrap_non_root_in_the_image_and_on_the_nodes_of_the_agent_pods():
    # GIVEN a namespace's plan (an accelerator instance type, a runtime image) and its code chart
    plan = plan_for(code_configmap_prefix="my-stack-nvme-agent")
    objs = gc_chart(plan)
    job, code = objs["Job"], objs["ConfigMap"]

    # THEN every object is valid Kubernetes
    for obj in objs.values():
        assert k8s_errors(obj, "1.28") == [], obj["kind"]
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    command = container["command"]
    # AND its pod runs `gc` through the bootstrap pinned to the code hash, from the current code ConfigMap, keeping
    # that one and selecting exactly this stack's code ConfigMaps by their labels
    assert command[:7] == ["python3", "-I", "-c", BOOTSTRAP, agent_code_hash(), f"/opt/nvme-agent/{AGENT_BUNDLE}",
                           "gc"]
    assert _arg(command, "--current") == code["metadata"]["name"]
    assert pod["volumes"] == [{"name": "nvme-agent-code", "configMap": {"name": code["metadata"]["name"]}}]
    assert container["volumeMounts"] == [{"name": "nvme-agent-code", "mountPath": "/opt/nvme-agent",
                                          "readOnly": True}]
    selector = dict(term.split("=", 1) for term in _arg(command, "--selector").split(","))
    assert selector == agent_code_labels("my-stack-nvme-agent") and selector.items() <= code["metadata"][
        "labels"].items()
    assert not selector.items() <= gc_chart(plan_for(code_configmap_prefix="other-nvme-agent"))["ConfigMap"][
        "metadata"]["labels"].items()
    assert _arg(command, "--namespace") == "inference"
    # AND it is bounded: the agent's timeout comes before the Job's deadline, finished Jobs go after an hour
    assert float(_arg(command, "--timeout")) < job["spec"]["activeDeadlineSeconds"] <= 6 * 3600
    assert job["spec"]["ttlSecondsAfterFinished"] == 3600 and job["spec"]["backoffLimit"] <= 3
    assert pod["restartPolicy"] == "Never"
    # AND it lands where the namespace's agent pods run, in their image (already on those nodes)
    warm = synth(plan)["DaemonSet"]["spec"]["template"]["spec"]
    assert container["image"] == agent_image(plan.endpoint, "us-west-2") == warm["containers"][0]["image"]
    assert pod["affinity"] == warm["affinity"] and pod["tolerations"] == warm["tolerations"]
    # AND it runs as a fixed non-root user with nothing of the node: no hostPath, no capabilities
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True and security["runAsUser"] > 0 and security["runAsGroup"] > 0
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]} and security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert "hostPath" not in json.dumps(job) and "privileged" not in json.dumps(job)
    assert set(container["resources"]) == {"requests", "limits"}
    # AND no traffic may reach it: a deny-ingress NetworkPolicy selects exactly its pods
    policy = objs["NetworkPolicy"]
    assert policy["spec"]["podSelector"]["matchLabels"] == job["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"] and not policy["spec"].get("ingress")
    # AND only its pod gets an API token, from its own ServiceAccount
    sa = objs["ServiceAccount"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"] and pod["automountServiceAccountToken"] is True
    assert sa["automountServiceAccountToken"] is True
    assert json.dumps(warm).count("automountServiceAccountToken") == 1 and warm["automountServiceAccountToken"] is False


def test_the_gc_role_lists_what_can_mount_a_configmap_and_deletes_configmaps_only():
    # GIVEN the gc objects of a namespace
    objs = gc_chart(plan_for(code_configmap_prefix="my-stack-nvme-agent"))
    role, binding, sa = objs["Role"], objs["RoleBinding"], objs["ServiceAccount"]

    # THEN the Role (namespaced) allows exactly: list on the kinds whose pods can mount a ConfigMap, list and delete
    # on ConfigMaps; nothing on Secrets, no get, no watch
    rules = sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"])) for r in role["rules"])
    assert rules == sorted([
        (("",), ("pods",), ("list",)), (("apps",), ("daemonsets",), ("list",)),
        (("apps",), ("deployments",), ("list",)), (("apps",), ("statefulsets",), ("list",)),
        (("apps",), ("replicasets",), ("list",)), (("batch",), ("jobs",), ("list",)),
        (("batch",), ("cronjobs",), ("list",)),
        (("",), ("configmaps",), ("list", "delete"))])
    assert role["metadata"]["namespace"] == "inference" and "ClusterRole" not in {o["kind"] for o in objs.values()}
    # AND the binding gives it to the gc ServiceAccount only
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    assert [(s["kind"], s["name"], s["namespace"]) for s in binding["subjects"]] == [
        ("ServiceAccount", sa["metadata"]["name"], "inference")]
    # AND the names are the stack's (two stacks in one namespace never share them)
    assert {o["metadata"]["name"] for o in (role, binding, sa)} == {"my-stack-nvme-agent-gc"}


def test_the_gc_job_is_a_new_job_whenever_its_spec_changes(monkeypatch):
    # GIVEN the gc Job of a plan
    plan = plan_for(code_configmap_prefix="my-stack-nvme-agent")
    name = gc_chart(plan)["Job"]["metadata"]["name"]
    assert name.startswith("my-stack-nvme-agent-gc-") and len(name) <= 63

    # WHEN the endpoint's image changes, or the agent's code does
    data = copy.deepcopy(BASE)
    data["endpoints"][0]["image"] = "111122223333.dkr.ecr.us-west-2.amazonaws.com/my-vllm:1"
    other_image = NvmeCachePlan(parse_config(data).endpoints[0], "us-west-2", TOKEN, None,
                                code_configmap_prefix="my-stack-nvme-agent")
    by_image = gc_chart(other_image)["Job"]["metadata"]["name"]
    monkeypatch.setattr("hyperpod_inference.charts.agent_bundle.agent_code_hash", lambda: "f" * 64)
    by_code = gc_chart(plan)["Job"]["metadata"]["name"]

    # THEN each is another Job (a Job's pod template is immutable, so an applied change needs a new name)
    assert len({name, by_image, by_code}) == 3
