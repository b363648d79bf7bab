"""Several clusters from one app: ``-c config=a.yaml,b.yaml`` builds one stack per file, named by ``stackName``
(default ``HyperPodInference-<eksClusterName>``), cdk-nag and cfn-lint clean, no physical name shared, the review
manifests under ``manifests/<stack>/``; the rules across files are config errors naming the file and path."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml

from hyperpod_inference import app as app_module
from hyperpod_inference.config import ConfigError
from hyperpod_inference.config.loader import load_configs
from tests.golden.inventory import template_inventory
from tests.k8s_validation import require_crds, validate_all
from tests.synth_helpers import REPO, gen_config
from tests.template_lint import cfn_lint_errors

GEN = gen_config()


def cluster_config(cluster: str, region: str, *, prefix: str, stack_name: str | None = None) -> dict[str, Any]:
    """The ``verify`` profile (SageMaker endpoint names, domains, capture) for cluster ``cluster`` in ``region``,
    endpoint and domain names starting with ``prefix``."""
    text = json.dumps(GEN.config(2, "verify")).replace(GEN.REGION, region).replace("my-hp-eks", cluster)
    text = text.replace("abcd1234efgh", hashlib.sha256(cluster.encode()).hexdigest()[:12])
    cfg = json.loads(text)
    for ep in cfg["endpoints"]:
        ep["name"] = f"{prefix}-{ep['name']}"
        ep["sagemakerEndpointName"] = ep["name"]
        ep["domainName"] = f"{ep['name']}.example.com"
    if stack_name:
        cfg["stackName"] = stack_name
    return cfg


def write(folder: Path, name: str, data: dict[str, Any]) -> str:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def run_app(folder: Path, configs: list[str]) -> Path:
    """``main()`` as ``cdk synth -c config=<a>,<b>`` runs it (cdk.json's context, cdk-nag on)."""
    context = json.loads((REPO / "cdk.json").read_text())["context"]
    context["config"] = ",".join(configs)
    out = folder / "cdk.out"
    assert app_module.main(cdk.App(outdir=str(out), context=context)) == 0
    return out


SCENARIOS = {
    "two-regions": [("a.yaml", ("hp-west", "us-west-2", "w", None)), ("b.yaml", ("hp-east", "us-east-1", "e", None))],
    "one-region": [("a.yaml", ("hp-one", "us-west-2", "one", None)),
                   ("b.yaml", ("hp-two", "us-west-2", "two", "InferenceTwo"))],
}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def assembly(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    folder = tmp_path_factory.mktemp(request.param)
    paths = [write(folder, f, cluster_config(c, r, prefix=p, stack_name=s)) for f, (c, r, p, s) in
             SCENARIOS[request.param]]
    return request.param, run_app(folder, paths)


def stack_names(scenario: str) -> list[str]:
    return ["InferenceTwo" if s == "InferenceTwo" else f"HyperPodInference-{c}"
            for _, (c, _r, _p, s) in SCENARIOS[scenario]]


def test_one_stack_per_file_named_by_stack_name_or_cluster(assembly: tuple[str, Path]) -> None:
    # GIVEN two config files  WHEN the app synthesizes them  THEN one stack each, named by stackName or cluster
    scenario, out = assembly
    artifacts = json.loads((out / "manifest.json").read_text())["artifacts"]
    stacks = sorted(k for k, v in artifacts.items() if v["type"] == "aws:cloudformation:stack")
    assert stacks == sorted(stack_names(scenario))
    # cdk-nag ran over both and passed
    report = json.loads((out / "validation-report.json").read_text())
    assert {p["pluginName"]: p["conclusion"] for p in report["pluginReports"]}["AwsSolutions"] == "success"


def test_review_manifests_per_stack_validate_strictly(assembly: tuple[str, Path]) -> None:
    # THEN each stack's review manifests are under manifests/<stack>/ and its custom resources validate strictly
    require_crds()
    scenario, out = assembly
    for name in stack_names(scenario):
        files = sorted((out / "manifests" / name).glob("*.yaml"))
        assert files, name
        objs = [o for f in files for o in yaml.safe_load_all(f.read_text()) if o]
        assert any(o["kind"] == "InferenceEndpointConfig" for o in objs)
        assert validate_all(objs, "v3.3") == []
    assert not list((out / "manifests").glob("*.yaml"))


def _names_a_resource_of_its_stack(name: str) -> bool:
    """A name written as an intrinsic that refers to a resource of its own template (a log group named after its
    function, ``/aws/lambda/<Ref Handler…>``): it resolves to a different value in each stack."""
    if not name.startswith("{"):
        return False
    refs = re.findall(r'"Ref": "([^"]+)"|"Fn::GetAtt": \["([^"]+)"', json.dumps(json.loads(name)))
    return any(not (ref or att).startswith("AWS::") for ref, att in refs)


def test_no_physical_name_shared_between_the_stacks(assembly: tuple[str, Path]) -> None:
    # THEN no name the library chooses (buckets, roles, keys, add-ons aside) appears in both stacks; an Athena named
    # query's name is unique only within its workgroup, whose name carries the stack; a name made from a resource of
    # its own stack differs by construction
    scenario, out = assembly
    first, second = ({json.dumps(n, sort_keys=True) for entry in template_inventory(out, f"{s}.template.json").values()
                      if entry["type"] != "AWS::Athena::NamedQuery"
                      for prop, n in entry.get("names", {}).items()
                      if prop != "AddonName" and not _names_a_resource_of_its_stack(n)}
                     for s in stack_names(scenario))
    assert first and second
    assert first & second == set()


def test_cfn_lint_has_no_errors(assembly: tuple[str, Path]) -> None:
    _, out = assembly
    assert cfn_lint_errors(sorted(out.glob("*.template.json"))) == []


# ---------------------------------------------------------------------------------------------- rules across files
def test_rules_across_files_are_config_errors_naming_file_and_path(tmp_path: Path) -> None:
    # GIVEN two files in one account and region with the same cluster name (so the same default stack and a second
    # operator install there), a shared SageMaker endpoint name and a shared domain name
    a = cluster_config("hp", "us-west-2", prefix="x")
    b = cluster_config("hp", "us-west-2", prefix="y")
    b["endpoints"][0]["sagemakerEndpointName"] = a["endpoints"][0]["sagemakerEndpointName"]
    b["endpoints"][1]["domainName"] = a["endpoints"][1]["domainName"]
    pa, pb = write(tmp_path, "a.yaml", a), write(tmp_path, "b.yaml", b)
    # WHEN loaded together  THEN one error lists every problem with the second file and the path
    with pytest.raises(ConfigError) as err:
        load_configs([pa, pb])
    found = list(zip(err.value.sources, err.value.problems, strict=True))
    paths = [(src, path) for src, (path, _msg) in found]
    assert paths == [(pb, "stackName"), (pb, "operator.install"), (pb, "endpoints[0].sagemakerEndpointName"),
                     (pb, "endpoints[1].domainName")]
    assert f"is also the stack of {pa}" in found[0][1][1]
    assert f"cluster hp (111122223333 / us-west-2), which {pa} installs it on already" in found[1][1][1]
    assert "operator.install: existing and operator.dependencies: existing" in found[1][1][1]
    assert f"also in {pa}" in found[2][1][1] and "111122223333 / us-west-2" in found[2][1][1]
    assert f"{pb}: endpoints[1].domainName: x-e1.example.com is also in {pa}" in str(err.value)


def test_same_sagemaker_endpoint_name_in_two_regions_is_allowed(tmp_path: Path) -> None:
    # GIVEN the same SageMaker endpoint names in two regions (different zones' domain names)
    a = cluster_config("hp-w", "us-west-2", prefix="x")
    b = cluster_config("hp-e", "us-east-1", prefix="x")
    for ep in b["endpoints"]:
        ep["domainName"] = ep["domainName"].replace("example.com", "east.example.com")
    b["domain"]["zoneName"] = "east.example.com"
    # THEN both load, with the default names of several stacks
    loaded = load_configs([write(tmp_path, "a.yaml", a), write(tmp_path, "b.yaml", b)])
    assert [name for name, _ in loaded] == ["HyperPodInference-hp-w", "HyperPodInference-hp-e"]


def test_one_file_keeps_the_stack_name_hyperpod_inference(tmp_path: Path) -> None:
    (name, _), = load_configs([write(tmp_path, "a.yaml", cluster_config("hp", "us-west-2", prefix="x"))])
    assert name == "HyperPodInference"


def test_a_problem_in_each_file_is_reported_with_its_file(tmp_path: Path) -> None:
    a = cluster_config("hp-a", "us-west-2", prefix="x")
    b = cluster_config("hp-b", "us-west-2", prefix="y")
    a["endpoints"][0]["replicas"] = 0
    b["endpoints"][1]["stackGroup"] = "g"
    pa, pb = write(tmp_path, "a.yaml", a), write(tmp_path, "b.yaml", b)
    with pytest.raises(ConfigError) as err:
        load_configs([pa, pb])
    assert [(s, p) for s, (p, _) in zip(err.value.sources, err.value.problems, strict=True)] == [
        (pa, "endpoints[0].replicas"), (pb, "endpoints[1].stackGroup")]


def test_context_stack_name_with_several_files_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN two files and -c stackName=Other  WHEN the app runs  THEN it exits 1 saying each file needs a stackName
    paths = [write(tmp_path, "a.yaml", cluster_config("hp-a", "us-west-2", prefix="x")),
             write(tmp_path, "b.yaml", cluster_config("hp-b", "us-west-2", prefix="y"))]
    app = cdk.App(outdir=str(tmp_path / "out"), context={"config": ",".join(paths), "stackName": "Other"})
    assert app_module.main(app) == 1
    assert "with several, give each file a stackName" in capsys.readouterr().err


def test_a_files_stack_name_wins_over_the_context_default(tmp_path: Path) -> None:
    # GIVEN one file with stackName  WHEN built with cdk.json's stackName default  THEN the file's name is used
    path = write(tmp_path, "a.yaml", cluster_config("hp-a", "us-west-2", prefix="x", stack_name="Mine"))
    stack = app_module.build(cdk.App(outdir=str(tmp_path / "out")), path, stack_name="HyperPodInference", nag=False)
    assert stack.stack_name == "Mine"
