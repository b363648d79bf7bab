"""Security scans of what the app synthesizes: checkov, IAM Resource "*", cdk-nag and cfn-lint.

Three configs: hyperpod.yaml (the default app, kubectl delivery, every feature on, so the kubectl provider nested stack
and the verification provider are in), tests/fixtures/files.yaml (files delivery, S3/HF/JumpStart models, per-pod
IAM) and hyperpod.yaml with `operator.install: chart` (the operator's own Deployment, RBAC and webhook objects, and
the ALB controller and KEDA as Helm releases). Each is synthesized once per session by the real CLI (conftest), and
that synth fails on any cdk-nag error. checkov and the IAM wildcard scan read all three; cdk-nag and cfn-lint the
first two (the chart mode's template is checked by the stack tests).

Accepted findings live in security/checkov-skips.yaml and security/iam-wildcard-allowlist.yaml. Every entry carries
its reason, and an entry that no longer matches anything fails the test as stale.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.template_lint import cfn_lint_errors

from .conftest import REPO

pytestmark = pytest.mark.e2e

CHECKOV = REPO / ".venv-checkov" / "bin" / "checkov"
CHECKOV_SKIPS = REPO / "security" / "checkov-skips.yaml"
IAM_ALLOWLIST = REPO / "security" / "iam-wildcard-allowlist.yaml"
CONFIGS = ("default", "files")


@pytest.fixture(scope="session")
def assemblies(synth_default: Path, synth_files: Path, synth_chart: Path) -> dict[str, Path]:
    return {"default": synth_default, "files": synth_files, "chart": synth_chart}


def test_the_chart_mode_scan_sees_the_operators_own_deployment(assemblies: dict[str, Path]) -> None:
    # GIVEN the chart-mode synth THEN its manifests hold the operator's controller Deployment and ClusterRole, so
    # checkov's kubernetes scan reads them (the add-on configs have neither)
    objects = [o for path in (assemblies["chart"] / "manifests").glob("*.yaml")
               for o in yaml.safe_load_all(path.read_text()) if o]
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("Deployment", "hyperpod-inference-operator-controller-manager") in names
    assert ("ClusterRole", "hyperpod-inference-operator-manager-role") in names


def templates(assembly: Path) -> list[Path]:
    found = sorted(assembly.glob("*.template.json"))
    assert found, f"no templates in {assembly}"
    return found


# ------------------------------------------------------------------------------------------------------- checkov
def run_checkov(directory: Path, framework: str) -> dict[str, Any]:
    if not CHECKOV.exists():
        pytest.fail(f"{CHECKOV.relative_to(REPO)} is missing: `make test` installs it (.venv-checkov)", pytrace=False)
    env = {**os.environ, "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "BC_SKIP_MAPPING": "TRUE"}
    proc = subprocess.run(
        [str(CHECKOV), "-d", str(directory), "--framework", framework, "-o", "json", "--compact",
         "--skip-download"],  # no network: no guideline or policy download, no version check
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"checkov ({framework}, {directory.name}) rc={proc.returncode}, no JSON report:\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}", pytrace=False)
    reports = report if isinstance(report, list) else [report]
    assert [r.get("check_type") for r in reports] == [framework], reports
    summary = reports[0]["summary"]
    assert summary["parsing_errors"] == 0 and summary["resource_count"] > 0, summary
    return reports[0]


@pytest.fixture(scope="session")
def checkov_failures(assemblies: dict[str, Path]) -> list[dict[str, str]]:
    """Every failed check, per config and framework (the CloudFormation scan includes nested templates)."""
    failures = []
    for config, assembly in assemblies.items():
        for framework, directory in (("cloudformation", assembly), ("kubernetes", assembly / "manifests")):
            report = run_checkov(directory, framework)
            if framework == "cloudformation":  # every template was scanned, nested ones too
                scanned = {Path(c["file_path"]).name for c in report["results"]["passed_checks"]
                           + report["results"]["failed_checks"]}
                assert scanned == {p.name for p in templates(assembly)}, scanned
            failures += [{"config": config, "framework": framework, "check": c["check_id"],
                          "resource": c["resource"], "file": Path(c["file_path"]).name, "name": c["check_name"]}
                         for c in report["results"]["failed_checks"]]
    return failures


def load_checkov_skips() -> list[dict[str, Any]]:
    data = yaml.safe_load(CHECKOV_SKIPS.read_text())
    entries = []
    for framework, items in data.items():
        assert framework in ("cloudformation", "kubernetes"), framework
        for item in items:
            assert set(item) == {"check", "resources", "reason"}, item
            assert item["reason"].strip() and item["resources"], item
            entries.append({**item, "framework": framework})
    return entries


def _skip_for(failure: dict[str, str], skips: list[dict[str, Any]]) -> tuple[int, str] | None:
    for i, skip in enumerate(skips):
        if skip["framework"] == failure["framework"] and skip["check"] == failure["check"]:
            for pattern in skip["resources"]:
                if fnmatch.fnmatchcase(failure["resource"], pattern):
                    return i, pattern
    return None


def test_checkov_fails_nothing_unlisted(checkov_failures: list[dict[str, str]]) -> None:
    skips = load_checkov_skips()
    unlisted = sorted({f"{f['framework']} {f['check']} {f['resource']} ({f['config']}: {f['file']}): {f['name']}"
                       for f in checkov_failures if _skip_for(f, skips) is None})
    assert not unlisted, "checkov findings not in security/checkov-skips.yaml (fix them):\n" + "\n".join(unlisted)


def test_checkov_skip_file_has_no_stale_entries(checkov_failures: list[dict[str, str]]) -> None:
    skips = load_checkov_skips()
    used = {_skip_for(f, skips) for f in checkov_failures} - {None}
    stale = [f"{s['framework']} {s['check']} {pattern}" for i, s in enumerate(skips) for pattern in s["resources"]
             if (i, pattern) not in used]
    assert not stale, "security/checkov-skips.yaml entries that no longer fail (remove them):\n" + "\n".join(stale)


# ------------------------------------------------------------------------------------------------- IAM Resource "*"
def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def wildcard_statements(assembly: Path) -> list[dict[str, Any]]:
    """Allow statements with Resource "*" (alone or in a list) in every identity policy of every template."""
    found = []
    for path in templates(assembly):
        resources = json.loads(path.read_text()).get("Resources", {})
        for logical_id, res in resources.items():
            props, kind = res.get("Properties", {}), res["Type"]
            documents = []
            if kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                documents.append((props.get("PolicyName") or props.get("ManagedPolicyName") or logical_id,
                                  props["PolicyDocument"]))
            if kind in ("AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"):
                documents += [(p["PolicyName"], p["PolicyDocument"]) for p in props.get("Policies", [])]
            for policy_name, document in documents:
                for statement in _as_list(document.get("Statement", [])):
                    if statement.get("Effect") == "Allow" and "*" in _as_list(statement.get("Resource")):
                        found.append({"template": path.name, "logical_id": logical_id, "policy_name": policy_name,
                                      "actions": [str(a) for a in _as_list(statement.get("Action", []))]})
    return found


def _allowed_by(statement: dict[str, Any], entry: dict[str, Any]) -> bool:
    names = [(entry.get("logical_id"), statement["logical_id"]), (entry.get("policy_name"), statement["policy_name"])]
    if not any(pattern and fnmatch.fnmatchcase(value, pattern) for pattern, value in names):
        return False
    return all(any(fnmatch.fnmatchcase(a, p) for p in entry["actions"]) for a in statement["actions"])


@pytest.fixture(scope="session")
def iam_wildcards(assemblies: dict[str, Path]) -> list[dict[str, Any]]:
    return [{**s, "config": c} for c, a in assemblies.items() for s in wildcard_statements(a)]


def load_iam_allowlist() -> list[dict[str, Any]]:
    entries = yaml.safe_load(IAM_ALLOWLIST.read_text())["entries"]
    for entry in entries:
        assert entry.get("logical_id") or entry.get("policy_name"), entry
        assert set(entry) <= {"logical_id", "policy_name", "actions", "reason"}, entry
        assert entry["actions"] and entry["reason"].strip(), entry
    return entries


def test_iam_resource_wildcards_are_all_allow_listed(iam_wildcards: list[dict[str, Any]]) -> None:
    entries = load_iam_allowlist()
    unlisted = [f"{s['config']}: {s['template']} {s['logical_id']} ({s['policy_name']}): {s['actions']}"
                for s in iam_wildcards if not any(_allowed_by(s, e) for e in entries)]
    assert not unlisted, 'IAM statements with Resource "*" not in security/iam-wildcard-allowlist.yaml:\n' + \
        "\n".join(unlisted)


def test_iam_allowlist_has_no_stale_entries(iam_wildcards: list[dict[str, Any]]) -> None:
    stale = []
    for entry in load_iam_allowlist():
        matched = [s for s in iam_wildcards if _allowed_by(s, entry)]
        if not matched:
            stale.append(f"{entry.get('logical_id') or entry.get('policy_name')}: matches no statement")
            continue
        actions = {a for s in matched for a in s["actions"]}
        stale += [f"{entry.get('logical_id') or entry.get('policy_name')}: action {p} is granted nowhere"
                  for p in entry["actions"] if not any(fnmatch.fnmatchcase(a, p) for a in actions)]
    assert not stale, "stale entries in security/iam-wildcard-allowlist.yaml (remove them):\n" + "\n".join(stale)


def test_wildcard_scan_sees_inline_and_nested_policies(assemblies: dict[str, Path]) -> None:
    """The scan reads every template (nested too), and a Resource "*" in a list or in a role's inline policy counts."""
    assert len(templates(assemblies["default"])) >= 2  # the kubectl provider is a nested stack
    probe = assemblies["default"].parent / "wildcard-probe"
    probe.mkdir(exist_ok=True)
    (probe / "Probe.template.json").write_text(json.dumps({"Resources": {
        "R": {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyName": "inline", "PolicyDocument": {
            "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": ["arn:aws:s3:::b/*", "*"]}]}}]}},
        "P": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {
            "Statement": [{"Effect": "Allow", "Action": ["kms:Decrypt"], "Resource": "*"},
                          {"Effect": "Deny", "Action": "*", "Resource": "*"}]}}},
    }}))
    assert [(s["logical_id"], s["policy_name"], s["actions"]) for s in wildcard_statements(probe)] == [
        ("R", "inline", ["s3:GetObject"]), ("P", "P", ["kms:Decrypt"])]


# ------------------------------------------------------------------------------------------------ cdk-nag, cfn-lint
@pytest.mark.parametrize("config", CONFIGS)
def test_cdk_nag_clean_under_the_cli(assemblies: dict[str, Path], config: str) -> None:
    # The synth fixture already required rc 0; the app writes manifests/ only when no nag rule failed.
    assembly = assemblies[config]
    report = json.loads((assembly / "validation-report.json").read_text())
    plugins = report.get("pluginReports", [])
    assert plugins and all(p.get("conclusion") == "success" for p in plugins), \
        [(p.get("pluginName"), p.get("conclusion")) for p in plugins]
    assert any("AwsSolutions" in json.dumps(p) for p in plugins)
    assert list((assembly / "manifests").glob("*.yaml"))


@pytest.mark.parametrize("config", CONFIGS)
def test_cfn_lint_has_no_errors(assemblies: dict[str, Path], config: str) -> None:
    assert cfn_lint_errors(templates(assemblies[config])) == []
