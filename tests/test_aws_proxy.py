"""tests/aws_proxy.py: on the wire, the account of tests/fake_aws.py answers exactly as it does in the process (each
of its answers where moto differs from AWS, in each protocol: JSON, REST-JSON, query, REST-XML), and a fault reaches
a botocore client as the error code the proxy was told to give."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.server import ThreadedMotoServer

from tests.aws_proxy import AwsProxy, Fault
from tests.fake_aws import (
    EKS,
    HYPERPOD_ARN,
    KUBE_TOKEN,
    LEGACY_EKS,
    LEGACY_HYPERPOD_ARN,
    MODEL_BUCKET,
    OTHER_ACCOUNT,
    REGION,
    Account,
    build_account,
    new_session,
)
from tests.nvme_agent.fake_kube import FakeKube


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Account, AwsProxy]]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    kubes: list[FakeKube] = []

    def new_kube() -> FakeKube:
        kubes.append(FakeKube(token=KUBE_TOKEN))
        return kubes[-1]
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=30).close()
        account = Account(url=url, tmp=tmp_path_factory.mktemp("wire"), kube=new_kube())
        build_account(account, legacy=True, new_kube=new_kube)
        proxy = AwsProxy(account)
        try:
            yield account, proxy
        finally:
            proxy.close()
    finally:
        for kube in kubes:
            kube.close()
        server.stop()


def _client(proxy: AwsProxy, service: str, key: str = "testing") -> Any:
    session = new_session()
    session._session.set_credentials(key, "testing")  # noqa: SLF001
    return session.client(service, endpoint_url=proxy.url)


def _calls(account: Account) -> list[tuple[str, str, dict]]:
    """One call per answer of the account that differs from moto's, each protocol included."""
    role = account.ids["kubectl_role"]
    return [
        ("sagemaker", "describe_cluster", {"ClusterName": HYPERPOD_ARN}),  # JSON: the ARN mapped in and out
        ("sagemaker", "describe_cluster", {"ClusterName": LEGACY_HYPERPOD_ARN}),
        ("eks", "describe_cluster", {"name": EKS}),  # REST-JSON: vpcId, accessConfig
        ("eks", "describe_cluster", {"name": LEGACY_EKS}),  # and the second cluster's own issuer
        ("eks", "list_addons", {"clusterName": EKS}),  # answered by the fake EKS
        ("eks", "list_access_entries", {"clusterName": EKS}),
        ("eks", "describe_access_entry", {"clusterName": EKS, "principalArn": role}),  # an ARN in the URI
        ("eks", "list_associated_access_policies", {"clusterName": EKS, "principalArn": role}),
        ("route53", "get_hosted_zone", {"Id": account.ids["zone_id"]}),  # REST-XML: the zone ID mapped in
        ("sns", "list_subscriptions_by_topic", {"TopicArn": account.ids["alarm_topic"]}),  # query: pending
        ("cloudformation", "describe_stacks", {"StackName": "made-by-a-change-set"}),  # query: outputs added
        ("s3", "list_objects_v2", {"Bucket": MODEL_BUCKET}),  # REST-XML, moto's own answer
    ]


def _without_metadata(response: dict) -> dict:
    return {k: v for k, v in response.items() if k != "ResponseMetadata"}


