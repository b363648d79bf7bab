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
    # (only the versions whose CRD text is public: the later ones' fields are sourced from docs and PR text)
    for kind in KINDS:
        versions = operator.VALIDATED_OPERATOR_VERSIONS
        for older, newer in zip(versions, versions[1:], strict=False):
            added = _fields(newer, kind) - _fields(older, kind)
            # THEN the fields added are exactly those FIELDS_SINCE dates to the newer version
            assert added == {f for f, since in operator.FIELDS_SINCE.items() if since == newer}, kind
        # AND every listed field of a validated version exists from its version on, and not before
        for field in [f for f, since in operator.FIELDS_SINCE.items() if since in versions]:
            for version in versions:
                assert (field in _fields(version, kind)) is operator.has_field(version, field), (kind, field, version)


def test_every_validated_release_has_crds_in_the_reference_folder():
    for version in operator.VALIDATED_OPERATOR_VERSIONS:
        assert (require_crds() / version).is_dir()
    # AND the releases without public CRD text have none there (they would be validated otherwise)
    for version in set(operator.OPERATOR_VERSIONS) - set(operator.VALIDATED_OPERATOR_VERSIONS):
        assert not (require_crds() / version).exists(), version


def test_every_name_for_the_release_facts_reads_the_one_release_table():
    # GIVEN the release table in facts/operator.py and the names other modules use for its facts
    from typing import get_args

    from hyperpod_inference.facts import operator as op
    from hyperpod_inference.facts import production

    # THEN the version Literal is the table's versions, and the table has no other name
    assert get_args(op.OperatorVersion) == op.OPERATOR_VERSIONS == tuple(r.version for r in op.RELEASES)
    assert not {"ADDON_VERSIONS", "NEWER_ADDON_VERSIONS", "FIELD_SINCE", "version_has"} & set(vars(production))
    # AND another add-on version seen is newer than every validated release's, is no release's own, and names a
    # release the table has
    for addon_version, operator_version in op.NEWER_ADDON_VERSIONS.items():
        assert all(op.Version(addon_version) > op.release(v).addon_version for v in op.VALIDATED_OPERATOR_VERSIONS)
        assert addon_version not in op.OPERATOR_ADDON_VERSIONS.values()
        assert operator_version in op.OPERATOR_VERSIONS


# (operator version, add-on, chart, appVersion, image tag): what the issue and the sources give for each release
RELEASE_ROWS = [
    ("v3.2", "v1.3.0-eksbuild.1", "2.2.2", "3.2", "v3.2"),
    ("v3.3", "v1.4.0-eksbuild.1", "2.3.0", "3.3", "v3.3"),
    ("v3.4", "v1.5.0-eksbuild.1", "2.4.0", "3.4", "v3.4"),
    ("v3.5", None, "2.5.0", "3.5", "v3.5"),
    ("v3.6", "v2.0.0-eksbuild.2", "2.6.0", "3.6", "v3.6"),
    ("v3.7", "v2.1.0-eksbuild.1", "2.7.0", "3.7", "v3.7"),
]


def test_each_release_installs_the_add_on_and_chart_the_table_says():
    # GIVEN the release table WHEN each version is looked up THEN its add-on, chart and image are the sourced ones
    assert operator.OPERATOR_VERSIONS == tuple(row[0] for row in RELEASE_ROWS)
    for version, addon, chart, app, tag in RELEASE_ROWS:
        r = operator.release(version)
        assert (r.addon_version, r.chart_version, r.app_version, r.manager_image_tag) == (addon, chart, app, tag)
        assert operator.OPERATOR_ADDON_VERSIONS.get(version) == addon
        assert operator.CHART_VERSIONS[version] == (chart, app)
    # AND v3.5 has no add-on; the validated targets stay v3.2 and v3.3, and the default stays v3.3
    assert "v3.5" not in operator.OPERATOR_ADDON_VERSIONS
    assert operator.VALIDATED_OPERATOR_VERSIONS == ("v3.2", "v3.3")
    assert operator.DEFAULT_OPERATOR_VERSION == "v3.3"


def test_each_release_without_public_crd_text_says_what_is_sourced_and_what_is_inferred():
    for version in set(operator.OPERATOR_VERSIONS) - set(operator.VALIDATED_OPERATOR_VERSIONS):
        r = operator.release(version)
        assert "PR #" in r.sources and "inferred" in r.sources, version


def test_the_v3_6_fields_are_dated_to_v3_6():
    for field in ("spec.inferenceGateway", "spec.kubernetes.podTemplateAnnotations"):
        assert not operator.has_field("v3.5", field) and operator.has_field("v3.6", field)
