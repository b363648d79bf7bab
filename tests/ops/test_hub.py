"""ops/hub.py, the read-only Hub client of the model checks, against the Hub on loopback: what it returns for each
repository, every Hub error as a typed problem (unreachable and failing Hubs as skips), bounded timeouts, the token
never in a message, and the exact huggingface_hub calls the checks make."""

from __future__ import annotations

import socket
import threading

import pytest

from hyperpod_inference.ops import hub
from tests.fakes import hub_repos as repos
from tests.fakes.hub import Repo

QWEN_HEAD = repos.commit(repos.QWEN_7B)


def test_the_checks_make_these_huggingface_hub_calls_and_no_others(model_hub):
    # GIVEN a pinned public model WHEN its info, access, config.json and safetensors counts are read
    hub.model_info(repos.QWEN_7B, QWEN_HEAD)
    hub.auth_check(repos.QWEN_7B, None)
    hub.config_json(repos.QWEN_7B, QWEN_HEAD)
    hub.safetensors_parameters(repos.QWEN_7B, QWEN_HEAD)
    # THEN these are the requests, all reads (the shards through their CDN redirect, headers only)
    assert model_hub.calls() == {
        ("GET", "/api/models/{repo}/revision/{rev}"),  # HfApi.model_info
        ("GET", "/api/models/{repo}/auth-check"),  # HfApi.auth_check
        ("GET", "/{repo}/resolve/{rev}/config.json"),  # one request (hf_hub_url, hf_raise_for_status)
        ("GET", "/{repo}/resolve/{rev}/model.safetensors.index.json"),  # the shards it names
        ("GET", "/{repo}/resolve/{rev}/{shard}.safetensors"),  # HfApi.parse_safetensors_file_metadata (Range),
        ("GET", "/cdn-lfs/{repo}/{sha256}/{shard}.safetensors"),  # through the LFS redirect
    }
    assert max(n for (_, name), n in model_hub.bytes_served.items() if name.endswith(".safetensors")) <= 100_001


def test_model_info_of_a_pinned_public_model(model_hub):
    info = hub.model_info(repos.QWEN_7B, QWEN_HEAD)
    assert isinstance(info, hub.ModelInfo)
    assert (info.sha, info.revision, info.gated, info.private, info.needs_token) == (
        QWEN_HEAD, QWEN_HEAD, False, False, False)
    assert (info.architectures, info.model_type, info.pipeline_tag) == (("Qwen2ForCausalLM",), "qwen2",
                                                                        "text-generation")
    assert info.parameters == {"BF16": 7_615_616_512} and "config.json" in info.files


def test_an_unpinned_model_names_the_commit_main_points_to_today(model_hub):
    info = hub.model_info(repos.QWEN_7B)
    assert (info.revision, info.sha) == ("main", QWEN_HEAD)
    assert hub.model_info(repos.QWEN_7B, repos.older_commit(repos.QWEN_7B)).sha == repos.older_commit(repos.QWEN_7B)


def test_a_gated_model_needs_a_token_and_its_info_is_read_without_one(model_hub):
    info = hub.model_info(repos.LLAMA_8B)
    assert (info.gated, info.needs_token, info.parameters) == ("manual", True, {"BF16": 8_030_261_248})


@pytest.mark.parametrize(("repo_id", "revision", "token", "kind"), [
    (repos.QWEN_7B, repos.MISSING_COMMIT, None, "revision-not-found"),
    ("nobody/nothing", None, None, "not-found"),
    ("nobody/nothing", None, repos.NOT_GRANTED, "not-found"),
    (repos.PRIVATE, None, None, "not-found"),
    (repos.QWEN_7B, None, "hf_NotAToken", "token-rejected"),
])
def test_model_info_problems_are_typed(model_hub, repo_id, revision, token, kind):
    problem = hub.model_info(repo_id, revision, token)
    assert isinstance(problem, hub.HubProblem) and problem.kind == kind and not problem.is_skip
    assert repo_id in problem.message


def test_a_private_model_is_read_with_a_granted_token(model_hub):
    info = hub.model_info(repos.PRIVATE, token=repos.GRANTED)
    assert info.private and info.needs_token


@pytest.mark.parametrize(("repo_id", "token", "kind", "words"), [
    (repos.LLAMA_8B, None, "gated", "no token was sent"),
    (repos.LLAMA_8B, repos.NOT_GRANTED, "gated", "not been granted"),
    (repos.PRIVATE, repos.NOT_GRANTED, "not-found", "private"),
    (repos.LLAMA_8B, "hf_NotAToken", "token-rejected", "invalid or revoked"),
])
def test_auth_check_says_why_a_token_cannot_read_the_repository(model_hub, repo_id, token, kind, words):
    problem = hub.auth_check(repo_id, token)
    assert (problem.kind, words in problem.message) == (kind, True)


