"""A HyperPod EKS account on moto, shaped as AWS describes one, for ``init`` and ``doctor``: in the test's process
(tests/ops: :meth:`Account.session`, botocore event hooks) and on the wire for subprocesses (tests/e2e: the loopback
proxy of :mod:`tests.aws_proxy`). Both apply the same answers: :meth:`Account.request_params`,
:meth:`Account.answer` and :meth:`Account.patch`.

The account: a HyperPod cluster orchestrated by an EKS cluster (Kubernetes 1.33, in a real VPC) whose access entries
make a kubectl role cluster admin (authentication mode ``API_AND_CONFIG_MAP``), the cluster's IAM OIDC provider, no
operator add-on yet, a model under an S3 prefix, a Hugging Face token secret, a hosted zone, an issued certificate for
the endpoint names, a KMS key, an alarm topic (``oncall``, SNS's default policy) with a confirmed SQS subscriber, and
(unless ``bootstrapped=False``) the CDK bootstrap stack ``CDKToolkit`` with its ``BootstrapVersion`` output. With
``legacy=True``, a second HyperPod cluster (:data:`LEGACY_HYPERPOD`) whose EKS cluster (:data:`LEGACY_EKS`) has only
the aws-auth ConfigMap (``CONFIG_MAP``), mapping :data:`LEGACY_ROLE` to ``system:masters`` in its fake Kubernetes API.

Where moto differs from AWS, the account gives the real answer, and every response it writes or changes is validated
against botocore's service model:
- SageMaker ``DescribeCluster``: moto omits ``Orchestrator``; the account adds ``Orchestrator.Eks.ClusterArn``.
- SageMaker cluster ARNs: moto's end in the cluster's name, real ones in a 12-character ID; the account answers
  with :data:`HYPERPOD_ARN` (:data:`LEGACY_HYPERPOD_ARN`) and maps it back to the name on the way in.
- Route 53 zone IDs: moto's do not start with ``Z`` as real ones do; the account gives ``Z<moto's ID>`` to the
  config and maps it back on the way in (``GetHostedZone``).
- EKS ``DescribeCluster``: moto omits ``resourcesVpcConfig.vpcId`` and ``accessConfig``; the account adds them.
  moto gives every cluster of a process the same OIDC issuer, AWS each its own: the second cluster gets its own.
- EKS add-ons and access entries: moto has no such API (it answers an HTML page with HTTP 404); :class:`FakeEks`
  answers ``ListAddons``, ``DescribeAddon``, ``ListAccessEntries``, ``DescribeAccessEntry`` and
  ``ListAssociatedAccessPolicies`` (on a ``CONFIG_MAP`` cluster the access-entry calls are refused as EKS refuses
  them), except those a test names in ``Account.left_to_moto`` (moto's page reaches the code as it would from a
  proxy).
- S3 ``HeadBucket``: moto answers 200 for a bucket of another account; S3 answers 403, and so does the account for
  the buckets in :attr:`Account.foreign_buckets`.
- SNS ``ListSubscriptionsByTopic``: moto confirms every subscription at once; SNS keeps an e-mail or HTTP(S)
  subscription ``PendingConfirmation`` until its owner confirms, and so does the account unless the endpoint is in
  :attr:`Account.confirmed`.
- CloudFormation ``DescribeStacks``: moto gives no ``Outputs`` for a stack it created through a change set (as
  ``cdk bootstrap`` creates ``CDKToolkit``); the account gives the outputs of the stack's template whose value is a
  literal or names one of its resources (``BootstrapVersion``, ``BucketName``), as CloudFormation would.
"""

from __future__ import annotations

import base64
import copy
import datetime
import functools
import hashlib
import json
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import yaml
from botocore.awsrequest import AWSResponse
from botocore.validate import validate_parameters

from tests.nvme_agent.fake_kube import FakeKube

