"""The default CDK app: config file -> one HyperPodInferenceStack -> cdk.out/ (template + manifests/).

The config file is named by the context key ``config`` (default ``hyperpod.yaml``): ``cdk synth -c config=other.yaml``.
Several files, comma-separated (``-c config=a.yaml,b.yaml``), give one stack each (named by each file's ``stackName``,
default ``HyperPodInference-<eksClusterName>``), their review manifests under ``cdk.out/manifests/<stack>/``.
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

from .assembly.limits import template_size_problems
from .config import ConfigError, load_config
from .config.cross_rules import cluster_import_problems
from .config.loader import DEFAULT_STACK_NAME, load_configs
from .stack import HyperPodInferenceStack


def validation_failed(assembly_dir: str) -> bool:
    """True when a validation plugin (cdk-nag) reported a failure for this synth."""
    report = Path(assembly_dir) / "validation-report.json"
    if not report.exists():
        return False
    data = json.loads(report.read_text())
    return any(r.get("conclusion") == "failure" for r in data.get("pluginReports", []))


def build(app: cdk.App, config_path: str, *, stack_name: str | None = None,
          nag: bool = True) -> HyperPodInferenceStack:
    """Load the config and add the stack (and the cdk-nag AwsSolutions checks) to ``app``. The stack is named by the
    config's ``stackName``, else ``stack_name`` (the context key ``stackName``), else ``HyperPodInference``."""
    config = load_config(config_path)
    problems = cluster_import_problems(config)  # the stack imports the cluster by name: named with the file
    if problems:
        raise ConfigError(config_path, problems)
    if nag:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return HyperPodInferenceStack(app, config.stack_name or stack_name or DEFAULT_STACK_NAME, config=config)


def config_paths(value: str) -> list[str]:
    """The ``config`` context value: one path, or several separated by commas."""
    return [p.strip() for p in value.split(",") if p.strip()]


def build_all(app: cdk.App, paths: list[str], *, nag: bool = True) -> list[HyperPodInferenceStack]:
    """One stack per config file (``load_configs``: names and the rules across files checked first, every problem
    raised at once), and the cdk-nag checks once for the app."""
    configs = load_configs(paths)
    if nag:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return [HyperPodInferenceStack(app, name, config=config) for name, config in configs]


def write_all_manifests(stacks: list[HyperPodInferenceStack], assembly_dir: str) -> None:
    """Review copies: ``manifests/`` for one stack, ``manifests/<stack>/`` for several; the Grafana dashboards in
    ``dashboards/<stack>.json``."""
    for stack in stacks:
        stack.inference.write_dashboards(assembly_dir)
    if len(stacks) == 1:
        stacks[0].write_manifests(assembly_dir)
        return
    for stack in stacks:
        stack.inference.delivery.write(stack, assembly_dir, folder=os.path.join("manifests", stack.stack_name))


def builtin_validation_requested() -> bool:
    """aws-cdk-lib's built-in CloudFormation validator costs most of a synth (a WASM engine) and repeats what
    cfn-lint checks in this project's tests, so the app turns it off unless ``-c cfnValidation=true``."""
    context = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")
    return str(context.get("cfnValidation", "false")).lower() == "true"


def main(app: cdk.App | None = None) -> int:
    """Synthesize the app the CLI runs (``app``: one given instead, e.g. with its own outdir and context)."""
    app = app or cdk.App(builtin_cloud_formation_validation=builtin_validation_requested())
    paths = config_paths(str(app.node.try_get_context("config") or "hyperpod.yaml"))
    stack_name = app.node.try_get_context("stackName")
    try:
        if len(paths) == 1:
            stacks = [build(app, paths[0], stack_name=stack_name)]
        elif stack_name and stack_name != DEFAULT_STACK_NAME:  # cdk.json sets the default
            raise ValueError("-c stackName names the stack of one config file; with several, give each file a "
                             "stackName")
        else:
            stacks = build_all(app, paths)
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
    labels = {f: label for stack in stacks for f, label in stack.inference.template_labels().items()}
    too_big = template_size_problems(assembly.directory, labels)
    if too_big:
        print("size limits exceeded: manifests not written\n" + "\n".join(too_big), file=sys.stderr)
        return 1
    write_all_manifests(stacks, assembly.directory)
    return 0
