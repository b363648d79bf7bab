"""The store: makes a model complete under a cache root (:func:`ensure`: a hit, or a download into a ``.partial``
directory, verified, atomically published) and re-hashes a complete one (:func:`verify`). The layout it writes is
``layout``'s; space is made by ``space``; every file operation is ``fs``'s."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import posixpath
import stat
import threading
import time

from . import checksums, fs
from .config import AgentConfig
from .errors import AgentError, VerificationFailed
from .layout import (
    COMPLETE,
    MANIFEST,
    MANIFEST_VERSION,
    PARTIAL_SUFFIX,
    RESERVED,
    is_complete,
    model_lock,
    prepare_root,
    read_manifest,
    touch_last_used,
)
from .leases import touch_lease
from .source import open_source
from .space import ensure_space
from .spec import model_relative_dir, normalize_spec

log = logging.getLogger("nvme_agent")


def _prepare_partial(root: str, final: str, partial: str) -> None:
    """Pick the directory to download into: a leftover .partial (made by the agent, never mounted by a pod), else a
    new one. A published directory without a valid completion record (the model server mounts it read-write) is
    never resumed: it goes to ``.trash``, unless it is empty (kubelet's DirectoryOrCreate; publication replaces it)."""
    fs.real_dir(os.path.dirname(final))
    st = fs.lstat(partial)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        fs.delete(partial)
    fst = fs.lstat(final)
    if fst is not None and not (stat.S_ISDIR(fst.st_mode) and not os.listdir(final)):
        log.info("moving %s to the trash: a published directory without a valid completion record is never reused",
                 final)
        fs.trash(root, final)
    fs.real_dir(partial)


def check_entries(entries: list[dict], reserved=()) -> None:
    """Normalize the entries' paths in place; fail (naming the keys, before anything is written) when a path
    escapes the model directory, names a file the cache reserves, or collides with another entry's path."""
    reserved = RESERVED | set(reserved)
    problems = []
    by_path: dict[str, list[str]] = {}
    for entry in entries:
        raw = entry["path"]
        key = entry.get("key") or entry.get("src") or raw
        norm = posixpath.normpath(raw) if raw else ""
        if not raw or "\0" in raw or norm.startswith("/") or norm in (".", "..") or norm.startswith("../"):
            problems.append(f"{key!r} escapes the model directory")
        elif norm.split("/")[0] in reserved:
            problems.append(f"{key!r} names {norm.split('/')[0]!r}, which the cache reserves")
        else:
            entry["path"] = norm
            by_path.setdefault(norm, []).append(key)
    dirs = {p.rsplit("/", i)[0] for p in by_path for i in range(1, p.count("/") + 1)}
    for norm, keys in by_path.items():
        if len(keys) > 1:
            problems.append(f"{', '.join(map(repr, keys))} are all the file {norm!r}")
        if norm in dirs:
            inside = [k for p, ks in by_path.items() if p.startswith(norm + "/") for k in ks]
            problems.append(f"{keys[0]!r} is the file {norm!r}, which {', '.join(map(repr, inside[:3]))} need as a "
                            f"directory")
    if problems:
        shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
        raise AgentError(f"the model's files cannot be cached: {shown}")


def _scan_partial(partial: str, entries: list[dict], source) -> tuple[set[str], int]:
    """Keep verified files, delete everything else (links and other non-regular entries included, never followed);
    return (verified paths, verified bytes)."""
    wanted = {e["path"]: e for e in entries}
    present = []
    stack = [("", partial)]
    while stack:
        rel, path = stack.pop()
        with os.scandir(path) as it:
            items = list(it)
        for entry in items:
            name = rel + entry.name
            if entry.is_dir(follow_symlinks=False) and name not in wanted:
                stack.append((name + "/", entry.path))
            elif entry.is_file(follow_symlinks=False) and name in wanted:
                present.append((entry.path, name))
            else:
                if entry.is_symlink() or not (entry.is_file(follow_symlinks=False) or entry.is_dir(
                        follow_symlinks=False)):
                    log.warning("removing %s from the partial download: not a regular file or directory", name)
                fs.delete(entry.path)
    source.describe([wanted[rel] for _, rel in present])
    verified = set()
    for path, rel in present:
        if checksums.matches(path, wanted[rel]):
            verified.add(rel)
        else:
            log.info("re-fetching %s: incomplete or checksum mismatch", rel)
            os.unlink(path)
    return verified, sum(wanted[p]["size"] for p in verified)


def _publish(root: str, partial: str, final: str) -> None:
    try:
        os.rename(partial, final)  # replaces a missing or empty final dir (kubelet's DirectoryOrCreate)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            fs.trash(root, final)
            os.rename(partial, final)
        elif exc.errno == errno.EBUSY:  # final is a mount point: move the content in instead
            for name in os.listdir(partial):
                os.replace(os.path.join(partial, name), os.path.join(final, name))
            os.rmdir(partial)
        else:
            raise
    fs.fsync_dir(os.path.dirname(final))
    fs.write_atomic(os.path.join(final, COMPLETE), f"{time.time():.3f}\n".encode())
    fs.fsync_dir(final)


def _materialize(root: str, spec: dict, rel: str, opts: AgentConfig) -> None:
    final = os.path.join(root, rel)
    partial = final + PARTIAL_SUFFIX
    source = open_source(spec, opts)
    revision, entries = source.plan()
    check_entries(entries, source.reserved)
    _prepare_partial(root, final, partial)
    for name in (COMPLETE, MANIFEST):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(partial, name))
    verified, have = _scan_partial(partial, entries, source)
    todo = [e for e in entries if e["path"] not in verified]
    needed = sum(e["size"] for e in todo)
    log.info("%s: %d file(s) to fetch (%d bytes), %d already verified", rel, len(todo), needed, len(verified))
    if todo:
        ensure_space(root, needed, rel, opts)
    attempt = 0
    while todo:
        bad = []
        lock = threading.Lock()

        def on_done(entry, computed=None, bad=bad, lock=lock):
            # ``computed``: the checksum the transfer computed while writing the file (no read-back needed)
            path = os.path.join(partial, entry["path"])
            if not checksums.matches(path, entry, computed):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                with lock:
                    bad.append(entry)

        try:
            source.download(revision, todo, partial, on_done)
        except BaseException:
            source.clean(partial)  # interrupted or failed: only whole files (and no temporaries) stay
            raise
        if bad:
            attempt += 1
            names = ", ".join(e["path"] for e in bad[:5])
            if attempt > opts.verify_retries:
                raise VerificationFailed(f"checksum mismatch after {attempt} attempt(s): {names}")
            log.warning("checksum mismatch, fetching again: %s", names)
        todo = bad
    source.clean(partial)
    manifest = {
        "version": MANIFEST_VERSION,
        "source": spec,
        "revision": revision,
        "relativeDir": rel,
        "totalBytes": sum(e["size"] for e in entries),
        "createdAt": time.time(),
        "files": [{k: e[k] for k in ("path", "size", "checksum")} for e in entries],
    }
    fs.write_atomic(os.path.join(partial, MANIFEST), json.dumps(manifest, indent=1, sort_keys=True).encode())
    _publish(root, partial, final)
    log.info("%s: complete (%d files, %d bytes)", rel, len(entries), manifest["totalBytes"])


