"""The whole stack from a files-delivery config (every value concrete): Kubernetes objects valid, AWS side wired."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match, Template

from hyperpod_inference.facts import naming
from tests.k8s_validation import crd_errors, is_custom_resource, k8s_errors, validate_all
from tests.synth_helpers import FILES_CONFIG, load_yaml, synth_config

OIDC = "oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    # GIVEN the files-delivery fixture with every feature  WHEN it is synthesized (cdk-nag registered)
    return synth_config(FILES_CONFIG, tmp_path_factory.mktemp("files"))


@pytest.fixture(scope="module")
def template(synth):
    return Template.from_stack(synth.stack)


def by_name(synth, kind, name):
    matches = [o for o in synth.objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} objects"
    return matches[0]


def only(synth, kind, namespace):
    """The one object of ``kind`` in ``namespace`` (shared objects are named by what they hold, not by endpoint)."""
    matches = [o for o in synth.objects() if o["kind"] == kind and o["metadata"].get("namespace") == namespace]
    assert len(matches) == 1, f"{kind} in {namespace}: {len(matches)} objects"
    return matches[0]


def test_synth_passes_cdk_nag_and_writes_one_file_per_chart(synth):
    # THEN app.synth() did not raise (a cdk-nag finding would), and each chart has its file
    token = only(synth, "ExternalSecret", "inference")["metadata"]["name"]
    warm = {o["metadata"]["namespace"]: o["metadata"]["name"] for o in synth.objects() if o["kind"] == "DaemonSet"}
    scope = synth.stack.inference.kubernetes_scope
    # the shared pieces' manifests are named after the objects they hold (naming.shared_unit_name)
    unit = naming.shared_unit_name
    assert set(synth.manifests) == {
        "namespace-inference", "namespace-research", unit("inference", "token", token), "inference-qwen-chat",
        "research-llama-s3", "research-mistral-tgi", unit("research", "reader", f"{scope}-llama-nvme-model-reader"),
        "research-llama-nvme", "research-llama-js", unit("inference", "agent", f"{scope}-nvme-agent"),
        unit("research", "agent", f"{scope}-nvme-agent"), unit("inference", "warm", warm["inference"]),
        unit("research", "warm", warm["research"])}


def test_files_delivery_applies_nothing_and_manifests_hold_no_tokens(synth):
    assert not synth.resources("Custom::AWSCDK-EKS-KubernetesResource")
    text = json.dumps(synth.manifests)
    assert "${Token[" not in text and "<" not in json.dumps(synth.custom_resources())


@pytest.mark.parametrize("version", ["v3.3"])
def test_every_custom_resource_validates_strictly_against_the_operator_crds(synth, version):
    crs = synth.custom_resources()
    assert len(crs) == 5
    for cr in crs:
        assert crd_errors(cr, version) == [], (cr["metadata"]["name"], crd_errors(cr, version))


@pytest.mark.parametrize("k8s_version", ["1.28", "1.33"])
def test_every_built_in_object_validates_with_kubernetes_validate(synth, k8s_version):
    builtins = [o for o in synth.objects() if not is_custom_resource(o) and "external-secrets.io" not in o["apiVersion"]]
    assert {o["kind"] for o in builtins} >= {"Namespace", "ServiceAccount", "ConfigMap", "DaemonSet"}
    for obj in builtins:
        assert k8s_errors(obj, k8s_version) == [], (obj["kind"], obj["metadata"]["name"])


def test_every_object_has_an_explicit_valid_name(synth):
    assert validate_all(synth.objects(), "v3.3") == []
    for obj in synth.objects():
        name = obj["metadata"]["name"]
        assert name and "_" not in name and "." not in name or obj["kind"] == "Namespace"


def test_custom_resource_maps_the_config_table(synth):
    qwen = by_name(synth, "InferenceEndpointConfig", "qwen-chat")["spec"]
    assert qwen["modelName"] == "qwen-chat" and qwen["endpointName"] == "qwen-chat"
    assert qwen["instanceType"] == "ml.g5.8xlarge" and qwen["replicas"] == 1
    # daemonset cache: kubernetesVolume wins over huggingface; the token is not on the CR
    assert qwen["modelSourceConfig"] == {"modelSourceType": "kubernetesVolume"}
    volume = qwen["worker"]["modelVolumeMount"]["name"]
    assert volume in {v["name"] for v in qwen["kubernetes"]["volumes"]}
    assert qwen["tlsConfig"]["customCertificateConfig"] == {
        "acmArn": "arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000-1111-2222-333344445555",
        "domainName": "chat.example.com"}
    assert qwen["tlsConfig"]["tlsCertificateOutputS3Uri"] == "s3://hyperpod-tls-hyperpodinference-111122223333-us-west-2"
    assert qwen["dnsConfig"] == {"hostedZoneId": "Z0123456789ABCDEFGHIJ"}
    s3 = by_name(synth, "InferenceEndpointConfig", "llama-s3")["spec"]
    assert s3["modelSourceConfig"] == {"modelSourceType": "s3", "modelLocation": "llama-3-8b/",
                                       "s3Storage": {"bucketName": "my-models", "region": "us-west-2"}}
    assert s3["modelCacheConfig"] == {"weightsCache": {"enabled": True, "hostPath": "/opt/dlami/nvme"}}
    assert s3["worker"]["args"][:2] == ["--model-path", "/opt/ml/model"]
    assert "--tp" in s3["worker"]["args"] and s3["worker"]["resources"]["limits"]["nvidia.com/gpu"] == "4"


def test_hugging_face_without_prefetch_keeps_token_ref_and_lets_the_runtime_download(synth):
    tgi = by_name(synth, "InferenceEndpointConfig", "mistral-tgi")["spec"]
    source = tgi["modelSourceConfig"]
    assert source["modelSourceType"] == "huggingface" and source["prefetchEnabled"] is False
    assert source["huggingFaceModel"] == {"modelId": "mistralai/Mistral-7B-Instruct-v0.3",
                                          "tokenSecretRef": {"name": "hf-token", "key": "token"}}
    env = {e["name"]: e["value"] for e in tgi["worker"]["environmentVariables"]}
    assert "MODEL_ID" not in env  # the operator injects HF_MODEL_ID when the runtime downloads


def test_jumpstart_model_spec(synth):
    spec = by_name(synth, "JumpStartModel", "llama-js")["spec"]
    assert spec["model"] == {"modelId": "meta-textgeneration-llama-3-8b", "acceptEula": True}
    assert spec["server"] == {"instanceType": "ml.g5.12xlarge"}
    assert spec["sageMakerEndpoint"] == {"name": "llama-js"}
    assert spec["dataCapture"]["sagemakerEndpoint"]["captureOptions"] == [{"captureMode": "Input"}]
    assert spec["dataCapture"]["loadBalancer"] == {"enabled": False}
    assert "kubernetes" not in spec


def test_capture_uri_and_key_alias_are_concrete(synth):
    capture = by_name(synth, "InferenceEndpointConfig", "qwen-chat")["spec"]["dataCapture"]
    assert capture["s3Uri"] == "s3://hyperpodinference-capture-111122223333-us-west-2/data-capture"
    assert capture["modelPod"]["kmsKeyId"] == "arn:aws:kms:us-west-2:111122223333:alias/hyperpodinference-data-capture"
    assert capture["modelPod"]["captureContentTypeHeader"] == {"jsonContentTypes": ["application/json"]}


def test_secrets_manager_token_syncs_into_its_namespace_only(synth, template):
    store = only(synth, "SecretStore", "inference")
    name = store["metadata"]["name"]
    reader = store["spec"]["provider"]["aws"]["auth"]["jwt"]["serviceAccountRef"]["name"]
    assert reader == f"{name}-reader"
    external = by_name(synth, "ExternalSecret", name)
    assert external["spec"]["target"]["name"] == name
    assert external["spec"]["data"][0]["remoteRef"]["key"] == \
        "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-token-AbCdEf"
    # the IRSA role trusts exactly that service account and reads exactly that secret
    template.has_resource_properties("AWS::IAM::Role", {"AssumeRolePolicyDocument": {"Statement": [{
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {f"{OIDC}:aud": "sts.amazonaws.com",
                                       f"{OIDC}:sub": f"system:serviceaccount:inference:{reader}"}},
        "Effect": "Allow", "Principal": {"Federated": Match.any_value()}}]}})
    template.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": [{
        "Action": ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"], "Effect": "Allow",
        "Resource": "arn:aws:secretsmanager:us-west-2:111122223333:secret:hf-token-AbCdEf"}]}})


def test_nvme_init_container_carries_the_token_and_the_worker_does_not(synth):
    spec = by_name(synth, "InferenceEndpointConfig", "qwen-chat")["spec"]
    init = spec["kubernetes"]["initContainers"][0]
    # the Secret is mounted where the agent reads its token by default (nvme_agent.config.TOKEN_DIR)
    assert {"name": "nvme-hf-token", "mountPath": "/var/run/secrets/hf-token", "readOnly": True} in init["volumeMounts"]
    synced = only(synth, "ExternalSecret", "inference")["spec"]["target"]["name"]
    assert {"name": "nvme-hf-token", "secret": {"secretName": synced, "defaultMode": 0o400}} in \
        spec["kubernetes"]["volumes"]
    assert "HF_TOKEN" not in json.dumps(init.get("env", []))  # never an environment variable
    assert "HF_TOKEN" not in json.dumps(spec["worker"]) and "hf-token" not in json.dumps(spec["worker"])


def test_s3_daemonset_endpoint_gets_a_user_assignable_service_account_with_exact_irsa(synth, template):
    name = f"{synth.stack.inference.kubernetes_scope}-llama-nvme-model-reader"
    sa = by_name(synth, "ServiceAccount", name)
    assert sa["metadata"]["labels"]["sagemaker.amazonaws.com/user-assignable"] == "true"
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::111122223333:role/") \
        or sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("<")
    spec = by_name(synth, "InferenceEndpointConfig", "llama-nvme")["spec"]
    assert spec["kubernetes"]["serviceAccountName"] == name
    template.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": [
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": "arn:aws:s3:::my-models/llama-3-70b/*"},
        {"Action": "s3:ListBucket", "Effect": "Allow", "Resource": "arn:aws:s3:::my-models",
         "Condition": {"StringLike": {"s3:prefix": ["llama-3-70b/*"]}}}]}})


def test_s3_csi_role_reads_exactly_the_operator_mounted_model_prefix(template):
    template.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": "arn:aws:s3:::my-models/llama-3-8b/*"}])}})


def test_addon_enables_custom_service_accounts_and_is_preserved_on_delete_for_gitops(template):
    addon = [r for r in template.find_resources("AWS::EKS::Addon").values()
             if r["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference"][0]
    assert addon["Properties"]["PreserveOnDelete"] is True
    joined = json.dumps(addon["Properties"]["ConfigurationValues"])
    assert '\\"enableCustomServiceAccounts\\":true' in joined
    assert "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcd1234efgh" in joined


def test_execution_role_gets_domain_and_capture_grants(template):
    template.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": Match.array_with([
        Match.object_like({"Action": "route53:ChangeResourceRecordSets",
                           "Condition": {"ForAllValues:StringEquals": {
                               "route53:ChangeResourceRecordSetsRecordTypes": ["A", "TXT"],
                               "route53:ChangeResourceRecordSetsNormalizedRecordNames": [
                                   "chat.example.com", "llama.example.com"]}},
                           "Resource": "arn:aws:route53:::hostedzone/Z0123456789ABCDEFGHIJ"}),
        Match.object_like({"Action": ["acm:DescribeCertificate", "acm:GetCertificate"],
                           "Resource": "arn:aws:acm:us-west-2:111122223333:certificate/0a1b2c3d-0000-1111-2222-333344445555"}),
    ])}})


def test_capture_bucket_and_key_are_retained(template):
    for rtype in ("AWS::S3::Bucket", "AWS::KMS::Key"):
        for logical, res in template.find_resources(rtype).items():
            assert res.get("DeletionPolicy") == "Retain", logical


def test_outputs_tell_the_next_command(synth):
    outputs = synth.template["Outputs"]
    status = outputs["InferenceQwenChatStatus"]["Value"]
    assert "kubectl describe inferenceendpointconfig qwen-chat -n inference" in status
    assert "kubectl get events -n inference --field-selector involvedObject.name=qwen-chat" in status
    assert ".status.dnsStatus" in status
    invoke = outputs["InferenceQwenChatInvoke"]["Value"]
    assert invoke.startswith("https://chat.example.com/ ; aws sagemaker-runtime invoke-endpoint --endpoint-name qwen-chat")
    assert "s3://hyperpodinference-capture-111122223333-us-west-2/data-capture/<hash>/pod/" in \
        outputs["CapturePrefixes"]["Value"]


def test_warnings_for_unwise_but_allowed_settings(synth):
    warnings = "\n".join(synth.warnings())
    assert "research/mistral-tgi: model.huggingface.commitSHA: no commitSHA" in warnings
    assert "research/mistral-tgi: model.huggingface.prefetch: with prefetch: false the operator also gives the " \
        "Hugging Face token" in warnings
    assert "research/llama-s3: dataCapture.modelPod: modelPod capture samples 100%" in warnings
    assert "inference/qwen-chat: modelPod capture" not in warnings  # 5% with a cap


def test_v3_2_config_validates_against_v3_2_crds(tmp_path):
    # GIVEN the same config on operator v3.2 without the v3.3-only operator cache
    data = load_yaml(FILES_CONFIG)
    data["operator"]["version"] = "v3.2"
    data["endpoints"][1]["weightCache"] = {"mode": "off"}
    s = synth_config(data, tmp_path, nag=False)
    for cr in s.custom_resources():
        assert crd_errors(cr, "v3.2") == [], cr["metadata"]["name"]


def test_fsx_source_with_node_path_is_cached_from_the_node_mount(tmp_path):
    # GIVEN an FSx model mounted on the nodes and the daemonset cache
    data = load_yaml(FILES_CONFIG)
    data["endpoints"] = [dict(data["endpoints"][3], name="fsx-nvme",
                              model={"fsx": {"fileSystemId": "fs-0123456789abcdef0", "path": "/llama",
                                             "nodePath": "/fsx"}})]
    s = synth_config(data, tmp_path, nag=False)
    spec = by_name(s, "InferenceEndpointConfig", "fsx-nvme")["spec"]
    init = spec["kubernetes"]["initContainers"][0]
    # THEN the agent copies from /fsx/llama, mounting the node's FSx path read-only at the same path
    assert json.loads(init["command"][init["command"].index("--model") + 1]) == {
        "path": "/fsx/llama", "mount": "/fsx", "source": "local"}
    assert {"name": "nvme-fsx-source", "mountPath": "/fsx", "readOnly": True} in init["volumeMounts"]
    assert {"name": "nvme-fsx-source", "hostPath": {"path": "/fsx", "type": "Directory"}} in spec["kubernetes"]["volumes"]
    daemonset = only(s, "DaemonSet", spec_namespace := by_name(s, "InferenceEndpointConfig", "fsx-nvme")[
        "metadata"]["namespace"])
    assert daemonset["metadata"]["annotations"]["hyperpod-inference/endpoints"] == "fsx-nvme" and spec_namespace
    assert k8s_errors(daemonset) == [] and crd_errors(by_name(s, "InferenceEndpointConfig", "fsx-nvme"), "v3.3") == []
