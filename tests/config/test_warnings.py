"""Warnings a CI can use: one registered function per ID, ``validate`` prints them and ``--strict`` fails on them,
``acknowledgeWarnings`` acknowledges one with its reason. Also: every problem of a file in one run, and "did you
mean" on unknown keys at every level."""

from __future__ import annotations

import copy

import pytest
import yaml

from hyperpod_inference.__main__ import main as cli_main
from hyperpod_inference.config import ConfigError, HyperPodConfig, parse_config
from hyperpod_inference.config.warnings import WARNING_IDS, all_warnings, config_warnings, endpoint_warnings
from tests.config.test_config import DEFAULT, REPO, with_changes

UNPINNED = with_changes((("endpoints", 0, "model", "huggingface", "commitSHA"), None))


def _write(tmp_path, data) -> str:
    path = tmp_path / "hyperpod.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


# --- the registry ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("wid", "data"), [
    ("unpinned", UNPINNED),
    ("tokenInRuntime", with_changes((("endpoints", 0, "model", "huggingface", "prefetch"), False),
                                    (("endpoints", 0, "weightCache"), {"mode": "off"}))),
    ("fullCapture", with_changes((("endpoints", 0, "dataCapture"), {"modelPod": {"enabled": True}}))),
])
def test_the_warnings_once_inline_in_the_construct_come_from_the_registry(wid, data):
    # GIVEN a config with the unwise setting WHEN its endpoint's warnings are listed (no construct, no jsii) THEN
    # the ID is there
    assert WARNING_IDS[wid] == "endpoint"
    assert wid in [w.id for w in endpoint_warnings(parse_config(data).endpoints[0])]


def test_chart_install_with_files_delivery_warns_from_the_registry():
    data = with_changes((("operator",), {"install": "chart", "crdSource": "crds"}),
                        (("manifests",), {"delivery": "files"}), (("domain",), None),
                        (("endpoints", 0, "domainName"), None), (("endpoints", 0, "verify"), None))
    assert "chartFilesDependencies" in [w.id for w in config_warnings(parse_config(data))]


def test_an_id_has_exactly_one_rule():
    # GIVEN the registry's tables with an ID listed again, as an endpoint warning or as a config warning
    from hyperpod_inference.config.warnings import CONFIG_WARNINGS, ENDPOINT_WARNINGS, warning_ids

    again = [("unpinned", ENDPOINT_WARNINGS[0][1])]
    # WHEN the IDs are collected THEN the second listing is refused
    with pytest.raises(ValueError, match="warning unpinned is registered twice"):
        warning_ids([*ENDPOINT_WARNINGS, *again], CONFIG_WARNINGS)
    with pytest.raises(ValueError, match="warning unpinned is registered twice"):
        warning_ids(ENDPOINT_WARNINGS, [*CONFIG_WARNINGS, *again])


# --- acknowledgments --------------------------------------------------------------------------------------------
def test_an_acknowledged_warning_carries_its_reason_and_others_stay_warnings():
    data = copy.deepcopy(UNPINNED) | {"acknowledgeWarnings": [
        {"id": "unpinned", "endpoint": "inference/qwen-chat", "reason": "tracking main on purpose in staging"}]}
    (finding,) = [f for f in all_warnings(parse_config(data)) if f.warning.id == "unpinned"]
    assert finding.reason == "tracking main on purpose in staging"
    assert finding.path == "endpoints[0].model.huggingface.commitSHA"
    # an acknowledgment for another endpoint does not cover this one
    data["acknowledgeWarnings"][0]["endpoint"] = "inference/other"
    (finding,) = [f for f in all_warnings(parse_config(data)) if f.warning.id == "unpinned"]
    assert finding.reason is None


@pytest.mark.parametrize(("ack", "path", "words"), [
    ({"id": "unpinned"}, "acknowledgeWarnings[0].reason", "Field required"),
    ({"id": "unpinned", "reason": " "}, "acknowledgeWarnings[0].reason", ""),
    ({"id": "unpined", "reason": "x"}, "acknowledgeWarnings[0].id", "did you mean unpinned?"),
    ({"id": "apexDomain", "endpoint": "inference/qwen-chat", "reason": "x"}, "acknowledgeWarnings[0].endpoint",
     "about the whole config"),
])
def test_a_bad_acknowledgment_is_refused(ack, path, words):
    with pytest.raises(ConfigError) as err:
        parse_config(copy.deepcopy(DEFAULT) | {"acknowledgeWarnings": [ack]})
    found = dict(err.value.problems)
    assert path in found and words in found[path], found


# --- validate ---------------------------------------------------------------------------------------------------
def test_validate_prints_warnings_and_strict_fails_on_them(tmp_path, capsys):
    path = _write(tmp_path, UNPINNED)
    # WHEN validated THEN valid, with the warning printed by ID and path
    assert cli_main(["validate", path]) == 0
    err = capsys.readouterr().err
    assert "warning unpinned: endpoints[0].model.huggingface.commitSHA" in err
    # WHEN validated with --strict THEN it fails
    assert cli_main(["validate", "--strict", path]) == 1
    # WHEN the warning is acknowledged THEN --strict passes and the reason is shown
    path = _write(tmp_path, UNPINNED | {"acknowledgeWarnings": [{"id": "unpinned", "reason": "staging"}]})
    assert cli_main(["validate", "--strict", path]) == 0
    assert "acknowledged unpinned: endpoints[0].model.huggingface.commitSHA: staging" in capsys.readouterr().out


