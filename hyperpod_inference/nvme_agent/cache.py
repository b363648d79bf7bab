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
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import math
import os
import shutil
import threading
import time
import uuid

from . import checksums
from .spec import HUGGINGFACE, LOCAL, S3, model_relative_dir, normalize_spec

log = logging.getLogger("nvme_agent")

COMPLETE = ".complete"
MANIFEST = "manifest.json"
LAST_USED = ".last-used"
LEASES = ".leases"
PARTIAL_SUFFIX = ".partial"
RESERVED = {COMPLETE, MANIFEST, LAST_USED, LEASES}
MANIFEST_VERSION = 1
DEFAULT_LEASE_TTL = 600.0


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


class Options:
    def __init__(self, min_free_bytes: int = 0, min_free_percent: float = 0.0, lease_ttl: float = DEFAULT_LEASE_TTL,
                 concurrency: int | None = None, chunk_size: int | None = None, max_io_queue: int | None = None,
                 verify_retries: int = 2):
        self.min_free_bytes = int(min_free_bytes or 0)
        self.min_free_percent = float(min_free_percent or 0.0)
        self.lease_ttl = float(lease_ttl)
        self.concurrency = concurrency
        self.chunk_size = chunk_size
        self.max_io_queue = max_io_queue
        self.verify_retries = verify_retries
        self._s3_settings = None

    def s3_settings(self):
        """The S3 transfer settings of this run (one object, so listing and downloading share one client)."""
        if self._s3_settings is None:
            from . import s3_source
            self._s3_settings = s3_source.TransferSettings(self.concurrency, self.chunk_size, self.max_io_queue)
        return self._s3_settings

    def floor(self, total: int) -> int:
        return max(self.min_free_bytes, math.ceil(total * self.min_free_percent / 100.0))


# --- layout and small file helpers -------------------------------------------------------------------------------

def model_dir(root: str, spec: dict) -> str:
    return os.path.join(root, model_relative_dir(spec))


def _lock_path(root: str, rel: str) -> str:
    return os.path.join(root, ".locks", rel.replace("/", "--") + ".lock")


@contextlib.contextmanager
def model_lock(root: str, rel: str, exclusive: bool, blocking: bool = True):
    """flock on the model's lock file; yields False when ``blocking=False`` and the lock is taken."""
    path = _lock_path(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_manifest(final: str) -> dict | None:
    try:
        with open(os.path.join(final, MANIFEST), "rb") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def is_complete(final: str) -> bool:
    """Fast check (no hashing): marker present, manifest readable, every listed file present with its size."""
    if not os.path.isfile(os.path.join(final, COMPLETE)):
        return False
    manifest = read_manifest(final)
    if not manifest or manifest.get("version") != MANIFEST_VERSION:
        return False
    for entry in manifest.get("files", []):
        try:
            if os.stat(os.path.join(final, entry["path"])).st_size != entry["size"]:
                return False
        except OSError:
            return False
    return True


def touch_last_used(final: str) -> None:
    with contextlib.suppress(OSError):
        _write_atomic(os.path.join(final, LAST_USED), f"{time.time():.3f}\n".encode())


def last_used(final: str) -> float:
    try:
        with open(os.path.join(final, LAST_USED)) as fh:
            return float(fh.read().strip())
    except (OSError, ValueError):
        try:
            return os.stat(os.path.join(final, COMPLETE)).st_mtime
        except OSError:
            return 0.0


def _check_holder(holder: str) -> str:
    if not holder or "/" in holder or holder.startswith(".") or len(holder) > 200:
        raise AgentError(f"invalid lease holder name {holder!r}")
    return holder


def touch_lease(final: str, holder: str) -> str:
    leases = os.path.join(final, LEASES)
    os.makedirs(leases, exist_ok=True)
    path = os.path.join(leases, _check_holder(holder))
    with open(path, "a"):
        pass
    os.utime(path)
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
        with contextlib.suppress(OSError):
            if now - os.stat(os.path.join(final, LEASES, name)).st_mtime <= ttl:
                active.append(name)
    return active


def _trash(root: str, path: str) -> None:
    """Atomically take ``path`` out of the cache, then delete it."""
    trash = os.path.join(root, ".trash")
    os.makedirs(trash, exist_ok=True)
    target = os.path.join(trash, uuid.uuid4().hex)
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return
    shutil.rmtree(target, ignore_errors=True)


def _empty_trash(root: str) -> None:
    trash = os.path.join(root, ".trash")
    with contextlib.suppress(OSError):
        for name in os.listdir(trash):
            shutil.rmtree(os.path.join(trash, name), ignore_errors=True)


# --- eviction ----------------------------------------------------------------------------------------------------

def complete_models(root: str) -> list[str]:
    """Relative dirs of every complete model under root."""
    out = []
    with contextlib.suppress(OSError):
        for key in sorted(os.listdir(root)):
            kdir = os.path.join(root, key)
            if key.startswith(".") or not os.path.isdir(kdir):
                continue
            for rev in sorted(os.listdir(kdir)):
                if rev.startswith(".") or rev.endswith(PARTIAL_SUFFIX):
                    continue
                if os.path.isfile(os.path.join(kdir, rev, COMPLETE)):
                    out.append(f"{key}/{rev}")
    return out


def ensure_space(root: str, needed: int, keep_rel: str, opts: Options) -> None:
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
            return
    raise InsufficientSpace(
        f"not enough space in {root}: need {needed} bytes plus a free-space watermark of {floor} bytes, "
        f"available {free} bytes (of {total}) after evicting {len(evicted)} model(s); leased or in-use models are "
        f"never evicted")


# --- materialization ---------------------------------------------------------------------------------------------

def _plan(spec: dict, opts: Options) -> tuple[str, list[dict]]:
    if spec["source"] == S3:
        from . import s3_source
        return s3_source.plan(spec, opts.s3_settings())
    if spec["source"] == LOCAL:
        from . import local_source
        return local_source.plan(spec)
    from . import hf_source
    return hf_source.plan(spec, opts.concurrency or 8)


def _download(spec: dict, revision: str, entries: list[dict], dest: str, opts: Options, on_done) -> None:
    if spec["source"] == S3:
        from . import s3_source
        s3_source.download(spec, entries, dest, opts.s3_settings(), on_done)
    elif spec["source"] == LOCAL:
        from . import local_source
        local_source.download(spec, entries, dest, opts.concurrency or 8, on_done)
    else:
        from . import hf_source
        hf_source.download(spec, revision, entries, dest, opts.concurrency or 8, on_done)


def _prepare_partial(root: str, final: str, partial: str) -> None:
    """Pick the directory to download into: a leftover .partial, else an unmarked final dir's content, else new."""
    final_exists = os.path.isdir(final)
    if os.path.isdir(partial):
        if final_exists and os.listdir(final):
            _trash(root, final)
        return
    if final_exists and os.listdir(final):
        log.info("reusing the content of unmarked %s", final)
        os.rename(final, partial)
        return
    os.makedirs(partial, exist_ok=True)


def _describe(spec: dict, entries: list[dict], opts: Options) -> None:
    """Give checksums to entries the source planned without one (S3: a HEAD per object)."""
    if spec["source"] == S3:
        from . import s3_source
        s3_source.describe(spec, entries, opts.s3_settings())


def _scan_partial(partial: str, entries: list[dict], spec: dict, opts: Options) -> tuple[set[str], int]:
    """Keep verified files, delete everything else; return (verified paths, verified bytes)."""
    wanted = {e["path"]: e for e in entries}
    keep_dirs = {LEASES}
    if spec["source"] == HUGGINGFACE:
        from .hf_source import HF_METADATA_DIR
        keep_dirs.add(HF_METADATA_DIR)
    present = []
    for dirpath, dirs, files in os.walk(partial):
        if dirpath == partial:
            dirs[:] = [d for d in dirs if d not in keep_dirs]
        for name in files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, partial).replace(os.sep, "/")
            if rel in wanted:
                present.append((path, rel))
            else:
                os.unlink(path)
    _describe(spec, [wanted[rel] for _, rel in present], opts)
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


