"""S3 source: a listing for names, sizes and ETags, a HEAD per file for its checksum (:mod:`.s3_checksum`); parallel
ranged GETs (across and within files) to download, verifying each file's checksum while it streams in (each file's
transfer is a :class:`.s3_fetch.FileJob`; this module schedules them).

The endpoint is whatever botocore resolves (it honours ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3`` itself).
"""

from __future__ import annotations

import collections
import threading

from . import fs, workers
from .config import AgentConfig
from .s3_checksum import describe_one
from .s3_fetch import FileJob, fetch_range, streaming_errors
from .source import Source

CONCURRENCY = 16  # parallel requests of a run unless --concurrency says otherwise


def s3_client(config: AgentConfig, spec: dict):
    """The run's S3 client for the spec's region, made once per region and kept on the run's config for every request
    (a client is thread-safe; making one costs 0.1-0.2 s: botocore decodes the S3 model, its endpoint rules and the
    endpoints)."""
    region = spec.get("region")
    with config.lock:
        if region not in config.s3_clients:
            config.s3_clients[region] = _client(spec, config)
        return config.s3_clients[region]


def _client(spec: dict, config: AgentConfig):
    """A client from botocore's own session, loader and parsers (public API only).

    Timestamps in responses (``LastModified``, ``Expires``) stay the strings S3 sent: the agent reads none of them,
    and botocore parses each with dateutil (every HEAD and GET carries one, a listing one per object). The session's
    response parser factory has the hook for that, ``set_parser_defaults``, which the AWS CLI uses the same way."""
    import botocore.session
    from botocore.config import Config

    cfg = Config(
        max_pool_connections=max(config.parallel(CONCURRENCY) * 2, 10),
        retries={"max_attempts": 8, "mode": "adaptive"},
        user_agent_extra="hyperpod-nvme-agent",
    )
    session = botocore.session.Session()
    session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=str)
    return session.create_client("s3", region_name=spec.get("region"), config=cfg)


def plan(spec: dict, config: AgentConfig) -> tuple[str, list[dict]]:
    """List the objects under the prefix; return (revision, manifest entries).

    The entries have the path, key, size and ETag the listing gives, and no ``checksum`` yet: that takes a HEAD per
    object, which :func:`download` sends for each file right before its GETs (the first bytes arrive while later
    files are still being looked up) and :func:`describe` sends for files that are already on disk.
    """
    client = s3_client(config, spec)
    bucket, prefix = spec["bucket"], spec["prefix"]
    entries = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            rel = key[len(prefix):]
            if not rel or rel.endswith("/"):
                continue  # "directory" markers
            # the path is checked and normalized with the other entries' (cache.check_entries)
            entries.append({"path": rel, "key": key, "size": int(obj["Size"]),
                            "etag": str(obj.get("ETag", "")).strip('"')})
    if not entries:
        raise FileNotFoundError(f"no objects under s3://{bucket}/{prefix}")
    return "latest", sorted(entries, key=lambda e: e["path"])


def describe(spec: dict, entries: list[dict], config: AgentConfig) -> None:
    """Set the ``checksum`` of planned entries that have none (a HEAD per object, in parallel)."""
    todo = [e for e in entries if "checksum" not in e]
    if todo:
        client = s3_client(config, spec)
        failed = workers.each(todo, lambda e: describe_one(client, spec["bucket"], e), config.parallel(CONCURRENCY),
                              "s3-head")
        if failed:
            raise failed[0][1]


def download(spec: dict, entries: list[dict], dest_dir: str, config: AgentConfig, on_done) -> None:
    """Download ``entries`` into ``dest_dir``; call ``on_done(entry, computed)`` once per file that is in place.

    A file is written under a temporary name and renamed when whole, so a file under its final name is always
    complete. ``computed`` is the entry's checksum computed over the bytes written (``None`` when the transfer
    could not compute it in flight: the caller then reads the file back). ``on_done`` runs on a transfer thread.
    """
    return _download_streaming(spec, entries, dest_dir, config, on_done)


class _Schedule:
    """Hands the transfer threads their tasks: a range of a file whose ranges are known, oldest file first (files
    finish one after the other), else the next file to prepare (its HEAD). A thread that finds nothing waits while
    another one is still preparing a file (its ranges are coming); all end when every task has been handed out, or
    at :meth:`stop`."""

    def __init__(self, jobs: list[FileJob]):
        self._cond = threading.Condition()
        self._unprepared = collections.deque(jobs)
        self._ranges = collections.deque()
        self._preparing = 0
        self._stopped = False

    def next(self) -> tuple[FileJob, int | None] | None:
        """``(job, range index)``, ``(job, None)`` to prepare the job, or None: no more tasks."""
        with self._cond:
            while True:
                if self._stopped or workers.CANCEL.is_set():
                    return None
                if self._ranges:
                    return self._ranges.popleft()
                if self._unprepared:
                    self._preparing += 1
                    return self._unprepared.popleft(), None
                if not self._preparing:
                    return None
                self._cond.wait(0.2)  # also to see CANCEL

    def prepared(self, job: FileJob, indexes) -> None:
        with self._cond:
            self._preparing -= 1
            self._ranges.extend((job, i) for i in indexes)
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()


