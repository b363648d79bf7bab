"""The Hub token reaches the agent as a mounted Secret file (HF_TOKEN_PATH), never as an environment variable."""

from __future__ import annotations

import json

from .conftest import run_agent
from .test_hf import COMMIT, make_repo, spec_of


def test_token_from_a_mounted_file_is_used_and_never_printed(hub, hf_env, tmp_path):
    # GIVEN the private repo and the token only in a file named by HF_TOKEN_PATH
    repo = make_repo(hub)
    token_file = tmp_path / "secret" / "token"
    token_file.parent.mkdir()
    token_file.write_text(hub.token + "\n")
    env = {k: v for k, v in hf_env.items() if k != "HF_TOKEN"}
    env["HF_TOKEN_PATH"] = str(token_file)
    # WHEN the agent ensures the model
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec_of(repo)), env=env)
    # THEN the authenticated download succeeds and the token is not in the output
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "nvme" / "hf--acme--tiny-llm" / COMMIT / ".complete").exists()
    assert hub.token not in result.stdout + result.stderr


def test_missing_token_file_means_no_token(hub, hf_env, tmp_path):
    repo = make_repo(hub)
    env = {k: v for k, v in hf_env.items() if k != "HF_TOKEN"}
    env["HF_TOKEN_PATH"] = str(tmp_path / "absent")
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec_of(repo)), env=env)
    assert result.returncode == 1
    assert not list((tmp_path / "nvme").rglob(".complete"))


def test_without_a_variable_the_token_is_read_from_the_library_s_mount(tmp_path, monkeypatch):
    # GIVEN no HF_TOKEN / HF_TOKEN_PATH, and the token Secret mounted at the agent's TOKEN_DIR (the library's pods
    # mount it there and set no variable)
    from hyperpod_inference.nvme_agent import hf_source

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_TOKEN_PATH", raising=False)
    monkeypatch.setattr(hf_source, "TOKEN_DIR", str(tmp_path))
    # WHEN nothing is mounted THEN there is no token
    assert hf_source._token() is False
    # WHEN the Secret's file is there THEN it is the token
    (tmp_path / "token").write_text("hf_secret\n")
    assert hf_source._token() == "hf_secret"
    # AND a variable still wins
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "absent"))
    assert hf_source._token() is False
