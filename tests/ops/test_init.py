"""``init`` against the realistic moto account: the config it writes carries the cluster's values, validates with
the loader and synthesizes; it never overwrites a file; a missing piece is an error naming the command that fixes
it."""

from __future__ import annotations

import pytest
import yaml

from hyperpod_inference.config import load_config
from hyperpod_inference.ops import doctor
from tests.ops.conftest import ACCOUNT, EKS, HYPERPOD_ARN, REGION, run_init


def test_init_writes_the_clusters_values_with_their_sources(account, capsys):
    # GIVEN the account / WHEN init reads the HyperPod cluster
    status, path = run_init(account)
    # THEN the config names the cluster's real values, validates with the loader, and init prints the next command
    assert status == 0
    config = load_config(path)
    cluster = config.cluster
    assert (config.env.account, config.env.region) == (ACCOUNT, REGION)
    assert cluster.eks_cluster_name == EKS
    assert cluster.hyperpod_cluster_arn == HYPERPOD_ARN
    assert cluster.oidc_provider_arn == account.ids["oidc_arn"]
    assert cluster.kubectl_role_arn == account.ids["kubectl_role"]
    assert cluster.vpc_id == account.ids["vpc_id"]
    assert config.operator.install == "addon" and config.operator.dependencies == "create"
    text = path.read_text()
    assert "# sagemaker describe-cluster: Orchestrator.Eks.ClusterArn" in text
    assert "AmazonEKSClusterAdminPolicy" in text.split("kubectlRoleArn:", 1)[1].splitlines()[0]
    # one endpoint commented out per GPU instance group type; the CPU group is named but gets none
    assert text.count("#   instanceType: ml.g5.8xlarge") == 1 and text.count("#   instanceType: ml.p5.48xlarge") == 1
    assert "#   instanceType: ml.m5.xlarge" not in text and "system: 1 x ml.m5.xlarge" in text
    assert f"make doctor CONFIG={path}" in capsys.readouterr().out


def test_init_sets_dependencies_existing_when_the_add_ons_are_installed(account):
    # GIVEN the cluster with cert-manager installed / WHEN init runs
    account.eks.add_addon("cert-manager", "v1.18.2-eksbuild.2")
    status, path = run_init(account)
    # THEN the config uses the existing add-ons and says which are there
    assert status == 0
    assert yaml.safe_load(path.read_text())["operator"]["dependencies"] == "existing"
    assert "installed already: cert-manager" in path.read_text()


def test_init_never_overwrites_a_file(account, capsys):
    # GIVEN a file where init would write / WHEN init runs
    target = account.tmp / "mine.yaml"
    target.write_text("keep: me\n")
    status, _ = run_init(account, output=target)
    # THEN it refuses (exit 1), says so, and the file is untouched
    assert status == 1
    assert "never overwrites" in capsys.readouterr().err
    assert target.read_text() == "keep: me\n"


@pytest.mark.parametrize(("fault", "says"), [
    ("no OIDC provider", "eksctl utils associate-iam-oidc-provider --cluster hp-eks"),
    ("not orchestrated by EKS", "not orchestrated by EKS"),
    ("no cluster-admin access entry", "aws eks create-access-entry --cluster-name hp-eks"),
])
def test_a_missing_piece_is_an_error_naming_the_fix(account, capsys, fault, says):
    # GIVEN the account without one piece init needs
    if fault == "no OIDC provider":
        account.client("iam").delete_open_id_connect_provider(OpenIDConnectProviderArn=account.ids["oidc_arn"])
    elif fault == "not orchestrated by EKS":
        account.orchestrated = False
    else:
        del account.eks.access[account.ids["kubectl_role"]]
    # WHEN init runs / THEN exit 1, no file, and the error names the command that fixes it
    status, path = run_init(account)
    assert status == 1
    assert not path.exists()
    assert says in capsys.readouterr().err


def test_a_kubectl_role_given_on_the_command_line_is_used(account):
    # GIVEN no access entry init could find, and the role given with --kubectl-role-arn
    del account.eks.access[account.ids["kubectl_role"]]
    role = f"arn:aws:iam::{ACCOUNT}:role/my-admin"
    status, path = run_init(account, "--kubectl-role-arn", role)
    # THEN the config names it and says where it came from
    assert status == 0
    assert load_config(path).cluster.kubectl_role_arn == role
    assert "given with --kubectl-role-arn" in path.read_text()


def test_the_config_init_writes_synthesizes(account, tmp_path):  # the one synth of tests/ops (jsii start)
    # GIVEN what init wrote, with one of its commented endpoints put in
    from tests.synth_helpers import synth_config

    status, path = run_init(account)
    assert status == 0
    data = yaml.safe_load(path.read_text())
    data["endpoints"] = [{"name": "model-1", "namespace": "inference", "instanceType": "ml.g5.8xlarge",
                          "replicas": 1, "runtime": "vllm", "model": {"huggingface": {
                              "modelId": "Qwen/Qwen2.5-7B-Instruct",
                              "commitSHA": "0123456789abcdef0123456789abcdef01234567"}}}]
    # WHEN it is synthesized
    result = synth_config(data, tmp_path / "out")
    # THEN the template holds the operator add-on for the cluster, the endpoint's custom resource exists, and the
    # template's bootstrap-version rule refuses exactly the versions doctor calls too old
    addons = [r["Properties"] for r in result.resources("AWS::EKS::Addon").values()]
    assert any(a["AddonName"] == "amazon-sagemaker-hyperpod-inference" and a["ClusterName"] == EKS for a in addons)
    assert [o["metadata"]["name"] for o in result.custom_resources()] == ["model-1"]
    rule = result.template["Rules"]["CheckBootstrapVersion"]["Assertions"][0]["Assert"]
    refused = rule["Fn::Not"][0]["Fn::Contains"][0]
    assert refused == [str(v) for v in range(1, doctor.MIN_BOOTSTRAP_VERSION)]


def test_add_ons_that_cannot_be_listed_leave_a_note_not_an_error(account):
    # GIVEN EKS refusing ListAddons to the caller
    from botocore.awsrequest import AWSResponse

    session = account.session()
    session.events.register("before-call.eks.ListAddons", lambda **_: (AWSResponse(None, 403, {}, None), {
        "Error": {"Code": "AccessDeniedException", "Message": "no"}, "ResponseMetadata": {"HTTPStatusCode": 403}}))
    account.session = lambda: session  # type: ignore[method-assign]
    # WHEN init runs / THEN it still writes a valid config, and says the add-ons are for doctor to check
    status, path = run_init(account)
    assert status == 0
    load_config(path)
    assert "the add-ons could not be listed (the caller may not call eks:ListAddons" in path.read_text()