ACCOUNT = "123456789012"  # moto's default account
OTHER_ACCOUNT = "999999999999"
REGION = "us-west-2"
HYPERPOD = "hp-cluster"
EKS = "hp-eks"
HYPERPOD_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/k3x9q2m7w4bz"
KUBECTL_ROLE = "hp-eks-admin"
#: The second cluster (``legacy=True``): its EKS cluster authenticates through the aws-auth ConfigMap only.
LEGACY_HYPERPOD = "hp-legacy"
LEGACY_EKS = "hp-eks-legacy"
LEGACY_HYPERPOD_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/p7r2t9x4c1dq"
LEGACY_ROLE = "hp-eks-legacy-admin"
MODEL_BUCKET = f"models-{ACCOUNT}"
ZONE = "example.com"
ENDPOINT_NAME = "chat.example.com"
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
KUBE_TOKEN = "doctor-token"
GROUPS = [("gpu-g5", "ml.g5.8xlarge", 2), ("gpu-p5", "ml.p5.48xlarge", 1), ("system", "ml.m5.xlarge", 1)]
TRUST_ACCOUNT = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"}]}
AWS_AUTH_PATH = "/api/v1/namespaces/kube-system/configmaps/aws-auth"
ESO_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/externalsecrets.external-secrets.io"

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


@functools.cache
def service_model(service: str) -> Any:
    return _setup_session()._session.get_service_model(service)  # noqa: SLF001


def validated(service: str, operation: str, response: dict) -> dict:
    """``response`` checked against the operation's output shape in botocore's service model (what Stubber does)."""
    model = service_model(service).operation_model(operation)
    body = {k: v for k, v in response.items() if k != "ResponseMetadata"}
    validate_parameters(body, model.output_shape)
    return response


def _answer(status: int, parsed: dict) -> tuple[int, dict]:
    return status, {**parsed, "ResponseMetadata": {"HTTPStatusCode": status}}


def _error(status: int, code: str, message: str) -> tuple[int, dict]:
    return _answer(status, {"Error": {"Code": code, "Message": message}})


def _not_found(message: str) -> tuple[int, dict]:
    return _error(404, "ResourceNotFoundException", message)


@dataclass
class FakeEks:
    """EKS add-ons and access entries of one cluster, which moto does not serve."""

    cluster: str = EKS
    #: the cluster's authentication mode (``CONFIG_MAP``: EKS refuses the access-entry calls)
    mode: str = "API_AND_CONFIG_MAP"
    addons: dict[str, dict] = field(default_factory=dict)  # add-on name -> Addon
    access: dict[str, list[dict]] = field(default_factory=dict)  # principal ARN -> associated access policies
    groups: dict[str, list[str]] = field(default_factory=dict)  # principal ARN -> the access entry's Kubernetes groups

    def add_addon(self, name: str, version: str, *, status: str = "ACTIVE", tags: dict | None = None) -> None:
        now = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
        self.addons[name] = {"addonName": name, "clusterName": self.cluster, "status": status, "addonVersion": version,
                             "addonArn": f"arn:aws:eks:{REGION}:{ACCOUNT}:addon/{self.cluster}/{name}/abcd",
                             "createdAt": now, "modifiedAt": now, "tags": tags or {}}

    def grant_admin(self, principal: str) -> None:
        self.access[principal] = [{"policyArn": CLUSTER_ADMIN, "accessScope": {"type": "cluster"},
                                   "associatedAt": datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
                                   "modifiedAt": datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)}]

    def answer(self, operation: str, params: dict) -> tuple[int, dict]:
        if operation == "ListAddons":
            return _answer(200, {"addons": sorted(self.addons)})
        if operation == "DescribeAddon":
            found = self.addons.get(params["addonName"])
            return _answer(200, {"addon": found}) if found else _not_found(f"No addon: {params['addonName']}")
        if self.mode == "CONFIG_MAP":
            return _error(400, "InvalidRequestException", "The cluster's authentication mode must be set to one of "
                          "[API, API_AND_CONFIG_MAP] to perform this operation.")
        if operation == "ListAccessEntries":
            return _answer(200, {"accessEntries": sorted(self.access)})
        principal = params["principalArn"]
        if principal not in self.access:
            return _not_found(f"The specified principalArn could not be found: {principal}")
        if operation == "DescribeAccessEntry":
            return _answer(200, {"accessEntry": {"clusterName": self.cluster, "principalArn": principal,
                                                 "type": "STANDARD", "username": principal,
                                                 "kubernetesGroups": self.groups.get(principal, [])}})
        return _answer(200, {"clusterName": self.cluster, "principalArn": principal,
                             "associatedAccessPolicies": self.access[principal]})


