"""``init`` against the realistic moto account: the config it writes carries the cluster's values, validates with
the loader and synthesizes; it never overwrites a file; a missing piece is an error naming the command that fixes
it."""

from __future__ import annotations

import pytest
import yaml

from hyperpod_inference.config import load_config
from hyperpod_inference.ops.doctor.account import MIN_BOOTSTRAP_VERSION
from tests.fake_aws import ACCOUNT, EKS, HYPERPOD_ARN, REGION
from tests.ops.conftest import run_init


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
    assert refused == [str(v) for v in range(1, MIN_BOOTSTRAP_VERSION)]


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


# ------------------------------------------------------------------------ what AWS answers never breaks the file
#: Text with every YAML indicator that breaks a pasted line: ': ', '#', quotes, line breaks of each kind, a control
#: character, an HTML page, and non-ASCII letters.
NASTY = ("gpu: \"q\" 'x' # not a comment\n- item: [a, {b}] &anchor *alias !tag |\r\n\x85next\u2028line\x07 "
         "<html><title>502</title></html> ünïcødé 漢字")


def _comments(text: str) -> list[str]:
    return [line.split("#", 1)[1] for line in text.splitlines() if line.lstrip().startswith("#")]


def test_moto_s_html_404_for_list_addons_becomes_one_line_in_a_file_that_parses_and_validates(account, capsys):
    # GIVEN ListAddons answered by moto itself: an HTML page with newlines, HTTP 404 (as a proxy's error page would be)
    account.left_to_moto.add("ListAddons")
    # WHEN init runs
    status, path = run_init(account)
    # THEN it writes the config: it parses, validates, and says on one line why the add-ons could not be listed
    assert status == 0, capsys.readouterr().err
    text = path.read_text(encoding="utf-8")
    yaml.safe_load(text)
    load_config(path)
    [note] = [line for line in text.splitlines() if line.lstrip().startswith("dependencies:")]
    assert "the add-ons could not be listed (eks ListAddons answered HTTP 404: 404 Not Found" in note
    assert "<" not in note and len(note) < 500


def test_text_with_yaml_indicators_in_every_place_init_writes_one_keeps_the_file_valid(account, capsys):
    # GIVEN AWS answers carrying NASTY wherever init writes AWS text: the instance group names (comments), the
    # Kubernetes version (a comment), the add-ons' error (a note); and a HyperPod name with it on the command line
    account.hyperpod_patch["InstanceGroups"] = [
        {"InstanceGroupName": f"{NASTY} {i}", "InstanceType": itype, "CurrentCount": 1, "Status": "InService",
         "ExecutionRole": f"arn:aws:iam::{ACCOUNT}:role/hp-node-role", "ThreadsPerCore": 1,
         "LifeCycleConfig": {"SourceS3Uri": "s3://b/p", "OnCreate": "on_create.sh"}}
        for i, itype in enumerate(["ml.g5.8xlarge", "ml.m5.xlarge"])]
    account.eks_patch["version"] = NASTY
    from botocore.awsrequest import AWSResponse

    session = account.session()
    session.events.register("before-call.eks.ListAddons", lambda **_: (AWSResponse(None, 500, {}, None), {
        "Error": {"Code": "InternalFailure", "Message": NASTY}, "ResponseMetadata": {"HTTPStatusCode": 500}}))
    account.session = lambda: session  # type: ignore[method-assign]
    # WHEN init runs
    status, path = run_init(account)
    # THEN the file parses to exactly the values init found, validates, every comment is one line of printable
    # text, and the non-ASCII names survive as written
    assert status == 0, capsys.readouterr().err
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert data["cluster"]["eksClusterName"] == EKS and data["cluster"]["hyperpodClusterArn"] == HYPERPOD_ARN
    load_config(path)
    assert all("\r" not in c and "\x85" not in c and "\u2028" not in c and "\x07" not in c for c in _comments(text))
    assert "instance group gpu: \"q\" 'x' # not a comment - item:" in text
    assert "ünïcødé 漢字 0: 1 x ml.g5.8xlarge" in text
    assert "(eks ListAddons failed: InternalFailure gpu:" in text
    # and the commented-out endpoint under the group is YAML once uncommented
    block = [line.removeprefix("  # ") for line in text.splitlines() if line.startswith("  # ") and
             not line.startswith("  # instance group")]
    assert yaml.safe_load("\n".join(block))[0]["instanceType"] == "ml.g5.8xlarge"


def test_a_config_that_would_not_validate_is_not_written_and_the_error_names_the_real_path(account, capsys):
    # GIVEN an EKS cluster whose VPC ID the config refuses (an answer no real EKS gives, with a line break)
    account.eks_patch["resourcesVpcConfig"] = {"vpcId": "vpc-ünï\ncode: 1", "subnetIds": []}
    # WHEN init runs
    status, path = run_init(account)
    # THEN exit 1, nothing is written (no file, no temporary file), and the error names the file asked for and the key
    err = capsys.readouterr().err
    assert status == 1
    assert not path.exists() and not list(path.parent.glob(".init-*"))
    assert f"{path}: cluster.vpcId" in err and ".init-" not in err


def test_a_folder_that_does_not_exist_is_an_error_not_a_traceback(account, capsys):
    status, path = run_init(account, output=account.tmp / "no-such-folder" / "c.yaml")
    assert status == 1
    assert f"cannot write {path}" in capsys.readouterr().err


@pytest.mark.parametrize("fault", ["unknown profile", "no credentials", "expired session", "access denied"])
def test_aws_that_cannot_be_read_exits_3_naming_the_fix_and_writes_nothing(account, tmp_path, monkeypatch, capsys,
                                                                            fault):
    # GIVEN the environment of `python -m hyperpod_inference init` with one fault in the AWS configuration
    from botocore.awsrequest import AWSResponse

    from hyperpod_inference.__main__ import main
    from hyperpod_inference.ops import aws as ops_aws

    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    if fault == "unknown profile":
        monkeypatch.setenv("AWS_PROFILE", "mistyped")
    elif fault == "no credentials":
        for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.delenv(var)
    else:
        code = "ExpiredTokenException" if fault == "expired session" else "AccessDeniedException"
        real = ops_aws.Aws.client

        def answering(self, service):
            client = real(self, service)
            client.meta.events.register("before-call", lambda **_: (AWSResponse(None, 400, {}, None), {
                "Error": {"Code": code, "Message": "no"}, "ResponseMetadata": {"HTTPStatusCode": 400}}))
            return client

        monkeypatch.setattr(ops_aws.Aws, "client", answering)
    output = tmp_path / "out.yaml"
    # WHEN init runs
    status = main(["init", "--hyperpod-cluster", "hp-cluster", "--region", REGION, "-o", str(output)])
    # THEN exit 3, no file, and one line naming the output and what to fix
    err = capsys.readouterr().err
    assert status == 3, err
    assert not output.exists()
    assert err.startswith(f"init: nothing written to {output}: ") and err.count("\n") == 1
    assert {"unknown profile": "the AWS profile mistyped", "no credentials": "no usable AWS credentials",
            "expired session": "the AWS credentials have expired",
            "access denied": "may not call sagemaker:DescribeCluster"}[fault] in err
