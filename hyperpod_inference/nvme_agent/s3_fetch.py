"""One S3 object's transfer: its byte ranges and how each is hashed as it streams in (:class:`FileJob`, from the
object's checksum), its temporary file, and the ranged GET of one range written at its offset (:func:`fetch_range`),
retried when the stream breaks. Reads go into per-thread buffers carved from huge-page mappings; writes of whole
blocks may go around the page cache (direct I/O).
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import logging
import os
import re
import threading

from . import fs, workers
from .checksums import CRCS, StreamHasher, composite, crc_of_ranges, multipart_md5
from .config import AgentConfig
from .s3_checksum import head_part_one

log = logging.getLogger("nvme_agent")

MiB = 1024 * 1024


class FileJob:
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
        return head_part_one(client, bucket, self.entry["key"])

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



def streaming_errors():
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
DIRECT_IO_ALIGN = 4096  # offsets, lengths and buffer addresses of direct writes (see FileJob.write_direct)


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


def fetch_range(client, bucket: str, job: FileJob, index: int, config: AgentConfig, retryable) -> None:
    """GET one byte range, hashing and writing it as it arrives (whole blocks with direct I/O, see
    :meth:`FileJob.write_direct`; the rest with ``os.pwrite`` through the page cache); retry a broken stream."""
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
        # the first attempt at a file's first range may already have its response (see FileJob.get_part_one)
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
