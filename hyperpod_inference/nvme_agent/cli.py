"""Command line: ``python -m nvme_agent {ensure,warm,check,verify,lease,evict-legacy,gc} ...``.

Exit codes: 0 ok; 1 error (or: check says not ready; or a ``local`` source path that does not exist); 2 usage
(bad spec, e.g. a relative ``local`` path); 3 a required Python module is missing; 4 not enough disk space even
after eviction; 5 checksum verification failed (verify: corrupt, marker removed).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import json
import logging
import os
import signal
import socket
import sys
import time

from . import cache, errors, layout, leases, legacy, space, warm, workers
from .config import (
    CACHE_MOUNT,
    DEFAULT_LEASE_TTL,
    DEFAULT_MIN_FREE_PERCENT,
    GC_TIMEOUT_SECONDS,
    SERVICE_ACCOUNT_DIR,
    AgentConfig,
)
from .spec import SpecError, normalize_spec, required_modules

log = logging.getLogger("nvme_agent")

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_MISSING_MODULE, EXIT_NO_SPACE, EXIT_CORRUPT = 0, 1, 2, 3, 4, 5


class MissingModule(errors.AgentError):
    exit_code = EXIT_MISSING_MODULE


def check_modules(specs: list[dict]) -> None:
    """Import every module the specs' sources need; fail with exit code 3 naming the missing ones."""
    needed = sorted({m for s in specs for m in required_modules(s)})
    missing = []
    for name in needed:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a module that fails to import is as good as missing
            missing.append(f"{name} ({type(exc).__name__}: {exc})")
    if missing:
        raise MissingModule("missing Python module(s) required by the model source: " + ", ".join(missing)
                            + " (the agent runs in the endpoint's image; weightCache.agentImage names one that has "
                              "them)")


def _parse_model(text: str) -> dict:
    if text.startswith("@"):
        with open(text[1:]) as fh:
            text = fh.read()
    return normalize_spec(text)


