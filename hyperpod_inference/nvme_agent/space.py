"""Space on the cache's disk and every root's usage: free space (injectable), the free-space watermark and LRU
eviction (:func:`ensure_space`), the usage records roots share (``<usage-dir>/<root name>.json``) and the check that
the cache is on its own disk (:func:`on_kubelet_disk`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time

from . import fs
from .config import AgentConfig
from .errors import InsufficientSpace
from .layout import COMPLETE, complete_models, last_used, model_lock
from .leases import active_leases

log = logging.getLogger("nvme_agent")

#: Tests (or embedding code) may set this to ``f(root) -> (free_bytes, total_bytes)``.
disk_usage_hook = None
FAKE_DISK_ENV = "NVME_AGENT_FAKE_DISK_BYTES"


def tree_bytes(path: str) -> int:
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
        return max(total - tree_bytes(root), 0), total
    usage = shutil.disk_usage(root)
    return usage.free, usage.total


#: a file kubelet bind-mounts into every container from its own directory on the node (usually the root disk)
KUBELET_FILE = "/etc/hostname"


def on_kubelet_disk(root: str, reference: str | None = None) -> bool:
    """True when the cache root is on the same device as ``reference`` (in a pod: kubelet's pod directory, usually
    the node's root disk), i.e. no instance-store NVMe is mounted at the cache's hostPath."""
    try:
        return os.stat(root).st_dev == os.stat(reference or KUBELET_FILE).st_dev
    except OSError:
        return False


USAGE_MAX_BYTES, USAGE_MAX_AGE, USAGE_MAX_FILES = 4096, 86400.0, 1000


def write_usage(root: str, opts: AgentConfig) -> tuple[str, int, int] | None:
    """With ``opts.usage_dir``: write this root's (name, bytes, complete models) to ``<usage dir>/<name>.json``
    atomically and return them. A failed write (a full disk) is logged, never fatal; a linked directory refuses."""
    if not opts.usage_dir:
        return None
    fs.real_dir(opts.usage_dir)
    usage = (opts.root_name, tree_bytes(root), len(complete_models(root)))
    record = {"root": usage[0], "bytes": usage[1], "models": usage[2], "time": time.time()}
    try:
        fs.write_atomic(os.path.join(opts.usage_dir, usage[0] + ".json"), json.dumps(record).encode(), sync=False)
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
            rec = json.loads(fs.read_regular(os.path.join(usage_dir, name), USAGE_MAX_BYTES) or b"")
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
            fs.trash(root, final)
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
    ours = tree_bytes(root)
    raise InsufficientSpace(
        f"{message}Usage: this cache root {ours} bytes, the rest of the disk (other namespaces' cache roots, "
        f"other files) {max(total - free - ours, 0)} bytes")
