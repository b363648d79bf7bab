"""A realistic account on a loopback moto server for ``init`` and ``doctor``, and the project's fake Kubernetes API
for the checks inside the cluster.

The account: a HyperPod cluster orchestrated by an EKS cluster (Kubernetes 1.33, in a real VPC), the cluster's IAM
OIDC provider, a kubectl role whose trust admits the account with an access entry making it cluster admin, no
operator add-on yet, a model under an S3 prefix, a Hugging Face token secret, a hosted zone, an issued certificate for
the endpoint names, a KMS key, and the CDK bootstrap stack ``CDKToolkit`` with its ``BootstrapVersion`` output.

Where moto differs from AWS, the fixture makes the answer the real one, on the botocore session the code under test
uses, and every response it writes or changes is validated against botocore's service model:
- SageMaker ``DescribeCluster``: moto omits ``Orchestrator``; the fixture adds ``Orchestrator.Eks.ClusterArn``.
- SageMaker cluster ARNs: moto's end in the cluster's name, real ones in a 12-character ID; the fixture answers
  with :data:`HYPERPOD_ARN` and maps it back to the name on the way in.
- Route 53 zone IDs: moto's do not start with ``Z`` as real ones do; the fixture gives ``Z<moto's ID>`` to the
  config and maps it back on the way in (``GetHostedZone``).
- EKS ``DescribeCluster``: moto omits ``resourcesVpcConfig.vpcId`` and ``accessConfig``; the fixture adds them.
- EKS add-ons and access entries: moto has no such API (it answers an HTML page with HTTP 404); :class:`FakeEks`
  answers ``ListAddons``, ``DescribeAddon``, ``ListAccessEntries``, ``DescribeAccessEntry`` and
  ``ListAssociatedAccessPolicies``, except those a test names in ``Account.left_to_moto`` (moto's page reaches the
  code as it would from a proxy).
- S3 ``HeadBucket``: moto answers 200 for a bucket of another account; S3 answers 403, and so does the fixture for
  the buckets it created in :data:`OTHER_ACCOUNT`.
- SNS ``ListSubscriptionsByTopic``: moto confirms every subscription at once; SNS keeps an e-mail or HTTP(S)
  subscription ``PendingConfirmation`` until its owner confirms, and so does the fixture unless the endpoint is in
  :attr:`Account.confirmed`.

The account also has an alarm topic (``oncall``, SNS's default policy) with a confirmed SQS subscriber.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
import yaml
from botocore.awsrequest import AWSResponse
from botocore.validate import validate_parameters
from moto.server import ThreadedMotoServer

from tests.fakes.hub_repos import model_hub  # noqa: F401 - a fixture: the Hub on loopback
from tests.nvme_agent.fake_kube import FakeKube

ACCOUNT = "123456789012"  # moto's default account
OTHER_ACCOUNT = "999999999999"
REGION = "us-west-2"
HYPERPOD = "hp-cluster"
EKS = "hp-eks"
HYPERPOD_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/k3x9q2m7w4bz"
KUBECTL_ROLE = "hp-eks-admin"
MODEL_BUCKET = f"models-{ACCOUNT}"
ZONE = "example.com"
ENDPOINT_NAME = "chat.example.com"
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
KUBE_TOKEN = "doctor-token"
GROUPS = [("gpu-g5", "ml.g5.8xlarge", 2), ("gpu-p5", "ml.p5.48xlarge", 1), ("system", "ml.m5.xlarge", 1)]
TRUST_ACCOUNT = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"}]}


#: One botocore data loader for every session of the tests: it caches the service models it has read, so the many
#: short-lived sessions below do not each read them again.
_LOADER = botocore.loaders.create_loader()


def new_session(**kwargs: Any) -> boto3.Session:
    core = botocore.session.Session()
    core.register_component("data_loader", _LOADER)
    return boto3.Session(botocore_session=core, aws_access_key_id="testing", aws_secret_access_key="testing",
                         region_name=REGION, **kwargs)


#: The set-up clients, shared by the tests of a session (one server, reset before each test).
_SETUP_CLIENTS: dict[tuple[str, str, str], Any] = {}


@functools.cache
def _setup_session() -> boto3.Session:
    return new_session()


def validated(session: boto3.Session, service: str, operation: str, response: dict) -> dict:
    """``response`` checked against the operation's output shape in botocore's service model (what Stubber does)."""
    model = session._session.get_service_model(service).operation_model(operation)  # noqa: SLF001
    body = {k: v for k, v in response.items() if k != "ResponseMetadata"}
    validate_parameters(body, model.output_shape)
    return response


def _answer(status: int, parsed: dict) -> tuple[AWSResponse, dict]:
    return AWSResponse(None, status, {}, None), {**parsed, "ResponseMetadata": {"HTTPStatusCode": status}}


def _not_found(message: str) -> tuple[AWSResponse, dict]:
    return _answer(404, {"Error": {"Code": "ResourceNotFoundException", "Message": message}})


@dataclass
class FakeEks:
    """EKS add-ons and access entries, which moto does not serve, by cluster name."""

    addons: dict[str, dict] = field(default_factory=dict)  # add-on name -> Addon
    access: dict[str, list[dict]] = field(default_factory=dict)  # principal ARN -> associated access policies
    groups: dict[str, list[str]] = field(default_factory=dict)  # principal ARN -> the access entry's Kubernetes groups

    def add_addon(self, name: str, version: str, *, status: str = "ACTIVE", tags: dict | None = None) -> None:
        now = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
        self.addons[name] = {"addonName": name, "clusterName": EKS, "status": status, "addonVersion": version,
                             "addonArn": f"arn:aws:eks:{REGION}:{ACCOUNT}:addon/{EKS}/{name}/abcd",
                             "createdAt": now, "modifiedAt": now, "tags": tags or {}}

    def grant_admin(self, principal: str) -> None:
        self.access[principal] = [{"policyArn": CLUSTER_ADMIN, "accessScope": {"type": "cluster"},
                                   "associatedAt": datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
                                   "modifiedAt": datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)}]

    def answer(self, operation: str, params: dict) -> tuple[AWSResponse, dict]:
        if params.get("clusterName") != EKS:
            return _not_found(f"No cluster found for name: {params.get('clusterName')}.")
        if operation == "ListAddons":
            return _answer(200, {"addons": sorted(self.addons)})
        if operation == "DescribeAddon":
            found = self.addons.get(params["addonName"])
            return _answer(200, {"addon": found}) if found else _not_found(f"No addon: {params['addonName']}")
        if operation == "ListAccessEntries":
            return _answer(200, {"accessEntries": sorted(self.access)})
        principal = params["principalArn"]
        if principal not in self.access:
            return _not_found(f"The specified principalArn could not be found: {principal}")
        if operation == "DescribeAccessEntry":
            return _answer(200, {"accessEntry": {"clusterName": EKS, "principalArn": principal, "type": "STANDARD",
                                                 "username": principal,
                                                 "kubernetesGroups": self.groups.get(principal, [])}})
        return _answer(200, {"clusterName": EKS, "principalArn": principal,
                             "associatedAccessPolicies": self.access[principal]})


FAKE_EKS_OPERATIONS = ("ListAddons", "DescribeAddon", "ListAccessEntries", "DescribeAccessEntry",
                       "ListAssociatedAccessPolicies")


@dataclass
class Account:
    url: str
    tmp: Path
    kube: FakeKube
    eks: FakeEks = field(default_factory=FakeEks)
    eks_patch: dict[str, Any] = field(default_factory=dict)
    hyperpod_patch: dict[str, Any] = field(default_factory=dict)
    orchestrated: bool = True  # False: the HyperPod cluster answers without an orchestrator (Slurm)
    foreign_buckets: set[str] = field(default_factory=set)
    left_to_moto: set[str] = field(default_factory=set)  # FAKE_EKS_OPERATIONS moto answers (its HTML 404 page)
    confirmed: set[str] = field(default_factory=set)  # e-mail / HTTP(S) endpoints that confirmed their subscription
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (event, service, operation)
    ids: dict[str, str] = field(default_factory=dict)

    def client(self, service: str, account: str = ACCOUNT) -> Any:
        """A client for setting the account up (not recorded, not patched)."""
        key = (self.url, service, account)
        if key in _SETUP_CLIENTS:
            return _SETUP_CLIENTS[key]
        client = _setup_session().client(service, endpoint_url=self.url)
        _SETUP_CLIENTS[key] = client
        if account != ACCOUNT:
            client.meta.events.register("before-sign", lambda request, **_: request.headers.__setitem__(
                "x-moto-account-id", account))
        return client

    def session(self) -> boto3.Session:
        """The session the code under test uses: every call recorded, moto's gaps filled as described above."""
        session = new_session()
        events = session.events
        events.register("provide-client-params", self._record_params)
        events.register("before-call", self._record_call)
        # before-call sees the serialized request; the API parameters reach it through the call's context
        events.register("provide-client-params", self._keep_params)
        # one handler after the recorder, at the same level (a more specific event name would run before it)
        events.register("before-call", lambda model, context, **_: self._answer_gap(session, model.name,
                                                                                    model.service_model.service_name,
                                                                                    context["api_params"]))
        events.register("provide-client-params.sagemaker.DescribeCluster", lambda params, **_: {
            **params, "ClusterName": HYPERPOD if params.get("ClusterName") == HYPERPOD_ARN else params["ClusterName"]})
        events.register("provide-client-params.route53.GetHostedZone", lambda params, **_: {
            **params, "Id": self.ids["moto_zone_id"] if params.get("Id") == self.ids["zone_id"] else params["Id"]})
        events.register("after-call.sagemaker.DescribeCluster",
                        lambda parsed, **_: self._patch_hyperpod(session, parsed))
        events.register("after-call.eks.DescribeCluster", lambda parsed, **_: self._patch_eks(session, parsed))
        events.register("after-call.sns.ListSubscriptionsByTopic",
                        lambda parsed, **_: self._patch_subscriptions(session, parsed))
        return session

    # -- recording
    def _record_params(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".")
        self.calls.append(("provide-client-params", service, operation))

    @staticmethod
    def _keep_params(params: dict, context: dict, **_: Any) -> None:
        context["api_params"] = dict(params)

    def _record_call(self, model: Any, **_: Any) -> None:
        self.calls.append(("before-call", model.service_model.service_name, model.name))

    # -- moto's gaps
    def _answer_gap(self, session: boto3.Session, operation: str, service: str,
                    params: dict) -> tuple[AWSResponse, dict] | None:
        if service == "eks" and operation in FAKE_EKS_OPERATIONS and operation not in self.left_to_moto:
            http, parsed = self.eks.answer(operation, params)
            if http.status_code == 200:
                validated(session, "eks", operation, parsed)
            return http, parsed
        if service == "s3" and operation == "HeadBucket" and params.get("Bucket") in self.foreign_buckets:
            return _answer(403, {"Error": {"Code": "403", "Message": "Forbidden"}})
        return None

    def _patch_hyperpod(self, session: boto3.Session, parsed: dict) -> None:
        if "ClusterArn" in parsed:
            if self.orchestrated:
                parsed.setdefault("Orchestrator", {"Eks": {"ClusterArn": self.ids["eks_arn"]}})
            parsed["ClusterArn"] = HYPERPOD_ARN
            parsed.update(copy.deepcopy(self.hyperpod_patch))
            validated(session, "sagemaker", "DescribeCluster", parsed)

    def _patch_eks(self, session: boto3.Session, parsed: dict) -> None:
        cluster = parsed.get("cluster")
        if cluster and cluster.get("name") == EKS:
            cluster.setdefault("resourcesVpcConfig", {})["vpcId"] = self.ids["vpc_id"]
            cluster.setdefault("accessConfig", {"authenticationMode": "API_AND_CONFIG_MAP"})
            cluster.update(copy.deepcopy(self.eks_patch))
            validated(session, "eks", "DescribeCluster", parsed)

    def _patch_subscriptions(self, session: boto3.Session, parsed: dict) -> None:
        for sub in parsed.get("Subscriptions", []):
            if sub.get("Protocol") in ("email", "email-json", "http", "https") and sub["Endpoint"] not in self.confirmed:
                sub["SubscriptionArn"] = "PendingConfirmation"
        validated(session, "sns", "ListSubscriptionsByTopic", parsed)

    # -- state
    def moto_state(self) -> dict:
        """Everything moto holds (its data API), for comparing before and after."""
        with urllib.request.urlopen(f"{self.url}/moto-api/data.json", timeout=30) as resp:  # noqa: S310
            return json.loads(resp.read())

    def state(self) -> tuple[Any, ...]:
        return (self.moto_state(), copy.deepcopy(self.eks), copy.deepcopy(self.kube.static),
                copy.deepcopy(self.kube.objects))

    @property
    def kubeconfig(self) -> Path:
        return self.tmp / "kubeconfig"