FAKE_EKS_OPERATIONS = ("ListAddons", "DescribeAddon", "ListAccessEntries", "DescribeAccessEntry",
                       "ListAssociatedAccessPolicies")


@dataclass
class Account:
    url: str
    tmp: Path
    kube: FakeKube
    eks: FakeEks = field(default_factory=FakeEks)
    eks_patch: dict[str, Any] = field(default_factory=dict)  # merged into the EKS cluster EKS's description
    hyperpod_patch: dict[str, Any] = field(default_factory=dict)  # merged into the HyperPod cluster's description
    orchestrated: bool = True  # False: the HyperPod cluster answers without an orchestrator (Slurm)
    foreign_buckets: set[str] = field(default_factory=set)
    left_to_moto: set[str] = field(default_factory=set)  # FAKE_EKS_OPERATIONS moto answers (its HTML 404 page)
    confirmed: set[str] = field(default_factory=set)  # e-mail / HTTP(S) endpoints that confirmed their subscription
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (event, service, operation)
    ids: dict[str, str] = field(default_factory=dict)
    #: the other EKS clusters (``legacy=True``), by name, and their fake Kubernetes APIs
    other_eks: dict[str, FakeEks] = field(default_factory=dict)
    other_kube: dict[str, FakeKube] = field(default_factory=dict)
    #: HyperPod cluster name -> (its real-shaped ARN, its EKS cluster's name)
    hyperpods: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: the PEM of the fake Kubernetes APIs' certificate authority when they serve TLS (``FakeKube(tls=...)``)
    kube_ca: bytes | None = None

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

    def fake_eks(self, name: str | None) -> FakeEks | None:
        return self.eks if name == EKS else self.other_eks.get(str(name))

    # -- the answers, as AWS gives them (in the process and on the wire)
    def request_params(self, service: str, operation: str, params: dict) -> dict:
        """The API parameters moto understands for what the caller sent (real-shaped IDs mapped back to moto's)."""
        if service == "sagemaker" and operation == "DescribeCluster":
            by_arn = {arn: name for name, (arn, _) in self.hyperpods.items()}
            return {**params, "ClusterName": by_arn.get(params.get("ClusterName"), params.get("ClusterName"))}
        if service == "route53" and operation == "GetHostedZone" and params.get("Id") == self.ids.get("zone_id"):
            return {**params, "Id": self.ids["moto_zone_id"]}
        return params

    def answer(self, service: str, operation: str, params: dict) -> tuple[int, dict] | None:
        """The answer to a call moto cannot give (HTTP status, the parsed response or ``Error``), or None."""
        if service == "eks" and operation in FAKE_EKS_OPERATIONS and operation not in self.left_to_moto:
            fake = self.fake_eks(params.get("clusterName"))
            if fake is None:
                return _not_found(f"No cluster found for name: {params.get('clusterName')}.")
            status, parsed = fake.answer(operation, params)
            return status, (validated("eks", operation, parsed) if status == 200 else parsed)
        if service == "s3" and operation == "HeadBucket" and params.get("Bucket") in self.foreign_buckets:
            return _error(403, "403", "Forbidden")
        return None

    def patch(self, service: str, operation: str, parsed: dict) -> None:
        """Make moto's answer ``parsed`` the one AWS gives (in place); validated against the service model."""
        patch = {("sagemaker", "DescribeCluster"): self._patch_hyperpod, ("eks", "DescribeCluster"): self._patch_eks,
                 ("sns", "ListSubscriptionsByTopic"): self._patch_subscriptions,
                 ("cloudformation", "DescribeStacks"): self._patch_stack_outputs}.get((service, operation))
        if patch is not None and "Error" not in parsed and patch(parsed):
            validated(service, operation, parsed)

    def _patch_hyperpod(self, parsed: dict) -> bool:
        name = parsed.get("ClusterName")
        if "ClusterArn" not in parsed or name not in self.hyperpods:
            return False
        arn, eks_name = self.hyperpods[name]
        if self.orchestrated:
            parsed.setdefault("Orchestrator", {"Eks": {"ClusterArn": self.ids[f"eks_arn:{eks_name}"]}})
        parsed["ClusterArn"] = arn
        if name == HYPERPOD:
            parsed.update(copy.deepcopy(self.hyperpod_patch))
        return True

    def _patch_eks(self, parsed: dict) -> bool:
        cluster = parsed.get("cluster")
        fake = self.fake_eks(cluster.get("name")) if cluster else None
        if fake is None:
            return False
        cluster.setdefault("resourcesVpcConfig", {})["vpcId"] = self.ids["vpc_id"]
        cluster.setdefault("accessConfig", {"authenticationMode": fake.mode})
        if f"issuer:{fake.cluster}" in self.ids:
            cluster["identity"] = {"oidc": {"issuer": self.ids[f"issuer:{fake.cluster}"]}}
        if fake is self.eks:
            cluster.update(copy.deepcopy(self.eks_patch))
        return True

    def _patch_subscriptions(self, parsed: dict) -> bool:
        for sub in parsed.get("Subscriptions", []):
            if sub.get("Protocol") in ("email", "email-json", "http", "https") and sub["Endpoint"] not in self.confirmed:
                sub["SubscriptionArn"] = "PendingConfirmation"
        return True

    def _patch_stack_outputs(self, parsed: dict) -> bool:
        changed = False
        for stack in parsed.get("Stacks") or []:
            status = stack.get("StackStatus", "")
            if stack.get("Outputs") or not status.endswith("_COMPLETE") or status == "DELETE_COMPLETE":
                continue
            outputs = self._template_outputs(stack["StackName"])
            if outputs:
                stack["Outputs"], changed = outputs, True
        return changed

    def _template_outputs(self, stack_name: str) -> list[dict]:
        """The outputs of the stack's template that are a literal or name one of its resources (``Ref`` or
        ``Fn::Sub: ${LogicalId}``), as CloudFormation gives them; the others are left out."""
        cfn = self.client("cloudformation")
        body = cfn.get_template(StackName=stack_name)["TemplateBody"]
        template = body if isinstance(body, dict) else yaml.load(body, Loader=_CfnLoader)  # noqa: S506 - tags only
        physical = {r["LogicalResourceId"]: r.get("PhysicalResourceId", "")  # moto's skipped types have no ID
                    for r in cfn.describe_stack_resources(StackName=stack_name)["StackResources"]
                    if r.get("LogicalResourceId")}
        out = []
        for key, output in (template.get("Outputs") or {}).items():
            value = output.get("Value")
            named = re.fullmatch(r"\$\{([A-Za-z0-9]+)\}", str(value.get("Fn::Sub", ""))) if isinstance(value, dict) \
                else None
            if isinstance(value, str | int):
                resolved = str(value)
            elif isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in physical:
                resolved = physical[value["Ref"]]
            elif named and named.group(1) in physical:
                resolved = physical[named.group(1)]
            else:
                continue
            out.append({"OutputKey": key, "OutputValue": resolved,
                        **({"Description": output["Description"]} if "Description" in output else {})})
        return out

    # -- in the test's process
    def session(self) -> boto3.Session:
        """The session the code under test uses: every call recorded, moto's gaps filled as described above."""
        session = new_session()
        events = session.events
        events.register("provide-client-params", self._record_params)
        events.register("before-call", self._record_call)
        # before-call sees the serialized request; the API parameters reach it through the call's context
        events.register("provide-client-params", self._keep_params)
        # one handler after the recorder, at the same level (a more specific event name would run before it)
        events.register("before-call", lambda model, context, **_: self._answer_in_process(
            model.service_model.service_name, model.name, context["api_params"]))
        events.register("provide-client-params", lambda params, model, **_: self.request_params(
            model.service_model.service_name, model.name, params))
        events.register("after-call", lambda parsed, model, **_: self.patch(
            model.service_model.service_name, model.name, parsed))
        return session

    def _record_params(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".")
        self.calls.append(("provide-client-params", service, operation))

    @staticmethod
    def _keep_params(params: dict, context: dict, **_: Any) -> None:
        context["api_params"] = dict(params)

    def _record_call(self, model: Any, **_: Any) -> None:
        self.calls.append(("before-call", model.service_model.service_name, model.name))

    def _answer_in_process(self, service: str, operation: str, params: dict) -> tuple[AWSResponse, dict] | None:
        answered = self.answer(service, operation, params)
        if answered is None:
            return None
        status, parsed = answered
        return AWSResponse(None, status, {}, None), parsed

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


