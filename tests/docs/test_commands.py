"""Every command README.md and docs/*.md show is well formed and aimed at something that exists: `aws` operations
and parameters in the installed botocore models, `kubectl` kinds and status jsonpaths in the operator's CRDs, `make`
targets, `cdk` subcommands and flags. That they succeed needs an account (docs/testing.md)."""

from __future__ import annotations

import re

import pytest

from tests.docs import commands as c
from tests.docs.helpers import PAGES, REPO
from tests.k8s_validation import crd_root

ALL = [cmd for page in PAGES for cmd in c.commands(page)]


def _ids(cmds: list[c.Command]) -> list[str]:
    return [f"{cmd.page}:{cmd.text[:60]}" for cmd in cmds]


AWS = [cmd for cmd in ALL if cmd.tool == "aws"]
KUBECTL = [cmd for cmd in ALL if cmd.tool == "kubectl"]
MAKE = [cmd for cmd in ALL if cmd.tool == "make"]
CDK = [cmd for cmd in ALL if cmd.tool == "cdk"]


def test_the_pages_show_commands_of_every_kind() -> None:
    assert AWS and KUBECTL and MAKE and CDK


@pytest.mark.parametrize("cmd", AWS, ids=_ids(AWS))
def test_aws_command_names_an_operation_and_its_parameters(cmd: c.Command) -> None:
    assert c.check_aws(cmd.argv) == []


@pytest.mark.parametrize("cmd", KUBECTL, ids=_ids(KUBECTL))
def test_kubectl_command_names_known_kinds_and_status_fields(cmd: c.Command) -> None:
    root = crd_root()
    if root is None and c.names_operator_kind(cmd.argv):
        pytest.skip("the operator's CRDs are not available: set HYPERPOD_CRD_DIR to a folder holding v3.2/ and v3.3/")
    assert c.check_kubectl(cmd.argv, c.operator_crds(root) if root is not None else None) == []


@pytest.mark.parametrize("cmd", MAKE, ids=_ids(MAKE))
def test_make_command_names_a_target(cmd: c.Command) -> None:
    assert c.check_make(cmd.argv) == []


@pytest.mark.e2e  # runs the CDK CLI's --help
@pytest.mark.parametrize("cmd", CDK, ids=_ids(CDK))
def test_cdk_command_names_a_subcommand_and_its_flags(cmd: c.Command) -> None:
    assert c.check_cdk(cmd.argv) == []


# ------------------------------------------------------------------------------- the checks catch what is wrong
def test_aws_check_refuses_an_unknown_operation_or_parameter() -> None:
    # GIVEN commands with a misspelt operation, an invented parameter, a missing required one THEN each is named
    assert c.check_aws(["aws", "eks", "describe-clusters", "--name", "x"]) == [
        "aws eks describe-clusters: no such operation"]
    assert c.check_aws(["aws", "eks", "describe-cluster", "--name", "x", "--cluster", "y"]) == [
        "aws eks describe-cluster: no parameter --cluster"]
    assert c.check_aws(["aws", "eks", "list-access-entries", "--max-items", "5"]) == [
        "aws eks list-access-entries: missing required --cluster-name"]
    assert c.check_aws(["aws", "s3", "ls", "s3://bucket/"]) == []
    assert c.check_aws(["aws", "sagemaker-runtime", "invoke-endpoint", "--endpoint-name", "e", "--body",
                        "fileb://r.json", "out.json"]) == []
    # the CLI's own name for a parameter it renames (sns subscribe's Endpoint), never the model's
    subscribe = ["aws", "sns", "subscribe", "--topic-arn", "arn:aws:sns:us-west-2:111122223333:t", "--protocol",
                 "email"]
    assert c.check_aws([*subscribe, "--notification-endpoint", "a@example.com"]) == []
    assert c.check_aws([*subscribe, "--endpoint", "a@example.com"]) == ["aws sns subscribe: no parameter --endpoint"]


def test_kubectl_check_refuses_an_unknown_kind_or_status_field() -> None:
    root = crd_root()
    if root is None:
        pytest.skip("the operator's CRDs are not available: set HYPERPOD_CRD_DIR to a folder holding v3.2/ and v3.3/")
    crds = c.operator_crds(root)
    assert c.check_kubectl(["kubectl", "get", "inferenceendpoints", "x"], crds) == [
        "kubectl get inferenceendpoints: neither a built-in kind nor a kind or plural of the operator's CRDs"]
    assert c.check_kubectl(["kubectl", "get", "inferenceendpointconfig", "x", "-o",
                            "jsonpath={.status.dnsState}"], crds) == [
        "kubectl get inferenceendpointconfig: .status.dnsState: no dnsState in the CRD's status schema"]
    assert c.check_kubectl(["kubectl", "get", "jumpstartmodels", "x", "-o", "jsonpath={.status.state}"], crds) == []


@pytest.mark.e2e
def test_make_and_cdk_checks_refuse_unknown_targets_and_flags() -> None:
    assert c.check_make(["make", "launch"]) == ["make launch: no such target"]
    assert c.check_make(["make", "deploy"]) == []
    assert c.check_cdk(["npx", "cdk", "deploy", "--no-such-flag"]) == ["cdk deploy: no flag --no-such-flag"]


def test_no_page_shows_a_cdk_command_that_fails_in_a_fresh_shell() -> None:
    assert [p for cmd in ALL if (p := c.fresh_shell_problem(cmd))] == []


def test_the_fresh_shell_check_refuses_bare_and_npx_cdk_commands() -> None:
    # GIVEN a shell line, a span with arguments, and a span naming the step
    assert c.fresh_shell_problem(c.Command("p.md", "cdk diff -c config=hyperpod.yaml"))
    assert c.fresh_shell_problem(c.Command("p.md", "npx cdk synth -c config=a.yaml", in_block=False))
    assert c.fresh_shell_problem(c.Command("p.md", "npx cdk deploy"))
    # THEN the step's name in prose and a make target pass
    assert c.fresh_shell_problem(c.Command("p.md", "cdk destroy", in_block=False)) is None
    assert c.fresh_shell_problem(c.Command("p.md", "make diff CONFIG=hyperpod.yaml")) is None


# ----------------------------------------------------------------------------------- commands needing an account
def test_testing_page_lists_every_page_with_account_commands() -> None:
    # GIVEN the pages that show aws / kubectl / cdk deploy commands THEN docs/testing.md lists exactly those
    pages = sorted({cmd.page for cmd in ALL if cmd.needs_account} - {"testing.md"})
    block = (REPO / "docs" / "testing.md").read_text().split("<!-- account-pages:start -->")[1].split(
        "<!-- account-pages:end -->")[0]
    assert sorted(re.findall(r"\[([\w.-]+\.md)\]", block)) == pages
