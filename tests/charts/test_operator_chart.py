"""The operator as a cdk8s chart (``operator.install: chart``) is the operator's Helm chart, object for object.

The Helm chart facts come from ``reference/hyperpod-operator/chart/`` (values, rbac role per version) and FACTS.md §6;
the CRDs from ``reference/hyperpod-operator/crds/<version>/`` (reference data for the tests, never project files).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import cdk8s
import jsonschema
import pytest
import yaml

from hyperpod_inference.charts.operator import (
    ADDON_SERVICE_ACCOUNT,
    CHART_SERVICE_ACCOUNT,
    OPERATOR_NAMESPACE,
    OperatorChart,
    OperatorChartProps,
    load_crds,
    strip_descriptions,
)
from hyperpod_inference.charts.operator_images import SUPPORTED_REGIONS, operator_image
from tests.k8s_validation import _strict, crd_errors, k8s_errors, require_crds

VERSIONS = ("v3.2", "v3.3")
ROLE_ARN = "arn:aws:iam::111122223333:role/SageMakerHyperPodInference-operator"
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
DNS_1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
IEC_CRD = "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com"


# --- helpers -------------------------------------------------------------------------------------------------------

def props(version: str = "v3.3", **overrides: Any) -> OperatorChartProps:
    values: dict[str, Any] = {
        "version": version, "region": "us-west-2", "execution_role_arn": ROLE_ARN,
        "tls_bucket_name": "hyperpod-tls-111122223333-us-west-2", "eks_cluster_name": "my-hp-eks",
    }
    values.update(overrides)
    return OperatorChartProps(**values)


def synth(p: OperatorChartProps) -> list[dict]:
    app = cdk8s.App()
    return cdk8s.Testing.synth(OperatorChart(app, "hyperpod-operator", props=p))


def one(objs: list[dict], kind: str, name: str) -> dict:
    found = [o for o in objs if o["kind"] == kind and o["metadata"].get("name") == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def deployment(objs: list[dict]) -> dict:
    return one(objs, "Deployment", "hyperpod-inference-operator-controller-manager")


def manager(objs: list[dict]) -> dict:
    (container,) = deployment(objs)["spec"]["template"]["spec"]["containers"]
    return container


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"]}


def chart_dir() -> Path:
    return require_crds().parent / "chart"


def chart_manager_rules(version: str) -> list[dict]:
    """The ClusterRole rules of the Helm chart's ``config/rbac/role.yaml`` with the chart's default values."""
    text = (chart_dir() / f"rbac-role-{version}.yaml").read_text()
    text = text.replace("{{ .Values.namePrefix }}", "hyperpod-inference-operator")
    text = text.replace("{{ .Values.shortPrefix }}", "hyperpod-inference")
    (role,) = [d for d in yaml.safe_load_all(text) if d]
    assert role["kind"] == "ClusterRole" and role["metadata"]["name"] == "hyperpod-inference-operator-manager-role"
    return role["rules"]


def chart_values(version: str) -> dict:
    return yaml.safe_load((chart_dir() / f"values-{version}.yaml").read_text())


def keys_anywhere(obj: Any, key: str) -> list[str]:
    """JSON paths of every dict key ``key`` in ``obj``."""
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key:
                    found.append(f"{path}/{k}")
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}/{i}")

    walk(obj, "")
    return found


def without_string_descriptions(node: Any) -> Any:
    """The test's own description stripper (a ``description`` key holding text is the schema keyword)."""
    if isinstance(node, dict):
        return {k: without_string_descriptions(v) for k, v in node.items()
                if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [without_string_descriptions(v) for v in node]
    return node


def reference_crds(version: str) -> dict[str, dict]:
    out = {}
    for path in sorted((require_crds() / version).glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                out[doc["metadata"]["name"]] = doc
    return out


def compact(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":")))


@pytest.fixture(scope="module")
def manifests() -> dict[str, list[dict]]:
    """GIVEN the reference CRDs as crd_source, WHEN the chart is synthesized for each version."""
    root = require_crds()
    return {v: synth(props(v, crd_source=str(root / v))) for v in VERSIONS}


