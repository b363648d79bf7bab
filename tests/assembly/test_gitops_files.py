"""manifests.delivery: files applies in one pass on an empty cluster, whichever tool applies the folder: kubectl
apply -f (file names), kubectl apply -k (its kustomization and kustomize's sort), Argo CD (sync waves) and Flux
(staged apply); the namespaces it creates are never pruned by Argo CD or Flux."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hyperpod_inference.facts import gitops
from tests import gitops_apply
from tests.synth_helpers import DEFAULT_CONFIG, FILES_CONFIG, load_yaml, synth_config


def _apps_namespace(gitops_tool: str) -> dict:
    """The files fixture with its first namespace renamed ``apps`` (sorts before ``namespace-``)."""
    data = load_yaml(FILES_CONFIG)
    data["namespaces"] = ["apps" if n == "inference" else n for n in data["namespaces"]]
    for ep in data["endpoints"]:
        ep["namespace"] = "apps" if ep["namespace"] == "inference" else ep["namespace"]
    data["manifests"] = {"delivery": "files", "gitops": gitops_tool}
    return data


def _operator_chart(gitops_tool: str) -> dict:
    """The files fixture with the operator as a chart: its namespace and CRDs are in the folder too."""
    from tests.k8s_validation import require_crds

    data = load_yaml(FILES_CONFIG)
    data["operator"] = {"install": "chart", "version": "v3.3", "dependencies": "existing",
                        "crdSource": str(require_crds() / "v3.3")}
    data["manifests"] = {"delivery": "files", "gitops": gitops_tool}
    return data


CASES = {"inference, gitops none": lambda: FILES_CONFIG, "apps, gitops argocd": lambda: _apps_namespace("argocd"),
         "operator chart, gitops flux": lambda: _operator_chart("flux")}


@pytest.fixture(scope="module", params=list(CASES))
def folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # GIVEN a files-delivery config WHEN synthesized THEN its manifests folder is what a GitOps tool reads
    out = tmp_path_factory.mktemp("gitops")
    synth_config(CASES[request.param](), out, nag=False)
    return out / "manifests"


@pytest.mark.parametrize("tool", gitops_apply.TOOLS)
def test_every_object_follows_its_namespace_and_crd_in_the_order_each_tool_applies(folder: Path, tool: str) -> None:
    order = gitops_apply.tool_order(folder, gitops.KUSTOMIZATION_FILE, tool)
    # THEN the tool applies every object, and none before its namespace, its CRD or the Role it binds
    assert len(order) == len(gitops_apply.kubectl_apply_f(folder)) > 0
    assert gitops_apply.order_problems(order) == []


def test_the_kustomization_lists_every_file_in_name_order(folder: Path) -> None:
    listed = yaml.safe_load((folder / gitops.KUSTOMIZATION_FILE).read_text())
    files = sorted(p.name for p in folder.glob("*.yaml"))
    # THEN it lists exactly the YAML files, in the order kubectl apply -f reads them, each of one tier
    assert listed["apiVersion"] == "kustomize.config.k8s.io/v1beta1" and listed["kind"] == "Kustomization"
    assert listed["resources"] == files
    for name in files:
        tiers = {gitops.tier_of(o).index for o in yaml.safe_load_all((folder / name).read_text())}
        assert tiers == {int(name.split("-", 1)[0])}, name
    # AND kubectl apply -f reads objects only (the kustomization has no .yaml extension)
    assert not [o for o in gitops_apply.kubectl_apply_f(folder) if o["kind"] == "Kustomization"]


def test_tiers_never_decrease_in_file_name_order(folder: Path) -> None:
    tiers = [gitops.tier_of(o).index for o in gitops_apply.kubectl_apply_f(folder)]
    assert tiers == sorted(tiers) and tiers[0] == 0


def test_namespaces_the_folder_creates_are_never_pruned(folder: Path) -> None:
    namespaces = [o for o in gitops_apply.kubectl_apply_f(folder) if o["kind"] == "Namespace"]
    assert namespaces
    for ns in namespaces:
        annotations = ns["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/sync-options"] == "Prune=false", ns["metadata"]["name"]
        assert annotations["kustomize.toolkit.fluxcd.io/prune"] == "disabled", ns["metadata"]["name"]


def test_sync_waves_are_the_tiers_with_argocd_only(folder: Path) -> None:
    objs = gitops_apply.kubectl_apply_f(folder)
    waves = [(o["metadata"].get("annotations") or {}).get(gitops.ARGOCD_SYNC_WAVE) for o in objs]
    if any(waves):  # the argocd case
        assert waves == [str(gitops.tier_of(o).index) for o in objs]
    else:
        assert all(w is None for w in waves)


# ------------------------------------------------------------------------------------------------ what it replaces
def test_the_order_check_finds_the_namespace_file_that_sorts_last(tmp_path: Path) -> None:
    # GIVEN the layout of earlier releases: one file per chart, named by the chart (namespace-inference.yaml sorts
    # after inference-qwen-chat.yaml)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "inference"}}
    cr = {"apiVersion": "inference.sagemaker.aws.amazon.com/v1", "kind": "InferenceEndpointConfig",
          "metadata": {"name": "qwen-chat", "namespace": "inference"}}
    (tmp_path / "namespace-inference.yaml").write_text(yaml.safe_dump(ns))
    (tmp_path / "inference-qwen-chat.yaml").write_text(yaml.safe_dump(cr))
    # WHEN applied in kubectl's order THEN the custom resource comes before its namespace
    assert gitops_apply.order_problems(gitops_apply.kubectl_apply_f(tmp_path)) == [
        "InferenceEndpointConfig/inference/qwen-chat before its namespace (inference is applied later)"]
    # AND kustomize's sort, Argo CD and Flux would have put the namespace first
    for order in (gitops_apply.kustomize_legacy([cr, ns]), gitops_apply.argocd_sync([cr, ns]),
                  gitops_apply.flux_staged([cr, ns])):
        assert order == [ns, cr]


def test_argocd_moves_a_crd_before_its_first_custom_resource() -> None:
    # GIVEN a CRD in wave 1 and a custom resource of its kind in wave 0
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com", "annotations": {gitops.ARGOCD_SYNC_WAVE: "1"}},
           "spec": {"group": "example.com", "names": {"kind": "Widget"}}}
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}}
    # THEN Argo CD applies the CRD first all the same
    assert gitops_apply.argocd_sync([crd, widget]) == [crd, widget]


def test_a_rolebinding_before_its_role_is_a_problem() -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r", "namespace": "n"}}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "b", "namespace": "n"}, "roleRef": {"kind": "Role", "name": "r"}}
    assert gitops_apply.order_problems([binding, role], {"n"}) == ["RoleBinding/n/b before the Role it binds"]
    assert gitops_apply.order_problems([role, binding], {"n"}) == []


# ------------------------------------------------------------------------------------------------ kubectl delivery
def test_kubectl_delivery_writes_review_copies_without_gitops_layout(shared_synth) -> None:
    # GIVEN the default config (kubectl delivery) WHEN synthesized
    synth = shared_synth(DEFAULT_CONFIG, nag=False)
    folder = synth.outdir / "manifests"
    # THEN one file per chart, no kustomization and no GitOps annotations
    assert not (folder / gitops.KUSTOMIZATION_FILE).exists()
    assert sorted(p.stem for p in folder.glob("*.yaml")) == sorted(synth.stack.inference.delivery.units)
    text = "".join(p.read_text() for p in folder.glob("*.yaml"))
    assert "argocd.argoproj.io" not in text and "kustomize.toolkit.fluxcd.io" not in text