def _download_streaming(spec: dict, entries: list[dict], dest_dir: str, config: AgentConfig, on_done) -> None:
    """Parallel ranged GETs over all files at once, each worker writing its range at its offset and hashing it.

    Each file is prepared by a transfer thread: a HEAD for its checksum (unless the entry has one; a checksum per part
    also needs the part size, which the GET of part 1 gives, see :meth:`FileJob.get_part_one`), its ranges, its
    temporary file; that thread then GETs the file's first range while the others take the next tasks. Range
    boundaries follow the object's parts when the checksum is per part (multipart ETag: one MD5 per part; composite
    S3 checksum); a full-object CRC is computed per range and the range CRCs combined; an object with another
    sequential checksum (MD5 ETag, full-object SHA-256/SHA-1) is one GET up to ``stream_hash_max``. No file is read
    back to verify it, except large objects of that last kind.
    """
    client = s3_client(config, spec)
    bucket = spec["bucket"]
    retryable = streaming_errors()
    jobs = [FileJob(e, dest_dir, config) for e in entries]
    schedule = _Schedule(jobs)
    errors = []

    def finish(job: FileJob) -> None:
        ok = job.error is None
        try:
            if ok:
                job.close_files()
                fs.commit(job.tmp, job.target)
                computed = job.computed()
                if (job.entry.get("checksum") or {"algo": "size"})["algo"] == "size" and computed is not None:
                    job.entry["checksum"] = {"algo": "size", "recorded": {"algo": "crc32", "value": computed}}
                on_done(job.entry, computed)
        except BaseException as exc:  # noqa: BLE001 - reported below
            ok = False
            job.error = job.error or exc
        finally:
            job.close(keep=ok)
        if job.error is not None:
            errors.append((job.entry["path"], job.error))

    def run(job: FileJob, index: int) -> None:
        if job.error is None:
            try:
                fetch_range(client, bucket, job, index, config, retryable)
            except BaseException as exc:  # noqa: BLE001 - the file fails, the others go on
                job.error = job.error or exc
        with job.lock:
            job.pending -= 1
            last = job.pending == 0
        if last:
            finish(job)

    def prepare(job: FileJob) -> bool:
        """HEAD (when needed), ranges, temporary file; True when the job has ranges to GET."""
        ranges = []
        try:
            if "checksum" not in job.entry:
                describe_one(client, bucket, job.entry, part_one=lambda: job.get_part_one(client, bucket))
                job.layout()
            job.open()
            ranges = job.ranges
        except BaseException as exc:  # noqa: BLE001 - the file fails, the others go on
            job.error = exc
            job.close(keep=False)
            errors.append((job.entry["path"], exc))
            return False
        finally:
            schedule.prepared(job, range(1, len(ranges)))  # the first range is this thread's
        if not ranges:  # an empty object: nothing to GET
            finish(job)
        return bool(ranges)

    def worker() -> None:
        while (task := schedule.next()) is not None:
            job, index = task
            if index is not None:
                run(job, index)
            elif prepare(job):
                run(job, 0)

    try:
        failures = workers.run(config.parallel(CONCURRENCY), worker, "s3")
    except BaseException:
        # interrupted (SIGTERM): no new tasks; the temporary files of unfinished files go (their descriptors close
        # with the process: a worker stuck in a stalled read may still hold one); finished files stay, verified
        schedule.stop()
        for job in jobs:
            if job.fd is not None:
                fs.discard(job.tmp)
        raise
    for job in jobs:
        if job.fd is not None:  # never finished (a direct_fd is only ever open beside fd)
            job.close(keep=False)
    if failures:
        raise failures[0]  # a worker's own failure (the tasks catch theirs)
    workers.check()
    if errors:
        path, exc = errors[0]
        raise RuntimeError(f"{len(errors)} file(s) failed, first {path}: {exc}") from exc


class S3Source(Source):
    """Objects under an S3 prefix (see :func:`plan`, :func:`describe`, :func:`download`)."""

    def plan(self):
        return plan(self.spec, self.config)

    def describe(self, entries):
        describe(self.spec, entries, self.config)

    def download(self, revision, entries, dest, on_done):
        download(self.spec, entries, dest, self.config, on_done)