def ensure(root: str, spec: dict, opts: AgentConfig | None = None, lease_holder: str | None = None,
           touch: bool = True, before_download=None) -> str:
    """Make the model complete under root (download on a miss) and return its directory.

    A hit takes a shared lock and checks the marker and the manifest only (no hashing). ``touch`` updates the LRU
    timestamp; ``lease_holder`` records a lease that protects the model from eviction while it is refreshed;
    ``before_download(spec)`` runs (holding the model's lock) only when the model has to be fetched.
    """
    opts = opts or AgentConfig.from_env()
    spec = normalize_spec(spec)
    rel = model_relative_dir(spec)
    final = os.path.join(root, rel)
    prepare_root(root)
    with model_lock(root, rel, exclusive=False):
        if is_complete(final):
            if touch:
                touch_last_used(final)
            if lease_holder:
                touch_lease(final, lease_holder)
            return final
    with model_lock(root, rel, exclusive=True):
        if not is_complete(final):  # another agent may have finished while we waited
            if before_download is not None:
                before_download(spec)
            fs.empty_trash(root)
            _materialize(root, spec, rel, opts)
        if touch:
            touch_last_used(final)
        if lease_holder:
            touch_lease(final, lease_holder)
    return final


def verify(root: str, spec: dict) -> tuple[str, list[str]]:
    """Re-hash a complete model. On corruption remove its marker (the next ensure fetches the model again into a
    fresh directory). The hashing holds the shared lock (readers' hits go on; nothing writes the model meanwhile);
    only removing the marker takes the exclusive one.

    Returns (state, bad paths) with state one of ``absent``, ``ok``, ``corrupt``.
    """
    spec = normalize_spec(spec)
    rel = model_relative_dir(spec)
    final = os.path.join(root, rel)
    prepare_root(root)
    with model_lock(root, rel, exclusive=False):
        if fs.lstat(os.path.join(final, COMPLETE)) is None:
            return "absent", []
        manifest = read_manifest(final) or {}
        if not manifest.get("files") or not is_complete(final):
            bad = [MANIFEST]
        else:
            bad = [e["path"] for e in manifest["files"] if not checksums.matches(os.path.join(final, e["path"]), e)]
    if not bad:
        return "ok", []
    with model_lock(root, rel, exclusive=True):
        fs.delete(os.path.join(final, COMPLETE))
    return "corrupt", bad