def _options(args) -> AgentConfig:
    return AgentConfig.from_env(min_free_bytes=args.min_free_bytes, min_free_percent=args.min_free_percent,
                                lease_ttl=args.lease_ttl, concurrency=args.concurrency, chunk_size=args.chunk_size,
                                direct_io=args.direct_io, fast_read=args.fast_read, usage_dir=args.usage_dir,
                                root_name=args.root_name)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache-root", default=CACHE_MOUNT,
                        help=f"cache root on the node-local NVMe (hostPath; default {CACHE_MOUNT})")
    common.add_argument("--min-free-bytes", type=int, default=0, help="keep at least this many bytes free")
    common.add_argument("--min-free-percent", type=float, default=DEFAULT_MIN_FREE_PERCENT,
                        help=f"keep at least this %% of the disk free (default {DEFAULT_MIN_FREE_PERCENT:g})")
    common.add_argument("--lease-ttl", type=float, default=DEFAULT_LEASE_TTL,
                        help="seconds a lease stays active after its last touch (default 600)")
    common.add_argument("--concurrency", type=int, default=None,
                        help="parallel requests (S3 ranged GETs, default 16; Hub and local files, default 8; "
                             "env NVME_AGENT_CONCURRENCY)")
    common.add_argument("--chunk-size", type=int, default=None,
                        help="S3 ranged GET size in bytes for objects without a per-part checksum (default 64 MiB; "
                             "multipart objects are fetched one part per GET; env NVME_AGENT_CHUNK_SIZE)")
    common.add_argument("--direct-io", type=int, choices=(0, 1), default=None,
                        help="1 (default): whole blocks written with O_DIRECT; 0: through the page cache "
                             "(env NVME_AGENT_DIRECT_IO)")
    common.add_argument("--fast-read", type=int, choices=(0, 1), default=None,
                        help="1: receive S3 responses through botocore's private response attributes, probed, with "
                             "a fallback (default 0; env NVME_AGENT_FAST_READ)")
    common.add_argument("--usage-dir", default=None,
                        help="a directory shared by every cache root of the disk: each agent writes its root's usage "
                             "there, and a failed free-space watermark lists them all")
    common.add_argument("--root-name", default=None,
                        help="this root's name in --usage-dir (required with it; e.g. the namespace)")
    common.add_argument("--log-level", default=os.environ.get("NVME_AGENT_LOG_LEVEL", "INFO"))

    parser = argparse.ArgumentParser(prog="nvme_agent", description="Materialize model weights on node-local NVMe.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ensure", parents=[common], help="make one model complete (download on a miss); print its dir")
    p.add_argument("--model", required=True, help="model spec JSON (or @file)")
    p.add_argument("--lease-holder", default=HOSTNAME_HOLDER,
                   help=f"also take a lease on the model under this name (default {HOSTNAME_HOLDER}: the host's, a "
                        "pod's name; '' for none)")
    p.add_argument("--hold", metavar="READY_FILE", default=None,
                   help="then write READY_FILE and keep the lease fresh every --interval until SIGTERM, which "
                        "releases it (a native sidecar: its startup probe waits for READY_FILE)")
    p.add_argument("--interval", type=float, default=60.0, help="with --hold: seconds between lease refreshes")
    p = sub.add_parser("warm", parents=[common], help="keep every model of a models file complete")
    p.add_argument("--models-file", required=True)
    p.add_argument("--interval", type=float, default=60.0, help="seconds between checks (default 60)")
    p.add_argument("--once", action="store_true", help="one cycle; exit 0 iff all complete")
    p.add_argument("--verify-interval", type=float, default=86400.0,
                   help="seconds between re-hashes of each complete model's content (default 86400; also at start)")
    p = sub.add_parser("check", parents=[common], help="exit 0 iff every model of a models file is complete")
    p.add_argument("--models-file", required=True)
    p = sub.add_parser("verify", parents=[common], help="re-hash a complete model; unmark it when corrupt")
    p.add_argument("--model", required=True)
    p = sub.add_parser("lease", parents=[common], help="hold a lease on a model (refreshed every interval)")
    p.add_argument("--model", required=True)
    p.add_argument("--holder", required=True, help=f"the lease's name ({HOSTNAME_HOLDER}: the host's)")
    p.add_argument("--interval", type=float, default=60.0)
    p.add_argument("--once", action="store_true", help="touch once and exit")
    p.add_argument("--release", action="store_true", help="remove the lease and exit")
    p = sub.add_parser("evict-legacy", help="evict the models cached directly under the cache parent (the previous "
                                            "layout); never a cache root")
    p.add_argument("--cache-parent", required=True, help="the mount of weightCache.hostPath")
    p.add_argument("--lease-ttl", type=float, default=DEFAULT_LEASE_TTL)
    p.add_argument("--log-level", default=os.environ.get("NVME_AGENT_LOG_LEVEL", "INFO"))
    p = sub.add_parser("gc", help="delete this stack's old code ConfigMaps of the namespace once nothing mounts them")
    p.add_argument("--current", required=True, help="the code ConfigMap in use (never deleted)")
    p.add_argument("--selector", required=True, help="the labels of this stack's code ConfigMaps (k=v,k=v)")
    p.add_argument("--namespace", default=None, help="default: the service account's")
    p.add_argument("--interval", type=float, default=30.0, help="seconds between passes (default 30)")
    p.add_argument("--timeout", type=float, default=float(GC_TIMEOUT_SECONDS),
                   help=f"give up after this many seconds (exit 1; default {GC_TIMEOUT_SECONDS})")
    p.add_argument("--api-url", default=None, help="default: env NVME_AGENT_KUBE_API, else the in-cluster API")
    p.add_argument("--token-file", default=f"{SERVICE_ACCOUNT_DIR}/token")
    p.add_argument("--ca-file", default=f"{SERVICE_ACCOUNT_DIR}/ca.crt")
    p.add_argument("--log-level", default=os.environ.get("NVME_AGENT_LOG_LEVEL", "INFO"))
    return parser


def _hold(final: str, holder: str, interval: float) -> int:
    """Keep ``holder``'s lease on ``final`` fresh every ``interval`` seconds until SIGTERM, which releases it (the
    pod ends: a native sidecar is stopped after the model server). A loop for the pod's life, like ``warm``: garbage
    collection back on, minus the objects of the start-up."""
    gc.freeze()
    gc.enable()
    try:
        while True:
            if layout.is_complete(final):
                leases.touch_lease(final, holder)
            time.sleep(interval)
    except SystemExit:
        leases.release_lease(final, holder)
        raise


HOSTNAME_HOLDER = "@hostname"  # a pod's host name is its name (the lease holder of a pod)


