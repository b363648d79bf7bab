"""The quickstart runs as written from a fresh shell: its `python -m hyperpod_inference` commands parse with the real
CLI, its `make` targets run the venv's Python and the pinned CDK CLI (no PATH assumption), the kubeconfig and
bootstrap come before doctor and doctor before deploy, and the trust policy it shows is one doctor accepts.
docs/troubleshooting.md names every doctor check."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess

import pytest

from hyperpod_inference.ops import cli
from hyperpod_inference.ops.doctor import runner
from hyperpod_inference.ops.doctor.cluster import trusted_principals
from tests.docs import commands as c
from tests.docs.helpers import PAGES, REPO, fenced

QUICKSTART = REPO / "docs" / "quickstart.md"
TROUBLESHOOTING = REPO / "docs" / "troubleshooting.md"
MODULE = re.compile(r"^\.venv/bin/python -m hyperpod_inference (.+)$")


def _shell_lines(text: str) -> list[str]:
    lines = []
    for lang, body in re.findall(r"^\s*```(\w*)\n(.*?)^\s*```", text, flags=re.S | re.M):
        if lang in c.SHELL_LANGS:
            lines += [line.strip() for line in body.splitlines() if line.strip()]
    prose = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)
    return lines + re.findall(r"`([^`\n]+)`", prose)


def module_commands() -> list[tuple[str, str]]:
    return [(p.name, m.group(1)) for p in PAGES for line in _shell_lines(p.read_text())
            if (m := MODULE.match(line)) and not c._placeholder(m.group(1).split()[0])]  # "… -m hyperpod_inference …"


def check_module_command(args: str) -> list[str]:
    """Problems of ``python -m hyperpod_inference <args>`` against the CLI's own parsers (init, doctor, validate)."""
    argv = shlex.split(args)
    if argv[0] == "validate":
        return [] if len(argv) == 2 else [f"validate takes one file: {args}"]
    if argv[0] == "schema":
        return [] if argv[1:] in ([], ["-o", argv[-1]]) else [f"schema: {args}"]
    parser = argparse.ArgumentParser(exit_on_error=False)
    cli.add_parsers(parser.add_subparsers(dest="command"))
    try:
        _, unknown = parser.parse_known_args(argv)
    except (argparse.ArgumentError, SystemExit) as err:
        return [f"{args}: {err}"]
    return [f"{args}: unknown {' '.join(unknown)}"] if unknown else []


MODULE_COMMANDS = module_commands()


def test_the_quickstart_shows_module_commands():
    assert any(page == "quickstart.md" and args.startswith("validate ") for page, args in MODULE_COMMANDS)


@pytest.mark.parametrize(("page", "args"), MODULE_COMMANDS, ids=[f"{p}:{a[:50]}" for p, a in MODULE_COMMANDS])
def test_module_command_parses_with_the_cli(page, args):
    assert check_module_command(args) == []


def test_the_module_command_check_refuses_an_unknown_flag_or_a_missing_argument():
    assert check_module_command("doctor -c x.yaml --fast") == ["doctor -c x.yaml --fast: unknown --fast"]
    assert check_module_command("init -o x.yaml")  # --hyperpod-cluster is required


def test_the_quickstart_needs_nothing_on_path():
    # GIVEN every command the quickstart shows / THEN none relies on PATH for the venv or the CDK CLI: the CDK and the
    # package run through make or .venv/bin/python
    # (an inline span without an option is a mention, e.g. "what `cdk destroy` removes")
    lines = [line for line in _shell_lines(QUICKSTART.read_text()) if " -" in line or line.startswith("make ")]
    assert not [line for line in lines if re.match(r"(npx |cdk |python3? )", line)]
    assert {line.split()[1] for line in lines if line.startswith("make ")} >= {"init", "doctor", "bootstrap", "deploy",
                                                                              "destroy", "synth"}


