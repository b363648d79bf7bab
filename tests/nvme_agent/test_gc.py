"""``gc``: old agent code ConfigMaps are deleted once nothing mounts them, against a fake Kubernetes API on loopback;
the agent runs as a subprocess, as the Job runs it."""

from __future__ import annotations

import pytest

from hyperpod_inference.charts.agent_bundle import agent_bundle, agent_code_hash

from .conftest import run_agent
from .fake_kube import FakeKube, loopback_tls, pod_spec
from .test_shipped import bootstrap

PREFIX = "s1-nvme-agent"
SELECTOR = f"app.kubernetes.io/name=nvme-agent,app.kubernetes.io/component=agent-code,hyperpod-inference/agent-code={PREFIX}"
CURRENT = f"{PREFIX}-cccccccccc"


def code_map(name: str, created: str, prefix: str = PREFIX, labels: dict | None = None) -> dict:
    if labels is None:
        labels = {"app.kubernetes.io/name": "nvme-agent", "app.kubernetes.io/component": "agent-code",
                  "hyperpod-inference/agent-code": prefix}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": created, "labels": labels}}


def workload(name: str, *configmaps: str, replicas: int | None = 1, status: dict | None = None,
             projected: bool = False) -> dict:
    spec: dict = {"template": {"spec": pod_spec(*configmaps, projected=projected)}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"metadata": {"name": name}, "spec": spec, "status": status or {}}


def pod(name: str, *configmaps: str, phase: str = "Running", projected: bool = False) -> dict:
    return {"metadata": {"name": name}, "spec": pod_spec(*configmaps, projected=projected), "status": {"phase": phase}}


@pytest.fixture
def kube():
    server = FakeKube()
    server.add("configmaps", code_map(CURRENT, "2026-12-01T12:00:00Z"))
    yield server
    server.close()


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text("gc-token\n")
    return path


def gc(kube, token_file, *, timeout=20.0, interval=0.1, extra=()):
    return run_agent("gc", "--current", CURRENT, "--selector", SELECTOR, "--namespace", "inference",
                     "--api-url", kube.url, "--token-file", token_file, "--interval", interval,
                     "--timeout", timeout, *extra, timeout=60)