def test_the_proxy_answers_each_call_as_the_account_does_in_the_process(wire):
    # GIVEN the account: an e-mail subscription not confirmed yet, a stack created through a change set
    account, proxy = wire
    account.client("sns").subscribe(TopicArn=account.ids["alarm_topic"], Protocol="email",
                                    Endpoint="oncall@example.com")
    cfn = account.client("cloudformation")
    cfn.create_change_set(StackName="made-by-a-change-set", ChangeSetName="first", ChangeSetType="CREATE",
                          TemplateBody=json.dumps({
                              "Resources": {"Version": {"Type": "AWS::SSM::Parameter", "Properties": {
                                  "Type": "String", "Name": "/made/version", "Value": "7"}}},
                              "Outputs": {"Literal": {"Value": "7"}, "Named": {"Value": {"Fn::Sub": "${Version}"}},
                                          "Joined": {"Value": {"Fn::Join": ["-", ["a", "b"]]}}}}))
    cfn.execute_change_set(StackName="made-by-a-change-set", ChangeSetName="first")
    for service, method, params in _calls(account):
        # WHEN a botocore client calls it in the process (event hooks) and through the proxy (on the wire)
        in_process = getattr(account.session().client(service, endpoint_url=account.url), method)(**params)
        on_the_wire = getattr(_client(proxy, service), method)(**params)
        # THEN both read the same answer
        assert _without_metadata(on_the_wire) == _without_metadata(in_process), (service, method)
    assert not proxy.errors
    # and the answers are AWS's, not moto's
    wired = {(s, m, json.dumps(p, sort_keys=True)): getattr(_client(proxy, s), m)(**p) for s, m, p in _calls(account)}

    def answer(service: str, method: str, **params: Any) -> dict:
        return wired[(service, method, json.dumps(params, sort_keys=True))]
    hyperpod = answer("sagemaker", "describe_cluster", ClusterName=HYPERPOD_ARN)
    assert hyperpod["ClusterArn"] == HYPERPOD_ARN and hyperpod["Orchestrator"]["Eks"]["ClusterArn"].endswith(EKS)
    legacy = answer("eks", "describe_cluster", name=LEGACY_EKS)["cluster"]
    main = answer("eks", "describe_cluster", name=EKS)["cluster"]
    assert (main["accessConfig"], legacy["accessConfig"]) == ({"authenticationMode": "API_AND_CONFIG_MAP"},
                                                              {"authenticationMode": "CONFIG_MAP"})
    assert main["resourcesVpcConfig"]["vpcId"] == account.ids["vpc_id"]
    assert legacy["identity"]["oidc"]["issuer"] != main["identity"]["oidc"]["issuer"]
    assert [p["policyArn"] for p in answer("eks", "list_associated_access_policies", clusterName=EKS,
                                           principalArn=account.ids["kubectl_role"])["associatedAccessPolicies"]] \
        == ["arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"]
    subscriptions = answer("sns", "list_subscriptions_by_topic", TopicArn=account.ids["alarm_topic"])["Subscriptions"]
    assert {s["Protocol"]: s["SubscriptionArn"] == "PendingConfirmation" for s in subscriptions} == {
        "sqs": False, "email": True}
    [stack] = answer("cloudformation", "describe_stacks", StackName="made-by-a-change-set")["Stacks"]
    assert {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]} == {"Literal": "7", "Named": "/made/version"}


def test_an_access_entry_call_on_a_cluster_with_only_aws_auth_is_refused_as_eks_refuses_it(wire):
    # GIVEN the cluster that authenticates through aws-auth only / WHEN its access entries are listed
    _, proxy = wire
    with pytest.raises(ClientError) as raised:
        _client(proxy, "eks").list_access_entries(clusterName=LEGACY_EKS)
    # THEN EKS's InvalidRequestException, with its words
    assert raised.value.response["Error"]["Code"] == "InvalidRequestException"
    assert "authentication mode must be set to one of [API, API_AND_CONFIG_MAP]" in str(raised.value)


@pytest.mark.parametrize(("service", "method", "params", "code"), [
    ("sagemaker", "describe_cluster", {"ClusterName": HYPERPOD_ARN}, "AccessDeniedException"),  # JSON
    ("eks", "describe_cluster", {"name": EKS}, "AccessDeniedException"),  # REST-JSON
    ("sts", "get_caller_identity", {}, "AccessDenied"),  # query
    ("s3", "get_bucket_tagging", {"Bucket": MODEL_BUCKET}, "AccessDenied"),  # REST-XML
])
def test_a_fault_reaches_the_client_as_the_error_code_asked_for_in_each_protocol(wire, service, method, params,
                                                                                 code):
    # GIVEN the proxy told to refuse one call
    _, proxy = wire
    proxy.fail(service, "".join(w.title() for w in method.split("_")), Fault(403, code, "not for you"))
    try:
        # WHEN a client makes it / THEN it reads the error code and message
        with pytest.raises(ClientError) as raised:
            getattr(_client(proxy, service), method)(**params)
        assert (raised.value.response["Error"]["Code"], raised.value.response["Error"]["Message"]) == (
            code, "not for you")
        # and a request signed with an expired session's key is refused whatever it calls
        proxy.faults.clear()
        proxy.expired_keys.add("ASIAEXPIRED")
        with pytest.raises(ClientError) as raised:
            getattr(_client(proxy, service, key="ASIAEXPIRED"), method)(**params)
        assert raised.value.response["Error"]["Code"] in ("ExpiredToken", "ExpiredTokenException")
    finally:
        proxy.faults.clear()
        proxy.expired_keys.clear()


def test_a_bucket_of_another_account_answers_403_on_the_wire(wire):
    # GIVEN a bucket of another account / WHEN HeadBucket asks through the proxy / THEN 403, as S3 answers
    account, proxy = wire
    account.client("s3", account=OTHER_ACCOUNT).create_bucket(Bucket="someone-elses", CreateBucketConfiguration={
        "LocationConstraint": REGION})
    account.foreign_buckets.add("someone-elses")
    with pytest.raises(ClientError) as raised:
        _client(proxy, "s3").head_bucket(Bucket="someone-elses")
    assert raised.value.response["Error"]["Code"] == "403"
