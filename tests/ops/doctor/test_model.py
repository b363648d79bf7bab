"""doctor's ``model`` family against the Hub on loopback (:mod:`tests.fakes.hub_repos`): each check's failing and
passing case, a Hub that cannot answer as a skip (never a pass), the token never printed, and ``doctor --only model``
as the CLI runs it."""

from __future__ import annotations

import socket
import subprocess
import sys

import boto3
import pytest
import yaml

from hyperpod_inference.config import parse_config
from hyperpod_inference.ops.aws import Aws
from hyperpod_inference.ops.doctor import runner
from hyperpod_inference.ops.doctor.base import Context
from tests.config.test_production_config import config
from tests.fakes import hub_repos as repos

QWEN_HEAD = repos.commit(repos.QWEN_7B)
LLAMA_HEAD = repos.commit(repos.LLAMA_8B)
TOKEN = {"kubernetesSecret": {"name": "hf-token"}}


def _hf(model_id: str, sha: str | None = None, token: dict | None = None) -> dict:
    return {"huggingface": {"modelId": model_id, **({"commitSHA": sha} if sha else {}),
                            **({"token": token} if token else {})}}


def _run(changes: dict, only: str = "model") -> dict[str, list[dict]]:
    """doctor --only ``only`` on the default config's endpoint changed: {check ID: its results}."""
    session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="us-west-2")
    ctx = Context(parse_config(config(**changes)), Aws("us-west-2", session=session), kubeconfig="/nonexistent")
    out: dict[str, list[dict]] = {}
    for result in runner.run(ctx, [only]):
        out.setdefault(result.check, []).append(result.as_json())
    return out


def _one(results: dict, check: str) -> dict:
    assert len(results.get(check, [])) == 1, results
    return results[check][0]


GOOD_QWEN = {"model": _hf(repos.QWEN_7B, QWEN_HEAD)}


def test_a_pinned_public_model_that_fits_passes_every_model_check(model_hub):
    results = _run(GOOD_QWEN | {"instanceType": "ml.g5.12xlarge"})
    assert {check: [r["status"] for r in rs] for check, rs in results.items()} == {
        check: ["pass"] for check in ("model.repository", "model.commit", "model.token", "model.architecture",
                                      "model.task", "model.tensor-parallel", "model.memory")}
    assert _one(results, "model.repository")["resource"] == f"endpoint inference/qwen-chat: {repos.QWEN_7B}@" \
                                                            f"{QWEN_HEAD[:12]}"


def test_a_model_id_that_does_not_exist_fails_naming_the_field(model_hub):
    result = _one(_run({"model": _hf("nobody/nothing", QWEN_HEAD)}), "model.repository")
    assert result["status"] == "fail" and "endpoints[0].model.huggingface.modelId" in result["fix"]
    assert "model.huggingface.token" in result["fix"]  # no token: it may be a private repository


def test_a_pinned_commit_missing_from_the_repository_fails_naming_main(model_hub):
    results = _run({"model": _hf(repos.QWEN_7B, repos.MISSING_COMMIT)})
    assert _one(results, "model.repository")["status"] == "pass"
    commit = _one(results, "model.commit")
    assert commit["status"] == "fail" and repos.MISSING_COMMIT in commit["detail"]
    assert commit["fix"] == f"set endpoints[0].model.huggingface.commitSHA to a commit of the repository (main is " \
                            f"at {QWEN_HEAD} today)"


def test_an_unpinned_model_names_the_commit_main_points_to(model_hub):
    commit = _one(_run({"model": _hf(repos.QWEN_7B)}), "model.commit")
    assert commit["status"] == "warn" and QWEN_HEAD in commit["detail"]
    assert commit["fix"] == f'pin it: endpoints[0].model.huggingface.commitSHA: "{QWEN_HEAD}"'


def test_a_gated_model_without_a_token_fails(model_hub):
    token = _one(_run({"model": _hf(repos.LLAMA_8B, LLAMA_HEAD)}), "model.token")
    assert token["status"] == "fail" and "gated (manual)" in token["detail"] and "401" in token["detail"]
    assert token["fix"].startswith("give endpoints[0].model.huggingface.token")


def test_a_gated_model_with_a_token_passes_and_hf_token_is_checked_never_printed(model_hub, monkeypatch):
    good = {"model": _hf(repos.LLAMA_8B, LLAMA_HEAD, TOKEN), "instanceType": "ml.g5.12xlarge"}
    assert _one(_run(good), "model.token")["status"] == "pass"  # no HF_TOKEN: configured, not read
    monkeypatch.setenv("HF_TOKEN", repos.GRANTED)
    results = _run(good)
    assert {r["status"] for rs in results.values() for r in rs} == {"pass"}, results
    assert "HF_TOKEN can read it" in _one(results, "model.token")["detail"]
    monkeypatch.setenv("HF_TOKEN", repos.NOT_GRANTED)
    results = _run(good)
    token = _one(results, "model.token")
    assert token["status"] == "fail" and "not been granted" in token["detail"]
    for value in (repos.GRANTED, repos.NOT_GRANTED):
        assert value not in str(results)


def test_a_private_model_is_a_skip_without_hf_token_and_checked_with_it(model_hub, monkeypatch):
    private = {"model": _hf(repos.PRIVATE, repos.commit(repos.PRIVATE), TOKEN)}
    assert _one(_run(private), "model.repository")["status"] == "skip"
    monkeypatch.setenv("HF_TOKEN", repos.GRANTED)
    results = _run(private)
    assert _one(results, "model.repository")["status"] == "pass"
    assert _one(results, "model.token")["detail"].startswith("private, the endpoint has a token, and HF_TOKEN")


