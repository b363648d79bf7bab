"""The HyperPod inference operator as a cdk8s chart (config ``operator.install: chart``).

``OperatorChart`` synthesizes what the operator's Helm chart (``hyperpod-inference-operator``, chart 2.2.2 for v3.2 and
2.3.0 for v3.3) renders from its own templates: the ``hyperpod-inference-system`` namespace, the CRDs, the controller's
ServiceAccount (IRSA-annotated with the execution role), RBAC, the cert-manager Issuer and Certificate for the
conversion webhook, the webhook and metrics Services and the controller Deployment. Every object has an explicit name.

Not rendered here, on purpose: the Helm chart's subcharts (S3 and FSx CSI drivers, metrics-server, ALB controller,
cert-manager, KEDA) and the ``s3-pv``/``s3-claim`` PersistentVolume(Claim) that the chart creates only together with
its S3 CSI subchart. The stack installs those dependencies as EKS add-ons (``operator.dependencies``).

The CRDs are read from a folder (``crd_source``), never bundled: they are the operator's own files. Their schema
``description`` fields are stripped to keep the manifest small (the IEC CRD alone is ~450 kB of YAML). Without
``crd_source`` the chart omits the CRDs; the stack's config validation requires ``operator.crdSource`` for
``install: chart``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cdk8s
import cdk8s_plus_28 as kplus
import yaml
from cdk8s import ApiObject, ApiObjectMetadata, Duration, JsonPatch, Size
from constructs import Construct

from ..facts.operator import ADDON_SERVICE_ACCOUNT as ADDON_SERVICE_ACCOUNT  # re-exported: the chart's name table
from ..facts.operator import (
    API_GROUP,
    CHART_SERVICE_ACCOUNT,
    CHART_VERSIONS,
    OPERATOR_NAMESPACE,
    OPERATOR_VERSIONS,
    VALIDATED_OPERATOR_VERSIONS,
    field_since,
)
from ..facts.operator import CHART_NAME_PREFIX as NAME_PREFIX
from ..facts.operator import CHART_SHORT_PREFIX as SHORT_PREFIX
from ..facts.versions import Version
from .operator_images import init_container_image, operator_image

# Names (the chart's defaults: namePrefix hyperpod-inference-operator, shortPrefix hyperpod-inference), the service
# accounts and CHART_VERSIONS (Helm chart version and appVersion per operator version) live in facts/operator.py.
DEPLOYMENT_NAME = f"{NAME_PREFIX}-controller-manager"
MANAGER_ROLE = f"{NAME_PREFIX}-manager-role"
MANAGER_ROLE_BINDING = f"{NAME_PREFIX}-manager-rolebinding"
LEADER_ELECTION_ROLE = f"{NAME_PREFIX}-leader-election-role"
LEADER_ELECTION_ROLE_BINDING = f"{NAME_PREFIX}-leader-election-rolebinding"
WEBHOOK_SERVICE = f"{NAME_PREFIX}-conversion-webhook"
METRICS_SERVICE = f"{NAME_PREFIX}-controller-manager-metrics-service"
#: The ports the controller serves: the webhook, metrics and health probes (the chart's args and container port).
CONTROLLER_PORTS = (9443, 8443, 8081)
ISSUER_NAME = "selfsigned-issuer"
CERTIFICATE_NAME = "serving-cert"
WEBHOOK_CERT_SECRET = "webhook-server-cert"
WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # noqa: S108 - the operator's fixed cert path, a mounted secret
POD_READER = "pod-reader"

CONTROL_PLANE_LABEL = {"control-plane": DEPLOYMENT_NAME}
APP_LABEL = {"app.kubernetes.io/name": NAME_PREFIX}

_CRUD = ["create", "delete", "get", "list", "patch", "update", "watch"]


def manager_role_rules(version: str) -> list[dict[str, Any]]:
    """The rules of ClusterRole ``hyperpod-inference-operator-manager-role``, exactly as the chart's
    ``config/rbac/role.yaml`` for ``version`` (v3.3 adds the cache CRDs and ``priorityclasses``)."""
    if version not in CHART_VERSIONS:
        raise ValueError(f"unsupported operator version {version!r}; supported: {', '.join(OPERATOR_VERSIONS)}")
    kinds = ["jumpstartmodels", "inferenceendpointconfigs", "sagemakerendpointregistrations"]
    caches = Version(version) >= field_since("spec.modelCacheConfig")  # the cache CRDs come with modelCacheConfig
    if caches:
        kinds += ["modelweightscacheconfigs", "modelimagecaches"]
    rules: list[dict[str, Any]] = [
        {"apiGroups": [API_GROUP], "resources": list(kinds), "verbs": list(_CRUD)},
        {"apiGroups": [API_GROUP], "resources": [f"{k}/finalizers" for k in kinds], "verbs": ["update"]},
        {"apiGroups": [API_GROUP], "resources": [f"{k}/status" for k in kinds], "verbs": ["get", "patch", "update"]},
        {"apiGroups": ["", "apps", "batch", "networking.k8s.io"], "resources": ["*"], "verbs": ["*"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": list(_CRUD)},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues/finalizers"], "verbs": ["update"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues/status"], "verbs": ["get", "patch", "update"]},
        {"apiGroups": ["cert-manager.io"], "resources": ["certificates", "issuers"],
         "verbs": ["create", "delete", "get", "list", "watch", "patch"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"apiGroups": ["keda.sh"], "resources": ["scaledobjects"],
         "verbs": ["get", "update", "create", "delete", "watch", "patch"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["storage.k8s.io"], "resources": ["csidrivers"], "verbs": ["get", "list", "watch"]},
    ]
    if caches:
        rules += [
            {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["create", "list", "watch"]},
            {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"],
             "resourceNames": ["hyperpod-image-cache"], "verbs": ["get", "delete"]},
        ]
    return rules


LEADER_ELECTION_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["configmaps"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
]

POD_READER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "watch", "list"]},
]


def _crd_user_roles() -> list[tuple[str, list[dict[str, Any]]]]:
    """The chart's editor/viewer ClusterRoles for the end users of the IEC, JSM and SER CRDs (names as in the chart)."""
    def rules(plural: str, verbs: list[str], status_verbs: list[str]) -> list[dict[str, Any]]:
        return [{"apiGroups": [API_GROUP], "resources": [plural], "verbs": verbs},
                {"apiGroups": [API_GROUP], "resources": [f"{plural}/status"], "verbs": status_verbs}]

    view = ["get", "list", "watch"]
    return [
        (f"{NAME_PREFIX}-inferenceendpointconfig-editor-role", rules("inferenceendpointconfigs", _CRUD, ["get"])),
        (f"{NAME_PREFIX}-inferenceendpointconfig-viewer-role", rules("inferenceendpointconfigs", view, ["get"])),
        (f"{NAME_PREFIX}-jumpstartmodels-editor-role", rules("jumpstartmodels", _CRUD, ["get", "update", "patch"])),
        (f"{NAME_PREFIX}-jumpstartmodels-viewer-role", rules("jumpstartmodels", view, ["get"])),
        (f"{NAME_PREFIX}-sagemakerendpointregistration-editor-role",
         rules("sagemakerendpointregistrations", _CRUD, ["get"])),
        (f"{NAME_PREFIX}-sagemakerendpointregistration-viewer-role",
         rules("sagemakerendpointregistrations", view, ["get"])),
    ]


