"""Local source: a directory tree on the node (e.g. an FSx for Lustre / OpenZFS mount) copied into the cache.

There is no checksum at the source, so each file is hashed (sha256) while it is copied: the copy is verified by its
size and by the source file being unchanged during the copy (size and mtime before and after), and the recorded
sha256 lets ``verify`` and a resumed run detect later corruption of the cache. Regular files are copied. A link is
followed only when its target stays inside the node-mounted file system (the spec's ``mount``, default its ``path``)
and is copied as a regular file; a link that leads outside fails the plan, naming it. Sockets, FIFOs and devices are
skipped. Stdlib only.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat

from . import fs, workers
from .checksums import chunks_of
from .source import Source

log = logging.getLogger("nvme_agent")

_BUF = 1024 * 1024


class LinkOutsideMount(RuntimeError):
    """A link in the source leads outside the node-mounted file system."""


def _inside(path: str, mount: str) -> bool:
    return path == mount or path.startswith(mount.rstrip("/") + "/")


def plan(spec: dict) -> tuple[str, list[dict]]:
    """Walk the source directory; return ("latest", manifest entries with the sha256 still unknown)."""
    root = spec["path"]
    st = _stat_or_none(root)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise FileNotFoundError(f"local model path {root} does not exist or is not a directory")
    mount = os.path.realpath(spec.get("mount") or root)
    real_root = os.path.realpath(root)
    if "/" in (mount, real_root):  # a link to the root is the root in another spelling: the node's whole file system
        raise LinkOutsideMount(f"local model path {root} (mount {spec.get('mount') or root}) leads to the root "
                               "directory: the agent copies only a folder of a node-mounted file system")
    if not _inside(real_root, mount):
        raise LinkOutsideMount(f"local model path {root} leads to {real_root}, outside the mount {mount}")
    entries: list[dict] = []
    _walk(real_root, "", mount, {(st.st_dev, st.st_ino)}, entries)
    if not entries:
        raise FileNotFoundError(f"no files under local model path {root}")
    return "latest", entries


def _stat_or_none(path: str):
    try:
        return os.stat(path)
    except OSError:
        return None


def _walk(directory: str, rel: str, mount: str, seen: set, entries: list[dict]) -> None:
    with os.scandir(directory) as it:
        items = sorted(it, key=lambda e: e.name)
    for item in items:
        name = rel + item.name
        src = item.path
        if item.is_symlink():
            src = os.path.realpath(item.path)
            if not _inside(src, mount):
                raise LinkOutsideMount(f"local model file {name} is a link to {src}, outside the mount {mount}: "
                                       f"links are followed only inside the node-mounted file system")
            st = _stat_or_none(src)
            if st is None:
                log.warning("skipping %s: dangling link", name)
                continue
        else:
            st = item.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            if (st.st_dev, st.st_ino) in seen:
                log.warning("skipping %s: a link back into a directory already copied", name)
                continue
            _walk(src, name + "/", mount, seen | {(st.st_dev, st.st_ino)}, entries)
        elif stat.S_ISREG(st.st_mode):
            # the value is filled in by the copy; until then the entry never matches a file
            entries.append({"path": name, "size": st.st_size, "src": src, "ino": [st.st_dev, st.st_ino],
                            "checksum": {"algo": "sha256", "value": None}})
        else:
            log.warning("skipping %s: not a regular file", name)


def _copy(entry: dict, dest_dir: str) -> str:
    """Copy one file to a temporary name, hashing it; rename it into place; return the hex sha256 (the temporary
    file and the rename are :func:`fs.atomic_file`'s)."""
    h = hashlib.sha256()
    copied = 0
    with fs.atomic_file(os.path.join(dest_dir, entry["path"])) as dst:
        # the planned file itself: never a link (O_NOFOLLOW on the resolved path), the same inode as planned
        with os.fdopen(fs.open_nofollow(entry["src"]), "rb", buffering=0) as src:
            before = os.fstat(src.fileno())
            if not stat.S_ISREG(before.st_mode) or [before.st_dev, before.st_ino] != list(entry["ino"]):
                raise RuntimeError(f"source file {entry['src']} was replaced after it was listed")
            for chunk in chunks_of(src, _BUF):
                workers.check()
                h.update(chunk)
                written = 0
                while written < len(chunk):
                    written += dst.write(chunk[written:])
                copied += len(chunk)
            after = os.fstat(src.fileno())
        if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or copied != entry["size"]:
            raise RuntimeError(f"source file {entry['src']} changed while it was copied "
                               f"({copied} bytes read, {entry['size']} listed)")
    return h.hexdigest()


def download(spec: dict, entries: list[dict], dest_dir: str, concurrency: int, on_done) -> None:
    """Copy ``entries`` into ``dest_dir``, several files in parallel; ``on_done(entry, sha256)`` per copied file."""

    def fetch(entry):
        value = _copy(entry, dest_dir)
        entry["checksum"] = {"algo": "sha256", "value": value}
        on_done(entry, value)

    failed = workers.each(entries, fetch, concurrency, "local")
    if failed:
        entry, exc = failed[0]
        raise RuntimeError(f"{len(failed)} file(s) failed, first {entry['path']}: {exc}") from exc


class LocalSource(Source):
    """A directory tree on the node (see :func:`plan`, :func:`download`); checksums are computed by the copy."""

    def plan(self):
        return plan(self.spec)

    def download(self, revision, entries, dest, on_done):
        download(self.spec, entries, dest, self.config.parallel(8), on_done)
