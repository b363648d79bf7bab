"""Node-local NVMe weight cache (``weightCache.mode: daemonset``): the agent ConfigMap, the warm-cache DaemonSet,
and the pieces of the custom resource (hostPath volumes and the cold-cache fallback init container).

The agent (``hyperpod_inference/nvme_agent``, packaged by :mod:`.agent_bundle`) reaches the pods as an immutable
ConfigMap named by its content hash. It runs in the endpoint's runtime image (already on the node) unless
``weightCache.agentImage`` names another one, through the bundle's short inline bootstrap. Next to the code, a gc
Job (:class:`NvmeAgentGc`) deletes the stack's previous code ConfigMaps once nothing mounts them.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import cdk8s
import cdk8s_plus_28 as kplus
from constructs import Construct

from ..config.models import Endpoint
from ..facts import naming
from ..facts.naming import AGENT_CODE_CONFIGMAP  # re-exported: the default code ConfigMap prefix
from ..facts.rbac import AGENT_GC_ROLE_RULES
from ..nvme_agent import model_relative_dir
from ..nvme_agent.config import CACHE_MOUNT, DEFAULT_MIN_FREE_PERCENT, GC_TIMEOUT_SECONDS, TOKEN_DIR
from ..plan.cache import (
    CachePlan,
    SecretRef,
    agent_image,
    placement,
    source_mounts,
    tolerations,
)
from .agent_bundle import AGENT_BUNDLE, AGENT_MOUNT, PYTHON, agent_bundle, agent_code_hash, agent_command

USAGE_MOUNT = "/usage"  # <hostPath>/.usage: every root's usage record, read when the free-space goal fails
USAGE_DIR = ".usage"
PARENT_MOUNT = "/cache-parent"  # <hostPath> itself: only the evict-legacy init container (evictLegacyLayout: true)
SHARED_ROOT_NAME = "_shared"  # the usage record's name of the one shared root (never a namespace name)
MODELS_FILE = "models.json"
USER_ASSIGNABLE_LABEL = "sagemaker.amazonaws.com/user-assignable"
CACHE_ROOT_VOLUME = "nvme-cache-root"
AGENT_CODE_VOLUME = "nvme-agent-code"
AGENT_TMP_VOLUME = "nvme-agent-tmp"
TOKEN_VOLUME = "nvme-hf-token"
TOKEN_MOUNT = TOKEN_DIR  # the agent reads <TOKEN_MOUNT>/token by default: its containers carry no env for it
CODE_PREFIX_LABEL = "hyperpod-inference/agent-code"  # on every code ConfigMap: the stack's prefix

# The agent writes into a root-owned host directory (the instance-store mount), so it runs as UID 0; it gets no
# capabilities, no privilege escalation and a read-only root filesystem: the hostPath is all it needs.
_AGENT_SECURITY_CONTEXT = {
    "runAsUser": 0,
    "runAsNonRoot": False,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
#: The gc Job only calls the API: the agent's confinement, as a fixed non-zero UID instead of root.
_GC_SECURITY_CONTEXT = {**_AGENT_SECURITY_CONTEXT, "runAsUser": 65532, "runAsGroup": 65532, "runAsNonRoot": True}
LEASE_HOLDER = "@hostname"  # the agent takes the host name: a pod's name
READY_FILE = "/tmp/ready"  # the lease sidecar's: the model is complete (in the agent's emptyDir, new with each pod)
READY_WAIT_SECONDS = 86_400  # the sidecar's startup probe gives a cold download a day before the kubelet restarts it
_AGENT_RESOURCES = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "1Gi"}}


def _token_volume(token: SecretRef | None) -> list[dict[str, Any]]:
    if token is None:
        return []
    secret: dict[str, Any] = {"secretName": token.name, "defaultMode": 0o400}
    if token.key != "token":  # the file is always <TOKEN_MOUNT>/token
        secret["items"] = [{"key": token.key, "path": "token"}]
    return [{"name": TOKEN_VOLUME, "secret": secret}]


def _token_mount(token: SecretRef | None) -> list[dict[str, Any]]:
    return [] if token is None else [{"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT, "readOnly": True}]


@dataclass(frozen=True)
class NvmeCachePlan(CachePlan):
    """The plan's :class:`~hyperpod_inference.plan.cache.CachePlan` with the pod pieces the custom resource and
    the charts need (volumes, the init container or lease sidecar, the agent's mounts and arguments).

    The init container leases the model under the pod's name; with ``lease_sidecar`` (the default) that container
    is a native sidecar (``restartPolicy: Always`` and a startup probe, Kubernetes 1.29+): the model server starts
    once the model is complete, and the agent keeps the lease fresh for the pod's life. Off: a plain init container,
    whose lease lasts its TTL after the pod starts (where ``restartPolicy`` does not reach the pod, Kubernetes
    refuses the startup probe of a plain init container, so the pod is never created: turn it off there)."""

    @classmethod
    def of(cls, plan: CachePlan) -> NvmeCachePlan:
        return plan if isinstance(plan, cls) else cls(**{f.name: getattr(plan, f.name) for f in fields(CachePlan)})

    @property
    def host_base(self) -> str:
        """``weightCache.hostPath``: the volume the agent containers mount parts of (``subPath``)."""
        return self.endpoint.weight_cache.host_path.rstrip("/") or "/"

    @property
    def root_name(self) -> str:
        return SHARED_ROOT_NAME if self.share_across_namespaces else self.endpoint.namespace

    def cache_mounts(self, *, usage: bool = True) -> list[dict[str, Any]]:
        """The agent's mounts of the cache volume: its root at ``/cache`` (the namespace's directory, unless shared)
        and (``usage``) the usage records at ``/usage``; never another namespace's models."""
        root: dict[str, Any] = {"name": CACHE_ROOT_VOLUME, "mountPath": CACHE_MOUNT}
        if not self.share_across_namespaces:
            root["subPath"] = self.endpoint.namespace
        usage_mount = {"name": CACHE_ROOT_VOLUME, "mountPath": USAGE_MOUNT, "subPath": USAGE_DIR}
        return [root, usage_mount] if usage else [root]

    def cache_volume(self) -> dict[str, Any]:
        return {"name": CACHE_ROOT_VOLUME, "hostPath": {"path": self.host_base, "type": "DirectoryOrCreate"}}

    def usage_args(self) -> list[str]:
        return ["--usage-dir", USAGE_MOUNT, "--root-name", self.root_name]

    @property
    def model_host_path(self) -> str:
        return f"{self.host_root}/{model_relative_dir(self.spec)}"

    @property
    def code_configmap_name(self) -> str:
        return agent_code_configmap_name(self.code_configmap_prefix)

    def min_free_args(self) -> list[str]:
        percent = self.endpoint.weight_cache.min_free_percent
        return [] if percent == DEFAULT_MIN_FREE_PERCENT else ["--min-free-percent", str(percent)]

    # ---- custom resource pieces ----------------------------------------------------------------------------
    def volumes(self) -> tuple[dict[str, Any], ...]:
        return (
            {"name": self.endpoint.weight_cache.volume_name,
             "hostPath": {"path": self.model_host_path, "type": "DirectoryOrCreate"}},
            self.cache_volume(),
            _code_volume(self.code_configmap_name),
            {"name": AGENT_TMP_VOLUME, "emptyDir": {}},
            *source_mounts(self.endpoint)[0],
            *_token_volume(self.token),
        )

    def init_containers(self) -> tuple[dict[str, Any], ...]:
        """Cold-cache fallback: cache hit -> exits at once; miss -> downloads into the node cache, then exits; either
        way it leases the model under the pod's name (with ``lease_sidecar``, it then stays as a native sidecar that
        keeps the lease)."""
        model = json.dumps(self.spec, sort_keys=True, separators=(",", ":"))
        mounts = [
            {"name": AGENT_CODE_VOLUME, "mountPath": AGENT_MOUNT, "readOnly": True},
            {"name": AGENT_TMP_VOLUME, "mountPath": "/tmp"},
        ]
        fill = {
            "name": "nvme-cache-fill",
            "image": agent_image(self.endpoint, self.region),
            # ensure leases the model under the pod's name (its host name) by default
            "command": agent_command("ensure", "--model", model,
                                     *self.min_free_args(), *self.usage_args()),
            "resources": _AGENT_RESOURCES,
            "securityContext": _AGENT_SECURITY_CONTEXT,
            "volumeMounts": [*self.cache_mounts(), *mounts, *source_mounts(self.endpoint)[1],
                             *_token_mount(self.token)],
        }
        if self.lease_sidecar:
            # a native sidecar: the kubelet starts the model server once the startup probe finds the ready file
            # (the model is complete), and the agent keeps the pod's lease fresh until the pod ends. The probe runs
            # the file (a Python comment) with the python3 the agent needs anyway: it exits 0 iff the file exists,
            # in any image the agent runs in (`test` may be missing from a slim one).
            fill["command"] += ["--hold", READY_FILE]
            fill["restartPolicy"] = "Always"
            fill["startupProbe"] = {"exec": {"command": [*PYTHON, READY_FILE]}, "periodSeconds": 1,
                                    "failureThreshold": READY_WAIT_SECONDS}
        return (fill,)



