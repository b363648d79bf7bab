"""The operator facts agree with the operator's own CRDs (reference data; skipped with a message without them)."""

from __future__ import annotations

import yaml

from hyperpod_inference.facts import operator
from tests.k8s_validation import require_crds

KINDS = ("inferenceendpointconfigs", "jumpstartmodels")


def _spec_paths(schema: dict, prefix: str) -> set[str]:
    out: set[str] = set()
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{name}"
        out |= {path} | _spec_paths(sub, path)
    return out


def _fields(version: str, kind: str) -> set[str]:
    path = require_crds() / version / f"inference.sagemaker.aws.amazon.com_{kind}.yaml"
    crd = yaml.safe_load(path.read_text())
    v1 = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return _spec_paths(v1["schema"]["openAPIV3Schema"]["properties"]["spec"], "spec")


def test_fields_since_lists_exactly_the_crd_fields_each_version_adds():
    # GIVEN the CRDs of each supported version / WHEN a version's fields are compared with the one before
    for kind in KINDS:
        versions = operator.OPERATOR_VERSIONS
        for older, newer in zip(versions, versions[1:], strict=False):
            added = _fields(newer, kind) - _fields(older, kind)
            # THEN the fields added are exactly those FIELDS_SINCE dates to the newer version
            assert added == {f for f, since in operator.FIELDS_SINCE.items() if since == newer}, kind
        # AND every listed field exists from its version on, and not before
        for field in operator.FIELDS_SINCE:
            for version in versions:
                assert (field in _fields(version, kind)) is operator.has_field(version, field), (kind, field, version)


def test_every_release_has_crds_in_the_reference_folder():
    for version in operator.OPERATOR_VERSIONS:
        assert (require_crds() / version).is_dir()