@functools.cache
def _self_signed(*names: str) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=90))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                              serialization.NoEncryption()))


def build_account(account: Account) -> None:
    c = account.client
    ec2 = c("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"{REGION}{z}")["Subnet"]
               ["SubnetId"] for i, z in enumerate("ab")]
    iam = c("iam")
    cluster_role = iam.create_role(RoleName="hp-eks-cluster-role", AssumeRolePolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"},
                                                 "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    node_role = iam.create_role(RoleName="hp-node-role", AssumeRolePolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {
            "Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    kubectl_role = iam.create_role(RoleName=KUBECTL_ROLE,
                                   AssumeRolePolicyDocument=json.dumps(TRUST_ACCOUNT))["Role"]["Arn"]
    eks = c("eks").create_cluster(name=EKS, version="1.33", roleArn=cluster_role,
                                  resourcesVpcConfig={"subnetIds": subnets})["cluster"]
    issuer = eks["identity"]["oidc"]["issuer"]
    oidc = iam.create_open_id_connect_provider(Url=issuer, ClientIDList=["sts.amazonaws.com"],
                                               ThumbprintList=["9e99a48a9960b14926bb7f3b02e22da2b0ab7280"])
    s3 = c("s3")
    where = {"LocationConstraint": REGION}
    s3.create_bucket(Bucket=f"sagemaker-lifecycle-{ACCOUNT}", CreateBucketConfiguration=where)
    s3.put_object(Bucket=f"sagemaker-lifecycle-{ACCOUNT}", Key="scripts/on_create.sh", Body=b"#!/bin/bash\n")
    hp = c("sagemaker").create_cluster(ClusterName=HYPERPOD, Orchestrator={"Eks": {"ClusterArn": eks["arn"]}},
                                       InstanceGroups=[{
                                           "InstanceGroupName": name, "InstanceType": itype, "InstanceCount": count,
                                           "ExecutionRole": node_role, "ThreadsPerCore": 1,
                                           "LifeCycleConfig": {"SourceS3Uri": f"s3://sagemaker-lifecycle-{ACCOUNT}/"
                                                                              "scripts", "OnCreate": "on_create.sh"}}
                                           for name, itype, count in GROUPS])
    s3.create_bucket(Bucket=MODEL_BUCKET, CreateBucketConfiguration=where)
    for key in ("qwen/config.json", "qwen/model.safetensors"):
        s3.put_object(Bucket=MODEL_BUCKET, Key=key, Body=b"{}")
    secret = c("secretsmanager").create_secret(Name="hf-token", SecretString="hf_not_a_real_token")["ARN"]
    zone = c("route53").create_hosted_zone(Name=ZONE, CallerReference="doctor-test")["HostedZone"]["Id"]
    cert, key = _self_signed(ENDPOINT_NAME, f"*.{ZONE}")
    certificate = c("acm").import_certificate(Certificate=cert, PrivateKey=key)["CertificateArn"]
    kms_key = c("kms").create_key(Description="capture")["KeyMetadata"]["Arn"]
    c("cloudformation").create_stack(StackName="CDKToolkit", TemplateBody=json.dumps({
        "Resources": {"CdkBootstrapVersion": {"Type": "AWS::SSM::Parameter", "Properties": {
            "Type": "String", "Name": "/cdk-bootstrap/hnb659fds/version", "Value": "28"}}},
        "Outputs": {"BootstrapVersion": {"Value": "28"}}}))
    queue = c("sqs").create_queue(QueueName="oncall-pages")["QueueUrl"]
    queue_arn = c("sqs").get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    alarm_topic = c("sns").create_topic(Name="oncall")["TopicArn"]
    c("sns").subscribe(TopicArn=alarm_topic, Protocol="sqs", Endpoint=queue_arn)
    account.eks.grant_admin(kubectl_role)
    account.eks.access[node_role] = []  # the nodes' entry: no access policy (type EC2 in a real cluster)
    account.ids.update(vpc_id=vpc, eks_arn=eks["arn"], issuer=issuer, oidc_arn=oidc["OpenIDConnectProviderArn"],
                       kubectl_role=kubectl_role, hyperpod_arn=HYPERPOD_ARN, moto_hyperpod_arn=hp["ClusterArn"],
                       secret=secret, zone_id="Z" + zone.rsplit("/", 1)[-1], moto_zone_id=zone.rsplit("/", 1)[-1],
                       certificate=certificate, kms_key=kms_key, alarm_topic=alarm_topic)
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    account.kube.static[f"{crds}/externalsecrets.external-secrets.io"] = {
        "kind": "CustomResourceDefinition", "metadata": {"name": "externalsecrets.external-secrets.io"},
        "spec": {"versions": [{"name": "v1", "served": True}, {"name": "v1beta1", "served": False}]}}
    account.kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": eks["arn"],
        "clusters": [{"name": eks["arn"], "cluster": {"server": account.kube.url}}],
        "contexts": [{"name": eks["arn"], "context": {"cluster": eks["arn"], "user": eks["arn"]}}],
        "users": [{"name": eks["arn"], "user": {"token": KUBE_TOKEN}}]}))


