"""The one interface of a model source (S3, Hugging Face Hub, local directory); the cache calls nothing else.

A source is made once per run for a spec (:func:`open_source`) and answers:

- ``key()``: the model's cache directory relative to the root (``<source-key>/<revision>``);
- ``plan()``: ``(revision, entries)``, one entry per file: ``path`` (relative, normalized by the cache), ``size``,
  and a ``checksum`` when the plan knows it;
- ``describe(entries)``: give a ``checksum`` to entries planned without one (S3: a HEAD per object);
- ``download(revision, entries, dest, on_done)``: fetch the entries into ``dest``, each under a temporary name and
  renamed when whole (through ``fs``: :func:`fs.temp_path`, :func:`fs.create_temp`, :func:`fs.commit`); ``on_done(entry, computed)`` per file in place (``computed``: its checksum computed while
  writing, or None); stops at ``workers.CANCEL``;
- ``clean(dest)``: remove what an unfinished download leaves behind (temporary files, client bookkeeping).
"""

from __future__ import annotations

from . import fs
from .spec import HUGGINGFACE, S3, model_relative_dir


class Source:
    reserved: frozenset = frozenset()  # top-level names the source itself uses inside a download directory

    def __init__(self, spec: dict, config):
        self.spec, self.config = spec, config

    def key(self) -> str:
        return model_relative_dir(self.spec)

    def plan(self) -> tuple[str, list[dict]]:
        raise NotImplementedError

    def describe(self, entries: list[dict]) -> None:
        """Entries are planned with their checksums unless a source says otherwise."""

    def download(self, revision: str, entries: list[dict], dest: str, on_done) -> None:
        raise NotImplementedError

    def clean(self, dest: str) -> None:
        fs.remove_temps(dest)


def open_source(spec: dict, config) -> Source:
    """The source of a normalized spec (its module is imported only now: a cache hit needs none)."""
    if spec["source"] == S3:
        from .s3_source import S3Source as cls
    elif spec["source"] == HUGGINGFACE:
        from .hf_source import HubSource as cls
    else:
        from .local_source import LocalSource as cls
    return cls(spec, config)
