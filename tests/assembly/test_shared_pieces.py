"""Pieces shared by the endpoints of a namespace: one Secrets Manager token sync per secret, one warm DaemonSet per
distinct agent pod. A fleet pays them once per namespace, not once per endpoint."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import cdk8s
import pytest

from hyperpod_inference.charts.nvme_cache import NvmeCache, NvmeCachePlan
from hyperpod_inference.config.loader import parse_config
from tests.synth_helpers import gen_config, synth_config

GEN = gen_config()
OTHER_SECRET = "arn:aws:secretsmanager:us-west-2:111122223333:secret:other-token-GhIjKl"


def _config(n: int) -> dict:
    """``n`` Hugging Face endpoints with the same Secrets Manager token and the daemonset cache, in one namespace;
    e1 serves another model commit and e2 (when there) reads another secret."""
    cfg = GEN.config(n, "hf-token", namespace_count=1)
    cfg["endpoints"][1]["model"]["huggingface"]["commitSHA"] = "b" * 40
    if n > 2:
        cfg["endpoints"][2]["model"]["huggingface"]["token"] = {"secretsManagerArn": OTHER_SECRET}
    return cfg


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return synth_config(_config(3), tmp_path_factory.mktemp("shared"), nag=False)


def _of_kind(synth, kind: str) -> list[dict]:
    return [o for o in synth.objects() if o["kind"] == kind]


def test_endpoints_reading_one_secret_share_one_sync_and_one_reader_role(shared) -> None:
    # GIVEN e0 and e1 reading one secret and e2 another, in one namespace
    externals = {o["spec"]["data"][0]["remoteRef"]["key"]: o for o in _of_kind(shared, "ExternalSecret")}
    # THEN there is one sync per secret (ServiceAccount, SecretStore, ExternalSecret), not one per endpoint
    assert len(_of_kind(shared, "ExternalSecret")) == len(externals) == 2
    assert len(_of_kind(shared, "SecretStore")) == 2
    first = externals[GEN.config(1, "hf-token")["endpoints"][0]["model"]["huggingface"]["token"]["secretsManagerArn"]]
    # AND e0 and e1 mount the Secret of the first sync, e2 the other's
    secrets = {}
    for cr in shared.custom_resources():
        (volume,) = [v for v in cr["spec"]["kubernetes"]["volumes"] if "secret" in v]
        secrets[cr["metadata"]["name"]] = volume["secret"]["secretName"]
    assert secrets["e0"] == secrets["e1"] == first["spec"]["target"]["name"]
    assert secrets["e2"] == externals[OTHER_SECRET]["spec"]["target"]["name"] != secrets["e0"]
    # AND one IRSA role per sync, each reading exactly its secret and trusted by exactly its service account
    readers = {k: r for k, r in shared.resources("AWS::IAM::Role").items() if "Token" in k and "ReaderRole" in k}
    assert len(readers) == 2
    for external in externals.values():
        store = next(o for o in _of_kind(shared, "SecretStore") if o["metadata"]["name"] == external["metadata"]["name"])
        account = store["spec"]["provider"]["aws"]["auth"]["jwt"]["serviceAccountRef"]["name"]
        trusting = [k for k, r in readers.items() if f"system:serviceaccount:ns0:{account}" in json.dumps(r)]
        assert len(trusting) == 1
        policy = next(p for p in shared.resources("AWS::IAM::Policy").values()
                      if {"Ref": trusting[0]} in p["Properties"]["Roles"])
        assert json.dumps(policy).count("arn:aws:secretsmanager") == 1
        assert external["spec"]["data"][0]["remoteRef"]["key"] in json.dumps(policy)


def test_endpoints_with_the_same_agent_pod_share_one_warm_daemonset_holding_all_their_models(shared) -> None:
    # GIVEN e0 and e1 (one token, two commits) and e2 (another token): two distinct agent pods
    daemonsets = {o["metadata"]["annotations"]["hyperpod-inference/endpoints"]: o for o in _of_kind(shared, "DaemonSet")}
    # THEN e0 and e1 are warmed by one DaemonSet, e2 by its own
    assert set(daemonsets) == {"e0,e1", "e2"}
    models = {o["metadata"]["name"]: json.loads(o["data"]["models.json"]) for o in _of_kind(shared, "ConfigMap")
              if "models.json" in o.get("data", {})}
    pod = daemonsets["e0,e1"]["spec"]["template"]["spec"]
    (models_volume,) = [v for v in pod["volumes"] if v["name"] == "models"]
    assert sorted(m["revision"] for m in models[models_volume["configMap"]["name"]]) == [
        GEN.COMMIT, "b" * 40]
    # AND the NetworkPolicy denying ingress selects exactly that DaemonSet's pods
    selector = daemonsets["e0,e1"]["spec"]["selector"]["matchLabels"]
    assert any(p["spec"]["podSelector"]["matchLabels"] == selector for p in _of_kind(shared, "NetworkPolicy"))


def test_adding_an_endpoint_renames_no_shared_piece(shared, tmp_path: Path) -> None:
    # GIVEN the same config with one more endpoint like e0
    cfg = _config(3)
    extra = copy.deepcopy(cfg["endpoints"][0])
    extra.update(name="e9")
    cfg["endpoints"].append(extra)
    more = synth_config(cfg, tmp_path, nag=False)
    # THEN every shared object and manifest resource keeps its name (the new endpoint joins e0's DaemonSet)
    def names(s):
        return {(o["kind"], o["metadata"]["name"]) for o in s.objects() if o["kind"] != "InferenceEndpointConfig"}
    assert names(shared) == names(more)
    assert set(shared.resources()) <= set(more.resources())
    warm = [o for o in _of_kind(more, "DaemonSet") if "e9" in o["metadata"]["annotations"]["hyperpod-inference/endpoints"]]
    assert warm[0]["metadata"]["annotations"]["hyperpod-inference/endpoints"] == "e0,e1,e9"


def test_one_daemonset_cannot_warm_endpoints_that_need_different_pods() -> None:
    # GIVEN two plans whose agent pods differ (another model server image)
    cfg = GEN.config(2, "hf-token", namespace_count=1)
    cfg["endpoints"][1]["image"] = "123456789012.dkr.ecr.us-west-2.amazonaws.com/my-vllm:1"
    endpoints = parse_config(cfg).endpoints
    plans = [NvmeCachePlan(ep, "us-west-2", None, None) for ep in endpoints]
    assert plans[0].warm_name != plans[1].warm_name
    # WHEN one NvmeCache is given both THEN it refuses, naming them
    chart = cdk8s.Chart(cdk8s.App(), "c", disable_resource_name_hashes=True)
    with pytest.raises(ValueError, match=r"ns0/e0, ns0/e1 need different warm pods"):
        NvmeCache(chart, "Cache", plans=plans)


def test_an_endpoint_added_after_synth_is_refused(tmp_path: Path) -> None:
    # GIVEN a synthesized app (its shared warm DaemonSets are built)
    import aws_cdk as cdk

    from hyperpod_inference import Endpoint
    from hyperpod_inference.stack import HyperPodInferenceStack

    cfg = _config(2)
    app = cdk.App(outdir=str(tmp_path))
    stack = HyperPodInferenceStack(app, "Late", config=parse_config(cfg))
    app.synth()
    late = Endpoint.model_validate({**cfg["endpoints"][0], "name": "late"})
    # WHEN another endpoint is added THEN it is refused, naming it, instead of missing from a DaemonSet
    with pytest.raises(ValueError, match=r"add_endpoint\(ns0/late\): the app was already synthesized"):
        stack.inference.add_endpoint(late)


def test_lease_sidecar_in_the_config_gives_each_pod_a_native_sidecar_unless_turned_off(tmp_path: Path) -> None:
    # GIVEN two endpoints, the second with weightCache.leaseSidecar: false
    from tests.k8s_validation import crd_errors

    cfg = _config(2)
    cfg["endpoints"][1]["weightCache"]["leaseSidecar"] = False
    synth = synth_config(cfg, tmp_path, nag=False)
    crs = {cr["metadata"]["name"]: cr for cr in synth.custom_resources()}
    # THEN the first's agent init container is a native sidecar (restartPolicy Always, a startup probe), the
    # second's a plain init container, and both custom resources are strictly valid
    inits = {n: [(c["name"], c.get("restartPolicy"), "startupProbe" in c)
                 for c in cr["spec"]["kubernetes"]["initContainers"]] for n, cr in crs.items()}
    assert inits["e0"] == [("nvme-cache-fill", "Always", True)]
    assert inits["e1"] == [("nvme-cache-fill", None, False)]
    assert crd_errors(crs["e0"], "v3.3") == [] and crd_errors(crs["e1"], "v3.3") == []
