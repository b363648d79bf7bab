"""S3 source: a listing for names, sizes and ETags, a HEAD per file for its checksum; parallel ranged GETs (across and
within files) to download, verifying each file's checksum while it streams in.

The endpoint is whatever botocore resolves (it honours ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3`` itself).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import http.client
import logging
import os
import re
import threading

from . import fs, workers
from .checksums import CRCS, StreamHasher, composite, crc_of_ranges, crt_checksums, multipart_md5
from .config import AgentConfig
from .source import Source

log = logging.getLogger("nvme_agent")

MiB = 1024 * 1024
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


def _head_part_one(client, bucket: str, key: str) -> int:
    """Size of part 1 of a multipart object, by a HEAD with ``PartNumber=1``."""
    return int(client.head_object(Bucket=bucket, Key=key, PartNumber=1)["ContentLength"])


def _checksum_for(client, bucket: str, key: str, head: dict, part_one=None) -> dict:
    """Pick the checksum to verify this object with (see checksums.py for the algorithms).

    Order: a full-object SHA-256 / SHA-1 additional checksum; then, when ``awscrt`` can be imported
    (:func:`checksums.crt_checksums`), a CRC-64/NVME (S3's default, always full-object) or CRC-32C (full-object or
    composite) additional checksum; then a CRC32 one (full-object or composite). A CRC catches transmission and
    storage corruption at a fraction of MD5's CPU cost. Then the MD5 ETag (single-part or multipart); then composite
    SHA checksums (KMS / SSE-C objects, whose ETag is no MD5); else only the size. Without ``awscrt``, CRC-32C and
    CRC-64/NVME are not used (the stdlib has no implementation of them), so such objects fall to the MD5 ETag.

    A checksum value without a ``-N`` part count is taken as full-object only for single-part objects or with
    ``ChecksumType: FULL_OBJECT``: on a multipart object without a ``ChecksumType`` it is ambiguous (some S3
    implementations return a composite value without the part count) and is not used.

    A per-part checksum needs the part size: ``part_one()`` gives it (default: :func:`_head_part_one`).
    """
    etag = str(head.get("ETag", "")).strip('"')
    multipart = "-" in etag
    full_object = head.get("ChecksumType") == "FULL_OBJECT" or (not multipart and not head.get("ChecksumType"))

    def additional(field):
        value = head.get(field)
        return value if value and full_object and "-" not in value else None

    for field, algo in (("ChecksumSHA256", "sha256"), ("ChecksumSHA1", "sha1")):
        if additional(field):
            return {"algo": algo, "value": head[field], "encoding": "base64"}
    part_size_cache = []

    def part_size(parts: int) -> int | None:
        """Size of part 1 (every part but the last has it) when it is consistent with ``parts`` parts."""
        if not part_size_cache:
            try:
                part_size_cache.append(part_one() if part_one else _head_part_one(client, bucket, key))
            except Exception as exc:  # noqa: BLE001 - any failure just downgrades the check
                log.debug("no part size for s3://%s/%s: %s", bucket, key, exc)
                part_size_cache.append(0)
        size = part_size_cache[0]
        return size if size > 0 and -(-int(head["ContentLength"]) // size) == parts else None

    def composite_of(field: str, base: str) -> dict | None:
        if head.get("ChecksumType") == "FULL_OBJECT":
            return None
        value = str(head.get(field) or "")
        digest, _, parts = value.rpartition("-")
        if digest and parts.isdigit() and part_size(int(parts)):
            return {"algo": "s3-composite", "base": base, "value": value, "partSize": part_size(int(parts))}
        return None

    if (head.get("ChecksumCRC64NVME") or head.get("ChecksumCRC32C")) and crt_checksums() is not None:
        # S3 has CRC-64/NVME only as a full-object checksum: its value needs no ChecksumType to be unambiguous
        value = head.get("ChecksumCRC64NVME")
        if value and "-" not in value:
            return {"algo": "crc64nvme", "value": value, "encoding": "base64"}
        if additional("ChecksumCRC32C"):
            return {"algo": "crc32c", "value": head["ChecksumCRC32C"], "encoding": "base64"}
        crc = composite_of("ChecksumCRC32C", "crc32c")
        if crc:
            return crc
    if additional("ChecksumCRC32"):
        return {"algo": "crc32", "value": head["ChecksumCRC32"], "encoding": "base64"}
    crc = composite_of("ChecksumCRC32", "crc32")
    if crc:
        return crc
    kms_or_ssec = head.get("SSECustomerAlgorithm") or str(head.get("ServerSideEncryption", "")).startswith("aws:kms")
    if not kms_or_ssec and len(etag) == 32 and all(c in "0123456789abcdef" for c in etag):
        return {"algo": "md5", "value": etag}
    if not kms_or_ssec and multipart:
        md5, _, parts = etag.partition("-")
        if len(md5) == 32 and parts.isdigit() and part_size(int(parts)):
            return {"algo": "s3-multipart-md5", "value": etag, "partSize": part_size(int(parts))}
    # composite (per-part) SHA checksums: also usable for KMS / SSE-C objects, whose ETag is no MD5
    for field, base in (("ChecksumSHA256", "sha256"), ("ChecksumSHA1", "sha1")):
        found = composite_of(field, base)
        if found:
            return found
    return {"algo": "size"}


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


class ObjectChanged(RuntimeError):
    """An object was replaced between the listing and its HEAD."""


def _describe_one(client, bucket: str, entry: dict, part_one=None) -> None:
    """HEAD one listed object and set ``entry["checksum"]`` (see :func:`_checksum_for`, which gets ``part_one``)."""
    head = client.head_object(Bucket=bucket, Key=entry["key"], ChecksumMode="ENABLED")
    etag = str(head.get("ETag", "")).strip('"')
    if (entry.get("etag") and etag != entry["etag"]) or int(head["ContentLength"]) != entry["size"]:
        raise ObjectChanged(f"s3://{bucket}/{entry['key']} changed after it was listed (ETag {entry.get('etag')!r}, "
                            f"{entry['size']} bytes; now {etag!r}, {head['ContentLength']} bytes): run the agent "
                            f"again")
    entry["checksum"] = _checksum_for(client, bucket, entry["key"], head, part_one)


def describe(spec: dict, entries: list[dict], config: AgentConfig) -> None:
    """Set the ``checksum`` of planned entries that have none (a HEAD per object, in parallel)."""
    todo = [e for e in entries if "checksum" not in e]
    if todo:
        client = s3_client(config, spec)
        failed = workers.each(todo, lambda e: _describe_one(client, spec["bucket"], e), config.parallel(CONCURRENCY),
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


class _FileJob:
    """One object being downloaded: its temporary file, its ranges and the in-flight hashes."""

    def __init__(self, entry: dict, dest_dir: str, config: AgentConfig):
        self.entry = entry
        self.config = config
        self.target = os.path.join(dest_dir, entry["path"])
        self.tmp = fs.temp_path(self.target)
        self.fd = None
        self.direct_fd = None  # the same file opened with O_DIRECT, or None
        self.lock = threading.Lock()
        self.error = None
        self.ranges = []
        self.hashers = None  # one StreamHasher per range, or None: verify by reading the file back
        self.combine = None
        self.pending = 0
        self.first = None  # (response, end): the GET of part 1 (see get_part_one), until range 0 takes it
        if "checksum" in entry:
            self.layout()

    def get_args(self, bucket: str) -> dict:
        args = {"Bucket": bucket, "Key": self.entry["key"]}
        if self.entry.get("etag"):
            args["IfMatch"] = '"' + self.entry["etag"] + '"'  # the object must not change under us
        return args

    def get_part_one(self, client, bucket: str) -> int:
        """Size of part 1 of this multipart object, learnt by GETting that part (``PartNumber=1``) instead of
        HEADing it: the response is kept for the file's first range, which is part 1 when the checksum is per part,
        so the size costs no request of its own (BENCHMARKS.md). An endpoint that does not answer with part 1's
        byte range (moto sends the whole object) gets the HEAD instead."""
        response = client.get_object(**self.get_args(bucket), PartNumber=1)
        answered = _content_range(response)
        if answered and answered[0] == 0 and answered[2] == self.entry["size"]:
            self.first = (response, answered[1])
            return answered[1]
        response["Body"].close()
        return _head_part_one(client, bucket, self.entry["key"])

    def take_first(self, end: int | None = None) -> dict | None:
        """The kept part-1 response if it is the range ``[0, end)``; one kept for nothing else is closed."""
        first, self.first = self.first, None
        if first is not None:
            if first[1] == end:
                return first[0]
            first[0]["Body"].close()
        return None

    def layout(self) -> None:
        """The ranges to GET and how to hash them, from the entry's checksum."""
        entry, config = self.entry, self.config
        size = entry["size"]
        checksum = entry.get("checksum") or {"algo": "size"}
        algo = checksum["algo"]
        if algo in ("s3-multipart-md5", "s3-composite"):
            # one range per part: each part's digest is computed as the part streams in
            step = int(checksum["partSize"])
            base = "md5" if algo == "s3-multipart-md5" else checksum["base"]
            self.ranges = [(off, min(off + step, size)) for off in range(0, size, step)]
            self.hashers = [StreamHasher(base) for _ in self.ranges]
            if algo == "s3-multipart-md5":
                self.combine = lambda: multipart_md5([h.digest() for h in self.hashers])
            else:
                self.combine = lambda: composite(base, [h.digest() for h in self.hashers])
        elif algo in CRCS:
            # CRCs of ranges combine into the object's CRC: parallel ranged GETs, each range hashed in flight
            step = max(config.chunk_size, MiB)
            self.ranges = [(off, min(off + step, size)) for off in range(0, size, step)]
            self.hashers = [StreamHasher(algo) for _ in self.ranges]
            self.combine = lambda: crc_of_ranges(algo, [h.digest() for h in self.hashers],
                                                 [end - start for start, end in self.ranges])
        elif algo in StreamHasher.SEQUENTIAL and size <= config.stream_hash_max:
            self.ranges = [(0, size)] if size else []
            self.hashers = [StreamHasher(algo, checksum, size=size)]
            self.combine = lambda: self.hashers[0].value()
        else:
            step = max(config.chunk_size, MiB)
            self.ranges = [(off, min(off + step, size)) for off in range(0, size, step)]
            if algo == "size":
                # nothing to check against at the source (e.g. SSE-KMS without additional checksums): a CRC32 of the
                # bytes written is recorded, so that verify and the warm DaemonSet's check detect later corruption
                self.hashers = [StreamHasher("crc32") for _ in self.ranges]
                self.combine = lambda: crc_of_ranges("crc32", [h.digest() for h in self.hashers],
                                                     [end - start for start, end in self.ranges])
        self.pending = len(self.ranges)

    def open(self) -> None:
        """Create the temporary file, empty: it grows as the ranges are written at their offsets (extending it with
        ``ftruncate`` first made the writes into the sparse file cost more system time: 1.73 s against 1.60 s per
        2 GiB in a micro-benchmark, BENCHMARKS.md). Every range is written whole or the file is dropped, and the
        size is checked before a file is accepted."""
        self.fd = fs.create_temp(self.tmp)
        if self.config.direct_io:
            try:
                self.direct_fd = fs.open_nofollow(self.tmp, os.O_WRONLY | os.O_DIRECT)
            except OSError as exc:  # EINVAL: a filesystem without direct I/O (e.g. tmpfs on older kernels)
                self.config.refuse_direct_io(exc)

    def write_direct(self, chunk: memoryview, offset: int) -> int:
        """Write the whole blocks at the start of ``chunk`` (``offset`` is block-aligned) with direct I/O; returns
        how many bytes were written (the caller writes the rest through the page cache).

        A direct write needs the buffer's address, the offset and the length aligned to the device's logical block
        size: 4096 covers the usual 512 and 4096, and read buffers start on a page (:class:`_BufferArena`). A
        filesystem that opens with O_DIRECT but refuses such a write (EINVAL) turns direct I/O off for the run."""
        aligned = len(chunk) - len(chunk) % DIRECT_IO_ALIGN
        written = 0
        try:
            while written < aligned:
                written += os.pwrite(self.direct_fd, chunk[written:aligned], offset + written)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            self.config.refuse_direct_io(exc)
        return written

    def close_files(self) -> None:
        for name in ("direct_fd", "fd"):
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                os.close(fd)

    def close(self, keep: bool) -> None:
        self.take_first()
        self.close_files()
        if not keep:
            fs.discard(self.tmp)

    def computed(self):
        return self.combine() if self.combine and self.hashers is not None else None