def test_an_architecture_no_runtime_serves_is_a_warning_naming_the_runtime_version(model_hub):
    result = _one(_run({"model": _hf(repos.UNSERVED, repos.commit(repos.UNSERVED))}), "model.architecture")
    assert result["status"] == "warn" and "AcmeQuantumForCausalLM" in result["detail"]
    assert result["detail"].startswith("vllm ") and "runtime: custom" in result["fix"]


def test_an_embedding_model_on_tgi_fails_the_task_check(model_hub):
    results = _run({"model": _hf(repos.BGE_LARGE, repos.commit(repos.BGE_LARGE)), "runtime": "tgi"})
    task = _one(results, "model.task")
    assert task["status"] == "fail" and "embeddings" in task["detail"] and "feature-extraction" in task["detail"]
    assert task["fix"] == "change endpoints[0].model.huggingface.modelId or endpoints[0].runtime"
    # AND the architecture check does not steer to another preset, which serves embeddings no more than TGI
    assert "vllm" not in _one(results, "model.architecture")["fix"]
    assert _one(_run(GOOD_QWEN | {"runtime": "tgi"}), "model.task")["status"] == "pass"


def test_three_gpus_on_qwen_7b_fail_the_tensor_parallel_check_naming_the_sizes(model_hub):
    result = _one(_run(GOOD_QWEN | {"instanceType": "ml.g5.12xlarge", "resources": {"gpus": 3}}),
                  "model.tensor-parallel")
    assert result["status"] == "fail" and "28 attention heads" in result["detail"]
    assert result["fix"] == "set endpoints[0].resources.gpus to 1 or 2 or 4"
    passing = _one(_run(GOOD_QWEN | {"instanceType": "ml.g5.12xlarge", "resources": {"gpus": 2}}),
                   "model.tensor-parallel")
    assert passing["status"] == "pass" and passing["detail"] == ("28 attention heads and 4 key-value heads split "
                                                                 "over tensor-parallel size 2")


def test_70b_weights_on_one_a10g_fail_and_on_eight_h100_pass(model_hub, monkeypatch):
    llama = {"model": _hf(repos.LLAMA_70B, repos.commit(repos.LLAMA_70B), TOKEN)}
    small = _one(_run(llama | {"instanceType": "ml.g5.8xlarge"}), "model.memory")
    assert small["status"] == "fail" and "do not fit 1 × A10G" in small["detail"]
    assert "endpoints[0].instanceType" in small["fix"]
    assert _one(_run(llama | {"instanceType": "ml.p5.48xlarge"}), "model.memory")["status"] == "pass"


def test_weights_larger_than_the_ephemeral_storage_limit_fail(model_hub):
    results = _run(GOOD_QWEN | {"resources": {"limits": {"ephemeral-storage": "10Gi"}}})
    fails = [r for r in results["model.memory"] if r["status"] == "fail"]
    assert len(fails) == 1 and "endpoints[0].resources.limits.ephemeral-storage (10Gi)" in fails[0]["detail"]
    results = _run(GOOD_QWEN | {"resources": {"limits": {"ephemeral-storage": "100Gi"}}})
    assert [r["status"] for r in results["model.memory"]] == ["pass"]


def test_a_repository_without_safetensors_skips_the_memory_check_saying_why(model_hub):
    result = _one(_run({"model": _hf(repos.PYTORCH_ONLY, repos.commit(repos.PYTORCH_ONLY))}), "model.memory")
    assert result["status"] == "skip" and "model.safetensors" in result["detail"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_hub_is_a_skip_not_a_pass_and_doctor_exits_incomplete(model_hub, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    results = _run(GOOD_QWEN)
    assert {r["status"] for rs in results.values() for r in rs} == {"skip"}
    assert "could not be reached" in _one(results, "model.repository")["detail"]


def _cli(tmp_path, data: dict, *env_pairs: tuple[str, str]) -> subprocess.CompletedProcess:
    path = tmp_path / "hyperpod.yaml"
    path.write_text(yaml.safe_dump(data))
    import os
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "HF_TOKEN"))}
    env.update({"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_EC2_METADATA_DISABLED": "true"})
    env.update(dict(env_pairs))
    return subprocess.run([sys.executable, "-m", "hyperpod_inference", "doctor", "-c", str(path), "--only", "model"],
                          capture_output=True, text=True, timeout=120, env=env, check=False)


def test_doctor_only_model_as_the_cli_fails_a_gated_model_without_a_token_and_passes_a_good_one(model_hub, tmp_path):
    gated = _cli(tmp_path, config(model=_hf(repos.LLAMA_8B, LLAMA_HEAD), instanceType="ml.g5.12xlarge"))
    assert gated.returncode == runner.EXIT_FAILED, gated.stderr
    assert "FAIL  model.token" in gated.stdout and "endpoint inference/qwen-chat" in gated.stdout
    assert "Traceback" not in gated.stdout + gated.stderr
    good = _cli(tmp_path, config(model=_hf(repos.QWEN_7B, QWEN_HEAD), instanceType="ml.g5.12xlarge"))
    assert good.returncode == runner.EXIT_OK, good.stdout + good.stderr
    assert "FAIL" not in good.stdout and "Traceback" not in good.stdout + good.stderr
    down = _cli(tmp_path, config(model=_hf(repos.QWEN_7B, QWEN_HEAD)),
                ("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}"))
    assert down.returncode == runner.EXIT_INCOMPLETE and "Traceback" not in down.stdout + down.stderr


@pytest.mark.parametrize("only", ["model", "model.token", "model.s3-region"])
def test_only_model_selects_the_model_family_alone(only):
    chosen = runner.selected([only])
    assert chosen and all(c.family == "model" for c in chosen)
