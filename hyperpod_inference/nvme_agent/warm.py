"""Warm mode: one cycle of the warm DaemonSet (:func:`warm_cycle`) over the models file, its readiness file
(``<root>/.agent-ready-<hash>``) and the ``check`` readiness probe (:func:`all_complete`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time

from . import fs
from .cache import ensure, verify
from .config import AgentConfig
from .errors import AgentError
from .layout import is_complete, model_dir
from .space import write_usage
from .spec import model_relative_dir, normalize_spec

log = logging.getLogger("nvme_agent")


def load_models_file(path: str) -> tuple[list[dict], str]:
    """(normalized specs, short content hash) of a models file: a JSON list of specs or ``{"models": [...]}``."""
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
        fs.write_atomic(marker, f"{time.time():.3f}\n".encode())
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker)
    write_usage(root, opts)
    return ready