def _holder(name: str | None) -> str | None:
    return socket.gethostname() if name == HOSTNAME_HOLDER else (name or None)


def _run(args) -> int:
    if args.cmd == "gc":
        from . import code_gc  # only here: the other commands' start-up does not pay for ssl and urllib

        return code_gc.run(args)
    if args.cmd == "evict-legacy":
        for line in legacy.evict_legacy(args.cache_parent, args.lease_ttl):
            print(line, flush=True)
        return EXIT_OK
    root = args.cache_root
    opts = _options(args)
    layout.prepare_root(root)
    if args.cmd in ("ensure", "warm") and space.on_kubelet_disk(root):
        log.warning("the cache root %s is on the same device as kubelet's pod data (the node's root disk?): is the "
                    "instance-store NVMe mounted at weightCache.hostPath?", root)
    if args.cmd == "ensure":
        # a hit needs none of the source's modules (importing botocore alone takes ~0.1 s of every pod start): they
        # are checked only when the model has to be downloaded
        holder = _holder(args.lease_holder)
        if args.hold is not None:
            if not holder:
                raise errors.AgentError("--hold keeps a lease: give a --lease-holder")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(args.hold)  # a restarted sidecar is ready again only once the model is checked again
        final = cache.ensure(root, _parse_model(args.model), opts, lease_holder=holder,
                             before_download=lambda spec: check_modules([spec]))
        space.write_usage(root, opts)
        print(final, flush=True)
        if args.hold is None:
            return EXIT_OK
        with open(args.hold, "w") as fh:
            fh.write(f"# ready: {final}\n")  # a Python comment: the startup probe runs it with python3
        return _hold(final, holder, args.interval)
    if args.cmd == "check":
        specs, _ = warm.load_models_file(args.models_file)
        return EXIT_OK if warm.all_complete(root, specs) else EXIT_ERROR
    if args.cmd == "verify":
        state, bad = cache.verify(root, _parse_model(args.model))
        print(json.dumps({"state": state, "corrupt": bad}), flush=True)
        return {"ok": EXIT_OK, "absent": EXIT_ERROR}.get(state, EXIT_CORRUPT)
    if args.cmd == "lease":
        args.holder = _holder(args.holder)
        final = layout.model_dir(root, _parse_model(args.model))
        if args.release:
            leases.release_lease(final, args.holder)
            return EXIT_OK
        if args.once:
            if layout.is_complete(final):
                leases.touch_lease(final, args.holder)
            return EXIT_OK
        return _hold(final, args.holder, args.interval)
    if args.cmd == "warm":
        # a loop for the pod's life: garbage collection back on (``__main__`` turns it off for the start-up), minus
        # the objects of the start-up, which live as long as the process
        gc.freeze()
        gc.enable()
        first = True
        verified: dict[str, float] = {}  # the content of each model is re-hashed at start, then every interval
        while True:
            specs, digest = warm.load_models_file(args.models_file)
            if first:
                check_modules(specs)
                first = False
            ready = warm.warm_cycle(root, specs, digest, opts, verified, args.verify_interval)
            log.info("warm cycle: %d model(s), ready=%s", len(specs), ready)
            if args.once:
                return EXIT_OK if ready else EXIT_ERROR
            time.sleep(args.interval)
    raise AssertionError(args.cmd)


EXIT_SIGTERM = 143


def _on_sigterm(*_) -> None:
    """Stop: workers see ``CANCEL`` between reads and files; the main thread unwinds (its waits give them
    ``workers.GRACE`` seconds), the source cleans its temporary files, and the process exits 143. A second SIGTERM
    while stopping changes nothing."""
    if workers.CANCEL.is_set():
        return
    workers.CANCEL.set()
    log.warning("SIGTERM: stopping")
    raise SystemExit(EXIT_SIGTERM)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO), stream=sys.stderr,
                        format="nvme-agent %(levelname)s %(message)s")
    for noisy in ("botocore", "urllib3", "httpx", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _run(args)
    except SpecError as exc:
        log.error("bad model spec: %s", exc)
        return EXIT_USAGE
    except errors.AgentError as exc:
        log.error("%s", exc)
        return exc.exit_code
    except Exception as exc:  # noqa: BLE001 - one clear line instead of a traceback; never includes the token
        log.error("%s: %s", type(exc).__name__, exc)
        return EXIT_ERROR