def test_auth_check_passes_with_a_granted_token_and_for_a_public_model_without_one(model_hub):
    assert hub.auth_check(repos.LLAMA_8B, repos.GRANTED) is None
    assert hub.auth_check(repos.LLAMA_70B, repos.GRANTED) is None
    assert hub.auth_check(repos.QWEN_7B, None) is None


def test_the_local_token_is_hf_token_only(model_hub, monkeypatch):
    assert hub.local_token() is None
    monkeypatch.setenv("HF_TOKEN", repos.GRANTED)
    assert hub.local_token() == repos.GRANTED


def test_config_json_is_read_at_the_revision_and_nothing_is_written(model_hub, tmp_path):
    config = hub.config_json(repos.QWEN_7B, QWEN_HEAD)
    assert (config["num_attention_heads"], config["num_key_value_heads"]) == (28, 4)
    assert hub.config_json(repos.LLAMA_70B, token=repos.GRANTED)["num_attention_heads"] == 64
    # AND the user's huggingface_hub home holds nothing afterwards
    home = tmp_path / "hf-home"
    assert not home.exists() or not any(home.rglob("*"))


def test_config_json_problems_are_typed(model_hub):
    model_hub.add(Repo("acme/no-config", repos.commit("acme/no-config"), {"README.md": b"# empty"}))
    model_hub.add(Repo("acme/bad-config", repos.commit("acme/bad-config"), {"config.json": b"{not json"}))
    assert hub.config_json(repos.LLAMA_8B).kind == "gated"
    assert hub.config_json(repos.QWEN_7B, repos.MISSING_COMMIT).kind == "revision-not-found"
    assert hub.config_json("acme/no-config").kind == "entry-not-found"
    assert hub.config_json("nobody/nothing").kind == "not-found"
    bad = hub.config_json("acme/bad-config")
    assert bad.kind == "hub-error" and "not JSON" in bad.message


@pytest.mark.parametrize(("repo_id", "token", "counts"), [
    (repos.QWEN_7B, None, {"BF16": 7_615_616_512}),
    (repos.LLAMA_70B, repos.GRANTED, {"BF16": 70_553_706_496}),
    (repos.BGE_LARGE, None, {"F32": 335_141_888}),
])
def test_safetensors_parameters_per_dtype(model_hub, repo_id, token, counts):
    assert hub.safetensors_parameters(repo_id, token=token) == counts


def test_a_single_file_model_is_read_from_model_safetensors_alone(model_hub):
    hub.safetensors_parameters(repos.BGE_LARGE)
    assert model_hub.calls() == {("GET", "/{repo}/resolve/{rev}/model.safetensors.index.json"),  # 404: not sharded
                                 ("GET", "/{repo}/resolve/{rev}/model.safetensors"),
                                 ("GET", "/cdn-lfs/{repo}/{sha256}/model.safetensors")}


def test_safetensors_problems_are_typed(model_hub):
    model_hub.add(Repo("acme/empty-index", repos.commit("acme/empty-index"),
                       {"model.safetensors.index.json": b'{"metadata": {}, "weight_map": {}}'}))
    model_hub.add(Repo("acme/lost-shard", repos.commit("acme/lost-shard"),
                       {"model.safetensors.index.json": b'{"weight_map": {"w": "model-00001-of-00002.safetensors"}}'}))
    assert hub.safetensors_parameters(repos.PYTORCH_ONLY).kind == "not-safetensors"
    assert hub.safetensors_parameters(repos.LLAMA_70B).kind == "gated"
    assert hub.safetensors_parameters(repos.QWEN_7B, repos.MISSING_COMMIT).kind == "revision-not-found"
    assert hub.safetensors_parameters("acme/empty-index").kind == "hub-error"
    assert hub.safetensors_parameters("acme/lost-shard").kind == "entry-not-found"


@pytest.mark.parametrize("status", [503, 429])
def test_a_failing_hub_is_a_skip_not_a_failure(model_hub, status):
    model_hub.outage = status
    for outcome in (hub.model_info(repos.QWEN_7B), hub.auth_check(repos.QWEN_7B, None)):
        assert outcome.kind == "hub-error" and outcome.is_skip and str(status) in outcome.message