@pytest.fixture(scope="session")
def moto_url() -> Any:
    """One moto server on 127.0.0.1 for the session; each test resets it."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def account(moto_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    for var, value in {"AWS_ENDPOINT_URL": moto_url, "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}.items():
        monkeypatch.setenv(var, value)
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    # moto's backends live in the process, shared by every server: start from an empty account
    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=30).close()
    kube = FakeKube(token=KUBE_TOKEN)
    try:
        acct = Account(url=moto_url, tmp=tmp_path, kube=kube)
        build_account(acct)
        yield acct
    finally:
        kube.close()


def full_config(account: Account, base: dict) -> dict:
    """``base`` (what init wrote) with what a user adds: the namespace, two endpoints (an S3 model with a custom
    domain, a Hugging Face model with a Secrets Manager token), capture with a KMS key, the imported zone and
    certificate, and alarms to the account's topic."""
    data = copy.deepcopy(base)
    data["endpoints"] = [
        {"name": "qwen-s3", "namespace": "inference", "instanceType": "ml.g5.8xlarge", "replicas": 2,
         "runtime": "vllm", "model": {"s3": {"bucket": MODEL_BUCKET, "prefix": "qwen/"}},
         "domainName": ENDPOINT_NAME},
        {"name": "qwen-hf", "namespace": "inference", "instanceType": "ml.p5.48xlarge", "replicas": 1,
         "runtime": "vllm", "model": {"huggingface": {
             "modelId": "Qwen/Qwen2.5-7B-Instruct", "commitSHA": "0123456789abcdef0123456789abcdef01234567",
             "token": {"secretsManagerArn": account.ids["secret"]}}}},
    ]
    data["capture"] = {"kms": account.ids["kms_key"]}
    data["domain"] = {"zoneName": ZONE, "hostedZoneId": account.ids["zone_id"],
                      "certificateArn": account.ids["certificate"]}
    data["observability"] = {"alarms": {"snsTopicArn": account.ids["alarm_topic"]}}
    return data


def run_doctor(account: Account, data: dict, *extra: str, kubeconfig: bool = True) -> tuple[int, list[dict]]:
    """``doctor --json`` on ``data`` with the fixture's session: (exit status, the results)."""
    import argparse
    import contextlib
    import io

    from hyperpod_inference.ops import cli

    path = account.tmp / "doctor.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    parser = argparse.ArgumentParser()
    cli.add_parsers(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["doctor", "-c", str(path), "--json",
                              "--kubeconfig", str(account.kubeconfig if kubeconfig else account.tmp / "none"),
                              *extra])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.run_doctor(args, session=account.session())
    return status, [json.loads(line) for line in out.getvalue().splitlines()]


def run_init(account: Account, *extra: str, output: Path | None = None) -> tuple[int, Path]:
    import argparse

    from hyperpod_inference.ops import cli

    path = output or account.tmp / "hyperpod.local.yaml"
    parser = argparse.ArgumentParser()
    cli.add_parsers(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["init", "--hyperpod-cluster", HYPERPOD, "--region", REGION, "-o", str(path), *extra])
    return cli.run_init(args, session=account.session()), path
