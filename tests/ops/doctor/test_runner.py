"""``doctor`` against the realistic moto account (tests/ops/conftest.py) and the fake Kubernetes API: it passes on
what ``init`` wrote and on a full config, each fault fails exactly its check naming the resource (exit 1), it makes
read calls only and changes nothing, and throttling, access denied and a missing kubeconfig make a check skip."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from hyperpod_inference.facts import operator as operator_facts
from hyperpod_inference.ops.aws import is_read_operation
from hyperpod_inference.ops.doctor import kubernetes, model, runner
from hyperpod_inference.ops.doctor.base import MAX_FIELD_CHARS, STACK_TAG, Result
from tests.fake_aws import (
    ACCOUNT,
    AWS_AUTH_PATH,
    EKS,
    ESO_CRD_PATH,
    KUBECTL_ROLE,
    MODEL_BUCKET,
    OTHER_ACCOUNT,
    REGION,
    Account,
)
from tests.ops.conftest import full_config, run_doctor

STACK = "HyperPodInference"
CAPTURE_BUCKET = f"hyperpodinference-capture-{ACCOUNT}-{REGION}"
TLS_BUCKET = f"hyperpod-tls-hyperpodinference-{ACCOUNT}-{REGION}"
OPERATOR_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/inferenceendpointconfigs." \
               "inference.sagemaker.aws.amazon.com"
ENDPOINT_CR = "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/inference/inferenceendpointconfigs/qwen-hf"


def _failed(results: list[dict]) -> list[dict]:
    return [r for r in results if r["status"] == "fail"]


def test_doctor_passes_on_the_config_init_wrote(account, init_config):
    # GIVEN the account and what init wrote from it / WHEN doctor runs with a kubeconfig for the cluster
    status, results = run_doctor(account, init_config)
    # THEN nothing fails or skips, and the account, bootstrap, cluster and operator checks ran
    assert status == 0, _failed(results)
    assert {r["status"] for r in results} == {"pass"}
    assert {"identity.account", "bootstrap.cdk-toolkit", "cluster.hyperpod", "cluster.kubectl-layer",
            "cluster.oidc-provider", "cluster.kubectl-role", "cluster.access-entry", "operator.addon",
            "operator.crds", "cluster.namespaces", "operator.tls-bucket"} <= {r["check"] for r in results}


def test_doctor_passes_on_a_full_config_and_runs_every_check(account, init_config):
    # GIVEN init's config plus two endpoints (one of the Hub on loopback), capture with a KMS key, an imported zone
    # and certificate
    status, results = run_doctor(account, full_config(account, init_config))
    # THEN every check ran and passed
    assert status == 0, _failed(results)
    assert {r["status"] for r in results} == {"pass"}
    assert {r["check"] for r in results} == set(runner.CHECK_IDS) - {"endpoint.weight-cache", "cluster.agent-role",
                                                                    "operator.gateway"}


def test_doctor_makes_only_read_calls_and_changes_nothing(account, init_config):
    # GIVEN the full config and the account's state (moto's, the fake EKS add-ons/access entries, the fake cluster)
    data = full_config(account, init_config)
    data["endpoints"][0]["weightCache"] = {"mode": "daemonset"}
    before = account.state()
    account.calls.clear()
    account.kube.requests.clear()
    # WHEN doctor runs every check
    status, _ = run_doctor(account, data)
    # THEN each API call was a read (Describe / List / Get / Head), recorded both before serialization and before the
    # request, the cluster saw only GETs, and nothing changed
    assert status == 0
    operations = {op for _, _, op in account.calls}
    assert {"GetCallerIdentity", "DescribeStacks", "DescribeCluster", "GetOpenIDConnectProvider", "GetRole",
            "ListAssociatedAccessPolicies", "DescribeAddon", "ListObjectsV2", "DescribeSecret", "HeadBucket",
            "GetHostedZone", "DescribeCertificate", "DescribeKey"} <= operations
    assert {event for event, _, _ in account.calls} == {"provide-client-params", "before-call"}
    assert [op for op in operations if not is_read_operation(op)] == []
    assert all(op.startswith(("Describe", "List", "Get", "Head")) for op in operations)
    assert {method for method, *_ in account.kube.requests} == {"GET"}
    assert account.state() == before


def test_the_read_only_recorder_sees_a_write(account):
    # GIVEN the recording session / WHEN something calls a write operation through it
    account.session().client("s3").create_bucket(Bucket="written-by-test",
                                                 CreateBucketConfiguration={"LocationConstraint": REGION})
    # THEN the recorder lists it, and the read-only rule refuses it (the test above would fail on it)
    assert ("before-call", "s3", "CreateBucket") in account.calls
    assert not is_read_operation("CreateBucket")


# --------------------------------------------------------------------------------------- one fault at a time
def _set(path: list[Any], value: Any) -> Callable[[Account, dict], None]:
    def change(_: Account, data: dict) -> None:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


def _no_bootstrap(a: Account, _: dict) -> None:
    a.client("cloudformation").delete_stack(StackName="CDKToolkit")


def _old_bootstrap(a: Account, _: dict) -> None:
    cf = a.client("cloudformation")
    cf.delete_stack(StackName="CDKToolkit")
    cf.create_stack(StackName="CDKToolkit", TemplateBody=json.dumps({
        "Resources": {"V": {"Type": "AWS::SSM::Parameter", "Properties": {
            "Type": "String", "Name": "/cdk-bootstrap/hnb659fds/version", "Value": "4"}}},
        "Outputs": {"BootstrapVersion": {"Value": "4"}}}))


def _no_oidc(a: Account, _: dict) -> None:
    a.client("iam").delete_open_id_connect_provider(OpenIDConnectProviderArn=a.ids["oidc_arn"])


def _trust_only_a_user(a: Account, _: dict) -> None:
    a.client("iam").update_assume_role_policy(RoleName=KUBECTL_ROLE, PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:user/alice"}}]}))


def _no_access_entry(a: Account, _: dict) -> None:
    del a.eks.access[a.ids["kubectl_role"]]


def _someone_elses_operator(a: Account, _: dict) -> None:
    a.eks.add_addon(operator_facts.OPERATOR_ADDON_NAME, "v1.3.0-eksbuild.1", tags={STACK_TAG: "another-stack"})


def _cert_manager_installed(a: Account, _: dict) -> None:
    a.eks.add_addon("cert-manager", "v1.18.2-eksbuild.2")


def _old_cert_manager(a: Account, data: dict) -> None:
    data["operator"]["dependencies"] = "existing"
    for name, version in operator_facts.DEPENDENCY_ADDON_VERSIONS.items():
        a.eks.add_addon(name, "v1.17.0-eksbuild.1" if name == "cert-manager" else version)


def _helm_operator(a: Account, _: dict) -> None:
    a.kube.static[OPERATOR_CRD] = {"kind": "CustomResourceDefinition", "spec": {"versions": [
        {"name": "v1", "served": True}]}}


def _namespace_exists(a: Account, _: dict) -> None:
    a.kube.static["/api/v1/namespaces/inference"] = {"kind": "Namespace", "metadata": {"name": "inference"}}


def _endpoint_of_another_stack(a: Account, _: dict) -> None:
    a.kube.static[ENDPOINT_CR] = {"kind": "InferenceEndpointConfig", "metadata": {
        "name": "qwen-hf", "namespace": "inference", "labels": {"hyperpod-inference/stack": "teamb-0a1b2c"}}}


def _no_eso(a: Account, _: dict) -> None:
    del a.kube.static[ESO_CRD_PATH]


def _empty_prefix(a: Account, _: dict) -> None:
    s3 = a.client("s3")
    for key in ("qwen/config.json", "qwen/model.safetensors"):
        s3.delete_object(Bucket=MODEL_BUCKET, Key=key)


def _no_secret(a: Account, _: dict) -> None:
    a.client("secretsmanager").delete_secret(SecretId=a.ids["secret"], ForceDeleteWithoutRecovery=True)


def _capture_bucket_taken(a: Account, _: dict) -> None:
    a.client("s3", account=OTHER_ACCOUNT).create_bucket(Bucket=CAPTURE_BUCKET,
                                                        CreateBucketConfiguration={"LocationConstraint": REGION})
    a.foreign_buckets.add(CAPTURE_BUCKET)


def _tls_bucket_left_over(a: Account, _: dict) -> None:
    a.client("s3").create_bucket(Bucket=TLS_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})


def _no_zone(a: Account, _: dict) -> None:
    a.client("route53").delete_hosted_zone(Id=a.ids["moto_zone_id"])


def _pending_certificate(a: Account, data: dict) -> None:
    data["domain"]["certificateArn"] = a.client("acm").request_certificate(
        DomainName="chat.example.com", ValidationMethod="DNS")["CertificateArn"]


def _disabled_key(a: Account, _: dict) -> None:
    a.client("kms").disable_key(KeyId=a.ids["kms_key"].rsplit("/", 1)[-1])


FAULTS = {
    # fault: (inject, the check that must fail, what its resource names)
    "no CDK bootstrap stack": (_no_bootstrap, "bootstrap.cdk-toolkit", "CDKToolkit"),
    "bootstrap stack too old": (_old_bootstrap, "bootstrap.cdk-toolkit", "CDKToolkit"),
    "HyperPod cluster not InService": (lambda a, _: a.hyperpod_patch.update(ClusterStatus="Updating"),
                                       "cluster.hyperpod", "cluster/"),
    "HyperPod cluster of another EKS cluster": (
        lambda a, _: a.hyperpod_patch.update(Orchestrator={"Eks": {"ClusterArn": a.ids["eks_arn"] + "-old"}}),
        "cluster.hyperpod", "cluster/"),
    "EKS version the kubectl layer does not serve": (lambda a, _: a.eks_patch.update(version="1.30"),
                                                     "cluster.kubectl-layer", EKS),
    "EKS cluster in another VPC": (lambda a, _: a.eks_patch.update(
        resourcesVpcConfig={"vpcId": "vpc-0000aaaa", "subnetIds": []}), "cluster.eks", EKS),
    "no OIDC provider": (_no_oidc, "cluster.oidc-provider", "oidc-provider/"),
    "kubectl role trusts only one user": (_trust_only_a_user, "cluster.kubectl-role", KUBECTL_ROLE),
    "no access entry for the kubectl role": (_no_access_entry, "cluster.access-entry", KUBECTL_ROLE),
    "operator add-on installed by someone else": (_someone_elses_operator, "operator.addon",
                                                  operator_facts.OPERATOR_ADDON_NAME),
    "cert-manager installed with dependencies: create": (_cert_manager_installed, "operator.dependency.cert-manager",
                                                         "cert-manager"),
    "cert-manager below its minimum": (_old_cert_manager, "operator.dependency.cert-manager", "cert-manager"),
    "operator CRDs of another install": (_helm_operator, "operator.crds", "inferenceendpointconfigs"),
    "the stack's namespace exists": (_namespace_exists, "cluster.namespaces", "namespace inference"),
    "External Secrets Operator missing": (_no_eso, "cluster.external-secrets", "externalsecrets"),
    "an endpoint of that name deployed by another stack": (_endpoint_of_another_stack, "cluster.object-owners",
                                                           "InferenceEndpointConfig inference/qwen-hf"),
    "instance type without an instance group": (_set(["endpoints", 1, "instanceType"], "ml.g6e.12xlarge"),
                                                "endpoint.instance-group", "ml.g6e.12xlarge"),
    "more replicas than instances": (_set(["endpoints", 0, "replicas"], 3), "endpoint.instance-group", "qwen-s3"),
    "empty model prefix": (_empty_prefix, ("endpoint.model-s3", "model.s3-files"), f"s3://{MODEL_BUCKET}/qwen/"),
    "token secret missing": (_no_secret, "endpoint.token-secret", "secret:hf-token"),
    "capture bucket name taken by another account": (_capture_bucket_taken, "capture.bucket", CAPTURE_BUCKET),
    "TLS bucket left over in the account": (_tls_bucket_left_over, "operator.tls-bucket", TLS_BUCKET),
    "hosted zone deleted": (_no_zone, "domain.hosted-zone", "hosted zone Z"),
    "certificate not issued": (_pending_certificate, "domain.certificate", "certificate/"),
    "certificate does not cover a name": (_set(["endpoints", 0, "domainName"], "a.chat.example.com"),
                                          "domain.certificate", "certificate/"),
    "KMS key disabled": (_disabled_key, "kms.key", "capture.kms"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_fails_exactly_its_check_naming_the_resource(account, init_config, fault):
    # GIVEN the full config that passes, and one fault injected into the account, the cluster or the config
    inject, check_id, resource = FAULTS[fault]
    check_ids = {check_id} if isinstance(check_id, str) else set(check_id)  # an empty prefix fails two checks
    data = full_config(account, init_config)
    inject(account, data)
    # WHEN doctor runs
    status, results = run_doctor(account, data)
    # THEN it exits 1, only that check fails, and a failing result names the resource
    failed = _failed(results)
    assert status == 1
    assert {r["check"] for r in failed} == check_ids, failed
    assert any(resource in r["resource"] for r in failed), failed
    assert all(r["fix"] for r in failed)
    assert not [r for r in results if r["status"] == "skip"]


# ----------------------------------------------------------------------------------------------- skip and cli
def test_without_a_kubeconfig_the_cluster_checks_skip_with_why(account, init_config):
    # GIVEN no kubeconfig / WHEN doctor runs
    status, results = run_doctor(account, full_config(account, init_config), kubeconfig=False)
    # THEN the kubeconfig check and the checks inside the cluster skip, naming the missing kubeconfig and the command
    # that writes one; everything else passes and the run succeeds (a missing kubeconfig is not a broken one)
    skipped = {r["check"]: r["detail"] for r in results if r["status"] == "skip"}
    assert set(skipped) == {"cluster.kubeconfig", "operator.crds", "cluster.namespaces", "cluster.external-secrets",
                            "cluster.object-owners"}
    assert all("no kubeconfig" in why and f"aws eks update-kubeconfig --name {EKS}" in why
               for why in skipped.values())
    assert status == 0


@pytest.mark.parametrize(("code", "why"), [("ThrottlingException", "throttled"),
                                           ("AccessDeniedException", "may not call")])
def test_throttling_or_access_denied_skips_that_check_only(account, init_config, code, why):
    # GIVEN KMS answering DescribeKey with throttling / access denied (after the client's own retries)
    from botocore.awsrequest import AWSResponse

    session = account.session()

    def deny(model, **_):
        if model.name == "DescribeKey":
            return AWSResponse(None, 400, {}, None), {"Error": {"Code": code, "Message": "no"},
                                                      "ResponseMetadata": {"HTTPStatusCode": 400}}
        return None

    session.events.register("before-call.kms.DescribeKey", deny)
    account.session = lambda: session  # type: ignore[method-assign]
    # WHEN doctor runs
    status, results = run_doctor(account, full_config(account, init_config))
    # THEN kms.key skips with the reason, the run completes and nothing fails
    kms = [r for r in results if r["check"] == "kms.key"]
    assert [r["status"] for r in kms] == ["skip"] and why in kms[0]["detail"]
    assert status == 0 and len(results) > 20


def test_only_runs_the_named_checks_and_prefixes(account, init_config):
    # GIVEN --only with an ID and a prefix / THEN just those run
    status, results = run_doctor(account, init_config, "--only", "identity.account,operator.dependency")
    assert status == 0
    assert {r["check"] for r in results} == {"identity.account", *(f"operator.dependency.{d}" for d in
                                                                    operator_facts.DEPENDENCY_ADDON_VERSIONS)}


def test_only_runs_a_family_by_its_name(account, init_config):
    # GIVEN --only naming the kubernetes family (whose checks' IDs start with cluster.) / WHEN doctor runs
    status, results = run_doctor(account, init_config, "--only", "kubernetes")
    # THEN only that family's checks ran, the kubeconfig first
    assert status == 0
    assert results[0]["check"] == "cluster.kubeconfig"
    assert {r["check"] for r in results} <= {c.id for c in kubernetes.FAMILY.checks}
    assert {"cluster.kubeconfig", "cluster.namespaces"} <= {r["check"] for r in results}


def test_only_model_runs_the_model_family_alone(account, init_config):
    # GIVEN the full config (an S3 model and a model of the Hub on loopback) / WHEN --only model
    status, results = run_doctor(account, full_config(account, init_config), "--only", "model")
    # THEN only model.* checks ran, each endpoint's, and all passed
    assert status == 0 and {r["status"] for r in results} == {"pass"}
    assert {r["check"] for r in results} == {c.id for c in model.FAMILY.checks}
    assert {r["resource"].split(":")[0] for r in results} == {"endpoint inference/qwen-s3", "endpoint inference/qwen-hf"}


def test_an_unknown_check_or_a_bad_config_exits_2(account, init_config, capsys):
    # GIVEN an --only naming no check / a config with an error / THEN exit status 2, nothing checked
    assert run_doctor(account, init_config, "--only", "no.such")[0] == 2
    assert "no check no.such" in capsys.readouterr().err
    bad = {**init_config, "env": {"account": "12", "region": REGION}}
    assert run_doctor(account, bad)[0] == 2
    assert "env.account" in capsys.readouterr().err


def test_the_module_entry_point_runs_doctor_with_exit_status(account, init_config, tmp_path, capsys):
    # GIVEN the config and the environment pointing at the moto server (no fixture session)
    from hyperpod_inference.__main__ import main

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(init_config))
    # WHEN python -m hyperpod_inference doctor runs the account checks / THEN exit 0, then 1 once the bootstrap is gone
    assert main(["doctor", "-c", str(path), "--only", "identity,bootstrap"]) == 0
    assert "PASS  bootstrap.cdk-toolkit" in capsys.readouterr().out
    _no_bootstrap(account, init_config)
    assert main(["doctor", "-c", str(path), "--only", "identity,bootstrap"]) == 1
    assert "FAIL  bootstrap.cdk-toolkit" in capsys.readouterr().out


# ---------------------------------------------------------------- nothing could be checked is never a pass (exit 3)
def _answer_with(account: Account, call: str, code: str, status: int = 400, message: str = "no") -> None:
    """Every call of ``call`` (``<service>.<operation>``, e.g. sts.GetCallerIdentity) answered with an AWS error
    (registered for the operation, so it comes before the fixture's own answers)."""
    from botocore.awsrequest import AWSResponse

    session = account.session()
    session.events.register(f"before-call.{call}", lambda **_: (AWSResponse(None, status, {}, None), {
        "Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}))
    account.session = lambda: session  # type: ignore[method-assign]


@pytest.mark.parametrize(("operation", "code", "says"), [
    ("sts.GetCallerIdentity", "ExpiredToken", "the AWS credentials have expired"),
    ("sts.GetCallerIdentity", "InvalidClientTokenId", "the AWS credentials are not valid"),
    ("sts.GetCallerIdentity", "AccessDenied", "may not call sts:GetCallerIdentity"),
    ("eks.DescribeCluster", "AccessDeniedException", "may not call eks:DescribeCluster"),
    ("sagemaker.DescribeCluster", "AccessDeniedException", "may not call sagemaker:DescribeCluster"),
])
def test_a_required_check_that_cannot_run_exits_3_and_says_what_to_fix(account, init_config, capsys, operation, code,
                                                                        says):
    # GIVEN the identity call (or the cluster descriptions) answered with an expired session / bad keys / access denied
    _answer_with(account, operation, code)
    account.calls.clear()
    # WHEN doctor runs
    status, results = run_doctor(account, init_config)
    # THEN exit 3 (never 0), a required check skipped with the reason, and stderr's last line names it
    assert status == runner.EXIT_INCOMPLETE
    required = [r for r in results if r["check"] in runner.REQUIRED_CHECKS and r["status"] == "skip"]
    assert required and says in required[0]["detail"]
    err = capsys.readouterr().err
    assert err.startswith("doctor: incomplete, nothing above is a pass: ") and says in err
    if code in ("ExpiredToken", "InvalidClientTokenId"):
        # and once the credentials proved unusable, nothing else was sent to AWS
        assert [op for event, _, op in account.calls if event == "provide-client-params"] == ["GetCallerIdentity"]


@pytest.mark.parametrize("fault", ["no credentials", "unknown profile"])
def test_no_credentials_or_an_unknown_profile_exits_3_not_a_pass_or_a_traceback(account, init_config, tmp_path,
                                                                                 monkeypatch, capsys, fault):
    # GIVEN `python -m hyperpod_inference doctor` with no credentials anywhere / AWS_PROFILE naming no profile
    from hyperpod_inference.__main__ import main

    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    if fault == "unknown profile":
        monkeypatch.setenv("AWS_PROFILE", "mistyped")
    else:
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(init_config))
    # WHEN doctor runs
    status = main(["doctor", "-c", str(path), "--kubeconfig", str(account.kubeconfig)])
    # THEN exit 3, and stderr names what to fix (the counts line is not the last word)
    out, err = capsys.readouterr()
    assert status == 3
    if fault == "unknown profile":
        assert err == ("doctor: nothing was checked: the AWS profile mistyped (AWS_PROFILE) is not in "
                       "~/.aws/config or ~/.aws/credentials: aws configure list-profiles, then set AWS_PROFILE to one "
                       "of them\n")
    else:
        assert "SKIP  identity.account" in out and "0 pass" in out
        assert "identity.account" in err and "no usable AWS credentials" in err and "AWS_PROFILE" in err


def test_only_checks_that_all_skip_exit_3(account, init_config):
    # GIVEN --only the add-on checks, and EKS refusing DescribeAddon to the caller
    _answer_with(account, "eks.DescribeAddon", "AccessDeniedException")
    # WHEN doctor runs / THEN every result skipped: nothing was checked, exit 3
    status, results = run_doctor(account, init_config, "--only", "operator.dependency")
    assert results and {r["status"] for r in results} == {"skip"}
    assert status == runner.EXIT_INCOMPLETE


def test_the_exit_statuses_are_in_doctor_s_help(capsys):
    from hyperpod_inference.__main__ import main

    with pytest.raises(SystemExit):
        main(["doctor", "--help"])
    out = capsys.readouterr().out
    assert all(f"\n  {n}  " in out for n in range(4)) and "identity.account, cluster.hyperpod, cluster.eks" in out


# ----------------------------------------------------------------------------- one line of text, whatever AWS says
def test_an_html_error_page_is_one_bounded_line_in_the_table_and_the_json(account, init_config, capsys):
    # GIVEN DescribeAddon answered by moto itself (its HTML 404 page, with newlines), and KMS by a proxy's long page
    account.left_to_moto.add("DescribeAddon")
    page = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n" + "<p>upstream\nfailed</p>\n" * 200 + \
        "</body></html>"
    _answer_with(account, "kms.DescribeKey", "502", status=502, message=page)
    data = full_config(account, init_config)
    # WHEN doctor runs, as JSON and as the table
    _, results = run_doctor(account, data)
    from hyperpod_inference.ops import cli

    # THEN each result is one line of bounded length, the pages reduced to their text
    addon = [r for r in results if r["check"] == "operator.addon"][0]
    assert addon["status"] == "skip" and "eks DescribeAddon answered HTTP 404: 404 Not Found" in addon["detail"]
    kms = [r for r in results if r["check"] == "kms.key"][0]
    assert "answered HTTP 502: 502 Bad Gateway upstream failed" in kms["detail"]
    assert all("\n" not in v and len(v) <= MAX_FIELD_CHARS for r in results for v in r.values())
    assert all(len(r["detail"]) < 400 for r in results)
    table = runner.render([Result(**r) for r in results])
    assert len(table.splitlines()) == len(results) + sum(bool(r["fix"]) and r["status"] != "pass" for r in results) + 1
    assert cli  # the module run_doctor drives


# --------------------------------------------------------------------- the kubeconfig, and aws-auth, as they are
def test_a_broken_kubeconfig_fails_its_check_naming_the_file(account, init_config):
    # GIVEN a kubeconfig that is a YAML list
    account.kubeconfig.write_text("- not\n- a kubeconfig\n")
    # WHEN doctor runs
    status, results = run_doctor(account, init_config)
    # THEN cluster.kubeconfig fails naming the file and the cause; the checks inside the cluster skip; exit 1
    [kube] = [r for r in results if r["check"] == "cluster.kubeconfig"]
    assert kube["status"] == "fail" and str(account.kubeconfig) in kube["resource"]
    assert "is not a mapping" in kube["detail"] and "aws eks update-kubeconfig" in kube["fix"]
    assert {r["status"] for r in results if r["check"] == "cluster.namespaces"} == {"skip"}
    assert status == 1



def _aws_auth_only(account: Account, map_roles: str | None) -> None:
    """The cluster authenticates through aws-auth only, whose mapRoles is ``map_roles``."""
    account.eks_patch["accessConfig"] = {"authenticationMode": "CONFIG_MAP"}
    account.kube.static[AWS_AUTH_PATH] = {"kind": "ConfigMap", "metadata": {"name": "aws-auth"},
                                          "data": {"mapRoles": map_roles}}


@pytest.mark.parametrize(("map_roles", "says"), [
    ("rolearn: x\ngroups: [system:masters]\n", "mapRoles must be a list of role mappings, not dict"),
    ("- just a string\n", "mapRoles entry 1 must be a mapping"),
    ("- rolearn: [\n", "mapRoles is not valid YAML"),
    ("- rolearn: {role}\n  username: admin\n  groups: system:masters\n",
     "mapRoles entry 1 (rolearn {role}): groups must be a list of group names (groups: [system:masters]), not a "
     "string"),
    ("- username: admin\n  groups: [system:masters]\n", "mapRoles entry 1 has no rolearn"),
])
def test_a_malformed_aws_auth_fails_naming_the_configmap_and_the_entry(account, init_config, map_roles, says):
    # GIVEN an aws-auth-only cluster whose mapRoles is malformed (groups as a string would match by substring)
    role = account.ids["kubectl_role"]
    _aws_auth_only(account, map_roles.format(role=role))
    # WHEN doctor runs
    status, results = run_doctor(account, init_config)
    # THEN cluster.access-entry fails naming the ConfigMap and the cause, never a pass or a traceback
    [entry] = [r for r in results if r["check"] == "cluster.access-entry"]
    assert entry["status"] == "fail", entry
    assert entry["resource"] == f"ConfigMap kube-system/aws-auth on {EKS}"
    assert says.format(role=role) in entry["detail"]
    assert status == 1


def test_aws_auth_mapping_the_role_to_system_masters_passes(account, init_config):
    # GIVEN the same cluster with a well-formed mapRoles (another account's role of the same name listed first)
    role = account.ids["kubectl_role"]
    other = role.replace(ACCOUNT, OTHER_ACCOUNT)
    _aws_auth_only(account, f"- rolearn: {other}\n  groups: [system:masters]\n"
                            f"- rolearn: {role}\n  username: admin\n  groups:\n    - system:masters\n")
    # WHEN doctor runs / THEN the access check passes through aws-auth
    _, results = run_doctor(account, init_config)
    [entry] = [r for r in results if r["check"] == "cluster.access-entry"]
    assert (entry["status"], entry["detail"]) == ("pass", "mapped to system:masters")
    # and a mapping of only the other account's role of that name does not
    _aws_auth_only(account, f"- rolearn: {other}\n  groups: [system:masters]\n")
    _, results = run_doctor(account, init_config)
    assert [r["status"] for r in results if r["check"] == "cluster.access-entry"] == ["fail"]
