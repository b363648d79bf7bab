"""The cache's layout on disk: where a model, its records and its lock are, and whether a model is complete.

Layout under the cache root::

    <root>/<source-key>/<revision>/             a model; used only when it holds `.complete`
        <model files...>
        manifest.json                          files, sizes, checksums, source, resolved revision
        .complete                              written last, after the rename into place
        .last-used                             epoch seconds of the last cache hit (LRU key)
        .leases/<holder>                       readers' leases (see ``leases``)
    <root>/<source-key>/<revision>.partial/    download in progress (or of a killed run, resumed)
    <root>/.locks/<source-key>--<revision>.lock  flock: shared for a hit, exclusive to download/verify/evict
    <root>/.trash/                             directories being deleted
    <root>/.agent-ready-<hash>                 warm mode: every model of the models file is complete (see ``warm``)
    <root>/.hyperpod-cache-root                marks a cache root (written when the root is first used)
    <usage-dir>/<root name>.json               each root's usage (``--usage-dir``, see ``space``)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import time

from . import fs
from .spec import model_relative_dir

COMPLETE = ".complete"
MANIFEST = "manifest.json"
LAST_USED = ".last-used"
LEASES = ".leases"
PARTIAL_SUFFIX = ".partial"
ROOT_MARKER = ".hyperpod-cache-root"
RESERVED = {COMPLETE, MANIFEST, LAST_USED, LEASES, ROOT_MARKER}
MANIFEST_VERSION = 1


def model_dir(root: str, spec: dict) -> str:
    return os.path.join(root, model_relative_dir(spec))


def _lock_path(root: str, rel: str) -> str:
    return os.path.join(root, ".locks", rel.replace("/", "--") + ".lock")


@contextlib.contextmanager
def model_lock(root: str, rel: str, exclusive: bool, blocking: bool = True):
    """flock on the model's lock file; yields False when ``blocking=False`` and the lock is taken."""
    path = _lock_path(root, rel)
    fs.real_dir(os.path.dirname(path))
    fd = fs.open_nofollow(path, os.O_RDWR | os.O_CREAT)
    try:
        flags = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        if not blocking:
            flags |= fcntl.LOCK_NB
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def prepare_root(root: str) -> None:
    """The cache root's own directories (``.trash``, ``.locks``) exist and are real directories, else refuse to run:
    the agent never follows a link it did not make. The root gets its marker first (see
    :func:`legacy.evict_legacy`)."""
    os.makedirs(root, exist_ok=True)
    marker = os.path.join(root, ROOT_MARKER)
    if fs.lstat(marker) is None:
        with contextlib.suppress(FileExistsError):
            os.close(fs.open_nofollow(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    for name in (".trash", ".locks"):
        fs.real_dir(os.path.join(root, name))


def read_manifest(final: str) -> dict | None:
    raw = fs.read_regular(os.path.join(final, MANIFEST))
    try:
        return json.loads(raw) if raw is not None else None
    except ValueError:
        return None


_BOOKKEEPING = (COMPLETE, MANIFEST, LAST_USED)


def _structure_ok(final: str, manifest: dict) -> bool:
    """lstat every entry of a published model: regular files and real directories only, each file listed in the
    manifest with its size, no extra entries (besides the cache's own bookkeeping)."""
    try:
        files = {e["path"]: e["size"] for e in manifest["files"]}
    except (KeyError, TypeError):
        return False
    dirs = {p.rsplit("/", i)[0] for p in files for i in range(1, p.count("/") + 1)}
    seen = 0
    stack = [("", final)]
    while stack:
        rel, path = stack.pop()
        try:
            with os.scandir(path) as it:
                items = list(it)
        except OSError:
            return False
        for entry in items:
            name = rel + entry.name
            if not rel and (entry.name in _BOOKKEEPING or entry.name.startswith(LAST_USED + fs.ATOMIC_TEMP)):
                if not entry.is_file(follow_symlinks=False):
                    return False
                continue
            if not rel and entry.name == LEASES:
                if not entry.is_dir(follow_symlinks=False):
                    return False
                continue
            if entry.is_dir(follow_symlinks=False):
                if name not in dirs:
                    return False
                stack.append((name + "/", entry.path))
                continue
            if not entry.is_file(follow_symlinks=False) or files.get(name) != entry.stat(follow_symlinks=False).st_size:
                return False
            seen += 1
    return seen == len(files)


def is_complete(final: str) -> bool:
    """Fast check (no hashing): a real directory with the marker and a readable manifest, and a structure that
    matches the manifest exactly (see :func:`_structure_ok`)."""
    st = fs.lstat(final)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return False
    marker = fs.lstat(os.path.join(final, COMPLETE))
    if marker is None or not stat.S_ISREG(marker.st_mode):
        return False
    manifest = read_manifest(final)
    if not manifest or manifest.get("version") != MANIFEST_VERSION:
        return False
    return _structure_ok(final, manifest)


def touch_last_used(final: str) -> None:
    with contextlib.suppress(OSError):
        fs.write_atomic(os.path.join(final, LAST_USED), f"{time.time():.3f}\n".encode())


def last_used(final: str) -> float:
    try:
        return float((fs.read_regular(os.path.join(final, LAST_USED)) or b"").strip())
    except ValueError:
        st = fs.lstat(os.path.join(final, COMPLETE))
        return st.st_mtime if st is not None else 0.0


def complete_models(root: str) -> list[str]:
    """Relative dirs of every complete model under root."""
    out = []
    with contextlib.suppress(OSError):
        for key in sorted(os.listdir(root)):
            kdir = os.path.join(root, key)
            st = fs.lstat(kdir)
            if key.startswith(".") or st is None or not stat.S_ISDIR(st.st_mode):
                continue
            for rev in sorted(os.listdir(kdir)):
                if rev.startswith(".") or rev.endswith(PARTIAL_SUFFIX):
                    continue
                rst = fs.lstat(os.path.join(kdir, rev))
                marker = fs.lstat(os.path.join(kdir, rev, COMPLETE)) if rst and stat.S_ISDIR(rst.st_mode) else None
                if marker is not None and stat.S_ISREG(marker.st_mode):
                    out.append(f"{key}/{rev}")
    return out
