"""The default CDK app: config file -> one HyperPodInferenceStack -> cdk.out/ (template + manifests/).

The config file is named by the context key ``config`` (default ``hyperpod.yaml``): ``cdk synth -c config=other.yaml``.
A config error prints one readable message per problem and exits 1 before anything is written
(``HYPERPOD_TRACEBACK=1`` shows the Python traceback instead). When a security check (cdk-nag) fails, no manifests
are written either.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from .config import ConfigError, load_config
from .delivery import template_size_problems
from .stack import HyperPodInferenceStack


def validation_failed(assembly_dir: str) -> bool:
    """True when a validation plugin (cdk-nag) reported a failure for this synth."""
    report = Path(assembly_dir) / "validation-report.json"
    if not report.exists():
        return False
    data = json.loads(report.read_text())
    return any(r.get("conclusion") == "failure" for r in data.get("pluginReports", []))


def build(app: cdk.App, config_path: str, *, stack_name: str = "HyperPodInference",
          nag: bool = True) -> HyperPodInferenceStack:
    """Load the config and add the stack (and the cdk-nag AwsSolutions checks) to ``app``."""
    config = load_config(config_path)
    if nag:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return HyperPodInferenceStack(app, stack_name, config=config)


def builtin_validation_requested() -> bool:
    """aws-cdk-lib's built-in CloudFormation validator costs most of a synth (a WASM engine) and repeats what
    cfn-lint checks in this project's tests, so the app turns it off unless ``-c cfnValidation=true``."""
    context = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")
    return str(context.get("cfnValidation", "false")).lower() == "true"


def main() -> int:
    app = cdk.App(builtin_cloud_formation_validation=builtin_validation_requested())
    config_path = app.node.try_get_context("config") or "hyperpod.yaml"
    stack_name = app.node.try_get_context("stackName") or "HyperPodInference"
    try:
        stack = build(app, config_path, stack_name=stack_name)
        assembly = app.synth()
    except ConfigError as err:
        if os.environ.get("HYPERPOD_TRACEBACK"):
            raise
        print(f"config error:\n{err}", file=sys.stderr)
        return 1
    except ValueError as err:  # a construct's prop check: not the config's words, so not called a config error
        if os.environ.get("HYPERPOD_TRACEBACK"):
            raise
        print(f"error:\n{err}", file=sys.stderr)
        return 1
    if validation_failed(assembly.directory):
        print("security checks failed (see validation-report.json): manifests not written", file=sys.stderr)
        return 1
    too_big = template_size_problems(assembly.directory)
    if too_big:
        print("size limits exceeded: manifests not written\n" + "\n".join(too_big), file=sys.stderr)
        return 1
    stack.write_manifests(assembly.directory)
    return 0
