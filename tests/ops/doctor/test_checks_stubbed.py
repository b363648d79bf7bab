"""The checks on the APIs moto does not serve (EKS access entries and add-ons) and the read-only client, against
botocore's Stubber: every response is validated against the real service model."""

from __future__ import annotations

import datetime

import boto3
import pytest
from botocore.stub import Stubber

from hyperpod_inference.config import parse_config
from hyperpod_inference.facts import operator as operator_facts
from hyperpod_inference.ops.aws import Aws, Skip
from hyperpod_inference.ops.doctor import runner
from hyperpod_inference.ops.doctor.base import STACK_TAG, Context

ACCOUNT = "111122223333"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/hp-eks-admin"
EKS = "my-hp-eks"
NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def _config(**operator):
    return parse_config({
        "apiVersion": "hyperpod-inference/v1", "env": {"account": ACCOUNT, "region": "us-west-2"},
        "cluster": {"eksClusterName": EKS, "hyperpodClusterArn": f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/"
                                                                 "abcd1234efgh",
                    "kubectlRoleArn": ROLE, "vpcId": "vpc-0abc1234",
                    "oidcProviderArn": f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/E"},
        **({"operator": operator} if operator else {}),
    })


@pytest.fixture
def stubbed(tmp_path):
    """A Context whose EKS and STS clients are stubbed; no kubeconfig."""
    session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="us-west-2")
    aws = Aws("us-west-2", session=session)
    stubs = {name: Stubber(aws.client(name)) for name in ("eks", "sts")}
    for stub in stubs.values():
        stub.activate()

    def make(config=None):
        return Context(config or _config(), aws, kubeconfig=str(tmp_path / "none"))
    yield make, stubs
    for stub in stubs.values():
        stub.deactivate()


def _eks_cluster(stub, mode="API_AND_CONFIG_MAP"):
    stub.add_response("describe_cluster", {"cluster": {
        "name": EKS, "arn": f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/{EKS}", "version": "1.33", "status": "ACTIVE",
        "accessConfig": {"authenticationMode": mode}}}, {"name": EKS})


def _policies(*arns, scope="cluster"):
    return {"clusterName": EKS, "principalArn": ROLE, "associatedAccessPolicies": [
        {"policyArn": a, "accessScope": {"type": scope}, "associatedAt": NOW, "modifiedAt": NOW} for a in arns]}


def _run(ctx, check_id):
    return runner.run(ctx, [check_id])


def test_access_entry_with_cluster_admin_passes(stubbed):
    make, stubs = stubbed
    _eks_cluster(stubs["eks"], "API")
    stubs["eks"].add_response("list_associated_access_policies", _policies(ADMIN), {"clusterName": EKS,
                                                                                "principalArn": ROLE})
    assert [r.status for r in _run(make(), "cluster.access-entry")] == ["pass"]


@pytest.mark.parametrize(("answer", "detail"), [
    ("missing", "no access entry"),
    (_policies("arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"), "no AmazonEKSClusterAdminPolicy"),
    (_policies(ADMIN, scope="namespace"), "no AmazonEKSClusterAdminPolicy"),
])
def test_access_entry_without_cluster_admin_fails_naming_the_role(stubbed, answer, detail):
    # GIVEN an API-mode cluster whose access entry for the role is missing, or grants less than cluster admin
    make, stubs = stubbed
    _eks_cluster(stubs["eks"], "API")
    params = {"clusterName": EKS, "principalArn": ROLE}
    if answer == "missing":
        stubs["eks"].add_client_error("list_associated_access_policies", "ResourceNotFoundException", "not found",
                                      404, expected_params=params)
    else:
        stubs["eks"].add_response("list_associated_access_policies", answer, params)
    # THEN the check fails naming the role, with the create / associate commands as the fix
    [result] = _run(make(), "cluster.access-entry")
    assert (result.status, ROLE in result.resource, detail in result.detail) == ("fail", True, True)
    assert "aws eks associate-access-policy" in result.fix


def test_aws_auth_mode_without_a_kubeconfig_skips_with_why(stubbed):
    # GIVEN a cluster that authenticates through aws-auth only, and no kubeconfig
    make, stubs = stubbed
    _eks_cluster(stubs["eks"], "CONFIG_MAP")
    # THEN the check skips, saying the kubeconfig is missing
    [result] = _run(make(), "cluster.access-entry")
    assert result.status == "skip" and "no kubeconfig" in result.detail