def _models(plans: Sequence[NvmeCachePlan]) -> list[dict[str, Any]]:
    """The distinct model specs of ``plans``, in a stable order (two endpoints may serve one model)."""
    seen = {json.dumps(p.spec, sort_keys=True): p.spec for p in plans}
    return [seen[k] for k in sorted(seen)]


class NvmeCache(Construct):
    """The warm-cache DaemonSet, its models ConfigMap and its deny-ingress NetworkPolicy for one or more endpoints
    whose agent pods would be identical apart from the models (equal :meth:`NvmeCachePlan.warm_key`: namespace,
    image, placement, token, service account, cache root, ...): one DaemonSet warms all their models on every node
    they may run on. The code comes from ``NvmeAgentCode``. It reads its own namespace's token Secret and nothing
    else.

    :param plan: one endpoint's plan; or
    :param plans: several (equal warm keys), e.g. every daemonset-cached endpoint of a namespace with the same model
        server image and token.
    """

    def __init__(self, scope: Construct, construct_id: str, *, plan: NvmeCachePlan | None = None,
                 plans: Sequence[NvmeCachePlan] = ()) -> None:
        super().__init__(scope, construct_id)
        group = [*([plan] if plan is not None else []), *plans]
        if not group:
            raise ValueError("NvmeCache: give plan or plans")
        keys = {p.warm_key() for p in group}
        if len(keys) > 1:
            names = ", ".join(f"{p.endpoint.namespace}/{p.endpoint.name}" for p in group)
            raise ValueError(f"NvmeCache: the plans of {names} need different warm pods (image, placement, token, "
                             "service account or cache root differ); give each its own NvmeCache")
        first = group[0]
        ep = first.endpoint
        ns = ep.namespace
        self.plans = tuple(group)
        self.name = first.warm_name
        models = _models(group)
        labels = {**naming.MANAGED_BY, "app.kubernetes.io/name": "nvme-agent", "app.kubernetes.io/instance": self.name}
        # Immutable and named by its content, like the code: nobody can edit what the root agent copies; new models
        # are a new ConfigMap (the DaemonSet rolls onto it), and the update that brings it prunes the previous one
        # (the pods of the previous spec keep the copy they mounted until the rollout replaces them).
        models_json = json.dumps(models, indent=1, sort_keys=True)
        self.models_configmap_name = naming.models_configmap_name(self.name, models_json)
        self.config_map = kplus.ConfigMap(self, "Models", metadata=cdk8s.ApiObjectMetadata(
            name=self.models_configmap_name, namespace=ns, labels=labels),
            data={MODELS_FILE: models_json}, immutable=True)

        models_path = f"/etc/nvme-agent/{MODELS_FILE}"
        common = ["--models-file", models_path]
        container = {
            "name": "warm",
            "image": agent_image(ep, first.region),
            "command": agent_command("warm", *common, "--interval", "300", *first.min_free_args(),
                                     *first.usage_args()),
            "resources": _AGENT_RESOURCES,
            "securityContext": _AGENT_SECURITY_CONTEXT,
            "readinessProbe": {"exec": {"command": agent_command("check", *common)},
                               "periodSeconds": 30, "timeoutSeconds": 10, "failureThreshold": 1},
            "volumeMounts": [
                *first.cache_mounts(),
                {"name": AGENT_CODE_VOLUME, "mountPath": AGENT_MOUNT, "readOnly": True},
                {"name": "models", "mountPath": "/etc/nvme-agent", "readOnly": True},
                {"name": AGENT_TMP_VOLUME, "mountPath": "/tmp"},
                *source_mounts(ep)[1],
                *_token_mount(first.token),
            ],
        }
        pod_spec = {
            "containers": [container],
            "volumes": [
                first.cache_volume(),
                _code_volume(first.code_configmap_name),
                {"name": "models", "configMap": {"name": self.models_configmap_name,
                                                 "items": [{"key": MODELS_FILE, "path": MODELS_FILE}]}},
                {"name": AGENT_TMP_VOLUME, "emptyDir": {}},
                *source_mounts(ep)[0],
                *_token_volume(first.token),
            ],
            # Only the nodes that can serve these endpoints: their placement (instance type(s) or node affinity).
            "affinity": {"nodeAffinity": placement(ep)},
            # Accelerator nodes are commonly tainted; the agent uses no accelerator but must run there.
            "tolerations": tolerations(ep),
            # The agent never calls the Kubernetes API; IRSA injects its own projected token volume.
            "automountServiceAccountToken": False,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "terminationGracePeriodSeconds": 30,
        }
        if first.evict_legacy and not first.share_across_namespaces:
            # weightCache.evictLegacyLayout, a one-time opt-in: models cached by earlier releases directly under
            # hostPath (before per-namespace roots) are evicted, not orphaned. Only this short-lived container mounts
            # hostPath itself (every namespace's folder), and it removes nothing but unleased models of that layout
            # (never a namespace's root). By default no container mounts more than its namespace's root and .usage.
            pod_spec["initContainers"] = [{
                "name": "nvme-evict-legacy",
                "image": container["image"],
                "command": agent_command("evict-legacy", "--cache-parent", PARENT_MOUNT),
                "resources": _AGENT_RESOURCES,
                "securityContext": _AGENT_SECURITY_CONTEXT,
                "volumeMounts": [
                    {"name": CACHE_ROOT_VOLUME, "mountPath": PARENT_MOUNT},
                    {"name": AGENT_CODE_VOLUME, "mountPath": AGENT_MOUNT, "readOnly": True},
                    {"name": AGENT_TMP_VOLUME, "mountPath": "/tmp"},
                ],
            }]
        if first.service_account_name:
            pod_spec["serviceAccountName"] = first.service_account_name
        selector = {"app.kubernetes.io/name": "nvme-agent", "app.kubernetes.io/instance": self.name}
        # The pods roll when the models, the code or the agent's arguments change.
        config_hash = hashlib.sha256(json.dumps({"models": models, "code": agent_code_hash(), "key": first.warm_key()},
                                                sort_keys=True).encode()).hexdigest()[:16]
        endpoints = ",".join(sorted({p.endpoint.name for p in group}))
        # An untyped object: cdk8s-plus's DaemonSet re-serializes resources and rollingUpdate from its own typed
        # fields and drops plain quantities, so the exact spec goes in as JSON (validated in tests).
        self.daemon_set = cdk8s.ApiObject(
            self, "Warm", api_version="apps/v1", kind="DaemonSet",
            metadata=cdk8s.ApiObjectMetadata(name=self.name, namespace=ns, labels=labels,
                                             annotations={"hyperpod-inference/endpoints": endpoints}))
        self.daemon_set.add_json_patch(cdk8s.JsonPatch.add("/spec", {
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": labels,
                                      "annotations": {"hyperpod-inference/config-hash": config_hash}},
                         "spec": pod_spec},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
        }))
        # The agent serves nothing: no ingress at all.
        self.network_policy = kplus.NetworkPolicy(
            self, "DenyIngress", metadata=cdk8s.ApiObjectMetadata(name=naming.deny_ingress_policy_name(self.name),
                                                                 namespace=ns, labels=labels),
            selector=kplus.Pods.select(self, "AgentPods", labels=selector),
            ingress=kplus.NetworkPolicyTraffic(default=kplus.NetworkPolicyTrafficDefault.DENY))