class _CfnLoader(yaml.SafeLoader):
    """A YAML CloudFormation template: its short-form tags (``!Sub``, ``!Ref``) read as the long form."""


_CfnLoader.add_multi_constructor("!", lambda loader, suffix, node: {
    ("Ref" if suffix == "Ref" else f"Fn::{suffix}"): (
        loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else
        loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else loader.construct_mapping(node))})


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


def _trusts(service: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]})


def _hyperpod_cluster(account: Account, name: str, arn: str, eks_name: str, subnets: list[str],
                      groups: list[tuple[str, str, int]]) -> dict:
    """The EKS cluster ``eks_name`` and the HyperPod cluster ``name`` it orchestrates (moto's answers)."""
    c = account.client
    cluster_role = c("iam").get_role(RoleName="hp-eks-cluster-role")["Role"]["Arn"]
    node_role = c("iam").get_role(RoleName="hp-node-role")["Role"]["Arn"]
    eks = c("eks").create_cluster(name=eks_name, version="1.33", roleArn=cluster_role,
                                  resourcesVpcConfig={"subnetIds": subnets})["cluster"]
    if eks_name != EKS:  # its own issuer (moto's is the same for every cluster)
        issuer = f"https://oidc.eks.{REGION}.amazonaws.com/id/{hashlib.sha256(eks_name.encode()).hexdigest()[:32].upper()}"
        eks["identity"]["oidc"]["issuer"] = account.ids[f"issuer:{eks_name}"] = issuer
    c("iam").create_open_id_connect_provider(Url=eks["identity"]["oidc"]["issuer"], ClientIDList=["sts.amazonaws.com"],
                                             ThumbprintList=["9e99a48a9960b14926bb7f3b02e22da2b0ab7280"])
    lifecycle = {"SourceS3Uri": f"s3://sagemaker-lifecycle-{ACCOUNT}/scripts", "OnCreate": "on_create.sh"}
    c("sagemaker").create_cluster(ClusterName=name, Orchestrator={"Eks": {"ClusterArn": eks["arn"]}}, InstanceGroups=[{
        "InstanceGroupName": group, "InstanceType": itype, "InstanceCount": count, "ExecutionRole": node_role,
        "ThreadsPerCore": 1, "LifeCycleConfig": lifecycle} for group, itype, count in groups])
    account.hyperpods[name] = (arn, eks_name)
    account.ids[f"eks_arn:{eks_name}"] = eks["arn"]
    return eks


