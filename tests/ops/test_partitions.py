"""``init`` and ``doctor`` in a China and a GovCloud Region: the ARNs they build (the EKS cluster-admin access policy,
the account's root principal) are in the Region's partition, and the config init writes carries that partition's
ARNs and validates. AWS's answers come from botocore's Stubber (each validated against the service model)."""

from __future__ import annotations

import datetime
import json
import urllib.parse

import boto3
import pytest
from botocore.stub import Stubber

from hyperpod_inference.config import load_config, parse_config
from hyperpod_inference.ops.aws import Aws
from hyperpod_inference.ops.doctor import runner
from hyperpod_inference.ops.doctor.base import Context
from hyperpod_inference.ops.init import discover, render, write

ACCOUNT = "111122223333"
NOW = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
REGIONS = [("cn-north-1", "aws-cn", "amazonaws.com.cn"), ("us-gov-west-1", "aws-us-gov", "amazonaws.com")]


class _Account:
    """A HyperPod cluster, its EKS cluster, OIDC provider and kubectl role in ``region``, as Stubber answers."""

    def __init__(self, region: str, partition: str, suffix: str) -> None:
        self.region, self.partition = region, partition
        self.eks_arn = f"arn:{partition}:eks:{region}:{ACCOUNT}:cluster/hp-eks"
        self.hyperpod_arn = f"arn:{partition}:sagemaker:{region}:{ACCOUNT}:cluster/k3x9q2m7w4bz"
        self.role = f"arn:{partition}:iam::{ACCOUNT}:role/hp-eks-admin"
        self.issuer = f"https://oidc.eks.{region}.{suffix}/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
        self.oidc = f"arn:{partition}:iam::{ACCOUNT}:oidc-provider/{self.issuer.removeprefix('https://')}"
        self.admin_policy = f"arn:{partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
        session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name=region)
        self.aws = Aws(region, session=session)
        self.stubs = {name: Stubber(self.aws.client(name)) for name in ("sagemaker", "eks", "iam", "sts")}
        for stub in self.stubs.values():
            stub.activate()

    def eks_cluster(self, mode: str = "API") -> None:
        self.stubs["eks"].add_response("describe_cluster", {"cluster": {
            "name": "hp-eks", "arn": self.eks_arn, "version": "1.33", "status": "ACTIVE",
            "identity": {"oidc": {"issuer": self.issuer}}, "resourcesVpcConfig": {"vpcId": "vpc-0abc1234"},
            "accessConfig": {"authenticationMode": mode}}}, {"name": "hp-eks"})

    def admin_access(self) -> None:
        self.stubs["eks"].add_response("list_associated_access_policies", {
            "clusterName": "hp-eks", "principalArn": self.role, "associatedAccessPolicies": [{
                "policyArn": self.admin_policy, "accessScope": {"type": "cluster"}, "associatedAt": NOW,
                "modifiedAt": NOW}]}, {"clusterName": "hp-eks", "principalArn": self.role})

    def config(self) -> dict:
        return {"apiVersion": "hyperpod-inference/v1", "env": {"account": ACCOUNT, "region": self.region},
                "cluster": {"eksClusterName": "hp-eks", "hyperpodClusterArn": self.hyperpod_arn,
                            "kubectlRoleArn": self.role, "oidcProviderArn": self.oidc, "vpcId": "vpc-0abc1234"}}


@pytest.fixture(params=REGIONS, ids=[r for r, _, _ in REGIONS])
def account(request):
    acct = _Account(*request.param)
    yield acct
    for stub in acct.stubs.values():
        stub.deactivate()


def test_init_finds_the_admin_role_by_the_partitions_policy_and_writes_the_partitions_arns(account, tmp_path):
    # GIVEN the cluster in a China / GovCloud Region, its kubectl role holding the partition's cluster-admin policy
    account.stubs["sagemaker"].add_response("describe_cluster", {
        "ClusterArn": account.hyperpod_arn, "ClusterName": "hp-cluster", "ClusterStatus": "InService",
        "CreationTime": NOW, "Orchestrator": {"Eks": {"ClusterArn": account.eks_arn}},
        "InstanceGroups": [{"InstanceGroupName": "gpu", "InstanceType": "ml.g5.8xlarge", "CurrentCount": 1}]},
        {"ClusterName": "hp-cluster"})
    account.eks_cluster()
    account.stubs["iam"].add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": [
        {"Arn": account.oidc}]}, {})
    account.stubs["eks"].add_response("list_access_entries", {"accessEntries": [account.role]},
                                      {"clusterName": "hp-eks"})
    account.admin_access()
    account.stubs["eks"].add_response("list_addons", {"addons": []}, {"clusterName": "hp-eks"})
    # WHEN init discovers it and writes the config
    path = tmp_path / "c.yaml"
    write(path, render(discover(account.aws, "hp-cluster")))
    # THEN the config names the partition's ARNs and validates
    cluster = load_config(path).cluster
    assert (cluster.hyperpod_cluster_arn, cluster.kubectl_role_arn, cluster.oidc_provider_arn) == (
        account.hyperpod_arn, account.role, account.oidc)
    assert all(arn.startswith(f"arn:{account.partition}:") for arn in (
        cluster.hyperpod_cluster_arn, cluster.kubectl_role_arn, cluster.oidc_provider_arn))


def test_doctor_compares_with_the_partitions_cluster_admin_policy(account):
    # GIVEN an access entry holding the partition's AmazonEKSClusterAdminPolicy
    account.eks_cluster()
    account.admin_access()
    ctx = Context(parse_config(account.config()), account.aws, kubeconfig="/nonexistent")
    # WHEN the access check runs / THEN it passes (the aws partition's ARN would never match)
    assert [(r.status, r.detail) for r in runner.run(ctx, ["cluster.access-entry"])] == [
        ("pass", "AmazonEKSClusterAdminPolicy, cluster scope")]


def test_doctor_names_the_partitions_root_principal_and_policy_in_its_fixes(account):
    # GIVEN a kubectl role trusting only a user, and an access entry without the admin policy
    account.stubs["iam"].add_response("get_role", {"Role": {
        "Path": "/", "RoleName": "hp-eks-admin", "RoleId": "AROAEXAMPLEEXAMPLE01", "Arn": account.role,
        "CreateDate": NOW, "AssumeRolePolicyDocument": urllib.parse.quote(json.dumps({  # IAM's URL-encoded JSON
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {
                "AWS": f"arn:{account.partition}:iam::{ACCOUNT}:user/alice"}}]}))}},
        {"RoleName": "hp-eks-admin"})
    account.stubs["sts"].add_response("get_caller_identity", {
        "Account": ACCOUNT, "UserId": "AIDA", "Arn": f"arn:{account.partition}:iam::{ACCOUNT}:user/bob"}, {})
    account.eks_cluster()
    account.stubs["eks"].add_response("list_associated_access_policies", {
        "clusterName": "hp-eks", "principalArn": account.role, "associatedAccessPolicies": []},
        {"clusterName": "hp-eks", "principalArn": account.role})
    ctx = Context(parse_config(account.config()), account.aws, kubeconfig="/nonexistent")
    # WHEN the kubectl-role and access checks run
    role, entry = runner.run(ctx, ["cluster.kubectl-role", "cluster.access-entry"])
    # THEN each fails, its fix naming the partition's ARNs
    assert role.status == "fail" and f"add arn:{account.partition}:iam::{ACCOUNT}:root to its trust" in role.fix
    assert entry.status == "fail" and f"--policy-arn {account.admin_policy} " in entry.fix
    assert "arn:aws:" not in role.fix + entry.fix