def agent_code_configmap_name(prefix: str = AGENT_CODE_CONFIGMAP) -> str:
    return naming.agent_code_configmap_name(prefix, agent_code_hash())


def _code_volume(configmap_name: str) -> dict[str, Any]:
    # The ConfigMap's one key is the bundle, so it appears as <mount>/<AGENT_BUNDLE> without an items list.
    return {"name": AGENT_CODE_VOLUME, "configMap": {"name": configmap_name}}


def agent_code_labels(prefix: str = AGENT_CODE_CONFIGMAP) -> dict[str, str]:
    """The labels of a stack's code ConfigMaps (every version): what the ``gc`` Job selects, so two stacks sharing a
    namespace never collect each other's code (the prefix names the stack)."""
    return {"app.kubernetes.io/name": "nvme-agent", "app.kubernetes.io/component": "agent-code",
            CODE_PREFIX_LABEL: prefix}


class NvmeAgentCode(Construct):
    """The agent's code as one immutable ConfigMap per namespace, ``<name_prefix>-<code hash>``, shared by the
    DaemonSets and init containers of every daemonset-cached endpoint there (a template carries the code once per
    namespace). An agent change is a new ConfigMap name, so it rolls every DaemonSet-cached endpoint; the previous
    ConfigMap is left to :class:`NvmeAgentGc`."""

    def __init__(self, scope: Construct, construct_id: str, *, namespace: str,
                 name_prefix: str = AGENT_CODE_CONFIGMAP) -> None:
        super().__init__(scope, construct_id)
        self.config_map = kplus.ConfigMap(self, "Code", metadata=cdk8s.ApiObjectMetadata(
            name=agent_code_configmap_name(name_prefix), namespace=namespace,
            labels={**naming.MANAGED_BY, **agent_code_labels(name_prefix)},
            annotations={"hyperpod-inference/agent-code-sha256": agent_code_hash()}),
            binary_data={AGENT_BUNDLE: base64.b64encode(agent_bundle()).decode()}, immutable=True)


