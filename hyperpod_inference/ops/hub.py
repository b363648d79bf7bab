"""A small read-only Hugging Face Hub client for the model checks, through huggingface_hub's public API only:
a model's info at a revision (the commit it resolves to, gating, privacy, pipeline tag, architectures, the Hub's
parameter counts), whether a locally available token can read it (``auth_check``), its ``config.json``, and the
parameter counts per dtype from its safetensors headers. No weight is downloaded and nothing is written.

Every Hub answer that is not the thing asked for comes back as a :class:`HubProblem` of a known kind, never as an
exception: ``not-found``, ``revision-not-found``, ``gated`` (no token, or one not granted), ``token-rejected``,
``entry-not-found``, ``not-safetensors``, ``unreachable`` and ``hub-error`` (the Hub answered 429 / 5xx): the last two
are skips (the check cannot tell), not passes.

The token is ``HF_TOKEN`` from the environment of the one running the checks (:func:`local_token`), never read from
a cluster and never part of a message or a result. The endpoint is ``HF_ENDPOINT`` when set (huggingface_hub's own
default otherwise), read at each call. Every request has a timeout (:data:`TIMEOUT`) and none is retried:
huggingface_hub's shared client has no timeout by default and ``auth_check`` takes none, so the client's default is
bounded for the duration of each call and restored after it; files are read with one request each, not with
``hf_hub_download``, whose retries of a failed metadata request (five, 60 s each) are too long for a check.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from .text import one_line

#: Seconds each request to the Hub may take (to connect, and between bytes).
TIMEOUT = 10.0

ProblemKind = Literal["not-found", "revision-not-found", "gated", "token-rejected", "entry-not-found",
                      "not-safetensors", "unreachable", "hub-error"]
#: Kinds after which the check cannot tell: the doctor skips, naming the reason.
SKIP_KINDS: frozenset[str] = frozenset({"unreachable", "hub-error"})


@dataclass(frozen=True)
class HubProblem:
    """Why the Hub did not give what was asked, as one line naming the repository (never the token)."""

    kind: ProblemKind
    message: str

    @property
    def is_skip(self) -> bool:
        """The Hub could not answer (unreachable, rate-limited, failing): nothing is known, not a failure."""
        return self.kind in SKIP_KINDS


@dataclass(frozen=True)
class ModelInfo:
    """What the Hub says of a model repository at a revision."""

    repo_id: str
    revision: str  # as asked ("main" when none was)
    sha: str  # the commit the revision resolves to today
    gated: bool | str  # False, "auto" or "manual"
    private: bool
    pipeline_tag: str | None
    library_name: str | None
    architectures: tuple[str, ...]  # config.json's, as the Hub lists them
    model_type: str | None
    parameters: Mapping[str, int] = field(default_factory=dict)  # safetensors parameters per dtype ({} if none)
    files: tuple[str, ...] = ()

    @property
    def needs_token(self) -> bool:
        """Reading the files takes a token (a gated or private repository)."""
        return bool(self.gated) or self.private


def local_token() -> str | None:
    """``HF_TOKEN`` from the environment, or None. Only this: no token file, no login flow, nothing refreshed."""
    return os.environ.get("HF_TOKEN") or None


def model_info(repo_id: str, revision: str | None = None, token: str | None = None) -> ModelInfo | HubProblem:
    """The repository at ``revision`` (its ``main`` when None): the commit it resolves to, gating, privacy, pipeline
    tag, architectures and the Hub's parameter counts. A gated repository's info needs no token."""
    what = _what(repo_id, revision)
    with _calls(what) as outcome:
        info = _api(token).model_info(repo_id, revision=revision, timeout=TIMEOUT)
        config = info.config if isinstance(info.config, Mapping) else {}
        outcome.value = ModelInfo(
            repo_id=repo_id, revision=revision or "main", sha=info.sha or "", gated=info.gated or False,
            private=bool(info.private), pipeline_tag=info.pipeline_tag, library_name=info.library_name,
            architectures=tuple(config.get("architectures") or ()), model_type=config.get("model_type"),
            parameters=dict(info.safetensors.parameters) if info.safetensors else {},
            files=tuple(s.rfilename for s in info.siblings or ()))
    return outcome.value


def auth_check(repo_id: str, token: str | None) -> HubProblem | None:
    """None when ``token`` can read the repository's files; else why not (``gated``: not granted, ``not-found``: a
    private repository the token cannot see, ``token-rejected``: the Hub does not know the token)."""
    with _calls(_what(repo_id, None)) as outcome:
        _api(token).auth_check(repo_id)
    return outcome.value


def config_json(repo_id: str, revision: str | None = None, token: str | None = None) -> dict | HubProblem:
    """The repository's ``config.json`` at ``revision``, read in one request (nothing is cached or written)."""
    what = _what(repo_id, revision, "config.json")
    with _calls(what) as outcome:
        data = _get_json(repo_id, "config.json", revision, token)
        outcome.value = data if isinstance(data, dict) else HubProblem("hub-error", f"{what} is not a JSON object")
    return outcome.value