def test_gc_deletes_old_code_nothing_can_mount_and_keeps_every_referenced_one_until_its_timeout(kube, token_file):
    # GIVEN old code ConfigMaps of this stack: one mounted only by objects that can start no pod any more (ended
    # pods, a finished Job), others each named by a referrer of one kind (a projected volume among them), workloads
    # scaled to zero (or a Deployment's rollout history) and a suspended CronJob included
    old = {k: f"{PREFIX}-{k * 10}" for k in "0123456789"}
    for name in old.values():
        kube.add("configmaps", code_map(name, "2026-12-01T11:00:00Z"))
    kube.add("pods", pod("done", old["0"], phase="Succeeded"))
    kube.add("pods", pod("crashed", old["0"], phase="Failed"))
    kube.add("jobs", workload("finished", old["0"], replicas=None,
                              status={"conditions": [{"type": "Complete", "status": "True"}]}))
    kube.add("pods", pod("serving", old["1"]))
    kube.add("pods", pod("pending", "unrelated", old["2"], phase="Pending", projected=True))
    kube.add("deployments", workload("model", old["3"], replicas=2))
    kube.add("replicasets", workload("model-abc", old["4"], replicas=0, status={"replicas": 1}))
    kube.add("daemonsets", workload("nvme-warm-x", old["5"], replicas=None))
    kube.add("statefulsets", workload("sts", old["6"], replicas=1))
    kube.add("jobs", workload("running", old["6"], replicas=None, status={"active": 1}))
    kube.add("deployments", workload("scaled-down", old["7"], replicas=0, status={"replicas": 0}))
    kube.add("replicasets", workload("history", old["7"], replicas=0))
    kube.add("statefulsets", workload("sts-zero", old["8"], replicas=0))
    kube.add("cronjobs", {"metadata": {"name": "nightly"}, "spec": {"suspend": True, "jobTemplate": {"spec": {
        "template": {"spec": pod_spec(old["9"])}}}}})
    # AND code ConfigMaps that are not this stack's old code: another stack's, one without the code labels, and
    # ones with this stack's labels whose names are not this stack's code (another prefix, not a code hash)
    kube.add("configmaps", code_map("s2-nvme-agent-aaaaaaaaaa", "2026-12-01T10:00:00Z", prefix="s2-nvme-agent"))
    kube.add("configmaps", code_map(f"{PREFIX}-bbbbbbbbbb", "2026-12-01T10:00:00Z",
                                    labels={"app.kubernetes.io/name": "nvme-agent"}))
    strangers = ("s2-nvme-agent-dddddddddd", f"{PREFIX}-settings", f"{PREFIX}-x-eeeeeeeeee", f"x{PREFIX}-eeeeeeeeee")
    for name in strangers:
        kube.add("configmaps", code_map(name, "2026-12-01T10:00:00Z"))

    # WHEN gc runs with a short timeout
    result = gc(kube, token_file, timeout=1.0)

    # THEN it deleted only the unreferenced old one, and timed out non-zero naming each kept one and its referrers
    assert result.returncode == 1, result.stderr
    assert kube.names() == {CURRENT, *[old[k] for k in "123456789"], "s2-nvme-agent-aaaaaaaaaa",
                            f"{PREFIX}-bbbbbbbbbb", *strangers}
    assert f"deleted {old['0']}" in result.stderr
    assert [r[1].rsplit("/", 1)[1] for r in kube.requests if r[0] == "DELETE"] == [old["0"]]
    timeout_line = next(line for line in result.stderr.splitlines() if "timed out" in line)
    for key, referrer in (("1", "Pod/serving"), ("2", "Pod/pending"), ("3", "Deployment/model"),
                          ("4", "ReplicaSet/model-abc"), ("5", "DaemonSet/nvme-warm-x"),
                          ("7", "Deployment/scaled-down, ReplicaSet/history"), ("8", "StatefulSet/sts-zero"),
                          ("9", "CronJob/nightly")):
        assert f"{old[key]} (referenced by {referrer})" in timeout_line
    assert f"{old['6']} (referenced by Job/running, StatefulSet/sts)" in timeout_line
    # AND the strangers are not even considered (never named as kept)
    assert not [name for name in strangers if name in result.stderr]
    # AND each kept one was logged once, not every pass
    assert result.stderr.count(f"keeping {old['1']}: referenced by Pod/serving") == 1
    # AND it asked for this stack's code labels, with the service account's token, paging through long lists
    gets = [r for r in kube.requests if r[0] == "GET"]
    assert all(auth == "Bearer gc-token" for *_, auth in kube.requests)
    assert {q.get("labelSelector") for m, p, q, _ in gets if p.endswith("/configmaps")} == {SELECTOR}
    assert any("continue" in q for m, p, q, _ in gets if p.endswith("/configmaps"))


def test_gc_deletes_an_old_code_configmap_once_its_last_pod_is_gone_and_exits_0(kube, token_file):
    # GIVEN an old code ConfigMap mounted by one running pod, which goes away after gc's second look at the pods
    old = f"{PREFIX}-0123456789"
    kube.add("configmaps", code_map(old, "2026-12-01T11:00:00Z"))
    kube.add("pods", pod("old-spec", old))
    kube.on_list = lambda resource, count: kube.remove("pods", "old-spec") if resource == "pods" and count == 2 \
        else None

    # WHEN gc runs
    result = gc(kube, token_file)

    # THEN it kept it while the pod ran, deleted it on a later pass and exited 0; the current one stays
    assert result.returncode == 0, result.stderr
    assert kube.names() == {CURRENT}
    err = result.stderr
    assert err.index(f"keeping {old}: referenced by Pod/old-spec") < err.index(f"deleted {old}")
    assert "no old code ConfigMap left" in err
    assert [r[1].rsplit("/", 1)[1] for r in kube.requests if r[0] == "DELETE"] == [old]


def test_gc_takes_a_404_on_delete_as_done(kube, token_file):
    # GIVEN an unreferenced old code ConfigMap that another run deletes first
    old = f"{PREFIX}-0123456789"
    kube.add("configmaps", code_map(old, "2026-12-01T11:00:00Z"))
    kube.vanish.add(old)

    # WHEN gc runs
    result = gc(kube, token_file)

    # THEN its DELETE got a 404, and that is success
    assert result.returncode == 0, result.stderr
    assert f"{old} is already gone" in result.stderr
    assert kube.names() == {CURRENT}