class NvmeAgentGc(Construct):
    """The Job that deletes the namespace's previous code ConfigMaps of this stack once nothing mounts them (the
    agent's ``gc``), with its own ServiceAccount, Role and RoleBinding; next to the code ConfigMap, in its chart.

    The Job is named by the hash of its spec (the code hash is in its command), so each agent change creates a new
    one (a Job's pod template is immutable) and finished Jobs go after ``ttlSecondsAfterFinished``. Its pod runs
    the hashed bootstrap as a non-root user, in the image and on the nodes of ``plan`` (one of the namespace's agent
    pods: the image is already there), and mounts nothing of the node.
    """

    def __init__(self, scope: Construct, construct_id: str, *, plan: NvmeCachePlan) -> None:
        super().__init__(scope, construct_id)
        ep, prefix = plan.endpoint, plan.code_configmap_prefix
        ns, name = ep.namespace, naming.agent_gc_name(prefix)
        labels = {**naming.MANAGED_BY, "app.kubernetes.io/name": "nvme-agent", "app.kubernetes.io/component": "agent-gc"}
        meta = functools.partial(cdk8s.ApiObjectMetadata, namespace=ns, labels=labels)
        self.service_account = kplus.ServiceAccount(self, "ServiceAccount", metadata=meta(name=name),
                                                    automount_token=True)
        self.role = kplus.Role(self, "Role", metadata=meta(name=name))
        for rule in AGENT_GC_ROLE_RULES:
            self.role.allow(list(rule.verbs), kplus.ApiResource.custom(api_group=rule.group,
                                                                      resource_type=rule.resource))
        self.role_binding = kplus.RoleBinding(self, "RoleBinding", metadata=meta(name=name), role=self.role)
        self.role_binding.add_subjects(self.service_account)
        current = plan.code_configmap_name
        selector = ",".join(f"{k}={v}" for k, v in agent_code_labels(prefix).items())
        pod_spec: dict[str, Any] = {
            "serviceAccountName": name,
            "automountServiceAccountToken": True,  # it calls the Kubernetes API (only this pod, with this Role)
            "restartPolicy": "Never",
            "containers": [{
                "name": "gc",
                "image": agent_image(ep, plan.region),
                "command": agent_command("gc", "--current", current, "--selector", selector, "--namespace", ns,
                                         "--interval", "30", "--timeout", str(GC_TIMEOUT_SECONDS)),
                "resources": {"requests": {"cpu": "10m", "memory": "64Mi"},
                              "limits": {"cpu": "200m", "memory": "128Mi"}},
                "securityContext": _GC_SECURITY_CONTEXT,
                "volumeMounts": [{"name": AGENT_CODE_VOLUME, "mountPath": AGENT_MOUNT, "readOnly": True}],
            }],
            "volumes": [_code_volume(current)],
            "tolerations": tolerations(ep),
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        }
        affinity = placement(ep)
        if affinity:
            pod_spec["affinity"] = {"nodeAffinity": affinity}
        spec = {
            "backoffLimit": 2,
            # the agent gives up first (--timeout), naming what still mounts each old ConfigMap
            "activeDeadlineSeconds": GC_TIMEOUT_SECONDS + 1800,
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        }
        # An untyped object: cdk8s-plus's Job builds node affinity from its own label queries (the endpoint's
        # required terms go in as they are) and re-serializes resources from typed fields; validated in tests.
        self.job = cdk8s.ApiObject(self, "Job", api_version="batch/v1", kind="Job",
                                   metadata=meta(name=naming.hashed_name(name, json.dumps(spec, sort_keys=True))))
        self.job.add_json_patch(cdk8s.JsonPatch.add("/spec", spec))
        # The Job serves nothing: no ingress at all (it only calls the API server).
        self.network_policy = kplus.NetworkPolicy(
            self, "DenyIngress", metadata=meta(name=name),
            selector=kplus.Pods.select(self, "GcPods", labels=labels),
            ingress=kplus.NetworkPolicyTraffic(default=kplus.NetworkPolicyTrafficDefault.DENY))


def model_reader_service_account(endpoint: Endpoint, role_arn: str | None, name_scope: str = "") -> dict[str, Any]:
    """The per-endpoint ServiceAccount the operator may assign to the pods (label required by the operator), named
    ``<name scope>-<endpoint>-model-reader`` (``name_scope``: the stack's
    :func:`~hyperpod_inference.facts.naming.kubernetes_scope`).

    A plain object: cdk8s-plus's ServiceAccount always writes ``automountServiceAccountToken`` (false by default),
    which would change what the operator's model pods get; this one leaves it to the pod spec."""
    meta: dict[str, Any] = {"name": naming.model_reader_service_account_name(name_scope, endpoint.name),
                            "namespace": endpoint.namespace,
                            "labels": {**naming.MANAGED_BY, USER_ASSIGNABLE_LABEL: "true"}}
    if role_arn:
        meta["annotations"] = {"eks.amazonaws.com/role-arn": role_arn}
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}