def safetensors_parameters(repo_id: str, revision: str | None = None,
                           token: str | None = None) -> dict[str, int] | HubProblem:
    """Parameters per dtype from the safetensors headers at ``revision``: the files the index
    (``model.safetensors.index.json``) names, else ``model.safetensors``, each read with huggingface_hub's
    ``parse_safetensors_file_metadata`` (a range of about 100 kB per file, never the weights)."""
    from huggingface_hub import constants
    from huggingface_hub.errors import EntryNotFoundError

    what = _what(repo_id, revision, "safetensors headers")
    with _calls(what) as outcome:
        try:
            index = _get_json(repo_id, constants.SAFETENSORS_INDEX_FILE, revision, token)
        except EntryNotFoundError:
            index = None
        files = [constants.SAFETENSORS_SINGLE_FILE] if index is None else _shards(index)
        if isinstance(files, HubProblem):
            outcome.value = HubProblem(files.kind, f"{what}: {files.message}")
            return outcome.value
        api = _api(token)

        def header(name: str) -> Mapping[str, int]:
            return api.parse_safetensors_file_metadata(repo_id, name, revision=revision,
                                                       timeout=TIMEOUT).parameter_count

        try:
            with ThreadPoolExecutor(max_workers=min(8, len(files))) as pool:
                counts: Counter[str] = Counter()
                for parameters in pool.map(header, files):
                    counts.update(parameters)
        except EntryNotFoundError:
            if index is not None:
                raise
            outcome.value = HubProblem("not-safetensors", f"{what}: the repository has no model.safetensors or "
                                                          "model.safetensors.index.json")
            return outcome.value
        outcome.value = dict(counts)
    return outcome.value


#: The most files a safetensors index may name (the largest public models have a few hundred shards).
MAX_SHARDS = 1000


def _shards(index: object) -> list[str] | HubProblem:
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    names = sorted({n for n in weight_map.values() if isinstance(n, str)}) if isinstance(weight_map, dict) else []
    if not names:
        return HubProblem("hub-error", "the safetensors index names no file")
    if len(names) > MAX_SHARDS:
        return HubProblem("hub-error", f"the safetensors index names {len(names)} files (at most {MAX_SHARDS} are "
                                       "read)")
    return names


# --- internals -----------------------------------------------------------------------------------------------------