def write_kubeconfig(path: Path, clusters: dict[str, str], token: str = KUBE_TOKEN, ca: bytes | None = None) -> None:
    """A kubeconfig as ``aws eks update-kubeconfig`` writes one per cluster (context, cluster and user named by the
    cluster's ARN), for ``clusters`` (EKS cluster ARN -> API server URL); the first is the current context. ``ca``:
    the PEM of the servers' certificate authority (``certificate-authority-data``)."""
    arns = list(clusters)
    trust = {"certificate-authority-data": base64.b64encode(ca).decode()} if ca else {}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": arns[0],
        "clusters": [{"name": arn, "cluster": {"server": url, **trust}} for arn, url in clusters.items()],
        "contexts": [{"name": arn, "context": {"cluster": arn, "user": arn}} for arn in arns],
        "users": [{"name": arn, "user": {"token": token}} for arn in arns]}))


def build_account(account: Account, *, bootstrapped: bool = True, legacy: bool = False,
                  new_kube: Callable[[], FakeKube] | None = None) -> None:
    """Create the account described above in moto (``new_kube``: the legacy cluster's fake Kubernetes API)."""
    c = account.client
    ec2 = c("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"{REGION}{z}")["Subnet"]
               ["SubnetId"] for i, z in enumerate("ab")]
    iam = c("iam")
    iam.create_role(RoleName="hp-eks-cluster-role", AssumeRolePolicyDocument=_trusts("eks.amazonaws.com"))
    node_role = iam.create_role(RoleName="hp-node-role",
                                AssumeRolePolicyDocument=_trusts("sagemaker.amazonaws.com"))["Role"]["Arn"]
    kubectl_role = iam.create_role(RoleName=KUBECTL_ROLE,
                                   AssumeRolePolicyDocument=json.dumps(TRUST_ACCOUNT))["Role"]["Arn"]
    s3 = c("s3")
    where = {"LocationConstraint": REGION}
    s3.create_bucket(Bucket=f"sagemaker-lifecycle-{ACCOUNT}", CreateBucketConfiguration=where)
    s3.put_object(Bucket=f"sagemaker-lifecycle-{ACCOUNT}", Key="scripts/on_create.sh", Body=b"#!/bin/bash\n")
    eks = _hyperpod_cluster(account, HYPERPOD, HYPERPOD_ARN, EKS, subnets, GROUPS)
    issuer = eks["identity"]["oidc"]["issuer"]
    oidc = next(p["Arn"] for p in iam.list_open_id_connect_providers()["OpenIDConnectProviderList"]
                if p["Arn"].endswith(issuer.removeprefix("https://")))
    s3.create_bucket(Bucket=MODEL_BUCKET, CreateBucketConfiguration=where)
    for key in ("qwen/config.json", "qwen/model.safetensors"):
        s3.put_object(Bucket=MODEL_BUCKET, Key=key, Body=b"{}")
    secret = c("secretsmanager").create_secret(Name="hf-token", SecretString="hf_not_a_real_token")["ARN"]
    zone = c("route53").create_hosted_zone(Name=ZONE, CallerReference="doctor-test")["HostedZone"]["Id"]
    cert, key = _self_signed(ENDPOINT_NAME, f"*.{ZONE}")
    certificate = c("acm").import_certificate(Certificate=cert, PrivateKey=key)["CertificateArn"]
    kms_key = c("kms").create_key(Description="capture")["KeyMetadata"]["Arn"]
    if bootstrapped:
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
    account.ids.update(vpc_id=vpc, eks_arn=eks["arn"], issuer=issuer, oidc_arn=oidc, kubectl_role=kubectl_role,
                       hyperpod_arn=HYPERPOD_ARN, secret=secret, zone_id="Z" + zone.rsplit("/", 1)[-1],
                       moto_zone_id=zone.rsplit("/", 1)[-1], certificate=certificate, kms_key=kms_key,
                       alarm_topic=alarm_topic)
    account.kube.static[ESO_CRD_PATH] = {
        "kind": "CustomResourceDefinition", "metadata": {"name": "externalsecrets.external-secrets.io"},
        "spec": {"versions": [{"name": "v1", "served": True}, {"name": "v1beta1", "served": False}]}}
    servers = {eks["arn"]: account.kube.url}
    if legacy:
        legacy_arn = _legacy_cluster(account, subnets, new_kube or FakeKube)
        servers[legacy_arn] = account.other_kube[LEGACY_EKS].url
    write_kubeconfig(account.kubeconfig, servers, ca=account.kube_ca)


def _legacy_cluster(account: Account, subnets: list[str], new_kube: Callable[[], FakeKube]) -> str:
    """The second HyperPod cluster, whose EKS cluster maps LEGACY_ROLE to system:masters in aws-auth only."""
    role = account.client("iam").create_role(RoleName=LEGACY_ROLE,
                                             AssumeRolePolicyDocument=json.dumps(TRUST_ACCOUNT))["Role"]["Arn"]
    eks = _hyperpod_cluster(account, LEGACY_HYPERPOD, LEGACY_HYPERPOD_ARN, LEGACY_EKS, subnets, GROUPS[:1])
    account.other_eks[LEGACY_EKS] = FakeEks(LEGACY_EKS, mode="CONFIG_MAP")
    kube = account.other_kube[LEGACY_EKS] = new_kube()
    kube.static[AWS_AUTH_PATH] = {"kind": "ConfigMap", "metadata": {"name": "aws-auth", "namespace": "kube-system"},
                                  "data": {"mapRoles": yaml.safe_dump([{"rolearn": role, "username": "admin",
                                                                        "groups": ["system:masters"]}])}}
    account.ids.update(legacy_role=role, legacy_eks_arn=eks["arn"])
    return eks["arn"]
