"""``doctor`` by check family: one module per family, each registering its checks on its own ``FAMILY``; the runner
lists the families (no check runs because some module happened to be imported), ``--only`` selects by ID, by ID
prefix or by family, and no module of the package grows past 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hyperpod_inference.ops import doctor
from hyperpod_inference.ops.doctor import cluster, kubernetes, runner
from hyperpod_inference.ops.doctor.base import PASS, Family, Result

PACKAGE = Path(doctor.__file__).parent
SHARED = {"__init__.py", "base.py", "runner.py"}
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py") if p.name not in SHARED)
#: A family's own module, ``<family>.py``; a family too large for one module has parts, ``<family>_<part>.py``, whose
#: checks its family module registers.
FAMILY_MODULES = [m for m in MODULES if m.split("_", 1)[0] == m]
PARTS = {m: m.split("_", 1)[0] for m in MODULES if m not in FAMILY_MODULES}


def test_the_runner_lists_one_family_per_module_in_order():
    # GIVEN the family modules of the package / THEN the runner lists each module's FAMILY once, named as the module,
    # the model family last (its checks come with the model preflight)
    assert [f.name for f in runner.FAMILIES] == ["account", "cluster", "kubernetes", "operator", "capture", "domain",
                                                 "model"]
    assert sorted(f.name for f in runner.FAMILIES) == FAMILY_MODULES
    # AND every check runs in its family's order, each ID once, each check of the family that registered it
    assert runner.CHECKS == tuple(c for f in runner.FAMILIES for c in f.checks)
    assert len(set(runner.CHECK_IDS)) == len(runner.CHECK_IDS) == 40
    assert all(c.family == f.name for f in runner.FAMILIES for c in f.checks)


def test_the_required_checks_are_checks_of_the_account_and_cluster_families():
    families = {c.id: c.family for c in runner.CHECKS}
    assert {families[i] for i in runner.REQUIRED_CHECKS} == {"account", "cluster"}


@pytest.mark.parametrize("module", MODULES)
def test_a_family_module_imports_the_shared_base_never_another_family(module):
    # GIVEN a family module's imports / THEN within the package it imports base (and a family module its own parts),
    # never another family or the runner
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    siblings = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1}
    siblings |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1 and not n.module
                 for a in n.names}
    own_parts = {part for part, family in PARTS.items() if family == module}
    assert siblings - {None} <= {"base"} | own_parts, siblings


def test_a_part_of_a_family_is_registered_on_its_family():
    # GIVEN model_s3, a part of the model family / THEN its checks are the model family's, after the family module's
    assert PARTS == {"model_s3": "model"}
    ids = [c.id for c in runner.selected(["model"])]
    assert ids[-3:] == ["model.s3-region", "model.s3-files", "model.s3-kms"]


def test_each_module_of_the_package_is_at_most_400_lines():
    sizes = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert max(sizes.values()) <= 400, sizes


@pytest.mark.parametrize(("only", "expected"), [
    # a family: its checks (cluster also selects every cluster.* ID, as the prefix always did)
    (["kubernetes"], [c.id for c in kubernetes.FAMILY.checks]),
    (["cluster"], [c.id for c in runner.CHECKS if c.family == "cluster" or c.id.startswith("cluster.")]),
    # a prefix, and a full ID
    (["operator.dependency"], [i for i in runner.CHECK_IDS if i.startswith("operator.dependency.")]),
    (["cluster.hyperpod", "domain"], ["cluster.hyperpod", "domain.hosted-zone", "domain.certificate"]),
])
def test_only_selects_by_id_prefix_or_family(only, expected):
    assert [c.id for c in runner.selected(only)] == expected


def test_cluster_selects_its_family_and_the_cluster_checks_of_the_kubernetes_family():
    ids = [c.id for c in runner.selected(["cluster"])]
    assert {c.id for c in cluster.FAMILY.checks} <= set(ids)
    assert {"endpoint.instance-group", "cluster.kubeconfig", "cluster.agent-role"} <= set(ids)
    assert not {"identity.account", "operator.addon", "endpoint.model-s3"} & set(ids)


@pytest.mark.parametrize("name", ["no.such", "clust"])
def test_a_name_that_selects_no_check_is_refused_naming_it_and_the_families(name):
    with pytest.raises(ValueError, match=rf"no check {name};.*the families: account, cluster, kubernetes, operator"):
        runner.selected([name])


def test_a_family_refuses_a_check_registered_twice():
    # GIVEN a family with a check / WHEN the same ID is registered again / THEN it is refused naming the ID
    family = Family("demo", "a family for the test")

    @family.check("demo.one", "the first", lambda c: "x")
    def one(ctx):
        yield Result("demo.one", PASS, "x", "ok")

    with pytest.raises(ValueError, match="check demo.one is registered twice"):
        family.add("demo.one", "again", lambda c: "x", one)
    assert [(c.id, c.family) for c in family.checks] == [("demo.one", "demo")]
