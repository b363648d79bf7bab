"""``specOverrides`` checked against the chosen ``operator.version``: paths in no known version refused with the
nearest field, later operators' fields refused with the version that has them, ``specOverridesUnchecked`` lets them
through (warned)."""

from __future__ import annotations

import pytest
import yaml

from hyperpod_inference.config import ConfigError, parse_config
from hyperpod_inference.facts import production as prod_facts
from tests.config.test_production_config import config, jumpstart
from tests.k8s_validation import require_crds


def problems(data) -> dict[str, str]:
    try:
        parse_config(data)
    except ConfigError as err:
        return dict(err.problems)
    return {}


def test_a_typo_is_refused_with_the_nearest_known_field():
    # GIVEN the typo on the default v3.3 add-on WHEN validated THEN refused, did you mean tolerations
    found = problems(config(specOverrides={"tolerationz": [{"key": "a", "operator": "Exists"}]}))
    assert "did you mean tolerations?" in found["endpoints[0].specOverrides.tolerationz"]


LATER = [
    ({"tolerations": [{"key": "a", "operator": "Exists"}]}, "tolerations", "v3.7"),
    ({"metricsSidecarResources": {"limits": {"memory": "1Gi"}}}, "metricsSidecarResources.limits.memory", "v3.4"),
    ({"lmcache": {"mode": "MultiProcess"}}, "lmcache.mode", "v3.7"),
]


@pytest.mark.parametrize(("patch", "path", "version"), LATER)
def test_a_later_operators_field_is_refused_naming_the_version_that_has_it(patch, path, version):
    found = problems(config(specOverrides=patch))
    message = found[f"endpoints[0].specOverrides.{path}"]
    assert f"needs operator.version {version} or later (have v3.3" in message
    assert f"comes with operator {version}" in message


@pytest.mark.parametrize(("patch", "path", "version"), LATER)
def test_a_later_operators_field_is_allowed_from_the_version_that_adds_it(patch, path, version):
    # GIVEN operator.version the field's own version WHEN the override sets it THEN accepted unchecked-free
    assert problems(config(specOverrides=patch, version=version)) == {}


def test_lmcache_mode_under_the_modelled_kv_cache_spec_is_version_checked_not_refused():
    # GIVEN the v3.7 LMCache mode, whose depth is not published, under kvCacheSpec (which the library models)
    patch = {"kvCacheSpec": {"lmcache": {"mode": "InProcess"}}}
    # THEN before v3.7 it names v3.7, and from v3.7 on it passes (the library writes no lmcache key)
    assert "needs operator.version v3.7" in problems(config(specOverrides=patch))[
        "endpoints[0].specOverrides.kvCacheSpec.lmcache.mode"]
    assert problems(config(specOverrides=patch, version="v3.7")) == {}


@pytest.mark.parametrize(("patch", "key"), [
    ({"inferenceGateway": {"enabled": True}}, "use inferenceGateway"),
    ({"kubernetes": {"podTemplateAnnotations": {"a": "b"}}}, "use podTemplateAnnotations"),
])
def test_the_v3_6_fields_with_a_known_path_are_typed_so_overrides_of_them_are_refused(patch, key):
    found = problems(config(specOverrides=patch, version="v3.7"))
    assert any(key in m for m in found.values()), found


def test_each_later_field_names_its_source():
    assert all(f.source and f.version in ("v3.4", "v3.5", "v3.6", "v3.7") for f in prod_facts.LATER_FIELDS)


def test_unchecked_lets_later_fields_through_but_library_written_paths_stay_refused():
    # GIVEN specOverridesUnchecked WHEN a later field is overridden THEN accepted (and warned elsewhere)
    assert problems(config(specOverrides={"tolerations": []}, specOverridesUnchecked=True)) == {}
    # WHEN a path the library writes is overridden THEN still refused, naming the config key
    found = problems(config(specOverrides={"replicas": 3}, specOverridesUnchecked=True))
    assert "use replicas" in found["endpoints[0].specOverrides.replicas"]


def test_jumpstart_overrides_are_checked_against_its_own_fields():
    found = problems(jumpstart(specOverrides={"servr": {"x": 1}}))
    assert "JumpStartModel CRD" in found["endpoints[0].specOverrides.servr.x"]


@pytest.mark.parametrize("version", ["v3.2", "v3.3"])
@pytest.mark.parametrize(("kind", "plural"), [("InferenceEndpointConfig", "inferenceendpointconfigs"),
                                              ("JumpStartModel", "jumpstartmodels")])
def test_the_library_models_every_spec_field_of_the_versions_it_validates(version, kind, plural):
    # GIVEN each validated version's CRD WHEN every spec field is walked THEN each lies under a modelled path: the
    # rule "not modelled = in no validated version" holds
    root = require_crds()
    doc = yaml.safe_load((root / version / f"inference.sagemaker.aws.amazon.com_{plural}.yaml").read_text())
    (v1,) = [v for v in doc["spec"]["versions"] if v["name"] == "v1"]
    spec = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    modelled = [tuple(p.split(".")) for p in prod_facts.MODELLED_SPEC_PATHS[kind]]

    def unmodelled(props: dict, path: tuple[str, ...]) -> list[str]:
        out = []
        for key, sub in props.items():
            here = (*path, key)
            if any(here[:len(m)] == m for m in modelled):
                continue
            children = sub.get("properties") or (sub.get("items") or {}).get("properties")
            out += unmodelled(children, here) if children else [".".join(here)]
        return out

    assert unmodelled(spec, ()) == []