def minimal_iec() -> dict:
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": "qwen-chat", "namespace": "inference"},
        "spec": {
            "modelName": "qwen-chat",
            "instanceType": "ml.g5.8xlarge",
            "modelSourceConfig": {"modelSourceType": "s3", "modelLocation": "qwen/",
                                  "s3Storage": {"bucketName": "my-models", "region": "us-west-2"}},
            "worker": {
                "image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124",
                "modelInvocationPort": {"containerPort": 8080},
                "modelVolumeMount": {"name": "model-weights"},
                "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"cpu": "4", "memory": "16Gi"}},
            },
        },
    }


# --- whole manifest ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("k8s_version", ["1.28", "1.33"])
def test_every_builtin_object_and_crd_validates_strictly(manifests, version, k8s_version):
    # THEN every built-in object (CRDs included, as apiextensions.k8s.io/v1) has no strict schema error
    errors = []
    for obj in manifests[version]:
        if obj["apiVersion"].startswith("cert-manager.io/"):
            continue  # no schema for cert-manager kinds here; their content is asserted below
        errors += [f"{obj['kind']}/{obj['metadata']['name']}: {e}" for e in k8s_errors(obj, k8s_version)]
    assert errors == []


@pytest.mark.parametrize("version", VERSIONS)
def test_every_object_has_an_explicit_valid_name_and_the_right_scope(manifests, version):
    objs = manifests[version]
    for obj in objs:
        meta = obj["metadata"]
        assert DNS_1123_SUBDOMAIN.match(meta["name"]), meta["name"]
        assert "hyperpod-operator" not in meta["name"], f"generated name {meta['name']}"  # the chart's construct id
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in meta, f"cluster-scoped {obj['kind']}/{meta['name']} carries a namespace"
        else:
            assert meta["namespace"] == OPERATOR_NAMESPACE, f"{obj['kind']}/{meta['name']}"
    assert (objs[0]["kind"], objs[0]["metadata"]["name"]) == ("Namespace", "hyperpod-inference-system")  # applied first


@pytest.mark.parametrize("version", VERSIONS)
def test_manifest_holds_exactly_the_charts_objects(manifests, version):
    names = sorted((o["kind"], o["metadata"]["name"]) for o in manifests[version]
                   if o["kind"] != "CustomResourceDefinition")
    p = "hyperpod-inference-operator"
    assert names == sorted([
        ("Namespace", "hyperpod-inference-system"),
        ("ServiceAccount", f"{p}-controller-manager"), ("ServiceAccount", "pod-reader"),
        ("ClusterRole", f"{p}-manager-role"), ("ClusterRoleBinding", f"{p}-manager-rolebinding"),
        ("Role", f"{p}-leader-election-role"), ("RoleBinding", f"{p}-leader-election-rolebinding"),
        ("ClusterRole", f"{p}-inferenceendpointconfig-editor-role"),
        ("ClusterRole", f"{p}-inferenceendpointconfig-viewer-role"),
        ("ClusterRole", f"{p}-jumpstartmodels-editor-role"), ("ClusterRole", f"{p}-jumpstartmodels-viewer-role"),
        ("ClusterRole", f"{p}-sagemakerendpointregistration-editor-role"),
        ("ClusterRole", f"{p}-sagemakerendpointregistration-viewer-role"),
        ("ClusterRole", "pod-reader"), ("ClusterRoleBinding", "pod-reader-binding"),
        ("Issuer", "selfsigned-issuer"), ("Certificate", "serving-cert"),
        ("Service", f"{p}-conversion-webhook"), ("Service", f"{p}-controller-manager-metrics-service"),
        ("Deployment", f"{p}-controller-manager"),
        ("NetworkPolicy", f"{p}-controller-manager"),  # not the chart's: closes every port the controller does not serve
    ])


def test_service_account_constants_name_both_install_modes():
    assert CHART_SERVICE_ACCOUNT == "hyperpod-inference-operator-controller-manager"
    assert ADDON_SERVICE_ACCOUNT == "hyperpod-inference-controller-manager"
    assert OPERATOR_NAMESPACE == "hyperpod-inference-system"