def _materialize(root: str, spec: dict, rel: str, opts: Options) -> None:
    final = os.path.join(root, rel)
    partial = final + PARTIAL_SUFFIX
    revision, entries = _plan(spec, opts)
    clash = {e["path"].split("/")[0] for e in entries} & RESERVED
    if clash:
        raise AgentError(f"the model contains file names the cache reserves: {sorted(clash)}")
    _prepare_partial(root, final, partial)
    for name in (COMPLETE, MANIFEST):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(partial, name))
    verified, have = _scan_partial(partial, entries, spec, opts)
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

        _download(spec, revision, todo, partial, opts, on_done)
        if bad:
            attempt += 1
            names = ", ".join(e["path"] for e in bad[:5])
            if attempt > opts.verify_retries:
                raise VerificationFailed(f"checksum mismatch after {attempt} attempt(s): {names}")
            log.warning("checksum mismatch, fetching again: %s", names)
        todo = bad
    if spec["source"] == HUGGINGFACE:
        from .hf_source import clean_bookkeeping
        clean_bookkeeping(partial)
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


def ensure(root: str, spec: dict, opts: Options | None = None, lease_holder: str | None = None,
           touch: bool = True, before_download=None) -> str:
    """Make the model complete under root (download on a miss) and return its directory.

    A hit takes a shared lock and checks the marker and the manifest only (no hashing). ``touch`` updates the LRU
    timestamp; ``lease_holder`` records a lease that protects the model from eviction while it is refreshed;
    ``before_download(spec)`` runs (holding the model's lock) only when the model has to be fetched.
    """
    opts = opts or Options()
    spec = normalize_spec(spec)
    rel = model_relative_dir(spec)
    final = os.path.join(root, rel)
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
    """Re-hash a complete model. On corruption remove its marker (the next ensure re-fetches the bad files).

    Returns (state, bad paths) with state one of ``absent``, ``ok``, ``corrupt``.
    """
    spec = normalize_spec(spec)
    rel = model_relative_dir(spec)
    final = os.path.join(root, rel)
    with model_lock(root, rel, exclusive=True):
        if not os.path.isfile(os.path.join(final, COMPLETE)):
            return "absent", []
        manifest = read_manifest(final) or {}
        bad = [e["path"] for e in manifest.get("files", [])
               if not checksums.matches(os.path.join(final, e["path"]), e)]
        if not manifest.get("files"):
            bad = [MANIFEST]
        if bad:
            os.unlink(os.path.join(final, COMPLETE))
            return "corrupt", bad
        return "ok", []


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


def warm_cycle(root: str, specs: list[dict], models_hash: str, opts: Options) -> bool:
    """Make every listed model complete; the warm agent leases them (so they are not evicted) but does not count
    as a use for LRU. Writes the readiness file only when all are complete, removes it otherwise."""
    for spec in specs:
        rel = model_relative_dir(spec)
        try:
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
    return ready
