"""Review copies of the Kubernetes manifests: deploy-time values become readable placeholders.

With ``manifests.delivery: kubectl`` CloudFormation resolves CDK tokens inside the manifests; the copy written under
``<outdir>/manifests/`` shows each such value as ``<LogicalId.Attribute>`` (or ``<LogicalId>`` for a ``Ref``),
never as ``${Token[...]}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from aws_cdk import Stack

from ..constructs.lazy import is_unresolved
from ..constructs.nag import render_resolved
from ..facts import gitops


def with_placeholders(stack: Stack, obj: Any) -> Any:
    """Deep copy of ``obj`` with every CDK token resolved against ``stack`` and rendered as a placeholder."""
    if isinstance(obj, dict):
        return {k: with_placeholders(stack, v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [with_placeholders(stack, v) for v in obj]
    if isinstance(obj, str) and is_unresolved(obj):
        return render_resolved(stack.resolve(obj))
    return obj


#: libyaml's emitter when PyYAML has it (several times faster on a fleet's hundreds of files), else PyYAML's own.
_SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _ReviewDumper(_SafeDumper):  # type: ignore[misc, valid-type]
    """Multi-line strings (the agent's code in its ConfigMap) as literal blocks, readable in review."""


def _str(dumper: Any, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReviewDumper.add_representer(str, _str)


def _dump(objs: list[dict]) -> str:
    return yaml.dump_all(objs, Dumper=_ReviewDumper, sort_keys=False, default_flow_style=False, width=120)


def write_manifest_files(folder: str | Path, documents: dict[str, list[dict]]) -> list[Path]:
    """One multi-document YAML file per chart: ``<folder>/<name>.yaml``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, objs in documents.items():
        path = folder / f"{name}.yaml"
        path.write_text(_dump(objs))
        written.append(path)
    return written


def gitops_files(documents: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """File name -> objects, in the order they apply (``facts.gitops``): one file per chart and tier,
    ``<tier>-<chart>.yaml``, the objects in the chart's order."""
    files: dict[str, list[dict]] = {}
    for name, objs in documents.items():
        for tier in gitops.TIERS:
            of_tier = [o for o in objs if gitops.tier_of(o) is tier]
            if of_tier:
                files[gitops.file_name(tier, name)] = of_tier
    return dict(sorted(files.items()))


def write_gitops_files(folder: str | Path, documents: dict[str, list[dict]]) -> list[Path]:
    """``manifests.delivery: files``: :func:`gitops_files` and the folder's kustomization listing them in that order.
    YAML files of an earlier synth that this one does not write are removed, so ``kubectl apply -f <folder>``
    applies exactly what the kustomization lists."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = gitops_files(documents)
    for stale in folder.glob("*.yaml"):
        if stale.name not in files:
            stale.unlink()
    written = []
    for name, objs in files.items():
        path = folder / name
        path.write_text(_dump(objs))
        written.append(path)
    kustomization = folder / gitops.KUSTOMIZATION_FILE
    kustomization.write_text(yaml.safe_dump(gitops.kustomization(list(files)), sort_keys=False))
    return [*written, kustomization]