@pytest.mark.parametrize(("target", "runs"), [
    ("init HYPERPOD_CLUSTER=my-hp-cluster REGION=us-west-2 INIT_OUTPUT=my-cluster.yaml",
     ".venv/bin/python -m hyperpod_inference init --hyperpod-cluster my-hp-cluster --region us-west-2 -o "
     "my-cluster.yaml"),
    ("doctor CONFIG=my-cluster.yaml", ".venv/bin/python -m hyperpod_inference doctor -c my-cluster.yaml"),
    ("bootstrap CONFIG=my-cluster.yaml", "node_modules/.bin/cdk bootstrap --no-notices -o cdk.out -c config=my-cluster.yaml"),
    ("deploy CONFIG=my-cluster.yaml", "node_modules/.bin/cdk deploy --no-notices -o cdk.out -c config=my-cluster.yaml "
                                      "--outputs-file outputs.json --all"),
    ("destroy CONFIG=my-cluster.yaml", "node_modules/.bin/cdk destroy --no-notices -o cdk.out -c config=my-cluster.yaml "
                                       "--all"),
    # the forms CI runs: no prompt
    ("deploy CONFIG=my-cluster.yaml APPROVAL=never", "node_modules/.bin/cdk deploy --no-notices -o cdk.out "
     "-c config=my-cluster.yaml --outputs-file outputs.json --require-approval never --all"),
    ("destroy CONFIG=my-cluster.yaml FORCE=1", "node_modules/.bin/cdk destroy --no-notices -o cdk.out "
     "-c config=my-cluster.yaml --force --all"),
    ("init HYPERPOD_CLUSTER=my-hp-cluster REGION=us-west-2 INIT_OUTPUT=my-cluster.yaml "
     "KUBECTL_ROLE_ARN=arn:aws:iam::111122223333:role/hp-eks-admin",
     ".venv/bin/python -m hyperpod_inference init --hyperpod-cluster my-hp-cluster --region us-west-2 "
     "--kubectl-role-arn arn:aws:iam::111122223333:role/hp-eks-admin -o my-cluster.yaml"),
])
def test_each_make_target_runs_the_venv_and_the_pinned_cli(target, runs):
    # GIVEN the target as the quickstart writes it / WHEN make prints what it would run (make -n)
    done = subprocess.run(["make", "-n", *shlex.split(target)], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    # THEN the command runs the venv's Python or the project's CDK CLI by path; the Makefile puts both first on the
    # PATH the CDK app runs under
    assert done.returncode == 0, done.stderr
    assert runs in [line.strip() for line in done.stdout.splitlines()]
    assert "export PATH := $(abspath $(BIN)):$(CURDIR)/node_modules/.bin:$(PATH)" in (REPO / "Makefile").read_text()


def test_the_steps_come_in_order():
    # GIVEN the quickstart / THEN the kubeconfig and the role's access entry come first, then init, the bootstrap,
    # doctor, and only then the deploy
    text = QUICKSTART.read_text()
    order = ["aws eks update-kubeconfig", "aws eks create-access-entry", "make init", "make bootstrap",
             "make doctor", "make deploy", "make destroy"]
    positions = [text.index(step) for step in order]
    assert positions == sorted(positions)


def test_the_trust_policy_the_quickstart_shows_is_one_doctor_accepts():
    # GIVEN the quickstart's kubectl-role trust policy / THEN it admits the account of hyperpod.yaml's env
    [policy] = [json.loads(block) for block in fenced(QUICKSTART, "json")]
    assert "arn:aws:iam::111122223333:root" in trusted_principals(policy)
    assert "--policy-document file://kubectl-trust.json" in QUICKSTART.read_text()


def test_troubleshooting_names_every_doctor_check():
    # GIVEN the doctor checks / THEN the troubleshooting table names each one (the dependency add-ons as one row), and
    # every check ID it names exists
    text = TROUBLESHOOTING.read_text()
    table = re.search(r"^## Doctor checks\n(.*?)^## ", text, flags=re.S | re.M).group(1)
    named = set(re.findall(r"^\| `([a-z0-9.-]+(?:\.<add-on>)?)` \|", table, flags=re.M))
    expected = {i for i in runner.CHECK_IDS if not i.startswith("operator.dependency.")} | {
        "operator.dependency.<add-on>"}
    assert named == expected
    mentioned = set(re.findall(r"doctor: `([a-z0-9.-]+)`", text))
    assert mentioned and mentioned <= set(runner.CHECK_IDS)


def test_troubleshooting_documents_the_exit_statuses_the_code_returns():
    # GIVEN the exit-status table of troubleshooting.md / THEN it has a row for each status doctor and init return,
    # and their --help texts give the same numbers
    from hyperpod_inference.ops import cli, init

    table = re.search(r"^\| exit status \| `doctor` \| `init` \|\n\|[-|]+\|\n((?:\|.*\n)+)", TROUBLESHOOTING.read_text(),
                      flags=re.M).group(1)
    documented = [int(row.split("|")[1]) for row in table.splitlines()]
    codes = sorted({runner.EXIT_OK, runner.EXIT_FAILED, runner.EXIT_USAGE, runner.EXIT_INCOMPLETE,
                    init.EXIT_WRITTEN, init.EXIT_NOT_WRITTEN, init.EXIT_USAGE, init.EXIT_UNREADABLE})
    assert documented == codes
    for help_text in (cli.DOCTOR_EXIT_STATUSES, cli.INIT_EXIT_STATUSES):
        assert re.findall(r"^  (\d)  ", help_text, flags=re.M) == [str(c) for c in codes]
    assert ", ".join(runner.REQUIRED_CHECKS) in cli.DOCTOR_EXIT_STATUSES
