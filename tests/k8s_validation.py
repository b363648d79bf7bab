"""Validation of synthesized Kubernetes objects without an API server.

* Built-in kinds: every error of ``kubernetes-validate``'s strict schemas (not only the first one).
* Custom resources: the operator CRD's ``openAPIV3Schema`` with unknown fields rejected everywhere
  ``x-kubernetes-preserve-unknown-fields`` is not set, the way the API server prunes/refuses them.

The CRDs are reference data outside the project: ``../shared/reference/hyperpod-operator/crds/<version>/``
relative to the repository, or the folder named by ``HYPERPOD_CRD_DIR`` (holding ``v3.2/``, ``v3.3/``).
"""

from __future__ import annotations

import copy
import functools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CRD_ROOT = REPO_ROOT.parent / "shared" / "reference" / "hyperpod-operator" / "crds"
OPERATOR_GROUP = "inference.sagemaker.aws.amazon.com"


def crd_root() -> Path | None:
    env = os.environ.get("HYPERPOD_CRD_DIR")
    root = Path(env) if env else DEFAULT_CRD_ROOT
    return root if root.is_dir() else None


def require_crds() -> Path:
    """The CRD folder, or skip the calling test with a message naming HYPERPOD_CRD_DIR (never in CI)."""
    root = crd_root()
    if root is None:
        if os.environ.get("CI"):
            pytest.fail(f"operator CRDs not found at {DEFAULT_CRD_ROOT}; set HYPERPOD_CRD_DIR")
        pytest.skip(f"operator CRDs not found at {DEFAULT_CRD_ROOT}; set HYPERPOD_CRD_DIR to a folder holding v3.2/, v3.3/")
    return root


@functools.cache
def _crd_schemas(root: str, version: str) -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> strict openAPIV3Schema, for one operator version."""
    out: dict[tuple[str, str], dict] = {}
    folder = Path(root) / version
    if not folder.is_dir():
        raise FileNotFoundError(f"no CRDs for operator {version} in {folder}")
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for ver in spec["versions"]:
                schema = _strict(copy.deepcopy(ver["schema"]["openAPIV3Schema"]))
                out[(f"{spec['group']}/{ver['name']}", spec["names"]["kind"])] = schema
    return out


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields") \
                and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for key, value in list(schema.items()):
            if key in ("properties", "patternProperties", "definitions"):
                for name, sub in value.items():
                    value[name] = _strict(sub)
            elif isinstance(value, (dict, list)):
                schema[key] = _strict(value)
    elif isinstance(schema, list):
        return [_strict(s) for s in schema]
    return schema


def crd_errors(obj: dict, version: str) -> list[str]:
    """Every schema error of one custom resource against the operator CRDs of ``version`` ("v3.2", "v3.3")."""
    root = require_crds()
    schemas = _crd_schemas(str(root), version)
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key not in schemas:
        return [f"{key[1]} {key[0]}: no CRD in operator {version}"]
    body = {k: v for k, v in obj.items() if k not in ("metadata",)}
    validator = jsonschema.Draft7Validator(schemas[key])
    errors = [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(body)]
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        errors.append("metadata.name: missing")
    return sorted(errors)


@functools.cache
def _k8s_validator(kind: str, api_version: str, k8s_version: str):
    """A Draft 2020-12 validator over kubernetes-validate's strict schema for one kind (None: no such schema)."""
    import re

    import kubernetes_validate.utils as kvu
    from referencing import Registry, Resource

    version = [v for v in kvu.all_versions() if kvu.major_minor(v) <= kvu.major_minor(k8s_version)][-1]
    schema_dir = f"v{version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kvu.schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group_version}.json", k8s_version)
    except FileNotFoundError:
        return None
    defs = kvu.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", k8s_version)
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def k8s_errors(obj: dict, k8s_version: str = "1.28") -> list[str]:
    """Every error (not only the first) of a built-in object against kubernetes-validate's strict schema."""
    validator = _k8s_validator(str(obj.get("kind")), str(obj.get("apiVersion")), k8s_version)
    if validator is None:
        return [f"no schema for {obj.get('apiVersion')}/{obj.get('kind')} in Kubernetes {k8s_version}"]
    errors = [f"{'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(obj)]
    if not (obj.get("metadata") or {}).get("name"):
        errors.append("metadata.name: missing")
    return sorted(errors)


def is_custom_resource(obj: dict) -> bool:
    return str(obj.get("apiVersion", "")).split("/")[0] == OPERATOR_GROUP


def validate_all(objs: list[dict], operator_version: str, k8s_version: str = "1.28",
                 extra_crd_groups: tuple[str, ...] = ("external-secrets.io", "cert-manager.io")) -> list[str]:
    """Errors of every object: operator CRs strictly against the CRDs, built-ins with kubernetes-validate.
    Objects of other CRD groups (External Secrets, cert-manager) have no schema here and are only shape-checked."""
    errors: list[str] = []
    for i, obj in enumerate(objs):
        ident = f"[{i}] {obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
        group = str(obj.get("apiVersion", "")).split("/")[0]
        if is_custom_resource(obj):
            errs = crd_errors(obj, operator_version)
        elif group in extra_crd_groups:
            errs = [] if (obj.get("metadata") or {}).get("name") and "spec" in obj else ["missing metadata.name or spec"]
        else:
            errs = k8s_errors(obj, k8s_version)
        errors.extend(f"{ident}: {e}" for e in errs)
    return errors


def dump(objs: list[dict]) -> str:
    return json.dumps(objs, indent=1, default=str)
