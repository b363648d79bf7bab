"""The operator facts agree with the operator's own CRDs (reference data; skipped with a message without them)."""

from __future__ import annotations

import functools

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


@functools.cache
def _fields(version: str, kind: str) -> frozenset[str]:
    """The spec field paths of one kind's CRD at one version (parsed once: the CRD files are large)."""
    path = require_crds() / version / f"inference.sagemaker.aws.amazon.com_{kind}.yaml"
    crd = yaml.safe_load(path.read_text())
    v1 = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return frozenset(_spec_paths(v1["schema"]["openAPIV3Schema"]["properties"]["spec"], "spec"))


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


def test_every_name_for_the_release_facts_reads_the_one_release_table():
    # GIVEN the release table in facts/operator.py and the names other modules use for its facts
    from typing import get_args

    from hyperpod_inference.facts import operator as op
    from hyperpod_inference.facts import production

    # THEN the version Literal is the table's versions, and the table has no other name
    assert get_args(op.OperatorVersion) == op.OPERATOR_VERSIONS == tuple(r.version for r in op.RELEASES)
    assert not {"ADDON_VERSIONS", "NEWER_ADDON_VERSIONS", "FIELD_SINCE", "version_has"} & set(vars(production))
    # AND a newer add-on version is newer than every validated one and names a later operator version
    for addon_version, operator_version in op.NEWER_ADDON_VERSIONS.items():
        assert all(op.Version(addon_version) > r.addon_version for r in op.RELEASES)
        assert op.Version(operator_version) > op.OPERATOR_VERSIONS[-1]
