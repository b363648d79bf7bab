"""Readers' leases on a model: ``<model>/.leases/<holder>``, active while touched within the lease TTL. A model
with an active lease is never evicted (see ``space.ensure_space``, ``legacy.evict_legacy``)."""

from __future__ import annotations

import contextlib
import os
import stat
import time

from . import fs
from .errors import AgentError
from .layout import LEASES


def _check_holder(holder: str) -> str:
    if not holder or "/" in holder or holder.startswith(".") or len(holder) > 200:
        raise AgentError(f"invalid lease holder name {holder!r}")
    return holder


def touch_lease(final: str, holder: str) -> str:
    leases = os.path.join(final, LEASES)
    fs.real_dir(leases)
    path = os.path.join(leases, _check_holder(holder))
    fd = fs.open_nofollow(path, os.O_WRONLY | os.O_CREAT)
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
        st = fs.lstat(os.path.join(final, LEASES, name))
        if st is not None and stat.S_ISREG(st.st_mode) and now - st.st_mtime <= ttl:
            active.append(name)
    return active
