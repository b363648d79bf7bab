"""``doctor``'s ``cluster.agent-role``: the kubectl role may create the NVMe agent's gc Role in each namespace with a
daemonset-cached endpoint (cluster admin, or the Role's rules, or escalate and bind), asked of the API server with
SubjectAccessReviews, which change nothing."""

from __future__ import annotations

import pytest
import yaml

from hyperpod_inference.facts.rbac import AGENT_GC_ROLE_RULES, CREATE_ROLE_RULES, RBAC_GROUP
from tests.fake_aws import Account
from tests.ops.conftest import full_config, run_doctor, run_init

CHECK = "cluster.agent-role"
NAMESPACE = "inference"
DEPLOYERS = "deployers"


@pytest.fixture
def daemonset_config(account: Account) -> dict:
    status, path = run_init(account)
    assert status == 0
    data = full_config(account, yaml.safe_load(path.read_text()))
    data["endpoints"][0]["weightCache"] = {"mode": "daemonset"}
    return data


def _not_admin(account: Account) -> None:
    """The kubectl role's access entry maps it to the group ``deployers`` and has no access policy."""
    role = account.ids["kubectl_role"]
    account.eks.access[role] = []
    account.eks.groups[role] = [DEPLOYERS]


def _grant(account: Account, *permissions: tuple[str, str, str]) -> None:
    account.kube.grants.setdefault(f"group:{DEPLOYERS}", set()).update(
        (NAMESPACE, group, resource, verb) for group, resource, verb in permissions)


CREATE = [(r.group, r.resource, v) for r in CREATE_ROLE_RULES for v in r.verbs]
AGENT_RULES = [(r.group, r.resource, v) for r in AGENT_GC_ROLE_RULES for v in r.verbs]


def _results(account: Account, data: dict) -> list[dict]:
    _, results = run_doctor(account, data, "--only", CHECK)
    return results


def test_a_cluster_admin_kubectl_role_passes_without_asking_the_api(account, daemonset_config):
    # GIVEN the fixture's kubectl role, cluster admin through its access entry
    [result] = _results(account, daemonset_config)
    # THEN it passes, and no review was asked
    assert result["status"] == "pass" and "AmazonEKSClusterAdminPolicy" in result["detail"]
    assert account.kube.reviews == []


