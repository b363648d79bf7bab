"""The agent's settings, read from flags and the environment in one place (stdlib only).

Knobs (a flag wins over its variable):

- ``--concurrency`` / ``NVME_AGENT_CONCURRENCY``: parallel requests (S3 ranged GETs, default 16; Hub and local
  files, default 8).
- ``--chunk-size`` / ``NVME_AGENT_CHUNK_SIZE``: S3 ranged GET size for objects without a per-part checksum
  (default 64 MiB).
- ``--direct-io`` / ``NVME_AGENT_DIRECT_IO``: ``1`` (default) writes whole blocks with O_DIRECT, ``0`` everything
  through the page cache.
- ``--fast-read`` / ``NVME_AGENT_FAST_READ``: ``1`` receives S3 responses straight into the read buffer through the
  ``http.client`` response under botocore (private attributes: probed per response, logged once, else the public
  ``StreamingBody.readinto`` / ``read``). Off by default.
- ``--min-free-bytes``, ``--min-free-percent``, ``--lease-ttl``: the cache's free-space watermark and lease TTL.
- ``--usage-dir``, ``--root-name``: where every root's usage is shared (``<usage-dir>/<root name>.json``; off when
  not given) and this root's name there (required with ``--usage-dir``).
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading

MiB = 1024 * 1024
DEFAULT_LEASE_TTL = 600.0
#: Where the library's pods mount what the agent reads, so their commands need not name it: the cache root
#: (``--cache-root``'s default) and the Hugging Face token Secret (``<TOKEN_DIR>/token``, read unless
#: ``HF_TOKEN`` or ``HF_TOKEN_PATH`` says otherwise).
CACHE_MOUNT = "/cache"
TOKEN_DIR = "/var/run/secrets/hf-token"
#: ``--min-free-percent``'s default (``weightCache.minFreePercent``'s too).
DEFAULT_MIN_FREE_PERCENT = 10.0
#: ``gc``: the pod's service account files, and how long it waits for old code ConfigMaps to be unreferenced.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
GC_TIMEOUT_SECONDS = 5 * 3600 + 1800

log = logging.getLogger("nvme_agent")


def _flag(value: str | None, name: str) -> bool | None:
    if value is None or value == "":
        return None
    if value not in ("0", "1"):
        raise ValueError(f"{name} must be 0 or 1, got {value!r}")
    return value == "1"


def _int(value, name: str, minimum: int = 1) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {number}")
    return number


class AgentConfig:
    """Every setting of a run. ``AgentConfig.from_env(**flags)`` fills what the flags leave out from the environment;
    the constructor alone reads nothing."""

    def __init__(self, min_free_bytes: int = 0, min_free_percent: float = 0.0, lease_ttl: float = DEFAULT_LEASE_TTL,
                 concurrency: int | None = None, chunk_size: int | None = None, direct_io: bool | None = None,
                 fast_read: bool | None = None, read_size: int = MiB, write_size: int = 32 * 1024,
                 verify_retries: int = 2, usage_dir: str | None = None, root_name: str | None = None):
        self.min_free_bytes = int(min_free_bytes or 0)
        self.min_free_percent = float(min_free_percent or 0.0)
        self.lease_ttl = float(lease_ttl)
        self.concurrency = _int(concurrency, "concurrency")
        self.chunk_size = _int(chunk_size, "chunk size", MiB) or 64 * MiB
        self.direct_io = True if direct_io is None else bool(direct_io)
        self.fast_read = bool(fast_read)
        self.read_size = _int(read_size, "read size", 4096)
        self.write_size = _int(write_size, "write size", 4096)
        self.verify_retries = verify_retries
        self.usage_dir = usage_dir or None
        if self.usage_dir and not re.fullmatch(r"\w[\w.-]{0,99}", root_name or "", re.ASCII):
            raise ValueError(f"--root-name must be 1-100 letters, digits, '_', '.' or '-' ('.' and '-' not first), "
                             f"got {root_name!r}")
        self.root_name = root_name
        # the run's transfer state (s3_source, s3_fetch): its S3 clients (one per region, for every request of the
        # run), whether direct I/O still works (see refuse_direct_io) and whether the fast read's fallback was logged
        self.direct_io = self.direct_io and hasattr(os, "O_DIRECT")
        self.lock = threading.Lock()
        self.s3_clients = {}
        self.fast_read_logged = False
        # single-part objects up to this size are fetched in one GET so that their (sequential) checksum is computed
        # while streaming; larger ones are fetched in ranges and hashed after the download
        self.stream_hash_max = 1024 * MiB

    @classmethod
    def from_env(cls, environ=None, **flags) -> AgentConfig:
        env = os.environ if environ is None else environ
        given = {k: v for k, v in flags.items() if v is not None}
        defaults = {
            "concurrency": _int(env.get("NVME_AGENT_CONCURRENCY"), "NVME_AGENT_CONCURRENCY"),
            "chunk_size": _int(env.get("NVME_AGENT_CHUNK_SIZE"), "NVME_AGENT_CHUNK_SIZE", MiB),
            "direct_io": _flag(env.get("NVME_AGENT_DIRECT_IO"), "NVME_AGENT_DIRECT_IO"),
            "fast_read": _flag(env.get("NVME_AGENT_FAST_READ"), "NVME_AGENT_FAST_READ"),
        }
        return cls(**{**{k: v for k, v in defaults.items() if v is not None}, **given})

    def parallel(self, default: int) -> int:
        return self.concurrency or default

    def refuse_direct_io(self, exc: OSError) -> None:
        """The cache's filesystem refused direct I/O: every later write of the run goes through the page cache."""
        with self.lock:
            refused_now, self.direct_io = self.direct_io, False
        if refused_now:  # logged once, also when several transfer threads are refused at once
            log.info("direct I/O refused by the cache's filesystem (%s): writing through the page cache", exc)

    def floor(self, total: int) -> int:
        return max(self.min_free_bytes, math.ceil(total * self.min_free_percent / 100.0))