# --- CRDs -------------------------------------------------------------------------------------------------------

_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")
"""Schema keywords whose values map user-chosen names to schemas: their keys are field names, not keywords."""


def strip_descriptions(obj: Any) -> Any:
    """A copy of an OpenAPI v3 / JSON schema with every ``description`` keyword removed, recursively.

    Only keywords are removed: a field that happens to be *named* ``description`` (a key of ``properties``) stays,
    with its own schema stripped. Everything else (types, defaults, enums, patterns, ``x-kubernetes-*``) is kept."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if key == "description":
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
            else:
                out[key] = strip_descriptions(value)
        return out
    if isinstance(obj, list):
        return [strip_descriptions(item) for item in obj]
    return obj


# Helm placeholders that a raw chart checkout's CRDs contain, with the chart defaults.
_HELM_DEFAULTS = {
    ".Values.namePrefix": NAME_PREFIX,
    ".Values.shortPrefix": SHORT_PREFIX,
    ".Values.namespace": OPERATOR_NAMESPACE,
}
_HELM_EXPR = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")


def _substitute_helm(text: str, path: Path) -> str:
    def repl(match: re.Match[str]) -> str:
        expr = match.group(1).strip()
        if expr not in _HELM_DEFAULTS:
            raise ValueError(
                f"{path.name}: Helm template expression {match.group(0)!r} cannot be substituted; only "
                f"{', '.join('{{ ' + k + ' }}' for k in _HELM_DEFAULTS)} are known. Render the chart "
                f"(helm template) or export the installed CRDs (kubectl get crd -o yaml) instead")
        return _HELM_DEFAULTS[expr]

    return _HELM_EXPR.sub(repl, text)


_KEPT_METADATA = ("name", "labels", "annotations")
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


def _clean_crd(doc: dict[str, Any]) -> dict[str, Any]:
    """Keep what is applied; drop what the API server adds (status, uid, managedFields, ...); strip descriptions."""
    meta = {k: copy.deepcopy(v) for k, v in (doc.get("metadata") or {}).items() if k in _KEPT_METADATA}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _DROPPED_ANNOTATIONS}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    spec = copy.deepcopy(doc["spec"])
    for ver in spec.get("versions", []):
        schema = ver.get("schema") or {}
        if "openAPIV3Schema" in schema:
            schema["openAPIV3Schema"] = strip_descriptions(schema["openAPIV3Schema"])
    return {"apiVersion": doc.get("apiVersion", "apiextensions.k8s.io/v1"), "kind": "CustomResourceDefinition",
            "metadata": meta, "spec": spec}


def load_crds(folder: str | Path) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition in ``*.yaml``/``*.yml`` under ``folder`` (not recursive), sorted by name.

    Accepts chart-checkout files (Helm placeholders for namePrefix/shortPrefix/namespace are replaced by the chart
    defaults; any other ``{{ ... }}`` is an error naming the file), multi-document files, and ``kubectl get crd -o
    yaml`` output (a ``List`` of items; server-set metadata and status are dropped). Other kinds are ignored. Schema
    ``description`` fields are stripped; conversion, annotations, versions, subresources and printer columns stay."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"crd_source {str(root)!r} is not a folder")
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in (".yaml", ".yml"))
    crds: dict[str, dict[str, Any]] = {}
    for path in files:
        text = _substitute_helm(path.read_text(encoding="utf-8"), path)
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as err:
            raise ValueError(f"{path.name}: not valid YAML: {err}") from err
        for doc in docs:
            items = doc.get("items", []) if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            for item in items:
                if not isinstance(item, dict) or item.get("kind") != "CustomResourceDefinition":
                    continue
                crd = _clean_crd(item)
                name = crd["metadata"].get("name")
                if not name:
                    raise ValueError(f"{path.name}: a CustomResourceDefinition without metadata.name")
                if name in crds:
                    raise ValueError(f"{path.name}: CustomResourceDefinition {name} is defined twice in {root.name}")
                crds[name] = crd
    if not crds:
        raise ValueError(f"crd_source {str(root)!r} holds no CustomResourceDefinition in *.yaml / *.yml files")
    return [crds[n] for n in sorted(crds)]


# --- the chart ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OperatorChartProps:
    """What the Helm chart's required values carry.

    :param version: operator version, ``"v3.2"`` or ``"v3.3"``.
    :param region: AWS region; selects the image registry (unknown region -> ``ValueError``).
    :param execution_role_arn: the operator execution role (IRSA annotation, ``EXECUTION_ROLE_ARN``); may be a
        readable placeholder or a CDK token string.
    :param tls_bucket_name: the TLS certificate bucket, or an ``s3://`` URI (with a key prefix), as the Helm value
        ``tlsCertificateS3Bucket``: ``TLS_CERTIFICATE_OUTPUT_S3URI`` is ``s3://<bucket>``, or the URI as given.
    :param eks_cluster_name: ``EKS_CLUSTER_NAME``.
    :param hyperpod_cluster_arn: ``HYPERPOD_CLUSTER_ARN`` (default empty, as the chart).
    :param jumpstart_gated_model_download_role_arn: ``JUMPSTART_GATED_MODEL_DOWNLOAD_ARN`` (default empty).
    :param enable_custom_service_accounts: ``ENABLE_CUSTOM_SERVICE_ACCOUNTS`` (default false).
    :param crd_source: folder of the operator's CRD YAML files; ``None`` = no CRDs in this chart.
    """

    version: str
    region: str
    execution_role_arn: str
    tls_bucket_name: str
    eks_cluster_name: str
    hyperpod_cluster_arn: str = ""
    jumpstart_gated_model_download_role_arn: str = ""
    enable_custom_service_accounts: bool | str = False
    crd_source: str | None = None


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None,
          annotations: dict[str, str] | None = None) -> ApiObjectMetadata:
    return ApiObjectMetadata(name=name, namespace=namespace, labels=labels, annotations=annotations)


def tls_s3_uri(bucket: str) -> str:
    """``s3://<bucket>``; a value that already starts with ``s3://`` is kept (the chart adds the prefix if missing)."""
    return bucket if bucket.startswith("s3://") else f"s3://{bucket}"