# --- CRDs ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_crds_are_the_reference_crds_without_descriptions(manifests, version):
    reference = reference_crds(version)
    crds = {o["metadata"]["name"]: o for o in manifests[version] if o["kind"] == "CustomResourceDefinition"}
    # THEN the same CRDs, no description anywhere ...
    assert sorted(crds) == sorted(reference)
    assert keys_anywhere(list(crds.values()), "description") == []
    for name, crd in crds.items():
        ref = reference[name]
        # ... and everything else kept: conversion webhook, CA injection annotation, versions, served/storage,
        # subresources, printer columns
        assert crd["metadata"] == ref["metadata"]
        assert crd["spec"] == without_string_descriptions(ref["spec"])
        assert [(v["name"], v["served"], v["storage"]) for v in crd["spec"]["versions"]] == \
            [(v["name"], v["served"], v["storage"]) for v in ref["spec"]["versions"]]
    iec = crds[IEC_CRD]
    assert iec["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "hyperpod-inference-system/serving-cert"
    assert iec["spec"]["conversion"]["webhook"]["clientConfig"]["service"] == {
        "name": "hyperpod-inference-operator-conversion-webhook", "namespace": "hyperpod-inference-system",
        "path": "/convert"}
    assert iec["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"


@pytest.mark.parametrize("version", VERSIONS)
def test_stripping_makes_the_iec_crd_much_smaller(manifests, version):
    original = reference_crds(version)[IEC_CRD]
    stripped = one(manifests[version], "CustomResourceDefinition", IEC_CRD)
    # measured: 0.287 (v3.2) and 0.288 (v3.3) of the original compact JSON
    assert compact(stripped) < 0.35 * compact(original)


@pytest.mark.parametrize("version", VERSIONS)
def test_stripped_iec_schema_still_validates_custom_resources_strictly(manifests, version):
    crd = one(manifests[version], "CustomResourceDefinition", IEC_CRD)
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    validator = jsonschema.Draft7Validator(_strict(copy.deepcopy(v1["schema"]["openAPIV3Schema"])))
    good = minimal_iec()
    assert crd_errors(good, version) == []  # the sample is valid against the full reference CRD
    body = {k: v for k, v in good.items() if k != "metadata"}
    assert list(validator.iter_errors(body)) == []

    bad = copy.deepcopy(body)
    bad["spec"]["replica"] = 2                                      # unknown field
    bad["spec"]["worker"]["modelInvocationPort"]["containerPort"] = 0  # below the minimum of 1
    del bad["spec"]["modelName"]                                    # required
    messages = sorted(e.message for e in validator.iter_errors(bad))
    assert any("'replica' was unexpected" in m for m in messages), messages
    assert any("0 is less than the minimum of 1" in m for m in messages), messages
    assert any("'modelName' is a required property" in m for m in messages), messages


def test_helm_placeholders_of_a_chart_checkout_get_the_chart_defaults(tmp_path):
    # GIVEN a CRD as it sits in a raw chart checkout (Helm expressions in the webhook service and the annotation)
    source = require_crds() / "v3.3" / "inference.sagemaker.aws.amazon.com_sagemakerendpointregistrations.yaml"
    text = source.read_text()
    templated = (text.replace("'hyperpod-inference-system/serving-cert'", "'{{ .Values.shortPrefix }}-system/serving-cert'")
                 .replace("'hyperpod-inference-operator-conversion-webhook'",
                          "'{{ .Values.namePrefix }}-conversion-webhook'")
                 .replace("namespace: 'hyperpod-inference-system'", "namespace: '{{- .Values.shortPrefix -}}-system'"))
    assert templated.count("{{") == 3
    (tmp_path / "ser.yaml").write_text(templated)
    # WHEN loaded THEN identical to the already-substituted reference CRD
    (loaded,) = load_crds(tmp_path)
    assert loaded == load_crds(source.parent)[-1]
    assert "{{" not in json.dumps(loaded)


def test_an_unknown_helm_expression_is_refused_naming_the_file(tmp_path):
    source = require_crds() / "v3.3" / "inference.sagemaker.aws.amazon.com_sagemakerendpointregistrations.yaml"
    (tmp_path / "broken-ser.yaml").write_text(
        source.read_text().replace("'hyperpod-inference-system/serving-cert'", "'{{ .Release.Namespace }}/serving-cert'"))
    with pytest.raises(ValueError, match=r"broken-ser\.yaml.*\.Release\.Namespace"):
        load_crds(tmp_path)


def test_kubectl_get_crd_output_is_accepted_and_server_fields_dropped(tmp_path):
    # GIVEN `kubectl get crd -o yaml` output (a List, server metadata, status) and a .yml file with other kinds
    ref = reference_crds("v3.3")["modelimagecaches.inference.sagemaker.aws.amazon.com"]
    served = copy.deepcopy(ref)
    served["metadata"].update({"uid": "0b1c", "resourceVersion": "42", "generation": 1,
                               "creationTimestamp": "2026-08-04T00:00:00Z", "managedFields": [{"manager": "kubectl"}]})
    served["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(ref)
    served["status"] = {"acceptedNames": {"kind": "ModelImageCache"}, "storedVersions": ["v1"]}
    (tmp_path / "export.yml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [served]}))
    (tmp_path / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n")
    (tmp_path / "notes.txt").write_text("kind: CustomResourceDefinition\n")
    # WHEN loaded
    (crd,) = load_crds(tmp_path)
    # THEN the CRD as applied: name and annotations kept, server fields, status and descriptions gone
    assert crd["metadata"] == ref["metadata"]
    assert "status" not in crd
    assert crd["spec"] == without_string_descriptions(ref["spec"])
    assert crd["spec"]["versions"][0]["additionalPrinterColumns"] == ref["spec"]["versions"][0]["additionalPrinterColumns"]


def test_a_folder_without_crds_is_refused(tmp_path):
    (tmp_path / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(ValueError, match="no CustomResourceDefinition"):
        load_crds(tmp_path)
    with pytest.raises(ValueError, match="not a folder"):
        load_crds(tmp_path / "missing")


def test_strip_descriptions_removes_the_keyword_but_keeps_a_field_named_description():
    schema = {"type": "object", "description": "a thing",
              "properties": {"description": {"type": "string", "description": "the field named description"},
                             "items": {"type": "array", "description": "x",
                                       "items": {"type": "object", "description": "y",
                                                 "properties": {"a": {"type": "integer", "description": "z"}}}}},
              "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "a positive"}]}
    assert strip_descriptions(schema) == {
        "type": "object",
        "properties": {"description": {"type": "string"},
                       "items": {"type": "array", "items": {"type": "object",
                                                            "properties": {"a": {"type": "integer"}}}}},
        "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "a positive"}]}
    assert schema["description"] == "a thing"  # the input is not modified


def test_without_crd_source_the_chart_builds_without_crds():
    objs = synth(props("v3.3"))
    assert [o for o in objs if o["kind"] == "CustomResourceDefinition"] == []
    assert deployment(objs)["metadata"]["name"] == "hyperpod-inference-operator-controller-manager"


# --- Deployment ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("region,registry", [
    ("us-west-2", "861276088053.dkr.ecr.us-west-2.amazonaws.com"),
    ("us-east-1", "557690614651.dkr.ecr.us-east-1.amazonaws.com"),
    ("eu-west-1", "537124951544.dkr.ecr.eu-west-1.amazonaws.com"),
    ("ap-northeast-1", "724772091842.dkr.ecr.ap-northeast-1.amazonaws.com"),
])
@pytest.mark.parametrize("version", VERSIONS)
def test_images_come_from_the_regional_registry_with_the_versions_tag(region, registry, version):
    objs = synth(props(version, region=region))
    spec = deployment(objs)["spec"]["template"]["spec"]
    assert manager(objs)["image"] == f"{registry}/hyperpod-inference-operator:{version}"
    assert manager(objs)["imagePullPolicy"] == "Always"
    (init,) = spec["initContainers"]
    assert init["name"] == "check-csi-drivers"
    assert init["image"] == f"{registry}/hyperpod-inference-operator-init-container:v1.0"
    assert init["env"] == [{"name": "CHECKS", "value": "drivers crds"}]
    assert env_of(manager(objs))["AWS_REGION"] == region


def test_the_us_west_2_v3_3_image_is_the_documented_one():
    assert operator_image("us-west-2", "v3.3") == \
        "861276088053.dkr.ecr.us-west-2.amazonaws.com/hyperpod-inference-operator:v3.3"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_region_table_is_the_charts_repository_domain_map(version):
    domain_map = chart_values(version)["image"]["repositoryDomainMap"]
    assert SUPPORTED_REGIONS(version) == sorted(domain_map)
    for region, registry in domain_map.items():
        assert operator_image(region, version) == f"{registry}/hyperpod-inference-operator:{version}"
    assert chart_values(version)["image"]["tag"] == version


def test_an_unknown_region_is_refused_naming_it_and_the_supported_ones():
    with pytest.raises(ValueError, match=r"'mars-north-1'.*us-west-2") as err:
        synth(props("v3.3", region="mars-north-1"))
    assert "eu-west-1" in str(err.value)


def test_ap_south_2_has_images_from_v3_3_only():
    with pytest.raises(ValueError, match=r"'ap-south-2'"):
        synth(props("v3.2", region="ap-south-2"))
    assert "ap-south-2" not in SUPPORTED_REGIONS("v3.2")
    objs = synth(props("v3.3", region="ap-south-2"))
    assert manager(objs)["image"] == "680458885894.dkr.ecr.ap-south-2.amazonaws.com/hyperpod-inference-operator:v3.3"


@pytest.mark.parametrize("version,chart_version,app_version", [("v3.2", "2.2.2", "3.2"), ("v3.3", "2.3.0", "3.3")])
def test_manager_env_is_the_charts(version, chart_version, app_version):
    # the chart's Chart.yaml carries the versions the operator reports
    chart_yaml = yaml.safe_load((chart_dir() / f"Chart-{version}.yaml").read_text())
    assert (chart_yaml["version"], chart_yaml["appVersion"]) == (chart_version, app_version)
    container = manager(synth(props(version)))
    assert container["env"] == [
        {"name": "AWS_REGION", "value": "us-west-2"},
        {"name": "EXECUTION_ROLE_ARN", "value": ROLE_ARN},
        {"name": "JUMPSTART_GATED_MODEL_DOWNLOAD_ARN", "value": ""},
        {"name": "STAGE", "value": "prod"},
        {"name": "EKS_CLUSTER_NAME", "value": "my-hp-eks"},
        {"name": "TLS_CERTIFICATE_OUTPUT_S3URI", "value": "s3://hyperpod-tls-111122223333-us-west-2"},
        {"name": "ENABLE_WEBHOOKS", "value": "true"},
        {"name": "ENABLE_CUSTOM_SERVICE_ACCOUNTS", "value": "false"},
        {"name": "OPERATOR_SERVICE_ACCOUNT_NAME", "value": "hyperpod-inference-operator-controller-manager"},
        {"name": "OPERATOR_NAMESPACE", "value": "hyperpod-inference-system"},
        {"name": "CHART_VERSION", "value": chart_version},
        {"name": "APP_VERSION", "value": app_version},
        {"name": "HYPERPOD_CLUSTER_ARN", "value": ""},
    ]


def test_optional_values_reach_the_manager_env():
    hp_arn = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcd1234efgh"
    gated = "arn:aws:iam::111122223333:role/js-gated"
    env = env_of(manager(synth(props(
        "v3.3", hyperpod_cluster_arn=hp_arn, jumpstart_gated_model_download_role_arn=gated,
        enable_custom_service_accounts=True, tls_bucket_name="s3://already-a-uri",
        execution_role_arn="<OperatorExecutionRole.Arn>"))))
    assert env["HYPERPOD_CLUSTER_ARN"] == hp_arn
    assert env["JUMPSTART_GATED_MODEL_DOWNLOAD_ARN"] == gated
    assert env["ENABLE_CUSTOM_SERVICE_ACCOUNTS"] == "true"
    assert env["TLS_CERTIFICATE_OUTPUT_S3URI"] == "s3://already-a-uri"  # the chart adds s3:// only when missing
    assert env["EXECUTION_ROLE_ARN"] == "<OperatorExecutionRole.Arn>"


@pytest.mark.parametrize("version", VERSIONS)
def test_manager_container_matches_the_chart(version):
    objs = synth(props(version))
    c = manager(objs)
    assert c["name"] == "manager"
    assert c["command"] == ["/hyperpod-inference-manager"]
    assert c["args"] == ["--metrics-bind-address=:8443", "--leader-elect", "--health-probe-bind-address=:8081",
                         "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs"]
    assert c["ports"] == [{"containerPort": 9443, "name": "webhook-server", "protocol": "TCP"}]
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    assert c["resources"] == {"limits": {"cpu": "500m", "memory": "256Mi"},
                              "requests": {"cpu": "10m", "memory": "64Mi"}}
    http = {"port": 8081, "scheme": "HTTP"}
    assert c["livenessProbe"] == {"httpGet": {"path": "/healthz", **http}, "initialDelaySeconds": 15,
                                  "periodSeconds": 20, "failureThreshold": 3}
    assert c["readinessProbe"] == {"httpGet": {"path": "/readyz", **http}, "initialDelaySeconds": 5,
                                   "periodSeconds": 10, "failureThreshold": 3}
    assert c["startupProbe"] == {"httpGet": {"path": "/healthz", **http}, "initialDelaySeconds": 180,
                                 "failureThreshold": 120, "periodSeconds": 60, "timeoutSeconds": 5}
    assert c["volumeMounts"] == [{"mountPath": "/tmp/k8s-webhook-server/serving-certs", "name": "webhook-certs",
                                  "readOnly": True}]


@pytest.mark.parametrize("version", VERSIONS)
def test_pod_matches_the_chart(version):
    dep = deployment(synth(props(version)))
    assert dep["spec"]["replicas"] == 1
    assert dep["metadata"]["labels"]["control-plane"] == "hyperpod-inference-operator-controller-manager"
    assert dep["spec"]["selector"] == {"matchLabels": {"control-plane": "hyperpod-inference-operator-controller-manager"}}
    assert dep["spec"]["template"]["metadata"] == {
        "labels": {"control-plane": "hyperpod-inference-operator-controller-manager"},
        "annotations": {"kubectl.kubernetes.io/default-container": "manager"}}
    spec = dep["spec"]["template"]["spec"]
    # the chart's runAsNonRoot, plus the runtime's default seccomp profile (checkov CKV_K8S_31)
    assert spec["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["terminationGracePeriodSeconds"] == 10
    assert spec["serviceAccountName"] == "hyperpod-inference-operator-controller-manager"
    assert spec["automountServiceAccountToken"] is True
    assert spec["affinity"] == chart_values(version)["affinity"]
    assert spec["volumes"] == [{"name": "webhook-certs", "secret": {"secretName": "webhook-server-cert"}}]
    (init,) = spec["initContainers"]
    # the manager's resources (checkov CKV_K8S_10-13), not cdk8s-plus' default requests of 1 CPU / 512Mi: the pod's
    # effective request, the larger of init and manager, stays the chart's
    assert init["resources"] == manager(synth(props(version)))["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "10m", "memory": "64Mi"}}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_network_policy_lets_in_only_the_ports_the_controller_serves(version):
    # GIVEN the operator chart WHEN synthesized THEN one NetworkPolicy selects the controller's pod (checkov
    # CKV2_K8S_6) and admits ingress only on the webhook, metrics and health ports, leaving egress open
    objs = synth(props(version))
    policy = one(objs, "NetworkPolicy", "hyperpod-inference-operator-controller-manager")
    pod_labels = deployment(objs)["spec"]["template"]["metadata"]["labels"]
    assert policy["metadata"]["namespace"] == "hyperpod-inference-system"
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": 9443}, {"protocol": "TCP", "port": 8443},
                                                    {"protocol": "TCP", "port": 8081}]}]
    container = manager(objs)
    served = {p["containerPort"] for p in container["ports"]} | {
        int(a.rsplit(":", 1)[1]) for a in container["args"] if a.startswith(("--metrics-bind", "--health-probe"))}
    assert served == {9443, 8443, 8081}


# --- ServiceAccount, RBAC, webhook plumbing ------------------------------------------------------------------------

def test_service_account_carries_the_execution_role_arn():
    token = "${Token[TOKEN.123]}"
    for arn in (ROLE_ARN, "<OperatorExecutionRole.Arn>", token):
        sa = one(synth(props("v3.3", execution_role_arn=arn)), "ServiceAccount", CHART_SERVICE_ACCOUNT)
        assert sa["metadata"]["namespace"] == OPERATOR_NAMESPACE
        assert sa["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": arn}


@pytest.mark.parametrize("version", VERSIONS)
def test_manager_cluster_role_rules_are_the_charts(manifests, version):
    role = one(manifests[version], "ClusterRole", "hyperpod-inference-operator-manager-role")
    assert role["rules"] == chart_manager_rules(version)
    binding = one(manifests[version], "ClusterRoleBinding", "hyperpod-inference-operator-manager-rolebinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "hyperpod-inference-operator-manager-role"}
    assert [(s["kind"], s["name"], s["namespace"]) for s in binding["subjects"]] == \
        [("ServiceAccount", CHART_SERVICE_ACCOUNT, OPERATOR_NAMESPACE)]


def test_v3_3_rules_add_the_cache_crds_and_priority_classes():
    added = [r for r in chart_manager_rules("v3.3") if r not in chart_manager_rules("v3.2")]
    assert {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"],
            "resourceNames": ["hyperpod-image-cache"], "verbs": ["get", "delete"]} in added
    assert any("modelimagecaches" in r["resources"] for r in added)


def test_leader_election_and_pod_reader_rbac(manifests):
    objs = manifests["v3.3"]
    leader = one(objs, "Role", "hyperpod-inference-operator-leader-election-role")
    assert [(r["apiGroups"], r["resources"]) for r in leader["rules"]] == [
        ([""], ["configmaps"]), (["coordination.k8s.io"], ["leases"]), ([""], ["events"])]
    assert leader["rules"][2]["verbs"] == ["create", "patch"]
    binding = one(objs, "RoleBinding", "hyperpod-inference-operator-leader-election-rolebinding")
    assert binding["roleRef"]["name"] == leader["metadata"]["name"] and binding["roleRef"]["kind"] == "Role"
    assert [(s["name"], s["namespace"]) for s in binding["subjects"]] == [(CHART_SERVICE_ACCOUNT, OPERATOR_NAMESPACE)]
    reader = one(objs, "ClusterRole", "pod-reader")
    assert reader["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]},
                               {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "watch", "list"]}]
    reader_binding = one(objs, "ClusterRoleBinding", "pod-reader-binding")
    assert [(s["name"], s["namespace"]) for s in reader_binding["subjects"]] == [("pod-reader", OPERATOR_NAMESPACE)]


def test_cert_manager_issuer_certificate_and_services(manifests):
    objs = manifests["v3.3"]
    assert one(objs, "Issuer", "selfsigned-issuer")["spec"] == {"selfSigned": {}}
    cert = one(objs, "Certificate", "serving-cert")
    assert cert["apiVersion"] == "cert-manager.io/v1"
    assert cert["spec"] == {
        "dnsNames": ["hyperpod-inference-operator-conversion-webhook.hyperpod-inference-system.svc",
                     "hyperpod-inference-operator-conversion-webhook.hyperpod-inference-system.svc.cluster.local"],
        "issuerRef": {"kind": "Issuer", "name": "selfsigned-issuer"},
        "secretName": "webhook-server-cert"}
    selector = {"control-plane": "hyperpod-inference-operator-controller-manager"}
    webhook = one(objs, "Service", "hyperpod-inference-operator-conversion-webhook")
    assert webhook["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 9443}]
    assert webhook["spec"]["selector"] == selector
    metrics = one(objs, "Service", "hyperpod-inference-operator-controller-manager-metrics-service")
    assert metrics["spec"]["ports"] == [{"name": "https", "port": 8443, "protocol": "TCP", "targetPort": 8443}]
    assert metrics["spec"]["selector"] == selector
    # the CRDs' CA-injection annotation and conversion service point at these objects
    iec = one(objs, "CustomResourceDefinition", IEC_CRD)
    assert iec["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
        f"{cert['metadata']['namespace']}/{cert['metadata']['name']}"
    assert iec["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"] == webhook["metadata"]["name"]


def test_missing_required_values_are_all_reported_at_once():
    with pytest.raises(ValueError) as err:
        synth(props("v3.4", execution_role_arn="", tls_bucket_name="", eks_cluster_name=""))
    message = str(err.value)
    for field in ("version", "execution_role_arn", "tls_bucket_name", "eks_cluster_name"):
        assert f"{field}:" in message
    assert "'v3.4'" in message


@pytest.mark.parametrize("version", VERSIONS)
def test_every_wildcard_of_the_cluster_role_is_documented_group_by_group(version):
    # GIVEN the ClusterRole's rules (the chart's) and docs/permissions.md's section on them
    from hyperpod_inference.charts.operator import manager_role_rules

    page = (Path(__file__).resolve().parents[2] / "docs" / "permissions.md").read_text()
    section = page.split("## The operator's ClusterRole", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| every verb")]
    wildcards = [r for r in manager_role_rules(version) if "*" in r["resources"] or "*" in r["verbs"]]
    # THEN the only wildcard rule is the chart's, and each of its API groups has a row saying what it allows
    assert [sorted(r["apiGroups"]) for r in wildcards] == [sorted(["", "apps", "batch", "networking.k8s.io"])]
    for group in wildcards[0]["apiGroups"]:
        name = "`\"\"` (core)" if group == "" else f"`{group}`"
        assert any(f"API group {name}" in row or f"resource of {name}" in row for row in rows), group
    assert "impersonate" in section and "serviceaccounts/token" in section and "Secret" in section