def test_the_default_config_and_the_docs_examples_are_strict_valid(capsys):
    # GIVEN hyperpod.yaml WHEN validated --strict THEN it passes
    assert cli_main(["validate", "--strict", str(REPO / "hyperpod.yaml")]) == 0
    # GIVEN every docs example of top-level keys that makes a valid config with the default one WHEN its warnings
    # are listed THEN none is left unacknowledged (so cdk synth --strict passes on it)
    judged = 0
    for page in sorted((REPO / "docs").glob("*.md")):
        for block in page.read_text().split("```yaml\n")[1:]:
            example = yaml.safe_load(block.split("```", 1)[0])
            if not isinstance(example, dict) or not set(example) <= {f.alias or n for n, f in HyperPodConfig.model_fields.items()}:
                continue
            try:
                config = parse_config(copy.deepcopy(DEFAULT) | example, page.name)
            except ConfigError:
                continue  # a fragment (an endpoint's few keys), not a config
            judged += 1
            open_ = [(f.warning.id, f.path) for f in all_warnings(config) if f.reason is None]
            assert not open_, (page.name, open_)
    assert judged >= 3


# --- every problem at once; did you mean -------------------------------------------------------------------------
def test_field_errors_and_cross_section_errors_are_reported_in_one_run():
    # GIVEN a field error (capture.retentionDays 0) and, in other sections, cross-section errors
    data = with_changes((("capture", "retentionDays"), 0),
                        (("namespaces",), ["inference", "inference"]),
                        (("endpoints", 0, "domainName"), "chat.other.org"))
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    found = dict(err.value.problems)
    # THEN the field error and the cross-section errors come together
    assert "capture.retentionDays" in found
    assert "namespaces[1]" in found and "duplicate namespace" in found["namespaces[1]"]
    assert "must be inside domain.zoneName" in found["endpoints[0].domainName"]


def test_an_invalid_section_is_neither_present_nor_absent_for_the_cross_rules():
    # GIVEN an invalid capture section WHEN an endpoint captures THEN no "capture section is absent" on top
    data = with_changes((("capture", "retentionDays"), 0))
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert not [m for _, m in err.value.problems if "section is absent" in m]


@pytest.mark.parametrize(("path", "key", "guess"), [
    (("endpoints", 0), "autoscalingSpec", "autoScalingSpec"),
    (("endpoints", 0, "model", "huggingface"), "commitSha", "commitSHA"),
    (("endpoints", 0, "dataCapture", "modelPod"), "batchsize", "batchSize"),
    (("cluster",), "kubernetesVerison", "kubernetesVersion"),
    ((), "acknowledgeWarning", "acknowledgeWarnings"),
])
def test_an_unknown_key_gets_the_nearest_field_at_every_level(path, key, guess):
    data = copy.deepcopy(DEFAULT)
    node = data
    for p in path:
        node = node[p]
    node[key] = {}
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    where = ".".join(f"[{p}]" if isinstance(p, int) else p for p in (*path, key)).replace(".[", "[")
    assert f"did you mean {guess}?" in dict(err.value.problems)[where]


def test_every_warning_id_is_listed_in_the_safe_defaults_page():
    page = (REPO / "docs" / "safe-defaults.md").read_text()
    table = page.split("## Warning IDs", 1)[1]
    assert [wid for wid in WARNING_IDS if f"| `{wid}` |" not in table] == []


def test_the_registry_alone_lists_every_warning_each_documented_and_every_rule_registered():
    # GIVEN a fresh interpreter in which config/'s package imports nothing of its own (no loader, no models): only
    # the registry module and what it imports itself
    import json
    import subprocess
    import sys

    code = ("import importlib.util, inspect, json, sys, types\n"
            "spec = importlib.util.find_spec('hyperpod_inference.config')\n"
            "package = types.ModuleType(spec.name)\n"
            "package.__path__ = list(spec.submodule_search_locations)\n"
            "sys.modules[spec.name] = package\n"
            "from hyperpod_inference.config import warnings as registry\n"
            "rules = sys.modules['hyperpod_inference.config.warning_rules']\n"
            "print(json.dumps({'ids': registry.WARNING_IDS,\n"
            "                  'listed': [r.__name__ for _, r in (*registry.ENDPOINT_WARNINGS, *registry.CONFIG_WARNINGS)],\n"
            "                  'rules': [n for n, f in vars(rules).items() if inspect.isfunction(f)\n"
            "                            and f.__module__ == rules.__name__],\n"
            "                  'loaded': 'hyperpod_inference.config.file' in sys.modules}))\n")

    # WHEN it imports the registry
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)

    # THEN the registry knows every warning, as the whole package does, without the file's model being imported
    assert found["ids"] == WARNING_IDS and not found["loaded"]
    # AND every warning ID is documented in docs/safe-defaults.md's table, and every ID there is a warning
    table = (REPO / "docs" / "safe-defaults.md").read_text().split("## Warning IDs", 1)[1]
    documented = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert documented == set(found["ids"])
    # AND every rule function is listed once: none is written and forgotten
    assert sorted(found["listed"]) == sorted(found["rules"])


def test_the_models_themselves_suggest_the_nearest_field():
    # GIVEN the Python API's own call (Endpoint.model_validate, as docs/cdk-app.md shows) WHEN a key is mistyped at
    # two depths THEN pydantic's error carries "did you mean" at each
    from pydantic import ValidationError

    from hyperpod_inference.config.models import Endpoint

    with pytest.raises(ValidationError) as err:
        Endpoint.model_validate({"name": "a", "namespace": "b", "instanceType": "ml.g5.8xlarge", "autoscalingSpec": {},
                                 "model": {"s3": {"bucket": "my-models", "prefx": "a/"}}})
    found = {tuple(e["loc"]): e["msg"] for e in err.value.errors()}
    assert found[("autoscalingSpec",)] == "unknown key; did you mean autoScalingSpec?"
    assert found[("model", "s3", "prefx")] == "unknown key; did you mean prefix?"