def _endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def _get_json(repo_id: str, filename: str, revision: str | None, token: str | None) -> object:
    """A JSON file of the repository in one bounded request, errors typed by huggingface_hub's
    ``hf_raise_for_status``. Not ``hf_hub_download``: when its metadata request fails it retries five times with a
    60-second timeout each, so a stalled Hub held a call for 384 s."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    url = hf_hub_url(repo_id, filename, revision=revision, endpoint=_endpoint())
    response = get_session().get(url, headers=build_hf_headers(token=token or False), timeout=TIMEOUT)
    hf_raise_for_status(response)
    try:
        return response.json()
    except ValueError as err:
        raise _NotJson(f"{filename} of {_what(repo_id, revision)} is not JSON: {one_line(err, 120)}") from None


class _NotJson(Exception):
    """A file the Hub served is not JSON."""


def _api(token: str | None):
    from huggingface_hub import HfApi

    # token False: never fall back to a token file on this machine, only the token given
    return HfApi(endpoint=_endpoint(), token=token or False)


def _what(repo_id: str, revision: str | None, thing: str | None = None) -> str:
    at = f"{repo_id}@{revision}" if revision else repo_id
    return f"{thing} of {at}" if thing else at


class _Outcome:
    value: object = None


@contextlib.contextmanager
def _calls(what: str) -> Iterator[_Outcome]:
    """Run Hub calls with bounded timeouts; a Hub answer that is not the thing asked becomes ``outcome.value``."""
    from huggingface_hub.utils import get_session

    outcome = _Outcome()
    session = get_session()
    previous = session.timeout
    session.timeout = TIMEOUT  # auth_check takes no timeout: it uses the client's, which is none
    try:
        yield outcome
    except Exception as exc:  # noqa: BLE001 - mapped below; anything else is raised again
        outcome.value = _problem(exc, what)
    finally:
        session.timeout = previous


def _problem(exc: Exception, what: str) -> HubProblem:
    from huggingface_hub import errors

    if isinstance(exc, _NotJson):
        return HubProblem("hub-error", str(exc))
    if isinstance(exc, errors.GatedRepoError):
        status = _status(exc)
        why = "no token was sent" if status == 401 else "the token has not been granted access"
        return HubProblem("gated", f"{what}: the repository is gated and {why} (ask for access on its Hub page, "
                                   "then use a token of that account)")
    if isinstance(exc, errors.RevisionNotFoundError):
        return HubProblem("revision-not-found", f"{what}: the revision is not in the repository")
    if isinstance(exc, errors.LocalEntryNotFoundError):  # a download that could not reach the Hub
        return HubProblem("unreachable", f"{what}: the Hub could not be reached ({one_line(exc, 120)})")
    if isinstance(exc, errors.EntryNotFoundError):
        return HubProblem("entry-not-found", f"{what}: the file is not in the repository at that revision")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return HubProblem("not-found", f"{what}: no such repository, or a private one the token cannot see")
    if isinstance(exc, errors.NotASafetensorsRepoError):
        return HubProblem("not-safetensors", f"{what}: the repository has no model.safetensors or "
                                             "model.safetensors.index.json")
    if isinstance(exc, errors.SafetensorsParsingError):
        return HubProblem("hub-error", f"{what}: a safetensors header could not be read ({one_line(exc, 120)})")
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return HubProblem("unreachable", f"{what}: not checked, HF_HUB_OFFLINE is set")
    if isinstance(exc, errors.HfHubHTTPError):
        status = _status(exc)
        if status == 401:
            return HubProblem("token-rejected", f"{what}: the Hub does not accept the token (HF_TOKEN): it is "
                                                "invalid or revoked")
        if status == 403:
            return HubProblem("token-rejected", f"{what}: the Hub refused the token (HF_TOKEN) for this repository "
                                                "(a fine-grained token without read access to it?)")
        return HubProblem("hub-error", f"{what}: the Hub answered HTTP {status}")
    if isinstance(exc, _transport_errors()):
        return HubProblem("unreachable", f"{what}: the Hub could not be reached ({type(exc).__name__}: "
                                         f"{one_line(exc, 120)})")
    raise exc


def _status(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection and timeout errors of the HTTP library huggingface_hub uses (httpx2 or httpx; a requests-based
    release raises OSError subclasses)."""
    kinds: list[type[BaseException]] = [OSError, TimeoutError]
    for name in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError, AttributeError):
            kinds.append(importlib.import_module(name).TransportError)
    return tuple(kinds)