def _streaming_errors():
    import botocore.exceptions

    # botocore's StreamingBody turns urllib3's read timeouts / protocol errors into the botocore ones; reads through
    # http.client (the opt-in _fast_reader) raise the socket's own (ConnectionError, TimeoutError) or http.client's.
    # Read through StreamingBody, a response that carries a checksum of its own (a whole object; a part, on S3) is
    # checked by botocore at its end: a mismatch is bytes that went wrong on the way, so the range is fetched again
    return (botocore.exceptions.ResponseStreamingError, botocore.exceptions.IncompleteReadError,
            botocore.exceptions.ReadTimeoutError, botocore.exceptions.ConnectionError,
            botocore.exceptions.FlexibleChecksumError, ConnectionError, TimeoutError, http.client.HTTPException)


READ_RETRIES = 5

_thread_state = threading.local()


HUGE_PAGE = 2 * MiB
DIRECT_IO_ALIGN = 4096  # offsets, lengths and buffer addresses of direct writes (see _FileJob.write_direct)


class _BufferArena:
    """Read buffers carved out of private anonymous mappings advised for transparent huge pages (``MADV_HUGEPAGE``).

    The first write to each 4 KiB page of a fresh buffer is a page fault: 16 threads' 1 MiB buffers make 4,096 of
    them, 36-100 ms of system time on the benchmark machine (more in its slow state). Where THP is enabled (``always``
    or ``madvise``, the common default) the kernel backs the mapping with 2 MiB pages instead: 8 faults, 3-4 ms for
    the same 16 MiB. Without THP the mapping behaves like any other memory. Buffers live as long as the
    process (a thread keeps its buffer), so mappings are never unmapped.
    """

    CHUNK = 16 * MiB  # a multiple of HUGE_PAGE: Linux aligns such anonymous mappings to a huge page

    def __init__(self):
        self._lock = threading.Lock()
        self._free = memoryview(b"")

    def take(self, size: int) -> memoryview:
        span = -(-size // 4096) * 4096  # whole pages, so that no two threads' buffers share one
        with self._lock:
            if len(self._free) < span:
                self._free = memoryview(_huge_page_mapping(max(self.CHUNK, -(-span // HUGE_PAGE) * HUGE_PAGE)))
            buffer, self._free = self._free[:size], self._free[span:]
        return buffer


def _huge_page_mapping(length: int):
    import mmap

    mapping = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # the default, MAP_SHARED, is shmem
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None:
        with contextlib.suppress(OSError):  # a kernel built without THP
            mapping.madvise(advice)
    return mapping


_buffers = _BufferArena()


def _read_buffer(size: int) -> memoryview:
    """This thread's reusable read buffer, at least ``size`` bytes (no allocation, and no page faults, per read).

    It grows to the largest range the thread has fetched, up to the read size: a thread that only fetches small files
    holds no more memory than they need. Buffers come from :class:`_BufferArena`."""
    buf = getattr(_thread_state, "buffer", None)
    if buf is None or len(buf) < size:
        buf = _thread_state.buffer = _buffers.take(size)
    return buf


def _readinto_of(body):
    """The public ``readinto`` of botocore's StreamingBody (botocore 1.44 has it, 1.34 not), or None: use ``read``."""
    return getattr(body, "readinto", None)


def _fast_reader(body, config: AgentConfig):
    """Opt-in (``NVME_AGENT_FAST_READ=1``): ``readinto`` of the ``http.client`` response under botocore's
    StreamingBody and urllib3, reached through their private ``_raw_stream`` / ``_fp`` attributes, which receives
    straight into the read buffer (the public path copies each read once more). Probed on every response; anything
    else (another botocore or urllib3, a content-encoded or checksum-validated response) takes the public path,
    logged once. Returns (readinto, release) or None."""
    raw = getattr(body, "_raw_stream", None)
    response = getattr(raw, "_fp", None)
    release = getattr(raw, "release_conn", None)
    usable = (type(body).__name__ == "StreamingBody" and isinstance(response, http.client.HTTPResponse)
              and callable(release) and not response.getheader("content-encoding"))
    if not usable:
        with config.lock:
            first, config.fast_read_logged = not config.fast_read_logged, True
        if first:
            log.info("fast read unavailable for this response (%s): reading through botocore's public API",
                     type(body).__name__)
        return None
    return response.readinto, lambda: release() if response.isclosed() else None


class RangeMismatch(RuntimeError):
    """The endpoint answered a ranged GET with other bytes than those asked for."""


def _content_range(response: dict) -> tuple[int, int, int | None] | None:
    """``(start, end, total)`` of the response's ``Content-Range`` (``end`` exclusive, ``total`` None for ``*``), or
    None without a well-formed one."""
    match = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+|\*)", str(response.get("ContentRange") or "").strip())
    if not match:
        return None
    return int(match[1]), int(match[2]) + 1, None if match[3] == "*" else int(match[3])


def _check_range(response: dict, start: int, end: int, key: str) -> None:
    """Refuse a response that is not the range asked for (an endpoint that ignores ``Range`` answers 200 with the
    whole object): written at the range's offset it would corrupt the file, and only a checksum could tell."""
    content_range = response.get("ContentRange")
    answered = _content_range(response)
    if answered and answered[:2] == (start, end):
        return
    if not content_range and start == 0 and response.get("ContentLength") == end:
        return  # the whole object, asked for as one range
    raise RangeMismatch(f"GET {key!r} bytes {start}-{end - 1} was answered with Content-Range {content_range!r} and "
                        f"Content-Length {response.get('ContentLength')} (does the S3 endpoint ignore Range headers?)")


def _fetch_range(client, bucket: str, job: _FileJob, index: int, config: AgentConfig, retryable) -> None:
    """GET one byte range, hashing and writing it as it arrives (whole blocks with direct I/O, see
    :meth:`_FileJob.write_direct`; the rest with ``os.pwrite`` through the page cache); retry a broken stream."""
    start, end = job.ranges[index]
    streamed = job.hashers is not None
    want_max = min(config.read_size, end - start)
    buffer = _read_buffer(want_max)[:want_max]  # reads of at most read_size, also into a larger buffer kept from before
    write_size = config.write_size
    kwargs = dict(job.get_args(bucket), Range=f"bytes={start}-{end - 1}")
    for attempt in range(1, READ_RETRIES + 1):
        hasher = None
        if streamed:  # a fresh hash for every attempt: the range is written again from its start
            old = job.hashers[index]
            hasher = job.hashers[index] = StreamHasher(old.algo, old.params, size=job.entry["size"])
        # the first attempt at a file's first range may already have its response (see _FileJob.get_part_one)
        response = job.take_first(end) if index == 0 and attempt == 1 else None
        if response is None:
            response = client.get_object(**kwargs)
        body = response["Body"]
        fast = _fast_reader(body, config) if config.fast_read else None
        # direct writes from the read buffer (only a readinto buffer is page-aligned) while offsets stay aligned
        direct = job.direct_fd is not None and config.direct_io and start % DIRECT_IO_ALIGN == 0
        # without direct writes, each read's bytes are hashed and written as they come (readinto would copy them
        # into the buffer first: botocore's readinto is urllib3's, which reads a bytes object and copies it)
        readinto = fast[0] if fast else _readinto_of(body) if direct else None
        direct = direct and readinto is not None
        offset = start
        try:
            _check_range(response, start, end, job.entry["key"])
            while offset < end:
                workers.check()
                want = min(len(buffer), end - offset)
                if readinto is not None:
                    n = readinto(buffer[:want])
                    while direct and 0 < n < want:  # whole buffers, so that each write is whole blocks
                        got = readinto(buffer[n:want])
                        if not got:
                            break
                        n += got
                    chunk = buffer[:n]
                else:
                    chunk = memoryview(body.read(want))
                    n = len(chunk)
                if not n:
                    raise ConnectionError(f"stream ended at byte {offset} of {job.entry['key']!r}")
                if hasher is not None:
                    hasher.update(chunk)
                written = 0
                if direct and config.direct_io:
                    written = job.write_direct(chunk, offset)
                direct = written == n  # after a partial block, offsets are no longer aligned
                while written < n:
                    written += os.pwrite(job.fd, chunk[written:written + write_size], offset + written)
                offset += n
            if fast:
                fast[1]()  # the response is read to its end: its connection goes back to urllib3's pool
            elif readinto(buffer[:1]) if readinto is not None else body.read(1):  # botocore checks length, checksum
                raise RangeMismatch(f"GET {job.entry['key']!r} bytes {start}-{end - 1} sent more bytes than asked")
            return
        except retryable as exc:
            if attempt == READ_RETRIES:
                raise
            log.info("retrying s3://%s/%s bytes %d-%d after a broken stream (%s)", bucket, job.entry["key"],
                     start, end - 1, exc)
        finally:
            body.close()


class _Schedule:
    """Hands the transfer threads their tasks: a range of a file whose ranges are known, oldest file first (files
    finish one after the other), else the next file to prepare (its HEAD). A thread that finds nothing waits while
    another one is still preparing a file (its ranges are coming); all end when every task has been handed out, or
    at :meth:`stop`."""

    def __init__(self, jobs: list[_FileJob]):
        self._cond = threading.Condition()
        self._unprepared = collections.deque(jobs)
        self._ranges = collections.deque()
        self._preparing = 0
        self._stopped = False

    def next(self) -> tuple[_FileJob, int | None] | None:
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

    def prepared(self, job: _FileJob, indexes) -> None:
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
    also needs the part size, which the GET of part 1 gives, see :meth:`_FileJob.get_part_one`), its ranges, its
    temporary file; that thread then GETs the file's first range while the others take the next tasks. Range
    boundaries follow the object's parts when the checksum is per part (multipart ETag: one MD5 per part; composite
    S3 checksum); a full-object CRC is computed per range and the range CRCs combined; an object with another
    sequential checksum (MD5 ETag, full-object SHA-256/SHA-1) is one GET up to ``stream_hash_max``. No file is read
    back to verify it, except large objects of that last kind.
    """
    client = s3_client(config, spec)
    bucket = spec["bucket"]
    retryable = _streaming_errors()
    jobs = [_FileJob(e, dest_dir, config) for e in entries]
    schedule = _Schedule(jobs)
    errors = []

    def finish(job: _FileJob) -> None:
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

    def run(job: _FileJob, index: int) -> None:
        if job.error is None:
            try:
                _fetch_range(client, bucket, job, index, config, retryable)
            except BaseException as exc:  # noqa: BLE001 - the file fails, the others go on
                job.error = job.error or exc
        with job.lock:
            job.pending -= 1
            last = job.pending == 0
        if last:
            finish(job)

    def prepare(job: _FileJob) -> bool:
        """HEAD (when needed), ranges, temporary file; True when the job has ranges to GET."""
        ranges = []
        try:
            if "checksum" not in job.entry:
                _describe_one(client, bucket, job.entry, part_one=lambda: job.get_part_one(client, bucket))
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
