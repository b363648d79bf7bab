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


def test_a_construct_prop_error_is_not_printed_as_a_config_error(monkeypatch, capsys):
    # GIVEN a construct that refuses its props (a ValueError, not a ConfigError)
    from hyperpod_inference import app

    def refuse(*_args, **_kwargs):
        raise ValueError("DataCaptureStorage Default/DataCapture: invalid props: bucket and bucket_name: give one")

    monkeypatch.setattr(app, "build", refuse)
    monkeypatch.delenv("HYPERPOD_TRACEBACK", raising=False)
    # WHEN the app runs THEN it fails with the construct's words, never called a config error
    assert app.main() == 1
    err = capsys.readouterr().err
    assert err.startswith("error:\n") and "config error" not in err and "bucket and bucket_name" in err



def test_the_app_names_the_file_and_each_cluster_field_a_partial_config_lacks(tmp_path):
    # GIVEN a config file whose cluster section has only hyperpodClusterArn (it loads)
    import aws_cdk as cdk
    import pytest

    from hyperpod_inference.app import build
    from hyperpod_inference.config import ConfigError

    path = tmp_path / "partial.yaml"
    path.write_text("apiVersion: hyperpod-inference/v1\ncluster:\n  hyperpodClusterArn: "
                    "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcd1234efgh\n")
    # WHEN the app builds its stack from it THEN refused before any construct, naming the file and each field
    with pytest.raises(ConfigError) as err:
        build(cdk.App(), str(path), nag=False)
    assert err.value.source == str(path)
    assert {p for p, _ in err.value.problems} == {"env", "cluster.eksClusterName", "cluster.kubectlRoleArn",
                                                  "cluster.oidcProviderArn", "cluster.vpcId"}
