"""The node-local model cache: layout, locking, atomic publication, verification, leases and LRU eviction.

Layout under the cache root::

    <root>/<source-key>/<revision>/             a model; used only when it holds `.complete`
        <model files...>
        manifest.json                          files, sizes, checksums, source, resolved revision
        .complete                              written last, after the rename into place
        .last-used                             epoch seconds of the last cache hit (LRU key)
        .leases/<holder>                       readers' leases; active while touched within the lease TTL
    <root>/<source-key>/<revision>.partial/    download in progress (or of a killed run, resumed)
    <root>/.locks/<source-key>--<revision>.lock  flock: shared for a hit, exclusive to download/verify/evict
    <root>/.trash/                             directories being deleted
    <root>/.agent-ready-<hash>                 warm mode: every model of the models file is complete
    <root>/.hyperpod-cache-root                marks a cache root (written when the root is first used)
    <usage-dir>/<root name>.json               each root's usage (``--usage-dir``), read on a watermark failure
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import posixpath
import re
import shutil
import stat
import threading
import time
import uuid

from . import checksums
from .config import AgentConfig
from .source import open_source
from .spec import model_relative_dir, normalize_spec

log = logging.getLogger("nvme_agent")

COMPLETE = ".complete"
MANIFEST = "manifest.json"
LAST_USED = ".last-used"
LEASES = ".leases"
PARTIAL_SUFFIX = ".partial"
ROOT_MARKER = ".hyperpod-cache-root"
RESERVED = {COMPLETE, MANIFEST, LAST_USED, LEASES, ROOT_MARKER}
MANIFEST_VERSION = 1


class AgentError(Exception):
    exit_code = 1


class InsufficientSpace(AgentError):
    exit_code = 4


class VerificationFailed(AgentError):
    exit_code = 5


# --- free space (injectable) -------------------------------------------------------------------------------------

#: Tests (or embedding code) may set this to ``f(root) -> (free_bytes, total_bytes)``.
disk_usage_hook = None
FAKE_DISK_ENV = "NVME_AGENT_FAKE_DISK_BYTES"


def _tree_bytes(path: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def disk_usage(root: str) -> tuple[int, int]:
    """(free, total) bytes of the file system holding ``root``.

    ``NVME_AGENT_FAKE_DISK_BYTES=N`` simulates a disk of N bytes holding only the cache (free = N - bytes under root),
    so eviction frees space as it would on a real disk.
    """
    if disk_usage_hook is not None:
        return disk_usage_hook(root)
    fake = os.environ.get(FAKE_DISK_ENV)
    if fake:
        total = int(fake)
        return max(total - _tree_bytes(root), 0), total
    usage = shutil.disk_usage(root)
    return usage.free, usage.total


# --- layout and small file helpers -------------------------------------------------------------------------------

def model_dir(root: str, spec: dict) -> str:
    return os.path.join(root, model_relative_dir(spec))


def _lock_path(root: str, rel: str) -> str:
    return os.path.join(root, ".locks", rel.replace("/", "--") + ".lock")


@contextlib.contextmanager
def model_lock(root: str, rel: str, exclusive: bool, blocking: bool = True):
    """flock on the model's lock file; yields False when ``blocking=False`` and the lock is taken."""
    path = _lock_path(root, rel)
    _real_dir(os.path.dirname(path))
    fd = _open_nofollow(path, os.O_RDWR | os.O_CREAT)
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


def _lstat(path: str):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _real_dir(path: str, create: bool = True) -> None:
    """Make sure ``path`` is a directory and not a link to one (creating it when missing)."""
    st = _lstat(path)
    if st is None and create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
        st = _lstat(path)
    if st is None or not stat.S_ISDIR(st.st_mode):
        kind = "missing" if st is None else "a symlink" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise AgentError(f"{path} must be a real directory ({kind}): refusing to run; remove it")


