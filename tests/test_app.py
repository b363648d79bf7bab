"""app.py switches: the built-in CloudFormation validator is opt-in (cfn-lint covers it in tests)."""

from __future__ import annotations

import json

from hyperpod_inference.app import builtin_validation_requested, validation_failed


def test_builtin_validator_is_off_unless_the_context_asks(monkeypatch):
    monkeypatch.delenv("CDK_CONTEXT_JSON", raising=False)
    assert builtin_validation_requested() is False
    monkeypatch.setenv("CDK_CONTEXT_JSON", json.dumps({"cfnValidation": "true"}))
    assert builtin_validation_requested() is True
    monkeypatch.setenv("CDK_CONTEXT_JSON", json.dumps({"cfnValidation": "false", "config": "x.yaml"}))
    assert builtin_validation_requested() is False


def test_validation_failed_reads_the_plugin_report(tmp_path):
    assert validation_failed(str(tmp_path)) is False
    report = tmp_path / "validation-report.json"
    report.write_text(json.dumps({"pluginReports": [{"pluginName": "AwsSolutions", "conclusion": "success"}]}))
    assert validation_failed(str(tmp_path)) is False
    report.write_text(json.dumps({"pluginReports": [{"pluginName": "AwsSolutions", "conclusion": "failure"}]}))
    assert validation_failed(str(tmp_path)) is True