class OperatorChart(cdk8s.Chart):
    """The HyperPod inference operator, equivalent to its Helm chart for ``props.version``."""

    def __init__(self, scope: Construct, id: str, *, props: OperatorChartProps) -> None:  # noqa: A002
        _validate(props)
        super().__init__(scope, id)
        self.props = props
        self.version = props.version
        ver = props.version

        self.namespace_object = kplus.Namespace(
            self, "Namespace", metadata=_meta(OPERATOR_NAMESPACE, labels={**APP_LABEL, **CONTROL_PLANE_LABEL}))

        self.crds: list[ApiObject] = []
        if props.crd_source is not None:
            for crd in load_crds(props.crd_source):
                meta = crd["metadata"]
                obj = ApiObject(self, f"Crd-{meta['name']}", api_version=crd["apiVersion"], kind=crd["kind"],
                                metadata=_meta(meta["name"], labels=meta.get("labels"),
                                               annotations=meta.get("annotations")))
                obj.add_json_patch(JsonPatch.add("/spec", crd["spec"]))
                self.crds.append(obj)

        # ServiceAccounts
        self.service_account = kplus.ServiceAccount(
            self, "ControllerManagerServiceAccount", automount_token=True,
            metadata=_meta(CHART_SERVICE_ACCOUNT, OPERATOR_NAMESPACE, labels=APP_LABEL,
                           annotations={"eks.amazonaws.com/role-arn": props.execution_role_arn}))
        pod_reader_sa = kplus.ServiceAccount(self, "PodReaderServiceAccount", automount_token=True,
                                             metadata=_meta(POD_READER, OPERATOR_NAMESPACE))

        # RBAC
        self.manager_role = self._cluster_role("ManagerRole", MANAGER_ROLE, manager_role_rules(ver), APP_LABEL)
        self._cluster_role_binding("ManagerRoleBinding", MANAGER_ROLE_BINDING, self.manager_role,
                                   self.service_account, APP_LABEL)
        leader = kplus.Role(self, "LeaderElectionRole",
                            metadata=_meta(LEADER_ELECTION_ROLE, OPERATOR_NAMESPACE, labels=APP_LABEL))
        ApiObject.of(leader).add_json_patch(JsonPatch.replace("/rules", LEADER_ELECTION_RULES))
        leader_binding = kplus.RoleBinding(
            self, "LeaderElectionRoleBinding", role=leader,
            metadata=_meta(LEADER_ELECTION_ROLE_BINDING, OPERATOR_NAMESPACE, labels=APP_LABEL))
        leader_binding.add_subjects(self.service_account)
        for i, (name, rules) in enumerate(_crd_user_roles()):
            self._cluster_role(f"UserRole{i}", name, rules, APP_LABEL)
        pod_reader = self._cluster_role("PodReaderRole", POD_READER, POD_READER_RULES)
        self._cluster_role_binding("PodReaderRoleBinding", f"{POD_READER}-binding", pod_reader, pod_reader_sa)

        # cert-manager: self-signed issuer and the conversion webhook's serving certificate
        issuer = ApiObject(self, "SelfSignedIssuer", api_version="cert-manager.io/v1", kind="Issuer",
                           metadata=_meta(ISSUER_NAME, OPERATOR_NAMESPACE, labels=APP_LABEL))
        issuer.add_json_patch(JsonPatch.add("/spec", {"selfSigned": {}}))
        certificate = ApiObject(self, "ServingCertificate", api_version="cert-manager.io/v1", kind="Certificate",
                                metadata=_meta(CERTIFICATE_NAME, OPERATOR_NAMESPACE, labels=APP_LABEL))
        certificate.add_json_patch(JsonPatch.add("/spec", {
            "dnsNames": [f"{WEBHOOK_SERVICE}.{OPERATOR_NAMESPACE}.svc",
                         f"{WEBHOOK_SERVICE}.{OPERATOR_NAMESPACE}.svc.cluster.local"],
            "issuerRef": {"kind": "Issuer", "name": ISSUER_NAME},
            "secretName": WEBHOOK_CERT_SECRET,
        }))

        # Services
        self.webhook_service = kplus.Service(
            self, "ConversionWebhookService", metadata=_meta(WEBHOOK_SERVICE, OPERATOR_NAMESPACE, labels=APP_LABEL),
            ports=[kplus.ServicePort(port=443, target_port=9443, protocol=kplus.Protocol.TCP)])
        self.metrics_service = kplus.Service(
            self, "MetricsService",
            metadata=_meta(METRICS_SERVICE, OPERATOR_NAMESPACE, labels={**CONTROL_PLANE_LABEL, **APP_LABEL}),
            ports=[kplus.ServicePort(name="https", port=8443, target_port=8443, protocol=kplus.Protocol.TCP)])
        for svc in (self.webhook_service, self.metrics_service):
            for key, value in CONTROL_PLANE_LABEL.items():
                svc.select_label(key, value)

        self.deployment = self._deployment(props)
        self.network_policy = self._network_policy()

        # The Namespace first in the manifest (kubectl apply order), whatever cdk8s' dependency sort does otherwise.
        namespace_api = ApiObject.of(self.namespace_object)
        for child in self.node.find_all():
            if isinstance(child, ApiObject) and child.node.path != namespace_api.node.path:
                child.node.add_dependency(namespace_api)

    # -- helpers --------------------------------------------------------------------------------------------------
    def _cluster_role(self, id_: str, name: str, rules: list[dict[str, Any]],
                      labels: dict[str, str] | None = None) -> kplus.ClusterRole:
        role = kplus.ClusterRole(self, id_, metadata=_meta(name, labels=labels))
        # The chart's rules verbatim (several apiGroups in one rule, resourceNames): cdk8s-plus' grant API would
        # regroup them, so the synthesized rules are replaced by the chart's.
        ApiObject.of(role).add_json_patch(JsonPatch.replace("/rules", rules))
        return role

    def _cluster_role_binding(self, id_: str, name: str, role: kplus.ClusterRole, sa: kplus.ServiceAccount,
                              labels: dict[str, str] | None = None) -> kplus.ClusterRoleBinding:
        binding = kplus.ClusterRoleBinding(self, id_, role=role, metadata=_meta(name, labels=labels))
        binding.add_subjects(sa)
        return binding

    def _network_policy(self) -> ApiObject:
        """Ingress to the controller's pod only on the ports it serves: the conversion webhook (9443, from the API
        server), metrics (8443) and health probes (8081); every other port is closed. Egress stays open (the API
        server and the AWS APIs). Not in the Helm chart, which leaves its ``config/network-policy`` unrendered."""
        policy = ApiObject(self, "ControllerManagerNetworkPolicy", api_version="networking.k8s.io/v1",
                           kind="NetworkPolicy",
                           metadata=_meta(DEPLOYMENT_NAME, OPERATOR_NAMESPACE, labels={**CONTROL_PLANE_LABEL,
                                                                                      **APP_LABEL}))
        policy.add_json_patch(JsonPatch.add("/spec", {
            "podSelector": {"matchLabels": dict(CONTROL_PLANE_LABEL)},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"protocol": "TCP", "port": port} for port in CONTROLLER_PORTS]}],
        }))
        return policy

    def _deployment(self, props: OperatorChartProps) -> kplus.Deployment:
        chart_version, app_version = CHART_VERSIONS[props.version]
        env = {
            "AWS_REGION": props.region,
            "EXECUTION_ROLE_ARN": props.execution_role_arn,
            "JUMPSTART_GATED_MODEL_DOWNLOAD_ARN": props.jumpstart_gated_model_download_role_arn,
            "STAGE": "prod",
            "EKS_CLUSTER_NAME": props.eks_cluster_name,
            "TLS_CERTIFICATE_OUTPUT_S3URI": tls_s3_uri(props.tls_bucket_name),
            "ENABLE_WEBHOOKS": "true",
            "ENABLE_CUSTOM_SERVICE_ACCOUNTS": _flag(props.enable_custom_service_accounts),
            "OPERATOR_SERVICE_ACCOUNT_NAME": CHART_SERVICE_ACCOUNT,
            "OPERATOR_NAMESPACE": OPERATOR_NAMESPACE,
            "CHART_VERSION": chart_version,
            "APP_VERSION": app_version,
            "HYPERPOD_CLUSTER_ARN": props.hyperpod_cluster_arn,
        }
        deployment = kplus.Deployment(
            self, "ControllerManager",
            metadata=_meta(DEPLOYMENT_NAME, OPERATOR_NAMESPACE, labels={**CONTROL_PLANE_LABEL, **APP_LABEL}),
            replicas=1, select=False, service_account=self.service_account,
            automount_service_account_token=True,  # the controller talks to the API server with this token
            termination_grace_period=Duration.seconds(10),
            pod_metadata=_meta_pod(),
            security_context=kplus.PodSecurityContextProps(ensure_non_root=True))
        deployment.select(kplus.LabelSelector.of(labels=CONTROL_PLANE_LABEL))
        deployment.scheduling.attract(kplus.Node.labeled(
            kplus.NodeLabelQuery.in_("kubernetes.io/arch", ["amd64"]),
            kplus.NodeLabelQuery.in_("kubernetes.io/os", ["linux"])))

        def resources() -> kplus.ContainerResources:
            """The chart's manager resources, given to the init container too (the chart sets none there; cdk8s-plus'
            default requests of 1 CPU / 512Mi would change scheduling, these do not: the pod's effective request is
            the larger of the two)."""
            return kplus.ContainerResources(
                cpu=kplus.CpuResources(limit=kplus.Cpu.millis(500), request=kplus.Cpu.millis(10)),
                memory=kplus.MemoryResources(limit=Size.mebibytes(256), request=Size.mebibytes(64)))

        deployment.add_init_container(
            name="check-csi-drivers", image=init_container_image(props.region, props.version),
            env_variables={"CHECKS": kplus.EnvValue.from_value("drivers crds")}, resources=resources())

        def http(path: str, initial: int, period: int, **extra: Any) -> kplus.Probe:
            return kplus.Probe.from_http_get(path, port=8081, initial_delay_seconds=Duration.seconds(initial),
                                             period_seconds=Duration.seconds(period), **extra)

        manager = deployment.add_container(
            name="manager", image=operator_image(props.region, props.version),
            image_pull_policy=kplus.ImagePullPolicy.ALWAYS,
            command=["/hyperpod-inference-manager"],
            args=["--metrics-bind-address=:8443", "--leader-elect", "--health-probe-bind-address=:8081",
                  f"--webhook-cert-path={WEBHOOK_CERT_DIR}"],
            ports=[kplus.ContainerPort(number=9443, name="webhook-server", protocol=kplus.Protocol.TCP)],
            liveness=http("/healthz", 15, 20),
            readiness=http("/readyz", 5, 10),
            startup=http("/healthz", 180, 60, failure_threshold=120, timeout_seconds=Duration.seconds(5)),
            resources=resources(),
            env_variables={k: kplus.EnvValue.from_value(v) for k, v in env.items()})
        cert_secret = kplus.Secret.from_secret_name(self, "WebhookServerCert", WEBHOOK_CERT_SECRET)
        manager.mount(WEBHOOK_CERT_DIR, kplus.Volume.from_secret(self, "WebhookCertsVolume", cert_secret,
                                                                   name="webhook-certs"), read_only=True)

        # cdk8s-plus adds secure defaults that differ from the chart; make the pod exactly the chart's.
        api = ApiObject.of(deployment)
        pod = "/spec/template/spec"
        api.add_json_patch(
            # the chart selects pods by control-plane only; plus' address label would be a second, extra label
            JsonPatch.remove("/spec/template/metadata/labels/cdk8s.io~1metadata.addr"),
            # pod: the chart's runAsNonRoot, and the container runtime's default seccomp profile (not in the chart;
            # the manager is a Go controller that needs no syscall the default profile blocks). Plus'
            # fsGroupChangePolicy is left out.
            JsonPatch.replace(f"{pod}/securityContext",
                              {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}),
            # manager: the chart's container securityContext (plus forces readOnlyRootFilesystem / runAsNonRoot /
            # privileged and cannot leave them out)
            JsonPatch.replace(f"{pod}/containers/0/securityContext",
                              {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}),
            # init container: the same restrictive securityContext as the manager (plus' readOnlyRootFilesystem is
            # not the chart's)
            JsonPatch.replace(f"{pod}/initContainers/0/securityContext",
                              {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}),
        )
        return deployment


def _flag(value: bool | str) -> str:
    """An env var's ``true`` / ``false``; a string (e.g. a value computed at synth) is taken as it is."""
    if isinstance(value, str):
        return value
    return "true" if value else "false"


def _meta_pod() -> ApiObjectMetadata:
    return ApiObjectMetadata(labels=dict(CONTROL_PLANE_LABEL),
                             annotations={"kubectl.kubernetes.io/default-container": "manager"})


def _validate(props: OperatorChartProps) -> None:
    """Collect every problem with the props and raise once (regions are checked by the image table)."""
    problems: list[str] = []
    if props.version not in VALIDATED_OPERATOR_VERSIONS:
        problems.append(f"version: unsupported operator version {props.version!r}; the chart is rendered as the "
                        f"library validated it for {', '.join(VALIDATED_OPERATOR_VERSIONS)}")
    for field in ("execution_role_arn", "tls_bucket_name", "eks_cluster_name", "region"):
        if not getattr(props, field):
            problems.append(f"{field}: required (the operator's Helm chart refuses to render without it)")
    if not problems:
        try:
            operator_image(props.region, props.version)
        except ValueError as err:
            problems.append(f"region: {err}")
    if problems:
        raise ValueError("OperatorChartProps: " + "; ".join(problems))
