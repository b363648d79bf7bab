"""The in-process cfn-lint helper the template tests use fails where ``cfn-lint --non-zero-exit-code error`` fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.template_lint import cfn_lint_errors

#: An S3 bucket with a property the resource schema does not have (E3002).
UNKNOWN_PROPERTY = {"Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": {"NoSuchProperty": 1}}}}
#: A DependsOn that a GetAtt already enforces: a warning (W3005), as CDK writes some.
WARNING_ONLY = {"Resources": {
    "A": {"Type": "AWS::SQS::Queue"},
    "B": {"Type": "AWS::SQS::Queue", "DependsOn": "A", "Properties": {"RedrivePolicy": {
        "deadLetterTargetArn": {"Fn::GetAtt": ["A", "Arn"]}, "maxReceiveCount": 3}}},
}}


def _write(tmp_path: Path, name: str, template: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(template))
    return path


def test_an_unknown_property_is_an_error_naming_the_rule_and_the_file(tmp_path: Path) -> None:
    # GIVEN a clean-but-warned template and one with an unknown property
    warned = _write(tmp_path, "warned.template.json", WARNING_ONLY)
    broken = _write(tmp_path, "broken.template.json", UNKNOWN_PROPERTY)
    # WHEN both are linted in one call
    errors = cfn_lint_errors([warned, broken])
    # THEN exactly the unknown property is reported, on the broken file
    assert len(errors) == 1
    assert errors[0].startswith("E3002 ") and "NoSuchProperty" in errors[0] and str(broken) in errors[0]


def test_warnings_alone_do_not_fail(tmp_path: Path) -> None:
    assert cfn_lint_errors([_write(tmp_path, "warned.template.json", WARNING_ONLY)]) == []


def test_the_helper_reports_the_errors_the_command_line_fails_on(tmp_path: Path) -> None:
    # GIVEN the same two templates
    files = [_write(tmp_path, "warned.template.json", WARNING_ONLY),
             _write(tmp_path, "broken.template.json", UNKNOWN_PROPERTY)]
    # WHEN the command line checks them with the error threshold
    proc = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), "--format", "parseable",
                           "--non-zero-exit-code", "error", *map(str, files)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    # THEN it fails, and its error rules (the warning aside) are the helper's
    assert proc.returncode == 2, proc.stdout + proc.stderr
    cli_errors = sorted(line.split(":")[5] for line in proc.stdout.splitlines() if line.split(":")[5].startswith("E"))
    assert cli_errors == sorted(e.split()[0] for e in cfn_lint_errors(files)) == ["E3002"]
