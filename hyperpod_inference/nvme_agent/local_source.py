"""Local source: a directory tree on the node (e.g. an FSx for Lustre / OpenZFS mount) copied into the cache.

There is no checksum at the source, so each file is hashed (sha256) while it is copied: the copy is verified by its
size and by the source file being unchanged during the copy (size and mtime before and after), and the recorded
sha256 lets ``verify`` and a resumed run detect later corruption of the cache. Regular files are copied (symlinks
to files are followed; symlinked directories, sockets and FIFOs are skipped). Stdlib only.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import logging
import os
import stat
import uuid

from .checksums import chunks_of

log = logging.getLogger("nvme_agent")

_BUF = 1024 * 1024


def plan(spec: dict) -> tuple[str, list[dict]]:
    """Walk the source directory; return ("latest", manifest entries with the sha256 still unknown)."""
    root = spec["path"]
    if not os.path.isdir(root):
        raise FileNotFoundError(f"local model path {root} does not exist or is not a directory")
    entries = []
    for dirpath, dirs, files in os.walk(root, onerror=_raise):
        dirs.sort()
        for name in sorted(files):
            src = os.path.join(dirpath, name)
            try:
                st = os.stat(src)
            except FileNotFoundError:
                log.warning("skipping %s: dangling symlink", src)
                continue
            if not stat.S_ISREG(st.st_mode):
                log.warning("skipping %s: not a regular file", src)
                continue
            rel = os.path.relpath(src, root).replace(os.sep, "/")
            # the value is filled in by the copy; until then the entry never matches a file
            entries.append({"path": rel, "size": st.st_size, "src": src, "checksum": {"algo": "sha256", "value": None}})
    if not entries:
        raise FileNotFoundError(f"no files under local model path {root}")
    return "latest", entries


def _raise(exc: OSError) -> None:
    raise exc


def _copy(entry: dict, dest_dir: str) -> str:
    """Copy one file to a temporary name, hashing it; rename it into place; return the hex sha256."""
    target = os.path.join(dest_dir, entry["path"])
    directory, name = os.path.split(target)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:8]}.download")
    h = hashlib.sha256()
    copied = 0
    try:
        with open(entry["src"], "rb", buffering=0) as src, open(tmp, "wb", buffering=0) as dst:
            before = os.fstat(src.fileno())
            for chunk in chunks_of(src, _BUF):
                h.update(chunk)
                written = 0
                while written < len(chunk):
                    written += dst.write(chunk[written:])
                copied += len(chunk)
            after = os.fstat(src.fileno())
        if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or copied != entry["size"]:
            raise RuntimeError(f"source file {entry['src']} changed while it was copied "
                               f"({copied} bytes read, {entry['size']} listed)")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return h.hexdigest()


def download(spec: dict, entries: list[dict], dest_dir: str, concurrency: int, on_done) -> None:
    """Copy ``entries`` into ``dest_dir``, several files in parallel; ``on_done(entry, sha256)`` per copied file."""

    def fetch(entry):
        value = _copy(entry, dest_dir)
        entry["checksum"] = {"algo": "sha256", "value": value}
        on_done(entry, value)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = [pool.submit(fetch, e) for e in entries]
        errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise RuntimeError(f"{len(errors)} file(s) failed, first: {errors[0]}") from errors[0]