def _addon(stub, name, version, *, status="ACTIVE", tags=None):
    stub.add_response("describe_addon", {"addon": {
        "addonName": name, "clusterName": EKS, "status": status, "addonVersion": version, "createdAt": NOW,
        "tags": tags or {}}}, {"clusterName": EKS, "addonName": name})


OPERATOR = operator_facts.OPERATOR_ADDON_NAME


@pytest.mark.parametrize(("operator", "addon", "status"), [
    ({}, ("v1.3.0-eksbuild.1", "ACTIVE", {}), "fail"),  # installed by someone else: never twice
    ({}, ("v1.4.0-eksbuild.1", "ACTIVE", {STACK_TAG: "HyperPodInference"}), "pass"),  # this stack's
    ({"install": "existing", "dependencies": "existing",
      "executionRoleArn": f"arn:aws:iam::{ACCOUNT}:role/SageMakerHyperPodInference-x"},
     ("v1.3.0-eksbuild.1", "ACTIVE", {}), "fail"),  # older than operator.version v3.3 needs
    ({"install": "existing", "dependencies": "existing",
      "executionRoleArn": f"arn:aws:iam::{ACCOUNT}:role/SageMakerHyperPodInference-x"},
     ("v1.4.0-eksbuild.1", "CREATING", {}), "warn"),  # stays CREATING until a node runs its controller
    ({"install": "existing", "dependencies": "existing",
      "executionRoleArn": f"arn:aws:iam::{ACCOUNT}:role/SageMakerHyperPodInference-x"}, None, "fail"),
])
def test_operator_add_on_per_install_mode(stubbed, operator, addon, status):
    make, stubs = stubbed
    if addon is None:
        stubs["eks"].add_client_error("describe_addon", "ResourceNotFoundException", "no", 404,
                                      expected_params={"clusterName": EKS, "addonName": OPERATOR})
    else:
        _addon(stubs["eks"], OPERATOR, addon[0], status=addon[1], tags=addon[2])
    [result] = _run(make(_config(**operator)), "operator.addon")
    assert result.status == status and OPERATOR in result.resource


def test_a_dependency_below_its_minimum_fails_with_the_update_command(stubbed):
    make, stubs = stubbed
    _addon(stubs["eks"], "metrics-server", "v0.7.1-eksbuild.1")
    [result] = _run(make(_config(dependencies="existing")), "operator.dependency.metrics-server")
    assert result.status == "fail" and "below the operator's minimum v0.7.2-eksbuild.4" in result.detail
    assert "aws eks update-addon --cluster-name my-hp-eks --addon-name metrics-server" in result.fix


def test_credentials_of_another_account_fail_identity(stubbed):
    make, stubs = stubbed
    stubs["sts"].add_response("get_caller_identity", {"Account": "999999999999", "UserId": "AIDA",
                                                    "Arn": "arn:aws:iam::999999999999:user/bob"}, {})
    [result] = _run(make(), "identity.account")
    assert result.status == "fail" and "999999999999" in result.detail and "env.account" in result.fix


# -------------------------------------------------------------------------------------------- the client
def test_the_client_refuses_any_operation_but_a_read(stubbed):
    make, _ = stubbed
    with pytest.raises(ValueError, match="not a read operation"):
        make().aws.call("eks", "CreateAddon", clusterName=EKS, addonName="x")


@pytest.mark.parametrize(("code", "status", "says"), [("ThrottlingException", 400, "throttled"),
                                                      ("AccessDeniedException", 403, "may not call eks:ListAddons")])
def test_throttling_and_access_denied_become_skip(stubbed, code, status, says):
    make, stubs = stubbed
    stubs["eks"].add_client_error("list_addons", code, "no", status, expected_params={"clusterName": EKS})
    with pytest.raises(Skip, match=says):
        make().aws.call("eks", "ListAddons", clusterName=EKS)


def test_a_listing_is_bounded(stubbed, monkeypatch):
    # GIVEN an API that always answers with a next page / THEN the listing stops after MAX_PAGES pages with a Skip
    from hyperpod_inference.ops import aws as aws_module

    make, stubs = stubbed
    monkeypatch.setattr(aws_module, "MAX_PAGES", 3)
    for sent, given in ((None, "t1"), ("t1", "t2"), ("t2", "t3")):
        stubs["eks"].add_response("list_addons", {"addons": ["a"], "nextToken": given},
                                  {"clusterName": EKS, **({"nextToken": sent} if sent else {})})
    with pytest.raises(Skip, match="more than 3 pages"):
        list(make().aws.pages("eks", "ListAddons", "addons", clusterName=EKS))
