"""Synthesize a config in-process (the same code path as app.py) and read back template, manifests, annotations."""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import aws_cdk as cdk
import yaml

from hyperpod_inference.app import build
from hyperpod_inference.facts import gitops
from hyperpod_inference.stack import HyperPodInferenceStack

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = REPO / "hyperpod.yaml"
FILES_CONFIG = REPO / "tests" / "fixtures" / "files.yaml"


@dataclass
class Synth:
    stack: HyperPodInferenceStack
    outdir: Path
    template: dict[str, Any]
    manifests: dict[str, list[dict[str, Any]]]  # review files, by chart name

    @property
    def template_file(self) -> str:
        """The stack's template file name in ``outdir``."""
        return f"{self.stack.artifact_id}.template.json"

    def resources(self, rtype: str | None = None) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if rtype is None or v["Type"] == rtype}

    def objects(self) -> list[dict[str, Any]]:
        return [o for objs in self.manifests.values() for o in objs]

    def custom_resources(self) -> list[dict[str, Any]]:
        return [o for o in self.objects() if o["apiVersion"].startswith("inference.sagemaker.aws.amazon.com/")]

    def warnings(self) -> list[str]:
        out = []
        for _path, entries in self.metadata().items():
            for e in entries:
                if e.get("type") == "aws:cdk:warning":
                    out.append(json.dumps(e.get("data")))
        return out

    def metadata(self) -> dict[str, list[dict]]:
        artifact = json.loads((self.outdir / "manifest.json").read_text())["artifacts"][self.stack.artifact_id]
        if "additionalMetadataFile" in artifact:
            return json.loads((self.outdir / artifact["additionalMetadataFile"]).read_text())
        return artifact.get("metadata", {})


@functools.cache
def gen_config() -> ModuleType:
    """``benchmarks/gen_config.py`` (configs with N endpoints of a benchmark profile), loaded as a module."""
    spec = importlib.util.spec_from_file_location("gen_config", REPO / "benchmarks" / "gen_config.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def with_endpoint_changes(config: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``config`` whose first endpoint has no weight cache and the given keys changed (None deletes one)."""
    data = copy.deepcopy(config)
    ep = data["endpoints"][0]
    ep["weightCache"] = {"mode": "off"}
    for key, value in changes.items():
        if value is None:
            ep.pop(key, None)
        else:
            ep[key] = value
    return data


def load_yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def write_config(tmp: Path, data: dict[str, Any], name: str = "config.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def synth_config(config: Path | dict[str, Any], outdir: Path, *, nag: bool = True) -> Synth:
    """Build and synthesize like app.py does (with the cdk-nag plugin: a finding makes app.synth() raise)."""
    outdir.mkdir(parents=True, exist_ok=True)
    if isinstance(config, dict):
        config = write_config(outdir, copy.deepcopy(config), "input-config.yaml")
    app = cdk.App(outdir=str(outdir))
    stack = build(app, str(config), nag=nag)
    assembly = app.synth()
    stack.write_manifests(assembly.directory)
    template = json.loads((outdir / f"{stack.artifact_id}.template.json").read_text())
    return Synth(stack, outdir, template, manifests_by_chart(outdir / "manifests"))


def manifests_by_chart(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The objects of a manifests folder by chart: ``<chart>.yaml`` each, or (files delivery, a folder with a
    kustomization) the files ``<tier>-<chart>.yaml`` of each chart, in the order they apply."""
    files = {p.name: list(yaml.safe_load_all(p.read_text())) for p in sorted(folder.glob("*.yaml"))}
    if not (folder / gitops.KUSTOMIZATION_FILE).exists():
        return {Path(name).stem: objs for name, objs in files.items()}
    charts: dict[str, list[dict[str, Any]]] = {}
    for name, objs in files.items():
        charts.setdefault(Path(name).stem.split("-", 1)[1], []).extend(objs)
    return charts


def _cache_key(config: Path | dict[str, Any], nag: bool) -> str:
    """What makes two synths the same: the config's canonical JSON (for a file, also its path, which relative paths
    in it are resolved against) and the options."""
    if isinstance(config, dict):
        source: dict[str, Any] = {"config": config}
    else:
        path = Path(config).resolve()
        source = {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return json.dumps({**source, "nag": nag}, sort_keys=True, default=str)


def _fingerprint(root: Path) -> list[tuple[str, int, int]]:
    """Every file of ``root`` with its size and modification time: what a write into the folder changes."""
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in root.rglob("*") if p.is_file())


class SynthCache:
    """One synth per config and options per test session (per xdist worker), shared by every test file that synths
    exactly that. Each caller gets its own deep copy of the template and manifests, so no test changes what the next
    one reads; the assembly folder is shared, and a test that wrote into it fails the next caller (its files are
    checked against the fingerprint taken after the synth). The stack object is shared too: a test that adds to its
    construct tree synthesizes its own."""

    def __init__(self, tmp_path_factory: Any) -> None:
        self._tmp = tmp_path_factory
        self._synths: dict[str, Synth] = {}
        self._fingerprints: dict[str, list[tuple[str, int, int]]] = {}

    def __call__(self, config: Path | dict[str, Any], *, nag: bool = True) -> Synth:
        key = _cache_key(config, nag)
        if key not in self._synths:
            outdir = self._tmp.mktemp("shared-synth")
            self._synths[key] = synth_config(config, outdir, nag=nag)
            self._fingerprints[key] = _fingerprint(outdir)
        synth = self._synths[key]
        assert _fingerprint(synth.outdir) == self._fingerprints[key], f"a test wrote into the shared {synth.outdir}"
        return dataclasses.replace(synth, template=copy.deepcopy(synth.template),
                                   manifests=copy.deepcopy(synth.manifests))