def test_a_role_holding_the_agent_roles_rules_passes_and_nothing_changes(account, daemonset_config):
    # GIVEN a kubectl role mapped to a group that may create roles and bindings and holds every rule of the Role
    _not_admin(account)
    _grant(account, *CREATE, *AGENT_RULES)
    before = account.state()
    account.kube.requests.clear()
    [result] = _results(account, daemonset_config)
    # THEN it passes for the namespace, asked as the access entry's user and groups
    assert result["status"] == "pass" and f"namespace {NAMESPACE}" in result["resource"], result
    assert {tuple(r["groups"]) for r in account.kube.reviews} == {(DEPLOYERS, "system:authenticated")}
    assert {r["user"] for r in account.kube.reviews} == {account.ids["kubectl_role"]}
    # AND the API server saw reads and reviews only, and nothing changed
    assert {(m, p) for m, p, *_ in account.kube.requests if m != "GET"} == {
        ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews")}
    assert account.state() == before


def test_a_missing_rule_without_escalate_fails_naming_it(account, daemonset_config):
    # GIVEN a group holding everything but list on cronjobs, and no escalate
    _not_admin(account)
    _grant(account, *CREATE, *[p for p in AGENT_RULES if p[1] != "cronjobs"])
    [result] = _results(account, daemonset_config)
    # THEN it fails naming what is missing and the escalate alternative
    assert result["status"] == "fail"
    assert "list batch/cronjobs" in result["detail"] and "escalate and bind" in result["detail"]
    assert "list core/pods" not in result["detail"]
    assert DEPLOYERS in result["fix"]


def test_escalate_and_bind_stand_in_for_the_rules(account, daemonset_config):
    _not_admin(account)
    _grant(account, *CREATE, (RBAC_GROUP, "roles", "escalate"), (RBAC_GROUP, "roles", "bind"))
    [result] = _results(account, daemonset_config)
    assert result["status"] == "pass"


def test_without_create_on_roles_it_fails_even_with_the_rules(account, daemonset_config):
    _not_admin(account)
    _grant(account, *AGENT_RULES)
    [result] = _results(account, daemonset_config)
    assert result["status"] == "fail" and "create rbac.authorization.k8s.io/roles" in result["detail"]


def test_doctor_credentials_that_may_not_review_skip_with_why(account, daemonset_config):
    _not_admin(account)
    account.kube.review_status = 403
    [result] = _results(account, daemonset_config)
    assert result["status"] == "skip" and "subjectaccessreviews" in result["detail"]


def test_aws_auth_masters_pass_and_aws_auth_groups_are_reviewed(account, daemonset_config):
    # GIVEN a cluster authenticating through aws-auth only
    account.eks_patch["accessConfig"] = {"authenticationMode": "CONFIG_MAP"}
    role = account.ids["kubectl_role"]
    aws_auth = "/api/v1/namespaces/kube-system/configmaps/aws-auth"

    def map_role(groups: list[str]) -> None:
        account.kube.static[aws_auth] = {"kind": "ConfigMap", "data": {"mapRoles": yaml.safe_dump(
            [{"rolearn": role, "username": "kubectl", "groups": groups}])}}

    # WHEN the role is in system:masters THEN it passes
    map_role(["system:masters"])
    [result] = _results(account, daemonset_config)
    assert result["status"] == "pass" and "system:masters" in result["detail"]
    # WHEN it is in a group without the permissions THEN it fails, asked as the mapped user and groups
    map_role([DEPLOYERS])
    [result] = _results(account, daemonset_config)
    assert result["status"] == "fail" and "aws-auth" in result["detail"]
    assert {r["user"] for r in account.kube.reviews} == {"kubectl"}


@pytest.mark.parametrize("map_roles", [
    [{"rolearn": "ROLE", "username": "kubectl", "groups": "system:masters"}],  # groups a string, not a list
    {"rolearn": "ROLE"},  # not a list of mappings
    "- rolearn: [unclosed",  # not YAML
], ids=["groups-string", "not-a-list", "not-yaml"])
def test_a_malformed_aws_auth_is_a_skip_naming_it_never_a_pass(account, daemonset_config, map_roles):
    # GIVEN a cluster authenticating through aws-auth only, whose mapRoles is not what the authenticator reads
    account.eks_patch["accessConfig"] = {"authenticationMode": "CONFIG_MAP"}
    role = account.ids["kubectl_role"]
    text = map_roles if isinstance(map_roles, str) else yaml.safe_dump(
        yaml.safe_load(yaml.safe_dump(map_roles).replace("ROLE", role)))
    account.kube.static["/api/v1/namespaces/kube-system/configmaps/aws-auth"] = {
        "kind": "ConfigMap", "data": {"mapRoles": text}}
    # WHEN doctor checks the agent Role THEN it skips naming the ConfigMap (a string of groups is no system:masters)
    [result] = _results(account, daemonset_config)
    assert result["status"] == "skip" and "aws-auth" in result["detail"], result
    assert account.kube.reviews == []


def test_files_delivery_skips_naming_what_the_gitops_identity_needs(account, daemonset_config):
    daemonset_config["manifests"] = {"delivery": "files"}
    daemonset_config.pop("domain", None)
    for ep in daemonset_config["endpoints"]:
        ep.pop("domainName", None)
    [result] = _results(account, daemonset_config)
    assert result["status"] == "skip" and "docs/permissions.md" in result["detail"]


def test_no_daemonset_endpoint_no_result(account, daemonset_config):
    daemonset_config["endpoints"][0]["weightCache"] = {"mode": "off"}
    assert _results(account, daemonset_config) == []
