"""The agent's one file-system layer (stdlib only): every open, atomic write, temporary file and deletion of the
cache and of every source goes through it.

It never follows a link it did not make: files are opened with ``O_NOFOLLOW``, directories it relies on must be real
directories (:func:`real_dir`), reads take regular files only (:func:`read_regular`), and a link is deleted, never
its target (:func:`delete`). Two kinds of temporary names, both in the directory of the file they become:

- ``<path>.tmp-<pid>-<thread>``: a small record written whole by :func:`write_atomic` (the cache's bookkeeping);
- ``.<name>.<random>.download`` (:func:`temp_path`): a downloaded or copied file, written by a source and renamed
  into place when whole (:func:`commit`); an unfinished one is removed by :func:`remove_temps`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
import uuid

from .errors import AgentError

TEMP_SUFFIX = ".download"  # temporary files of a download are ".<name>.<random>.download"
ATOMIC_TEMP = ".tmp-"  # a record being written: "<path>.tmp-<pid>-<thread>"


def lstat(path: str):
    """``os.lstat`` of ``path``, or None when it does not exist."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def open_nofollow(path: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """``os.open`` that refuses a link as the last component (``O_NOFOLLOW``), close-on-exec."""
    return os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)


def real_dir(path: str, create: bool = True) -> None:
    """Make sure ``path`` is a directory and not a link to one (creating it when missing)."""
    st = lstat(path)
    if st is None and create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
        st = lstat(path)
    if st is None or not stat.S_ISDIR(st.st_mode):
        kind = "missing" if st is None else "a symlink" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise AgentError(f"{path} must be a real directory ({kind}): refusing to run; remove it")


def open_regular(path: str):
    """An unbuffered binary file object of ``path``, which must be a regular file and is never followed as a link."""
    fd = open_nofollow(path)
    fh = os.fdopen(fd, "rb", buffering=0)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        fh.close()
        raise OSError(f"{path} is not a regular file")
    return fh


def read_regular(path: str, limit: int | None = None) -> bytes | None:
    """The content of a regular file that is not a link (and holds at most ``limit`` bytes), else None. Opened
    without blocking, so that a FIFO planted in its place is refused instead of waiting for a writer."""
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (limit is not None and st.st_size > limit):
        os.close(fd)  # a directory (which a file object would refuse), a FIFO, a device, or too large
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit)


def write_atomic(path: str, data: bytes, sync: bool = True) -> None:
    """Write ``data`` to ``path`` whole or not at all: into ``<path>.tmp-<pid>-<thread>`` (never through a link),
    fsynced unless ``sync=False``, then renamed over ``path``."""
    tmp = f"{path}{ATOMIC_TEMP}{os.getpid()}-{threading.get_ident()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    try:
        with os.fdopen(open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb") as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = open_nofollow(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- temporary files of a download ---------------------------------------------------------------------------------

def temp_path(target: str) -> str:
    """A new temporary name for ``target``, in its directory: ``.<name>.<8 hex>.download`` (a leftover of a killed
    run is in no manifest, so the next run's scan deletes it)."""
    directory, name = os.path.split(target)
    return os.path.join(directory, f".{name}.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}")


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def create_temp(tmp: str) -> int:
    """Create the temporary file ``tmp`` (its directories too), empty and new (``O_EXCL``: never an existing file or
    a link); return its descriptor, open for writing."""
    os.makedirs(os.path.dirname(tmp), exist_ok=True)
    return open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)


def commit(tmp: str, target: str) -> None:
    """Rename a whole temporary file into place (atomic: ``target`` is always a whole file)."""
    os.replace(tmp, target)


def discard(tmp: str) -> None:
    """Remove a temporary file that will not be committed (gone already is fine)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


@contextlib.contextmanager
def atomic_file(target: str):
    """A new temporary file for ``target`` (:func:`create_temp`), yielded unbuffered for writing; renamed into place
    when the block ends, removed when it raises."""
    tmp = temp_path(target)
    try:
        with os.fdopen(create_temp(tmp), "wb", buffering=0) as fh:
            yield fh
        commit(tmp, target)
    except BaseException:
        discard(tmp)
        raise


def remove_temps(directory: str) -> None:
    """Remove every download's temporary file under ``directory`` (what an unfinished download leaves behind)."""
    for dirpath, _dirs, files in os.walk(directory):
        for name in files:
            if is_temp_name(name):
                discard(os.path.join(dirpath, name))


# --- deleting --------------------------------------------------------------------------------------------------------

def delete(path: str) -> None:
    """Delete ``path`` without following links: a link or a file is unlinked, a directory removed with its tree
    (shutil.rmtree never follows links inside it)."""
    st = lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def trash(root: str, path: str) -> None:
    """Atomically take ``path`` out of the cache (into ``<root>/.trash``), then delete it (a link is only unlinked)."""
    trash_dir = os.path.join(root, ".trash")
    real_dir(trash_dir)
    st = lstat(path)
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        delete(path)
        return
    target = os.path.join(trash_dir, uuid.uuid4().hex)
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return
    delete(target)


def empty_trash(root: str) -> None:
    trash_dir = os.path.join(root, ".trash")
    real_dir(trash_dir)
    with contextlib.suppress(OSError):
        for name in os.listdir(trash_dir):
            delete(os.path.join(trash_dir, name))
