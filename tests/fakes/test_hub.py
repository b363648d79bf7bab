"""The Hub on loopback answers as the real Hub does: first its raw answers (status codes and the X-Error-Code header
huggingface_hub types errors by), then huggingface_hub's public API against it (the locked release), as the model
checks will call it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    NotASafetensorsRepoError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from . import hub_repos as repos


def raw(hub, path: str, token: str | None = None, method: str = "GET", headers: dict | None = None):
    """(status, headers, body) of one request, redirects not followed."""
    request = urllib.request.Request(hub.url + path, method=method, headers=dict(headers or {}))
    if token:
        request.add_header("Authorization", f"Bearer {token}")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


QWEN_HEAD = repos.commit(repos.QWEN_7B)


@pytest.mark.parametrize(("path", "token", "status", "code"), [
    (f"/api/models/{repos.QWEN_7B}", None, 200, None),
    ("/api/models/nobody/nothing", None, 401, "RepoNotFound"),  # unauthenticated: 401, existence not revealed
    ("/api/models/nobody/nothing", repos.NOT_GRANTED, 404, "RepoNotFound"),
    (f"/api/models/{repos.PRIVATE}", None, 401, "RepoNotFound"),  # a private repo looks missing
    (f"/api/models/{repos.PRIVATE}", repos.GRANTED, 200, None),
    (f"/api/models/{repos.QWEN_7B}/revision/{repos.MISSING_COMMIT}", None, 404, "RevisionNotFound"),
    (f"/api/models/{repos.LLAMA_8B}", None, 200, None),  # a gated repo's metadata is public
    (f"/api/models/{repos.LLAMA_8B}/auth-check", None, 401, "GatedRepo"),
    (f"/api/models/{repos.LLAMA_8B}/auth-check", repos.NOT_GRANTED, 403, "GatedRepo"),
    (f"/api/models/{repos.LLAMA_8B}/auth-check", repos.GRANTED, 200, None),
    (f"/{repos.LLAMA_8B}/resolve/main/config.json", None, 401, "GatedRepo"),
    (f"/{repos.LLAMA_8B}/resolve/main/config.json", repos.NOT_GRANTED, 403, "GatedRepo"),
    (f"/{repos.QWEN_7B}/resolve/main/nope.json", None, 404, "EntryNotFound"),
    (f"/{repos.QWEN_7B}/resolve/{repos.MISSING_COMMIT}/config.json", None, 404, "RevisionNotFound"),
])
def test_the_hub_answers_each_case_with_the_status_and_error_code_of_the_real_hub(model_hub, path, token, status,
                                                                                    code):
    got_status, headers, _ = raw(model_hub, path, token)
    assert (got_status, headers.get("X-Error-Code")) == (status, code)


def test_an_unknown_token_is_refused_as_invalid_credentials(model_hub):
    status, headers, body = raw(model_hub, f"/api/models/{repos.QWEN_7B}", "hf_NotAToken")
    assert status == 401 and "X-Error-Code" not in headers
    assert json.loads(body) == {"error": "Invalid credentials in Authorization header"}


def test_a_file_answers_with_its_commit_and_etag_and_an_lfs_file_redirects_to_the_cdn(model_hub):
    # GIVEN config.json (a git file) and a weight shard (LFS) of Qwen at main
    status, headers, body = raw(model_hub, f"/{repos.QWEN_7B}/resolve/main/config.json")
    assert status == 200 and headers["X-Repo-Commit"] == QWEN_HEAD and headers["ETag"].startswith('"')
    assert json.loads(body)["num_attention_heads"] == 28
    shard = "model-00001-of-00004.safetensors"
    status, headers, _ = raw(model_hub, f"/{repos.QWEN_7B}/resolve/main/{shard}", method="HEAD")
    # THEN the shard answers 302 to the CDN with the LFS hash and size, as the Hub does
    assert status == 302 and headers["X-Repo-Commit"] == QWEN_HEAD
    assert headers["Location"].startswith(f"{model_hub.url}/cdn-lfs/") and int(headers["X-Linked-Size"]) > 3 * 2**30


def test_a_range_of_a_weight_is_served_and_a_whole_weight_never_is(model_hub):
    location = raw(model_hub, f"/{repos.QWEN_7B}/resolve/main/model-00001-of-00004.safetensors",
                   method="HEAD")[1]["Location"].removeprefix(model_hub.url)
    status, headers, body = raw(model_hub, location, headers={"Range": "bytes=0-7"})
    assert status == 206 and headers["Content-Range"].startswith("bytes 0-7/") and len(body) == 8
    assert raw(model_hub, location)[0] == 500  # a test that downloads weights fails


# --- through huggingface_hub's public API ---------------------------------------------------------------------------

def test_model_info_gives_the_fields_the_model_checks_read(model_hub):
    info = HfApi(endpoint=model_hub.url, token=False).model_info(repos.QWEN_7B, timeout=10)
    assert (info.sha, info.gated, info.private, info.pipeline_tag) == (QWEN_HEAD, False, False, "text-generation")
    assert info.config == {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}
    assert info.safetensors.parameters == {"BF16": 7_615_616_512} and info.safetensors.total == 7_615_616_512
    assert "config.json" in {s.rfilename for s in info.siblings}


def test_model_info_at_a_revision_names_that_commit_and_a_missing_commit_is_revision_not_found(model_hub):
    api = HfApi(endpoint=model_hub.url, token=False)
    older = repos.older_commit(repos.QWEN_7B)
    assert api.model_info(repos.QWEN_7B, revision=older, timeout=10).sha == older
    assert api.model_info(repos.QWEN_7B, revision="main", timeout=10).sha == QWEN_HEAD
    with pytest.raises(RevisionNotFoundError):
        api.model_info(repos.QWEN_7B, revision=repos.MISSING_COMMIT, timeout=10)


def test_model_info_with_files_metadata_gives_sizes_and_lfs_hashes_and_expand_keeps_only_what_is_named(model_hub):
    api = HfApi(endpoint=model_hub.url, token=False)
    info = api.model_info(repos.LLAMA_70B, files_metadata=True, timeout=10)
    shards = [s for s in info.siblings if s.rfilename.endswith(".safetensors")]
    assert len(shards) == 30 and all(s.lfs and s.lfs.size == s.size for s in shards)
    assert info.gated == "manual"
    expanded = api.model_info(repos.BGE_LARGE, expand=["gated", "pipeline_tag"], timeout=10)
    assert (expanded.pipeline_tag, expanded.gated, expanded.sha, expanded.siblings) == (
        "feature-extraction", False, None, None)


def test_missing_and_private_repositories_are_repository_not_found(model_hub):
    api = HfApi(endpoint=model_hub.url, token=False)
    for repo_id in ("nobody/nothing", repos.PRIVATE):
        with pytest.raises(RepositoryNotFoundError) as err:
            api.model_info(repo_id, timeout=10)
        assert not isinstance(err.value, GatedRepoError)
    assert HfApi(endpoint=model_hub.url, token=repos.GRANTED).model_info(repos.PRIVATE, timeout=10).private is True


def test_auth_check_of_a_gated_repo_by_token(model_hub):
    # GIVEN Llama-3.1-8B-Instruct (gated "manual")
    with pytest.raises(GatedRepoError) as no_token:
        HfApi(endpoint=model_hub.url, token=False).auth_check(repos.LLAMA_8B)
    with pytest.raises(GatedRepoError) as not_granted:
        HfApi(endpoint=model_hub.url, token=repos.NOT_GRANTED).auth_check(repos.LLAMA_8B)
    # THEN without a token 401, with a token nobody granted 403, with the granted one no error
    assert (no_token.value.response.status_code, not_granted.value.response.status_code) == (401, 403)
    assert HfApi(endpoint=model_hub.url, token=repos.GRANTED).auth_check(repos.LLAMA_8B) is None
    assert HfApi(endpoint=model_hub.url, token=False).auth_check(repos.QWEN_7B) is None


def test_an_invalid_token_is_an_http_error_not_a_missing_repository(model_hub):
    with pytest.raises(HfHubHTTPError) as err:
        HfApi(endpoint=model_hub.url, token="hf_NotAToken").model_info(repos.QWEN_7B, timeout=10)
    assert not isinstance(err.value, RepositoryNotFoundError) and err.value.response.status_code == 401


def test_hf_hub_download_of_config_json_at_the_pinned_commit(model_hub, tmp_path):
    path = hf_hub_download(repos.QWEN_7B, "config.json", revision=QWEN_HEAD, endpoint=model_hub.url, token=False,
                           cache_dir=tmp_path)
    with open(path) as fh:
        assert json.load(fh)["num_key_value_heads"] == 4
    with pytest.raises(GatedRepoError):
        hf_hub_download(repos.LLAMA_8B, "config.json", endpoint=model_hub.url, token=False, cache_dir=tmp_path)
    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download(repos.QWEN_7B, "missing.json", endpoint=model_hub.url, token=False, cache_dir=tmp_path)


@pytest.mark.parametrize(("repo_id", "token", "counts", "sharded", "files"), [
    (repos.QWEN_7B, False, {"BF16": 7_615_616_512}, True, 4),
    (repos.LLAMA_8B, repos.GRANTED, {"BF16": 8_030_261_248}, True, 4),
    (repos.LLAMA_70B, repos.GRANTED, {"BF16": 70_553_706_496}, True, 30),
    (repos.BGE_LARGE, False, {"F32": 335_141_888}, False, 1),
])
def test_get_safetensors_metadata_reads_the_parameter_counts_from_the_headers_only(model_hub, repo_id, token, counts,
                                                                                    sharded, files):
    # GIVEN a repository shaped like the real one WHEN its safetensors metadata is read
    metadata = HfApi(endpoint=model_hub.url, token=token).get_safetensors_metadata(repo_id, timeout=10)
    # THEN the counts per dtype are the Hub's, and no more than huggingface_hub's first range of each file was read
    assert (metadata.parameter_count, metadata.sharded, len(metadata.files_metadata)) == (counts, sharded, files)
    served = {name: n for (repo, name), n in model_hub.bytes_served.items()
              if repo == repo_id and name.endswith(".safetensors")}
    assert len(served) == files and max(served.values()) <= 100_001


def test_safetensors_metadata_of_a_gated_repo_needs_the_token_and_a_repo_without_safetensors_says_so(model_hub):
    with pytest.raises(GatedRepoError):
        HfApi(endpoint=model_hub.url, token=False).get_safetensors_metadata(repos.LLAMA_8B)
    with pytest.raises(NotASafetensorsRepoError):
        HfApi(endpoint=model_hub.url, token=False).get_safetensors_metadata(repos.PYTORCH_ONLY)


def test_the_hub_parameter_listing_agrees_with_the_headers_for_every_repository(model_hub):
    api = HfApi(endpoint=model_hub.url, token=repos.GRANTED)
    for repo_id in (repos.QWEN_7B, repos.LLAMA_8B, repos.LLAMA_70B, repos.BGE_LARGE, repos.UNSERVED):
        listed = api.model_info(repo_id, timeout=10).safetensors.parameters
        assert listed == api.get_safetensors_metadata(repo_id, timeout=10).parameter_count, repo_id
