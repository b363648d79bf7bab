"""The previous layout (models directly under ``<hostPath>``, with ``.locks`` and ``.trash`` there): recognising its
model directories and evicting them (``evict-legacy``)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat

from . import fs
from .layout import COMPLETE, PARTIAL_SUFFIX, ROOT_MARKER, model_lock, read_manifest
from .leases import active_leases

log = logging.getLogger("nvme_agent")

_LEGACY_KEY = re.compile(r"(?:s3|hf|local)--[a-z0-9-]+")
_LEGACY_REV = re.compile(r"[a-z0-9-]{1,63}(?:\.partial)?")


def _legacy_revisions(parent: str, name: str) -> list[str] | str:
    """The entries of ``parent/name`` when it is a source-key directory the previous layout wrote (every entry a real
    ``<revision>`` or ``<revision>.partial`` directory, at least one a partial or holding that model's completion
    record), else why it is not one."""
    path = os.path.join(parent, name)
    st = fs.lstat(path)
    if st is None:
        return []  # evicted meanwhile by another agent
    if stat.S_ISDIR(st.st_mode) and fs.lstat(os.path.join(path, ROOT_MARKER)) is not None:
        return "a cache root"
    if not stat.S_ISDIR(st.st_mode) or not _LEGACY_KEY.fullmatch(name) or len(name) > 63:
        return "not a model directory of the previous layout"
    found, evidence = [], False
    try:
        with os.scandir(path) as it:
            items = list(it)
    except OSError:
        items = []
    for entry in items:
        if not _LEGACY_REV.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
            return "not a model directory of the previous layout"
        found.append(entry.name)
        if entry.name.endswith(PARTIAL_SUFFIX):
            evidence = True
            continue
        marker = fs.lstat(os.path.join(entry.path, COMPLETE))
        manifest = read_manifest(entry.path)
        evidence = evidence or bool(marker and stat.S_ISREG(marker.st_mode)) or (
            isinstance(manifest, dict) and manifest.get("relativeDir") == f"{name}/{entry.name}")
    return sorted(found) if evidence else "not a model directory of the previous layout"


def evict_legacy(parent: str, lease_ttl: float):
    """Yield one line per top-level entry of ``parent`` (``<hostPath>``; the agent's own dot entries aside) while
    evicting every model the previous layout cached there, under its lock and unless leased. Nothing when
    ``parent`` is itself a cache root (one root shared by every namespace)."""
    fs.real_dir(parent, create=False)
    if fs.lstat(os.path.join(parent, ROOT_MARKER)) is not None:
        log.info("%s is a cache root (shared by every namespace): nothing to evict", parent)
        return
    for own in (".trash", ".locks"):
        fs.real_dir(os.path.join(parent, own))
    for name in sorted(os.listdir(parent)):
        if name.startswith("."):
            continue
        found = _legacy_revisions(parent, name)
        if isinstance(found, str):
            yield f"skipped {name}: {found}"
            continue
        for label in sorted({rev.removesuffix(PARTIAL_SUFFIX) for rev in found}):
            rel = f"{name}/{label}"
            with model_lock(parent, rel, exclusive=True, blocking=False) as locked:
                leased = active_leases(os.path.join(parent, rel), lease_ttl) if locked else []
                if not locked or leased:
                    yield f"skipped {rel}: " + (f"leased by {', '.join(leased)}" if leased else "in use")
                    continue
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(parent, rel, COMPLETE))
                for entry in (rel, rel + PARTIAL_SUFFIX):
                    if fs.lstat(os.path.join(parent, entry)) is not None:
                        fs.trash(parent, os.path.join(parent, entry))
                        yield f"evicted {entry}"
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(parent, name))