def test_gc_leaves_everything_to_a_newer_deploys_job(kube, token_file):
    # GIVEN an unreferenced older code ConfigMap and one newer than the current one (a later agent change)
    older, newer = f"{PREFIX}-0000000000", f"{PREFIX}-9999999999"
    kube.add("configmaps", code_map(older, "2026-12-01T11:00:00Z"))
    kube.add("configmaps", code_map(newer, "2026-12-01T13:00:00Z"))

    # WHEN the previous deploy's gc runs
    result = gc(kube, token_file)

    # THEN it deletes nothing (the newer one is not yet mounted by anything) and stops with 0
    assert result.returncode == 0, result.stderr
    assert kube.names() == {CURRENT, older, newer}
    assert f"{newer} is newer than {CURRENT}" in result.stderr
    assert not [r for r in kube.requests if r[0] == "DELETE"]


def test_gc_fails_at_once_when_the_api_refuses_its_token(kube, tmp_path):
    # GIVEN a token the API does not accept and an old code ConfigMap
    kube.add("configmaps", code_map(f"{PREFIX}-0123456789", "2026-12-01T11:00:00Z"))
    token = tmp_path / "token"
    token.write_text("wrong")

    # WHEN gc runs with a long timeout
    result = gc(kube, token, timeout=600)

    # THEN it exits 1 at once naming the refusal, deleting nothing
    assert result.returncode == 1
    assert "HTTP 401" in result.stderr
    assert f"{PREFIX}-0123456789" in kube.names()


def test_gc_retries_an_api_error_on_its_next_pass(kube, token_file):
    # GIVEN an unreferenced old code ConfigMap and an API whose first list of pods fails with a 500
    old = f"{PREFIX}-0123456789"
    kube.add("configmaps", code_map(old, "2026-12-01T11:00:00Z"))
    kube.fail_once.add("pods")

    # WHEN gc runs
    result = gc(kube, token_file)

    # THEN it logged the error, tried again and deleted it
    assert result.returncode == 0, result.stderr
    assert "HTTP 500" in result.stderr and "(retrying)" in result.stderr
    assert kube.names() == {CURRENT}


def test_gc_gives_up_at_its_timeout_when_the_api_does_not_answer(token_file):
    # GIVEN no API at the address (a port nothing listens on)
    server = FakeKube()
    url = server.url
    server.close()

    # WHEN gc runs with a short timeout
    result = run_agent("gc", "--current", CURRENT, "--selector", SELECTOR, "--namespace", "inference",
                       "--api-url", url, "--token-file", token_file, "--interval", "0.1", "--timeout", "1",
                       timeout=30)

    # THEN it exits 1 after the timeout, saying the API did not answer
    assert result.returncode == 1
    assert "timed out after 1.0s" in result.stderr and "the API did not answer" in result.stderr


def test_the_shipped_gc_reaches_the_in_cluster_api_over_tls_with_the_service_account(tmp_path, token_file):
    # GIVEN the API over TLS, found as a pod finds it (KUBERNETES_SERVICE_HOST / _PORT, the service account's CA)
    cert_file, context = loopback_tls(tmp_path)
    kube = FakeKube(tls=context)
    try:
        old = f"{PREFIX}-0123456789"
        kube.add("configmaps", code_map(CURRENT, "2026-12-01T12:00:00Z"))
        kube.add("configmaps", code_map(old, "2026-12-01T11:00:00Z"))
        bundle = tmp_path / "agent.z"
        bundle.write_bytes(agent_bundle())

        # WHEN the bundle's gc runs through the pods' bootstrap, without --api-url
        result = bootstrap(bundle, agent_code_hash(), "gc", "--current", CURRENT, "--selector", SELECTOR,
                           "--namespace", "inference", "--token-file", token_file, "--ca-file", cert_file,
                           "--interval", "0.1", "--timeout", "20", cwd=tmp_path,
                           env={"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(kube.port)})

        # THEN it verified the server with the CA, deleted the old code and exited 0
        assert result.returncode == 0, result.stderr
        assert kube.names() == {CURRENT}
    finally:
        kube.close()