def prepare_root(root: str) -> None:
    """The cache root's own directories (``.trash``, ``.locks``) exist and are real directories, else refuse to run:
    the agent never follows a link it did not make. The root gets its marker first (see :func:`evict_legacy`)."""
    os.makedirs(root, exist_ok=True)
    marker = os.path.join(root, ROOT_MARKER)
    if _lstat(marker) is None:
        with contextlib.suppress(FileExistsError):
            os.close(_open_nofollow(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    for name in (".trash", ".locks"):
        _real_dir(os.path.join(root, name))


#: a file kubelet bind-mounts into every container from its own directory on the node (usually the root disk)
KUBELET_FILE = "/etc/hostname"


def on_kubelet_disk(root: str, reference: str | None = None) -> bool:
    """True when the cache root is on the same device as ``reference`` (in a pod: kubelet's pod directory, usually
    the node's root disk), i.e. no instance-store NVMe is mounted at the cache's hostPath."""
    try:
        return os.stat(root).st_dev == os.stat(reference or KUBELET_FILE).st_dev
    except OSError:
        return False


def _open_nofollow(path: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)


def _write_atomic(path: str, data: bytes, sync: bool = True) -> None:
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    try:
        with os.fdopen(_open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb") as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = _open_nofollow(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _read_regular(path: str, limit: int | None = None) -> bytes | None:
    """The content of a regular file that is not a link (and holds at most ``limit`` bytes), else None."""
    try:
        fd = _open_nofollow(path)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (limit is not None and st.st_size > limit):
            return None
        return fh.read(limit)


def read_manifest(final: str) -> dict | None:
    raw = _read_regular(os.path.join(final, MANIFEST))
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
            if not rel and (entry.name in _BOOKKEEPING or entry.name.startswith(LAST_USED + ".tmp-")):
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
    st = _lstat(final)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return False
    marker = _lstat(os.path.join(final, COMPLETE))
    if marker is None or not stat.S_ISREG(marker.st_mode):
        return False
    manifest = read_manifest(final)
    if not manifest or manifest.get("version") != MANIFEST_VERSION:
        return False
    return _structure_ok(final, manifest)


def touch_last_used(final: str) -> None:
    with contextlib.suppress(OSError):
        _write_atomic(os.path.join(final, LAST_USED), f"{time.time():.3f}\n".encode())


def last_used(final: str) -> float:
    try:
        return float((_read_regular(os.path.join(final, LAST_USED)) or b"").strip())
    except ValueError:
        st = _lstat(os.path.join(final, COMPLETE))
        return st.st_mtime if st is not None else 0.0


def _check_holder(holder: str) -> str:
    if not holder or "/" in holder or holder.startswith(".") or len(holder) > 200:
        raise AgentError(f"invalid lease holder name {holder!r}")
    return holder


def touch_lease(final: str, holder: str) -> str:
    leases = os.path.join(final, LEASES)
    _real_dir(leases)
    path = os.path.join(leases, _check_holder(holder))
    fd = _open_nofollow(path, os.O_WRONLY | os.O_CREAT)
    try:
        os.utime(fd)
    finally:
        os.close(fd)
    return path


def release_lease(final: str, holder: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(final, LEASES, _check_holder(holder)))


def active_leases(final: str, ttl: float) -> list[str]:
    now = time.time()
    try:
        names = os.listdir(os.path.join(final, LEASES))
    except OSError:
        return []
    active = []
    for name in names:
        st = _lstat(os.path.join(final, LEASES, name))
        if st is not None and stat.S_ISREG(st.st_mode) and now - st.st_mtime <= ttl:
            active.append(name)
    return active


def _delete(path: str) -> None:
    """Delete ``path`` without following links: a link or a file is unlinked, a directory removed with its tree
    (shutil.rmtree never follows links inside it)."""
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _trash(root: str, path: str) -> None:
    """Atomically take ``path`` out of the cache, then delete it (a link is only unlinked)."""
    trash = os.path.join(root, ".trash")
    _real_dir(trash)
    st = _lstat(path)
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        _delete(path)
        return
    target = os.path.join(trash, uuid.uuid4().hex)
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return
    _delete(target)


def _empty_trash(root: str) -> None:
    trash = os.path.join(root, ".trash")
    _real_dir(trash)
    with contextlib.suppress(OSError):
        for name in os.listdir(trash):
            _delete(os.path.join(trash, name))


# --- eviction ----------------------------------------------------------------------------------------------------

def complete_models(root: str) -> list[str]:
    """Relative dirs of every complete model under root."""
    out = []
    with contextlib.suppress(OSError):
        for key in sorted(os.listdir(root)):
            kdir = os.path.join(root, key)
            st = _lstat(kdir)
            if key.startswith(".") or st is None or not stat.S_ISDIR(st.st_mode):
                continue
            for rev in sorted(os.listdir(kdir)):
                if rev.startswith(".") or rev.endswith(PARTIAL_SUFFIX):
                    continue
                rst = _lstat(os.path.join(kdir, rev))
                marker = _lstat(os.path.join(kdir, rev, COMPLETE)) if rst and stat.S_ISDIR(rst.st_mode) else None
                if marker is not None and stat.S_ISREG(marker.st_mode):
                    out.append(f"{key}/{rev}")
    return out


USAGE_MAX_BYTES, USAGE_MAX_AGE, USAGE_MAX_FILES = 4096, 86400.0, 1000


def write_usage(root: str, opts: AgentConfig) -> tuple[str, int, int] | None:
    """With ``opts.usage_dir``: write this root's (name, bytes, complete models) to ``<usage dir>/<name>.json``
    atomically and return them. A failed write (a full disk) is logged, never fatal; a linked directory refuses."""
    if not opts.usage_dir:
        return None
    _real_dir(opts.usage_dir)
    usage = (opts.root_name, _tree_bytes(root), len(complete_models(root)))
    record = {"root": usage[0], "bytes": usage[1], "models": usage[2], "time": time.time()}
    try:
        _write_atomic(os.path.join(opts.usage_dir, usage[0] + ".json"), json.dumps(record).encode(), sync=False)
    except OSError as exc:
        log.warning("could not write this root's usage to %s: %s", opts.usage_dir, exc)
    return usage


def read_usage(usage_dir: str) -> dict[str, tuple[int, int]]:
    """name -> (bytes, models) of every root's usage file written within a day; links, other files, oversized and
    malformed records are ignored."""
    out: dict[str, tuple[int, int]] = {}
    try:
        names = sorted(n for n in os.listdir(usage_dir) if n.endswith(".json"))[:USAGE_MAX_FILES]
    except OSError:
        return out
    for name in names:
        try:
            rec = json.loads(_read_regular(os.path.join(usage_dir, name), USAGE_MAX_BYTES) or b"")
            ok = (rec["root"] + ".json" == name and all(type(rec[k]) is int and rec[k] >= 0 for k in ("bytes", "models"))
                  and -60 <= time.time() - float(rec["time"]) <= USAGE_MAX_AGE)
        except (ValueError, TypeError, KeyError):
            continue
        if ok:
            out[rec["root"]] = (rec["bytes"], rec["models"])
    return out


def _usage_report(root: str, opts: AgentConfig, free: int, total: int) -> str:
    name, ours, models = write_usage(root, opts)
    roots = {**read_usage(opts.usage_dir), name: (ours, models)}
    listed = sorted(roots.items(), key=lambda item: (-item[1][0], item[0]))
    shown = [f"{n} {b} bytes ({m} model(s))" for n, (b, m) in listed[:20]]
    if len(listed) > 20:
        shown.append(f"{len(listed) - 20} more roots {sum(b for _, (b, _m) in listed[20:])} bytes")
    used = total - free
    return (f"Usage by cache root: {', '.join(shown)}; other files {max(used - sum(b for b, _ in roots.values()), 0)} "
            f"bytes (disk used {used} bytes; roots that reported within a day)")


def ensure_space(root: str, needed: int, keep_rel: str, opts: AgentConfig) -> None:
    """Evict least-recently-used, unleased, unlocked complete models until ``needed`` bytes fit above the watermark."""
    free, total = disk_usage(root)
    floor = opts.floor(total)
    if free - needed >= floor:
        return
    candidates = sorted((last_used(os.path.join(root, rel)), rel) for rel in complete_models(root) if rel != keep_rel)
    evicted = []
    for _ts, rel in candidates:
        final = os.path.join(root, rel)
        if active_leases(final, opts.lease_ttl):
            log.info("not evicting %s: leased by %s", rel, ", ".join(active_leases(final, opts.lease_ttl)))
            continue
        with model_lock(root, rel, exclusive=True, blocking=False) as locked:
            if not locked:
                log.info("not evicting %s: in use", rel)
                continue
            if active_leases(final, opts.lease_ttl):
                continue
            # remove the marker first: a crash mid-delete leaves an unmarked (ignored) directory
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(final, COMPLETE))
            _trash(root, final)
        evicted.append(rel)
        log.info("evicted %s (least recently used)", rel)
        free, total = disk_usage(root)
        if free - needed >= floor:
            write_usage(root, opts)
            return
    message = (f"not enough space in {root}: need {needed} bytes plus a free-space watermark of {floor} bytes, "
               f"available {free} bytes (of {total}) after evicting {len(evicted)} model(s); leased or in-use models "
               f"are never evicted. ")
    if opts.usage_dir:
        raise InsufficientSpace(message + _usage_report(root, opts, free, total))
    ours = _tree_bytes(root)
    raise InsufficientSpace(
        f"{message}Usage: this cache root {ours} bytes, the rest of the disk (other namespaces' cache roots, "
        f"other files) {max(total - free - ours, 0)} bytes")


# --- the previous layout (models directly under <hostPath>) --------------------------------------------------------

_LEGACY_KEY = re.compile(r"(?:s3|hf|local)--[a-z0-9-]+")
_LEGACY_REV = re.compile(r"[a-z0-9-]{1,63}(?:\.partial)?")


def _legacy_revisions(parent: str, name: str) -> list[str] | str:
    """The entries of ``parent/name`` when it is a source-key directory the previous layout wrote (every entry a real
    ``<revision>`` or ``<revision>.partial`` directory, at least one a partial or holding that model's completion
    record), else why it is not one."""
    path = os.path.join(parent, name)
    st = _lstat(path)
    if st is None:
        return []  # evicted meanwhile by another agent
    if stat.S_ISDIR(st.st_mode) and _lstat(os.path.join(path, ROOT_MARKER)) is not None:
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
        marker = _lstat(os.path.join(entry.path, COMPLETE))
        manifest = read_manifest(entry.path)
        evidence = evidence or bool(marker and stat.S_ISREG(marker.st_mode)) or (
            isinstance(manifest, dict) and manifest.get("relativeDir") == f"{name}/{entry.name}")
    return sorted(found) if evidence else "not a model directory of the previous layout"


def evict_legacy(parent: str, lease_ttl: float):
    """Yield one line per top-level entry of ``parent`` (``<hostPath>``; the agent's own dot entries aside) while
    evicting every model the previous layout cached there, under its lock and unless leased. Nothing when
    ``parent`` is itself a cache root (one root shared by every namespace)."""
    _real_dir(parent, create=False)
    if _lstat(os.path.join(parent, ROOT_MARKER)) is not None:
        log.info("%s is a cache root (shared by every namespace): nothing to evict", parent)
        return
    for own in (".trash", ".locks"):
        _real_dir(os.path.join(parent, own))
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
                    if _lstat(os.path.join(parent, entry)) is not None:
                        _trash(parent, os.path.join(parent, entry))
                        yield f"evicted {entry}"
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(parent, name))


# --- materialization ---------------------------------------------------------------------------------------------

def _prepare_partial(root: str, final: str, partial: str) -> None:
    """Pick the directory to download into: a leftover .partial (made by the agent, never mounted by a pod), else a
    new one. A published directory without a valid completion record (the model server mounts it read-write) is
    never resumed: it goes to ``.trash``, unless it is empty (kubelet's DirectoryOrCreate; publication replaces it)."""
    _real_dir(os.path.dirname(final))
    st = _lstat(partial)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        _delete(partial)
    fst = _lstat(final)
    if fst is not None and not (stat.S_ISDIR(fst.st_mode) and not os.listdir(final)):
        log.info("moving %s to the trash: a published directory without a valid completion record is never reused",
                 final)
        _trash(root, final)
    _real_dir(partial)


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
                _delete(entry.path)
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
            _trash(root, final)
            os.rename(partial, final)
        elif exc.errno == errno.EBUSY:  # final is a mount point: move the content in instead
            for name in os.listdir(partial):
                os.replace(os.path.join(partial, name), os.path.join(final, name))
            os.rmdir(partial)
        else:
            raise
    _fsync_dir(os.path.dirname(final))
    _write_atomic(os.path.join(final, COMPLETE), f"{time.time():.3f}\n".encode())
    _fsync_dir(final)


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
    _write_atomic(os.path.join(partial, MANIFEST), json.dumps(manifest, indent=1, sort_keys=True).encode())
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
            _empty_trash(root)
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
        if _lstat(os.path.join(final, COMPLETE)) is None:
            return "absent", []
        manifest = read_manifest(final) or {}
        if not manifest.get("files") or not is_complete(final):
            bad = [MANIFEST]
        else:
            bad = [e["path"] for e in manifest["files"] if not checksums.matches(os.path.join(final, e["path"]), e)]
    if not bad:
        return "ok", []
    with model_lock(root, rel, exclusive=True):
        _delete(os.path.join(final, COMPLETE))
    return "corrupt", bad


# --- warm mode ---------------------------------------------------------------------------------------------------

def load_models_file(path: str) -> tuple[list[dict], str]:
    """(normalized specs, short content hash) of a models file: a JSON list of specs or ``{"models": [...]}``."""
    import hashlib

    with open(path, "rb") as fh:
        raw = fh.read()
    data = json.loads(raw or b"[]")
    if isinstance(data, dict):
        data = data.get("models", [])
    if not isinstance(data, list):
        raise AgentError("models file must be a JSON list of model specs or {\"models\": [...]}")
    return [normalize_spec(s) for s in data], hashlib.sha256(raw).hexdigest()[:16]


def readiness_path(root: str, models_hash: str) -> str:
    return os.path.join(root, f".agent-ready-{models_hash}")


def all_complete(root: str, specs: list[dict]) -> bool:
    return all(is_complete(model_dir(root, s)) for s in specs)


WARM_HOLDER = "warm-agent"


def warm_cycle(root: str, specs: list[dict], models_hash: str, opts: AgentConfig, verified: dict | None = None,
               verify_interval: float | None = None) -> bool:
    """Make every listed model complete; the warm agent leases them (so they are not evicted) but does not count
    as a use for LRU. Writes the readiness file only when all are complete, removes it otherwise.

    With ``verified`` (relative dir -> time of its last content check, kept by the caller across cycles), a model
    whose content was not re-hashed within ``verify_interval`` seconds is verified first (a hit checks only the
    structure): a corrupt one is fetched again in the same cycle."""
    for spec in specs:
        rel = model_relative_dir(spec)
        try:
            if verified is not None and time.time() - verified.get(rel, 0.0) >= (verify_interval or 0.0):
                state, bad = verify(root, spec)
                if state == "corrupt":
                    log.warning("%s: content check failed (%s): fetching it again", rel, ", ".join(bad[:5]))
                if state != "absent":
                    verified[rel] = time.time()
            ensure(root, spec, opts, lease_holder=WARM_HOLDER, touch=False)
        except AgentError as exc:
            log.error("%s: %s", rel, exc)
        except Exception as exc:  # noqa: BLE001 - keep warming the other models
            log.error("%s: %s: %s", rel, type(exc).__name__, exc)
    ready = all_complete(root, specs)
    marker = readiness_path(root, models_hash)
    if ready:
        _write_atomic(marker, f"{time.time():.3f}\n".encode())
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker)
    write_usage(root, opts)
    return ready