def test_an_unreachable_hub_is_a_skip_for_every_call(model_hub, monkeypatch):
    # GIVEN HF_ENDPOINT on a port nothing listens on
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    outcomes = [hub.model_info(repos.QWEN_7B), hub.auth_check(repos.QWEN_7B, None), hub.config_json(repos.QWEN_7B),
                hub.safetensors_parameters(repos.QWEN_7B)]
    # THEN each is an unreachable skip naming the repository
    assert [(o.kind, o.is_skip) for o in outcomes] == [("unreachable", True)] * 4
    assert all(repos.QWEN_7B in o.message for o in outcomes)


def test_offline_mode_is_a_skip_that_says_so(model_hub, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    problem = hub.model_info(repos.QWEN_7B)
    assert (problem.kind, "HF_HUB_OFFLINE" in problem.message) == ("unreachable", True)


class SilentServer:
    def __init__(self, url: str, held: list, stop: threading.Event, thread: threading.Thread):
        self.url, self.held, self.stop, self.thread = url, held, stop, thread

    def connections(self) -> int:
        """How many connections were made (the accept loop is stopped first)."""
        self.stop.set()
        self.thread.join(5)
        return len(self.held)


@pytest.fixture
def silent_server():
    """A server that accepts connections and never answers (a stalled proxy). Bounded: after 30 s it closes what it
    holds, so a client without a timeout ends too (and the test with it)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept():
        for _ in range(150):  # 150 × 0.2 s
            if stop.is_set():
                break
            try:
                held.append(server.accept()[0])
            except OSError:
                continue
        for conn in held:
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield SilentServer(f"http://127.0.0.1:{server.getsockname()[1]}", held, stop, thread)
    stop.set()
    thread.join(5)
    server.close()


@pytest.mark.parametrize("call", ["model_info", "auth_check", "config_json", "safetensors_parameters"])
def test_a_hub_that_never_answers_ends_in_the_timeout_as_unreachable(model_hub, monkeypatch, silent_server, call):
    # GIVEN a Hub that accepts and never answers, and a short timeout (auth_check takes none of its own)
    from huggingface_hub.utils import get_session

    monkeypatch.setenv("HF_ENDPOINT", silent_server.url)
    monkeypatch.setattr(hub, "TIMEOUT", 0.3)
    before = get_session().timeout
    args = (repos.QWEN_7B, None) if call == "auth_check" else (repos.QWEN_7B,)
    # WHEN called THEN it returns an unreachable skip after one request (no retry: hf_hub_download retried a
    # stalled metadata request five times, 60 s each), and huggingface_hub's client has its timeout back
    problem = getattr(hub, call)(*args)
    assert (problem.kind, problem.is_skip) == ("unreachable", True)
    assert silent_server.connections() == 1
    assert get_session().timeout == before


def test_auth_check_runs_with_huggingface_hubs_client_timeout_bounded_and_restored(model_hub, monkeypatch):
    # GIVEN auth_check, which takes no timeout and uses the shared client's (none by default)
    from huggingface_hub import HfApi
    from huggingface_hub.utils import get_session

    seen = []
    real = HfApi.auth_check

    def spy(self, *args, **kwargs):
        seen.append(get_session().timeout.read)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(HfApi, "auth_check", spy)
    before = get_session().timeout
    # WHEN called THEN the client's read timeout during the call is TIMEOUT, and the one before afterwards
    assert hub.auth_check(repos.QWEN_7B, None) is None
    assert seen == [hub.TIMEOUT] and get_session().timeout == before


def test_the_token_never_appears_in_a_result_or_a_message(model_hub):
    outcomes = [hub.model_info(repos.LLAMA_8B, token=repos.NOT_GRANTED), hub.auth_check(repos.LLAMA_8B,
                                                                                         repos.NOT_GRANTED),
                hub.config_json(repos.LLAMA_8B, token=repos.NOT_GRANTED),
                hub.safetensors_parameters(repos.LLAMA_8B, token=repos.NOT_GRANTED),
                hub.model_info(repos.PRIVATE, token=repos.GRANTED), hub.auth_check(repos.QWEN_7B, "hf_NotAToken")]
    text = " ".join(repr(o) for o in outcomes)
    assert repos.NOT_GRANTED not in text and repos.GRANTED not in text and "hf_NotAToken" not in text


def test_an_unexpected_error_is_raised_not_hidden(model_hub, monkeypatch):
    # GIVEN huggingface_hub failing with an error that is not a Hub answer (a bug) THEN it is not made a skip
    def broken(*args, **kwargs):
        raise KeyError("bug")

    monkeypatch.setattr("huggingface_hub.HfApi.model_info", broken)
    with pytest.raises(KeyError):
        hub.model_info(repos.QWEN_7B)
