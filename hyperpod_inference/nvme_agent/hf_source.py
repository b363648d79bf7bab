"""Hugging Face Hub source, through the huggingface_hub client only.

Metadata: ``HfApi.model_info(files_metadata=True)`` at the requested revision gives the resolved commit sha and, per
file, its size and either the LFS sha256 or the git blob id (sha1 of ``blob <size>\\0<content>``).
Download: ``hf_hub_download(..., revision=<commit sha>, local_dir=...)`` per file, several files in parallel.
The token comes from ``HF_TOKEN`` or the file named by ``HF_TOKEN_PATH`` (default: the library's token mount); the
endpoint from ``HF_ENDPOINT``.
"""

from __future__ import annotations

import os
import tempfile

from . import fs, workers
from .config import TOKEN_DIR
from .source import Source

# huggingface_hub reads these at import time: set them before the first import. Its home defaults under the
# (writable) temporary directory: the agent's containers have a read-only root filesystem and an emptyDir /tmp.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HOME", os.path.join(tempfile.gettempdir(), "hf"))

HF_METADATA_DIR = ".cache"  # huggingface_hub's bookkeeping inside local_dir; removed before a model is published


def _token():
    """The token from ``HF_TOKEN``, else from the file ``HF_TOKEN_PATH`` names (default ``<TOKEN_DIR>/token``, where
    the library's pods mount the token Secret); False = none."""
    token = os.environ.get("HF_TOKEN")
    path = os.environ.get("HF_TOKEN_PATH") or f"{TOKEN_DIR}/token"
    if not token and path and os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            token = fh.read().strip()
    return token or False


def _endpoint():
    return os.environ.get("HF_ENDPOINT") or None


def plan(spec: dict, concurrency: int) -> tuple[str, list[dict]]:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=_endpoint(), token=_token())
    info = api.model_info(spec["modelId"], revision=spec["revision"], files_metadata=True)
    if not info.sha:
        raise RuntimeError(f"the Hub did not return a commit sha for {spec['modelId']}@{spec['revision']}")
    entries = []
    for sib in info.siblings or []:
        # "key": the repository path; "path" is checked and normalized with the others (cache.check_entries)
        if sib.lfs is not None:
            entries.append({"path": sib.rfilename, "key": sib.rfilename, "size": int(sib.lfs.size),
                            "checksum": {"algo": "sha256", "value": sib.lfs.sha256}})
        elif sib.blob_id and sib.size is not None:
            entries.append({"path": sib.rfilename, "key": sib.rfilename, "size": int(sib.size),
                            "checksum": {"algo": "git-sha1", "value": sib.blob_id}})
        else:
            raise RuntimeError(f"the Hub gave no size/hash for {sib.rfilename!r}")
    if not entries:
        raise FileNotFoundError(f"no files in {spec['modelId']}@{info.sha}")
    return info.sha, sorted(entries, key=lambda e: e["path"])


def clean_bookkeeping(dest_dir: str) -> None:
    """Remove huggingface_hub's bookkeeping directory (a link there is unlinked, never followed)."""
    fs.delete(os.path.join(dest_dir, HF_METADATA_DIR))


def download(spec: dict, commit: str, entries: list[dict], dest_dir: str, concurrency: int, on_done) -> None:
    from huggingface_hub import hf_hub_download

    # stale per-process .incomplete files of a killed run: the files they belong to are fetched again
    clean_bookkeeping(dest_dir)
    cache_dir = os.path.join(dest_dir, HF_METADATA_DIR, "hub")

    def fetch(entry):
        hf_hub_download(spec["modelId"], entry["key"], revision=commit, local_dir=dest_dir, cache_dir=cache_dir,
                        token=_token(), endpoint=_endpoint())
        on_done(entry)

    failed = workers.each(entries, fetch, concurrency, "hub")
    if failed:
        entry, exc = failed[0]
        raise RuntimeError(f"{len(failed)} file(s) failed, first {entry['path']}: {exc}") from exc


class HubSource(Source):
    """A Hub repository at a revision, through huggingface_hub (see :func:`plan`, :func:`download`)."""

    reserved = frozenset({HF_METADATA_DIR})

    def plan(self):
        return plan(self.spec, self.config.parallel(8))

    def download(self, revision, entries, dest, on_done):
        download(self.spec, revision, entries, dest, self.config.parallel(8), on_done)

    def clean(self, dest):
        super().clean(dest)
        clean_bookkeeping(dest)
