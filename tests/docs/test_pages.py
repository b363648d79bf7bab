"""The pages themselves: sizes, runnable snippets, valid configs, links that resolve, and the generated parts of
docs/quickstart.md (the resource inventory, the Kubernetes versions) equal to what the code synthesizes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from hyperpod_inference.config import parse_config
from tests.docs.helpers import PAGES, REPO, fenced, tool
from tests.k8s_validation import is_custom_resource, k8s_errors
from tests.synth_helpers import DEFAULT_CONFIG

inventory = tool("resource_inventory")
QUICKSTART = REPO / "docs" / "quickstart.md"
# README.md and docs/cdk-app.md have their own snippet tests (tests/composition)
SNIPPET_PAGES = [p for p in PAGES if p.name not in ("README.md", "cdk-app.md")]
SNIPPETS = [(p, i) for p in SNIPPET_PAGES for i, _ in enumerate(fenced(p, "python"))]
CONFIGS = [(p, block) for p in PAGES for block in fenced(p, "yaml")
           if re.match(r"(#[^\n]*\n)*apiVersion: hyperpod-inference/v1", block)]


def test_readme_and_benchmarks_stay_short() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= 300
    assert len((REPO / "BENCHMARKS.md").read_text().splitlines()) <= 150


@pytest.mark.parametrize(("page", "index"), SNIPPETS, ids=[f"{p.name}[{i}]" for p, i in SNIPPETS])
def test_python_snippet_runs(page: Path, index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    exec(compile(fenced(page, "python")[index], f"{page.name} python block {index}", "exec"), {})  # noqa: S102


def test_config_blocks_are_found() -> None:
    assert any(p.name == "README.md" for p, _ in CONFIGS)


@pytest.mark.parametrize(("page", "block"), CONFIGS, ids=[p.name for p, _ in CONFIGS])
def test_config_block_is_a_valid_config(page: Path, block: str) -> None:
    # GIVEN a YAML block that starts a config file WHEN validated as the app does THEN it is accepted
    parse_config(yaml.safe_load(block), page.name)


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


LINKS = [(p, target) for p in PAGES for target in re.findall(r"\]\(([^)\s]+)\)", p.read_text())
         if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize(("page", "target"), LINKS, ids=[f"{p.name}->{t}" for p, t in LINKS])
def test_relative_link_resolves(page: Path, target: str) -> None:
    file, _, anchor = target.partition("#")
    dest = (page.parent / file).resolve() if file else page
    assert dest.exists(), f"{page.name}: {target} does not exist"
    if anchor and dest.suffix == ".md":
        assert anchor in _anchors(dest), f"{page.name}: no heading #{anchor} in {dest.name}"


# -------------------------------------------------------------------------------- the generated part of quickstart
@pytest.fixture(scope="module")
def default_synth(shared_synth) -> Any:
    return shared_synth(DEFAULT_CONFIG, nag=False)


@pytest.fixture(scope="module")
def make_synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default config synthesized as `make synth` does it (cdk.json's feature flags), by the inventory tool."""
    return inventory.synth_default(tmp_path_factory.mktemp("inventory"))


def test_resource_inventory_matches_the_default_template(make_synth: Path) -> None:
    # GIVEN the default config's synth with cdk.json's context WHEN its inventory is rendered THEN the quickstart page
    # shows exactly it: the counts and every kept resource by name
    page = QUICKSTART.read_text()
    assert inventory.render_page(page, make_synth) == page, "re-run: python tools/resource_inventory.py"


def test_the_inventory_names_the_two_log_groups_destroy_keeps(make_synth: Path) -> None:
    # GIVEN the synth as make synth runs it THEN aws-cdk-lib's kubectl provider keeps its handler's and its provider
    # framework's log groups (cdk.json's @aws-cdk/aws-lambda:useCdkManagedLogGroup), and the page names them
    kept = [row for row in inventory.kept_rows(make_synth) if row[0] == "AWS::Logs::LogGroup"]
    assert len(kept) == 2 and all(name.startswith("/aws/lambda/<") for _, name, _, _ in kept)
    assert all(f"`{name}`" in QUICKSTART.read_text() for _, name, _, _ in kept)


def test_inventory_counts_retained_resources_from_the_template(tmp_path: Path) -> None:
    # GIVEN a template with a retained bucket and a deleted role THEN each is counted under its fate
    (tmp_path / "S.template.json").write_text('{"Resources": {"B": {"Type": "AWS::S3::Bucket", "DeletionPolicy": '
                                              '"Retain"}, "R": {"Type": "AWS::IAM::Role"}}}')
    assert inventory.rows(tmp_path, "S") == [("AWS::IAM::Role", 1, "deleted"),
                                             ("AWS::S3::Bucket", 1, "kept (DeletionPolicy Retain)")]
    assert inventory.kept_rows(tmp_path, "S") == [("AWS::S3::Bucket", "B", "the stack", "kept (DeletionPolicy Retain)")]


def supported_kubernetes_versions() -> list[str]:
    """The default kubectl layer's Kubernetes minor (aws-cdk.lambda-layer-kubectl-vNN, the one the app uses without
    cluster.kubernetesVersion) and one either side (kubectl's skew policy)."""
    from hyperpod_inference.facts.kubectl import DEFAULT_LAYER

    return list(DEFAULT_LAYER.serves)


def test_quickstart_names_the_versions_the_kubectl_layer_supports() -> None:
    low, mid, high = supported_kubernetes_versions()
    page = QUICKSTART.read_text()
    assert f"{low}, {mid} or {high}" in page and f"kubectl {mid}" in page


@pytest.mark.parametrize("k8s_version", supported_kubernetes_versions())
def test_default_synth_objects_validate_on_each_supported_version(default_synth: Any, k8s_version: str) -> None:
    # GIVEN every built-in object of the default synth WHEN validated strictly for that Kubernetes version THEN clean
    objs = [o for o in default_synth.objects() if not is_custom_resource(o)
            and not str(o.get("apiVersion", "")).startswith(("external-secrets.io", "cert-manager.io"))]
    assert objs
    assert [e for o in objs for e in k8s_errors(o, k8s_version)] == []
