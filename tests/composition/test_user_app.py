"""HyperPodInference in a user's own stack: their cluster, bucket, key, zone and certificate, endpoints added one by
one (the snippet of docs/cdk-app.md, run as it is), and the same endpoints through the config path."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from hyperpod_inference import ConfigError, Endpoint, HyperPodInference, HyperPodInferenceStack, parse_config
from tests.k8s_validation import crd_errors, require_crds

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "cdk-app.md"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def user_app(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    # GIVEN the docs' user app WHEN it runs as written THEN it synthesizes (and writes its review manifests)
    (block,) = python_blocks(DOC)
    namespace: dict[str, Any] = {}
    exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - the documented snippet, run as a test
    namespace["template"] = Template.from_stack(namespace["stack"])
    namespace["raw"] = namespace["template"].to_json()
    return namespace


def _trust_subjects(raw: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for logical_id, res in raw["Resources"].items():
        if res["Type"] != "AWS::IAM::Role":
            continue
        for st in res["Properties"]["AssumeRolePolicyDocument"]["Statement"]:
            for op in ("StringEquals", "StringLike"):
                for k, v in (st.get("Condition", {}).get(op) or {}).items():
                    if k.endswith(":sub"):
                        out[logical_id] = v
    return out


def test_users_own_bucket_gets_the_alb_delivery_policy(user_app: dict[str, Any]) -> None:
    # GIVEN the user's s3.Bucket in the same stack and an endpoint with tier 2 THEN its policy lets ALB deliver logs
    t: Template = user_app["template"]
    bucket_id = user_app["stack"].get_logical_id(user_app["bucket"].node.default_child)
    t.has_resource_properties("AWS::S3::BucketPolicy", {
        "Bucket": {"Ref": bucket_id},
        "PolicyDocument": {"Statement": Match.array_with([Match.object_like({
            "Principal": {"Service": "logdelivery.elasticloadbalancing.amazonaws.com"},
            "Action": "s3:PutObject"})])}})
    # and no bucket of the library's own is created beside it
    assert not any("DataCaptureBucket" in k for k in user_app["raw"]["Resources"])


def test_users_own_key_policy_names_the_operator_role(user_app: dict[str, Any]) -> None:
    # GIVEN the user's kms.Key in the same stack THEN its key policy carries the operator role's capture statement
    key = user_app["raw"]["Resources"][user_app["stack"].get_logical_id(user_app["key"].node.default_child)]
    role_id = user_app["stack"].get_logical_id(user_app["inference"].execution_role.node.default_child)
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    granted = [s for s in statements if s.get("Principal", {}).get("AWS") == {"Fn::GetAtt": [role_id, "Arn"]}]
    assert granted and set(granted[0]["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"}
    # and the custom resource's kmsKeyId is that key's ARN
    cr = user_app["stack"].resolve(user_app["chat"].custom_resource)
    assert cr["spec"]["dataCapture"]["sagemakerEndpoint"]["kmsKeyId"] == {
        "Fn::GetAtt": [user_app["stack"].get_logical_id(user_app["key"].node.default_child), "Arn"]}


def test_token_is_wired_through_add_endpoint(user_app: dict[str, Any]) -> None:
    # GIVEN a Hugging Face endpoint with a Secrets Manager token added with add_endpoint
    chat = user_app["chat"]
    ref = chat.custom_resource["spec"]["modelSourceConfig"]["huggingFaceModel"]["tokenSecretRef"]
    # THEN the custom resource references the Secret that the namespace's sync of that secret writes
    docs = user_app["inference"].manifest_documents()
    scope = user_app["inference"].kubernetes_scope
    syncs = [objs for name, objs in docs.items() if name.startswith("inference-token-")]
    assert len(syncs) == 1
    by_kind = {o["kind"]: o for o in syncs[0]}
    assert ref == {"name": by_kind["ExternalSecret"]["spec"]["target"]["name"], "key": "token"}
    assert ref["name"].startswith(f"{scope}-hf-token-")
    assert by_kind["SecretStore"]["metadata"]["name"] == ref["name"]
    # and the token reader role trusts exactly the ESO service account
    subjects = _trust_subjects(user_app["raw"])
    token_role = user_app["stack"].get_logical_id(chat.token_reader_role.node.default_child)
    assert subjects[token_role] == f"system:serviceaccount:inference:{by_kind['ServiceAccount']['metadata']['name']}"
    assert chat.model_reader_role is None


def test_s3_endpoint_with_nvme_cache_gets_its_own_reader_role(user_app: dict[str, Any]) -> None:
    s = user_app["summarize"]
    role_id = user_app["stack"].get_logical_id(s.model_reader_role.node.default_child)
    scope = user_app["inference"].kubernetes_scope
    assert _trust_subjects(user_app["raw"])[role_id] == \
        f"system:serviceaccount:inference:{scope}-summarize-model-reader"
    policy = json.dumps([r for r in user_app["raw"]["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
                         and {"Ref": role_id} in r["Properties"]["Roles"]])
    assert "arn:aws:s3:::my-models/llama/*" in policy
    assert s.custom_resource["spec"]["modelSourceConfig"] == {"modelSourceType": "kubernetesVolume"}
    assert s.manifest is not None and s.manifest is user_app["inference"].manifest_resources["inference-summarize"]


def test_custom_resources_validate_strictly_against_the_crds(user_app: dict[str, Any]) -> None:
    require_crds()
    key_id = user_app["stack"].get_logical_id(user_app["key"].node.default_child)
    # The user's key ARN is known at deploy; the review copy shows a placeholder, here an ARN of the same shape
    key_arn = "arn:aws:kms:us-west-2:111122223333:key/0a1b2c3d-0000-1111-2222-333344445555"
    checked = 0
    for name, objs in user_app["inference"].manifest_documents().items():
        for obj in json.loads(json.dumps(objs).replace(f"<{key_id}.Arn>", key_arn)):
            if obj["apiVersion"].startswith("inference.sagemaker"):
                assert crd_errors(obj, "v3.3") == [], name
                checked += 1
    assert checked == 2


def test_endpoints_added_after_construction_reach_outputs_addon_and_trusts(user_app: dict[str, Any]) -> None:
    raw = user_app["raw"]
    # THEN outputs of both endpoints exist
    for child in ("InferenceChatStatus", "InferenceChatInvoke", "InferenceSummarizeStatus"):
        output = user_app["inference"].node.find_child(child)
        assert user_app["stack"].get_logical_id(output) in raw["Outputs"], child
    # THEN the add-on enables custom service accounts (only the NVMe endpoint, added later, needs them)
    addon = next(r for r in raw["Resources"].values() if r["Type"] == "AWS::EKS::Addon"
                 and r["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference")
    assert '"enableCustomServiceAccounts":true' in json.dumps(user_app["stack"].resolve(
        addon["Properties"]["ConfigurationValues"])).replace("\\", "").replace(" ", "")
    # THEN no gated-model role exists: no JumpStart endpoint needs one (and the add-on gets no key for it)
    assert user_app["inference"].operator.dependency_roles.jumpstart_gated_role is None
    assert "jumpstartGatedModelDownloadRoleArn" not in json.dumps(user_app["stack"].resolve(
        addon["Properties"]["ConfigurationValues"]))
    # THEN the DNS grant names exactly the endpoint's domain
    assert "chat.example.com" in json.dumps([r for r in raw["Resources"].values() if r["Type"] == "AWS::IAM::Policy"])


def test_construct_without_endpoints_has_neither_capture_nor_custom_service_accounts() -> None:
    # GIVEN the same construct with no endpoint: the values that depend on the endpoints differ (the test above
    # proves add_endpoint changed them)
    app = cdk.App()
    stack = cdk.Stack(app, "Empty", env=cdk.Environment(account="111122223333", region="us-west-2"))
    inference = HyperPodInference(stack, "Inference", config=_files_config())
    raw = Template.from_stack(stack).to_json()
    assert inference.capture is None and inference.domain is None
    assert not any(r["Type"] == "AWS::EKS::Addon" and "enableCustomServiceAccounts\":true" in json.dumps(r)
                   for r in raw["Resources"].values())


def _files_config(**extra: Any) -> Any:
    return parse_config({"apiVersion": "hyperpod-inference/v1",
                         "cluster": {"hyperpodClusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcd1234efgh",
                                     "oidcProviderArn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2."
                                                        "amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
                                     "eksClusterName": "my-hp-eks"},
                         "manifests": {"delivery": "files"}, **extra})


def test_config_path_builds_the_same_custom_resources(user_app: dict[str, Any]) -> None:
    # GIVEN a second stack with the same resources WHEN the endpoints come from the config THEN the custom
    # resources equal those add_endpoint built
    ns = user_app
    data = ns["config"].model_dump(by_alias=True, exclude_none=True)
    data["endpoints"] = [e.endpoint.model_dump(by_alias=True, exclude_none=True)
                         for e in ns["inference"].endpoints.values()]
    app = cdk.App()
    stack = cdk.Stack(app, "MyPlatform", env=ns["stack"].environment and cdk.Environment(
        account="111122223333", region="us-west-2"))
    block = python_blocks(DOC)[0]
    setup = block.split("config = parse_config(")[0].replace("app = cdk.App()\n", "").replace(
        'stack = cdk.Stack(app, "MyPlatform", env=cdk.Environment(account=ACCOUNT, region=REGION))\n', "")
    local: dict[str, Any] = {"stack": stack, "app": app}
    exec(compile(setup, str(DOC), "exec"), local)  # noqa: S102 - the same resources, in the second stack
    inference = HyperPodInference(stack, "Inference", cluster=local["cluster"], config=parse_config(
        data), capture_bucket=local["bucket"], capture_key=local["key"],
        hosted_zone=local["zone"], certificate=local["certificate"])
    for name, added in ns["inference"].endpoints.items():
        assert stack.resolve(inference.endpoints[name].custom_resource) == ns["stack"].resolve(added.custom_resource)


def test_add_endpoint_applies_the_configs_cross_endpoint_rules() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Rules", env=cdk.Environment(account="111122223333", region="us-west-2"))
    inference = HyperPodInference(stack, "Inference", config=_files_config())
    ep = {"name": "a", "namespace": "inference", "instanceType": "ml.g5.8xlarge", "sagemakerEndpointName": "a",
          "model": {"s3": {"bucket": "my-models", "prefix": "a/"}}}
    inference.add_endpoint(Endpoint.model_validate(ep))
    # WHEN the same SageMaker endpoint name comes again THEN refused with the path, relative to the endpoint
    dup = copy.deepcopy(ep) | {"name": "b"}
    with pytest.raises(ConfigError) as err:
        inference.add_endpoint(Endpoint.model_validate(dup))
    assert ("sagemakerEndpointName", "duplicate SageMaker endpoint name (also endpoints[0])") in err.value.problems
    # WHEN an endpoint captures but the config has no capture section THEN refused naming dataCapture
    cap = copy.deepcopy(ep) | {"name": "c", "sagemakerEndpointName": "c",
                               "dataCapture": {"modelPod": {"enabled": True}}}
    with pytest.raises(ConfigError) as err:
        inference.add_endpoint(Endpoint.model_validate(cap))
    assert [p for p, _ in err.value.problems] == ["dataCapture"]
    assert list(inference.endpoints) == ["inference-a"]  # nothing of a refused endpoint was added


def test_props_are_checked_with_the_rule_named() -> None:
    app = cdk.App()
    agnostic = cdk.Stack(app, "NoEnv")
    with pytest.raises(ValueError, match="literal env"):
        HyperPodInference(agnostic, "Inference", config=_files_config())
    other = cdk.Stack(app, "Other", env=cdk.Environment(account="111122223333", region="eu-west-1"))
    config = parse_config({**_files_config().model_dump(by_alias=True, exclude_none=True),
                           "env": {"account": "111122223333", "region": "us-west-2"}})
    with pytest.raises(ValueError, match="differs from the enclosing stack"):
        HyperPodInference(other, "Inference", config=config)
    kubectl = cdk.Stack(app, "Kubectl", env=cdk.Environment(account="111122223333", region="us-west-2"))
    data = _files_config().model_dump(by_alias=True, exclude_none=True)
    data["manifests"] = {"delivery": "kubectl"}
    with pytest.raises(ValueError, match="cluster: required with manifests.delivery: kubectl"):
        HyperPodInference(kubectl, "Inference", config=parse_config(data))


def test_a_config_with_only_the_hyperpod_cluster_arn_loads_and_the_stack_names_what_it_needs() -> None:
    # GIVEN a config whose cluster section has only hyperpodClusterArn and no env
    config = parse_config({"apiVersion": "hyperpod-inference/v1", "cluster": {
        "hyperpodClusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcd1234efgh"}})
    # WHEN the app's stack (which imports the cluster by name) is built from it THEN refused, naming each field and
    # how to proceed
    with pytest.raises(ConfigError) as err:
        HyperPodInferenceStack(cdk.App(), "Stack", config=config)
    assert {p for p, _ in err.value.problems} == {"env", "cluster.eksClusterName", "cluster.kubectlRoleArn",
                                                  "cluster.oidcProviderArn", "cluster.vpcId"}
    assert all("pass cluster=" in m or "your own stack" in m for _, m in err.value.problems)


def test_a_jumpstart_endpoint_added_later_brings_the_gated_role_trusting_exactly_its_namespace() -> None:
    # GIVEN a construct with no JumpStart endpoint WHEN one is added in namespace research
    app = cdk.App()
    stack = cdk.Stack(app, "Gated", env=cdk.Environment(account="111122223333", region="us-west-2"))
    inference = HyperPodInference(stack, "Inference", config=_files_config())
    assert inference.operator.dependency_roles.jumpstart_gated_role is None
    inference.add_endpoint(Endpoint.model_validate({
        "name": "llama", "namespace": "research", "kind": "JumpStartModel", "instanceType": "ml.g5.8xlarge",
        "model": {"jumpstart": {"modelId": "meta-textgeneration-llama-3-8b"}}}))
    raw = Template.from_stack(stack).to_json()
    # THEN the role exists, trusts exactly research's operator-made service accounts, and the add-on names it
    role = inference.operator.dependency_roles.jumpstart_gated_role
    assert _trust_subjects(raw)[stack.get_logical_id(role.node.default_child)] == \
        "system:serviceaccount:research:hyperpod-inference-service-account*"
    addon = next(r for r in raw["Resources"].values() if r["Type"] == "AWS::EKS::Addon"
                 and r["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference")
    # (files delivery: the role has a known name, and the add-on its literal ARN)
    assert f"role/{role.node.default_child.role_name}" in json.dumps(addon["Properties"]["ConfigurationValues"])


# --- cluster objects and props, in the user's words ---------------------------------------------------------------
OIDC = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"


def _kubectl_config(**cluster: Any) -> Any:
    return parse_config({"apiVersion": "hyperpod-inference/v1", "cluster": {
        "hyperpodClusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcd1234efgh", **cluster}})


def _cluster(stack: cdk.Stack, *, layer: bool, oidc: str = OIDC) -> Any:
    from aws_cdk import aws_eks as eks
    from aws_cdk import aws_iam as iam
    from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer

    provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(stack, "Oidc", oidc)
    return eks.Cluster.from_cluster_attributes(
        stack, "Cluster", cluster_name="my-hp-eks", kubectl_role_arn="arn:aws:iam::111122223333:role/hp-eks-admin",
        open_id_connect_provider=provider, kubectl_layer=KubectlV33Layer(stack, "Layer") if layer else None)


def _stack(name: str) -> cdk.Stack:
    return cdk.Stack(cdk.App(), name, env=cdk.Environment(account="111122223333", region="us-west-2"))


def test_a_cluster_object_without_a_kubectl_layer_is_refused() -> None:
    # GIVEN an imported cluster without kubectl_layer WHEN the construct applies manifests through it THEN refused
    stack = _stack("NoLayer")
    with pytest.raises(ValueError, match="has no kubectl_layer"):
        HyperPodInference(stack, "Inference", config=_kubectl_config(), cluster=_cluster(stack, layer=False))


def test_a_config_oidc_provider_that_contradicts_the_cluster_objects_is_refused_naming_both() -> None:
    stack = _stack("Oidc")
    other = OIDC.replace("EXAMPLED539D4633E53DE1B71EXAMPLE", "0THER0000000000000000000000000000")
    with pytest.raises(ValueError) as err:
        HyperPodInference(stack, "Inference", config=_kubectl_config(oidcProviderArn=other),
                          cluster=_cluster(stack, layer=True))
    assert OIDC in str(err.value) and other in str(err.value)


def test_a_prop_given_beside_its_config_key_names_both() -> None:
    from aws_cdk import aws_s3 as s3

    stack = _stack("Props")
    config = parse_config({**_files_config().model_dump(by_alias=True, exclude_none=True),
                           "capture": {"bucketName": "my-capture-bucket"}})
    with pytest.raises(ValueError, match=r"capture_bucket: given, and the config sets capture\.bucketName too"):
        HyperPodInference(stack, "Inference", config=config,
                          capture_bucket=s3.Bucket.from_bucket_name(stack, "B", "other-bucket"))


def test_add_endpoint_takes_a_mapping_and_names_problems_by_their_path() -> None:
    stack = _stack("Mapping")
    inference = HyperPodInference(stack, "Inference", config=_files_config())
    ep = {"name": "a", "namespace": "inference", "instanceType": "ml.g5.8xlarge",
          "model": {"s3": {"bucket": "my-models", "prefix": "a/"}}}
    # WHEN a mapping with a typo comes THEN a ConfigError at the endpoint's own path, with "did you mean"
    with pytest.raises(ConfigError) as err:
        inference.add_endpoint({**ep, "autoscalingSpec": {}})
    assert dict(err.value.problems)["autoscalingSpec"] == "unknown key; did you mean autoScalingSpec?"
    # WHEN the mapping is valid THEN it is added like an Endpoint
    added = inference.add_endpoint(ep)
    assert added.endpoint.name == "a" and list(inference.endpoints) == ["inference-a"]


def test_kubernetes_version_selects_the_kubectl_layer_and_an_absent_one_names_the_pip_command() -> None:
    from hyperpod_inference.stack import kubectl_layer, kubectl_layer_for

    assert kubectl_layer_for(None).minor == 33 and kubectl_layer_for("1.36").minor == 36
    stack = _stack("Layer")
    assert type(kubectl_layer(stack, "1.33")).__name__ == "KubectlV33Layer"
    import importlib.util

    if importlib.util.find_spec("aws_cdk.lambda_layer_kubectl_v36") is not None:
        pytest.skip("the v36 layer (an extra) is installed here")
    with pytest.raises(ConfigError) as err:
        kubectl_layer(stack, "1.36")
    (path, message), = err.value.problems
    assert path == "cluster.kubernetesVersion"
    assert "pip install 'hyperpod-inference-cdk[kubectl-v36]'" in message


def test_an_acknowledged_warning_is_shown_with_its_reason_instead_of_the_warning() -> None:
    from aws_cdk.assertions import Annotations

    # GIVEN an unpinned Hugging Face endpoint acknowledged in the config, and a second one not acknowledged
    stack = _stack("Acks")
    config = parse_config({**_files_config().model_dump(by_alias=True, exclude_none=True), "acknowledgeWarnings": [
        {"id": "unpinned", "endpoint": "inference/a", "reason": "staging follows main"}]})
    inference = HyperPodInference(stack, "Inference", config=config)
    for name in ("a", "b"):
        inference.add_endpoint({"name": name, "namespace": "inference", "instanceType": "ml.g5.8xlarge",
                                "model": {"huggingface": {"modelId": "Qwen/Qwen2.5-7B-Instruct"}}})
    # WHEN synthesized THEN a's warning is information carrying the reason, b's stays a warning
    notes = Annotations.from_stack(stack)
    infos = [m.entry.data for m in notes.find_info("*", Match.string_like_regexp("acknowledged"))]
    warnings = [m.entry.data for m in notes.find_warning("*", Match.string_like_regexp("no commitSHA"))]
    assert any("(staging follows main)" in str(i) and "inference/a" in str(i) for i in infos), infos
    assert [w for w in warnings if "inference/a" in str(w)] == []
    assert [w for w in warnings if "inference/b" in str(w)]


def test_a_plain_load_config_of_a_file_with_only_the_cluster_arn_synthesizes_in_a_users_app(tmp_path: Path) -> None:
    # GIVEN a config file whose cluster section has only hyperpodClusterArn (and the OIDC provider), and no env
    from aws_cdk import aws_certificatemanager as acm
    from aws_cdk import aws_eks as eks
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_route53 as route53
    from aws_cdk import aws_s3 as s3
    from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer

    from hyperpod_inference import load_config

    account, region = "111122223333", "us-west-2"
    oidc_arn = f"arn:aws:iam::{account}:oidc-provider/oidc.eks.{region}.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
    secret = f"arn:aws:secretsmanager:{region}:{account}:secret:hf-token-AbCdEf"
    cert_arn = f"arn:aws:acm:{region}:{account}:certificate/0a1b2c3d-0000-1111-2222-333344445555"
    path = tmp_path / "platform.yaml"
    path.write_text(json.dumps({
        "apiVersion": "hyperpod-inference/v1",
        "cluster": {"hyperpodClusterArn": f"arn:aws:sagemaker:{region}:{account}:cluster/abcd1234efgh",
                    "oidcProviderArn": oidc_arn},
        "namespaces": ["inference"], "capture": {"retentionDays": 30}, "domain": {"zoneName": "example.com"},
        "endpoints": [{
            "name": "chat", "namespace": "inference", "instanceType": "ml.g5.8xlarge", "runtime": "vllm",
            "sagemakerEndpointName": "chat", "domainName": "chat.example.com",
            "model": {"huggingface": {"modelId": "Qwen/Qwen2.5-7B-Instruct", "commitSHA": "a" * 40,
                                      "token": {"secretsManagerArn": secret}}},
            "dataCapture": {"sagemakerEndpoint": {"enabled": True, "initialSamplingPercentage": 10}}}],
    }))
    config = load_config(path)
    # WHEN a user's app builds its own cluster import, bucket, key, zone and certificate around it
    app = cdk.App(outdir=str(tmp_path / "out"))
    stack = cdk.Stack(app, "Platform", env=cdk.Environment(account=account, region=region))
    cluster = eks.Cluster.from_cluster_attributes(
        stack, "Cluster", cluster_name="my-hp-eks", kubectl_role_arn=f"arn:aws:iam::{account}:role/hp-eks-admin",
        kubectl_layer=KubectlV33Layer(stack, "KubectlLayer"),
        open_id_connect_provider=iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(stack, "Oidc", oidc_arn))
    inference = HyperPodInference(
        stack, "Inference", config=config, cluster=cluster,
        capture_bucket=s3.Bucket(stack, "Bucket", enforce_ssl=True), capture_key=kms.Key(stack, "Key"),
        hosted_zone=route53.HostedZone.from_hosted_zone_attributes(stack, "Zone", hosted_zone_id="Z0123456789ABCDEFGHIJ",
                                                                     zone_name="example.com"),
        certificate=acm.Certificate.from_certificate_arn(stack, "Certificate", cert_arn))
    assembly = app.synth()
    # THEN it synthesizes, and the endpoint's manifest carries the synced token, the certificate and the zone
    inference.write_manifests(assembly.directory)
    docs = inference.manifest_documents()
    (spec,) = [o["spec"] for objs in docs.values() for o in objs if o.get("kind") == "InferenceEndpointConfig"]
    token = spec["modelSourceConfig"]["huggingFaceModel"]["tokenSecretRef"]
    synced = [o for objs in docs.values() for o in objs if o.get("kind") == "ExternalSecret"]
    assert [o["spec"]["target"]["name"] for o in synced] == [token["name"]]
    assert spec["tlsConfig"]["customCertificateConfig"]["acmArn"] == cert_arn
    assert spec["dnsConfig"]["hostedZoneId"] == "Z0123456789ABCDEFGHIJ"
