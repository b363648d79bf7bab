"""Streaming file checksums (stdlib only). Memory use is one read buffer per call.

The same digests can be computed while a file is being written (:class:`StreamHasher`), so a download need not
read the file back.

Algorithms (the ``algo`` of a manifest entry):

- ``md5``: hex MD5 (S3 ETag of a single-part, non-KMS object).
- ``s3-multipart-md5``: the S3 multipart ETag ``md5(md5(part1)+...+md5(partN))-N``; needs the part size, which the
  agent reads from ``HeadObject(PartNumber=1)``. Every AWS SDK/CLI uploader uses equal parts (except the last), which
  is what this check assumes.
- ``s3-composite``: an S3 composite (per-part) additional checksum of a multipart object, ``base`` one of ``crc32``,
  ``crc32c``, ``sha1``, ``sha256``: ``base64(base(digest1+...+digestN))-N`` over the parts' raw digests (part size
  as above).
- ``sha256`` / ``sha1`` / ``crc32`` / ``crc32c`` / ``crc64nvme``: S3 additional checksums (base64 of the big-endian
  digest), or, for ``sha256`` in hex, the Hub's LFS sha256. ``crc32c`` and ``crc64nvme`` need ``awscrt`` (see
  :func:`crt_checksums`); ``crc32`` is ``isal``'s when it can be imported, else zlib's (see :func:`crc32_function`).
- ``git-sha1``: the git blob id the Hub reports for non-LFS files: ``sha1(b"blob <size>\\0" + content)``.
- ``size``: only the size can be checked against the source (KMS-encrypted objects without additional checksums,
  unknown ETag schemes); the CRC32 of the bytes written is recorded (``recorded``) and checked when the file is read
  back (``verify``, the warm DaemonSet's content check).

S3 objects are verified by a CRC when S3 has one for them (see ``s3_checksum.checksum_for``): it detects the
corruption a download guards against (transmission, storage) as well as MD5 does, at a fraction of its CPU cost.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import stat
import zlib

from . import fs

_BUF = 4 * 1024 * 1024


def chunks_of(fh, size: int = _BUF):
    """Chunks of an unbuffered binary file, read into one reused buffer: use each chunk before taking the next."""
    buf = bytearray(size)
    view = memoryview(buf)
    while True:
        n = fh.readinto(buf)
        if not n:
            return
        yield view[:n]


def _read_chunks(path: str, size: int = _BUF):
    with fs.open_regular(path) as fh:
        yield from chunks_of(fh, size)


@functools.cache
def crt_checksums():
    """``awscrt.checksums`` when it can be imported, else None.

    The stdlib has no CRC-32C or CRC-64/NVME, and a pure-Python CRC would be far slower than MD5; ``awscrt`` (the
    AWS Common Runtime, ``pip install awscrt``, also pulled in by ``botocore[crt]``) computes them with the CPU's CRC
    instructions (45-50 GiB/s on one core here, in cache, where zlib's CRC-32 does ~5 GiB/s). The agent does not
    require it: without it, objects that carry only those checksums are verified by their MD5 ETag. Looked up once
    (a failed import is not cached by Python: every attempt would search ``sys.path`` again).
    """
    try:
        from awscrt import checksums
    except ImportError:
        return None
    return checksums


@functools.cache
def crc32_function():
    """The CRC-32 update function ``(data, crc) -> crc``: ``isal.isal_zlib.crc32`` when ``isal`` can be imported,
    else ``zlib.crc32``.

    zlib 1.2/1.3's table-driven CRC-32 does ~4.5-5 GiB/s on one core on data in cache (as each read is hashed right
    after it arrives), ~0.4 s of CPU for 2 GiB: the largest CPU cost of a download after the network and the page
    cache. ``isal`` (Intel ISA-L, ``pip install isal``; wheels for x86_64 and aarch64) computes the same CRC with the
    CPU's carry-less multiply at 70+ GiB/s. The agent does not require it.
    """
    try:
        from isal.isal_zlib import crc32
    except ImportError:
        return zlib.crc32
    return crc32


class _CrcSpec:
    """A reflected CRC with an all-ones initial value and final XOR (CRC-32, CRC-32C and CRC-64/NVME all are)."""

    def __init__(self, name: str, poly: int, width: int):
        self.name, self.width = name, width
        self.poly = int(f"{poly:0{width}b}"[::-1], 2)  # reflected bit order
        # x^(2^n) modulo the polynomial for n = 0..67: enough for any length below 2^64 bytes (8 * len < 2^67).
        # Built here, once: combine() runs on several transfer threads at a time.
        self._x2n = [1 << (width - 2)]
        while len(self._x2n) < 68:
            self._x2n.append(self.multmodp(self._x2n[-1], self._x2n[-1]))

    def update_function(self):
        if self.name == "crc32":
            return crc32_function()
        crt = crt_checksums()
        if crt is None:
            raise ValueError(f"checksum algorithm {self.name!r} needs the awscrt module (pip install awscrt)")
        return getattr(crt, self.name)

    def multmodp(self, a: int, b: int) -> int:
        """a * b modulo the polynomial, in reflected bit order (zlib's ``multmodp``)."""
        m, p = 1 << (self.width - 1), 0
        while True:
            if a & m:
                p ^= b
                if not a & (m - 1):
                    return p
            m >>= 1
            b = (b >> 1) ^ self.poly if b & 1 else b >> 1

    def combine(self, crc1: int, crc2: int, len2: int) -> int:
        """CRC of ``A + B`` from ``crc(A)``, ``crc(B)`` and ``len(B)`` (zlib's ``crc32_combine``, which the ``zlib``
        module does not expose): microseconds, so ranges of one object can be hashed in parallel."""
        p, n, k = 1 << (self.width - 1), len2, 3  # x^0; x^(8 * len2) built from x^(2^k)
        while n:
            if n & 1:
                p = self.multmodp(self._x2n[k], p)
            n >>= 1
            k += 1
        return self.multmodp(p, crc1) ^ crc2


CRCS = {spec.name: spec for spec in (_CrcSpec("crc32", 0x04C11DB7, 32), _CrcSpec("crc32c", 0x1EDC6F41, 32),
                                     _CrcSpec("crc64nvme", 0xAD93D23594C93659, 64))}


class _Crc:
    def __init__(self, spec: _CrcSpec):
        self.spec = spec
        self.crc = 0
        self._update = spec.update_function()

    def update(self, data) -> None:
        self.crc = self._update(data, self.crc)

    def digest(self) -> bytes:
        return self.crc.to_bytes(self.spec.width // 8, "big")


class StreamHasher:
    """Incremental form of :func:`compute` for the sequential algorithms: feed the bytes in file order with
    ``update`` (large buffers: hashlib and zlib release the GIL), then ``value()`` is what ``compute`` would return.
    ``s3-multipart-md5`` is per part: hash each part with ``StreamHasher("md5")`` and join with :func:`multipart_md5`.
    """

    SEQUENTIAL = ("md5", "sha256", "sha1", "git-sha1", *CRCS)

    def __init__(self, algo: str, params: dict | None = None, size: int | None = None):
        if algo not in self.SEQUENTIAL:
            raise ValueError(f"no streaming form of checksum algorithm {algo!r}")
        self.algo = algo
        self.params = params or {}
        if algo in CRCS:
            self._h = _Crc(CRCS[algo])
        elif algo == "git-sha1":
            if size is None:
                raise ValueError("git-sha1 needs the size up front")
            self._h = hashlib.sha1(usedforsecurity=False)
            self._h.update(b"blob %d\0" % size)
        elif algo == "md5":
            self._h = hashlib.md5(usedforsecurity=False)
        else:
            self._h = hashlib.new(algo)
        self.update = self._h.update

    def digest(self) -> bytes:
        return self._h.digest()

    def value(self) -> str:
        if self.algo in CRCS:
            return base64.b64encode(self.digest()).decode()
        if self.algo in ("sha256", "sha1") and self.params.get("encoding") == "base64":
            return base64.b64encode(self._h.digest()).decode()
        return self._h.hexdigest()


def crc_of_ranges(algo: str, range_digests: list[bytes], range_sizes: list[int]) -> str:
    """The (base64) full-object CRC (``crc32``, ``crc32c`` or ``crc64nvme``) from the big-endian CRC digests of
    consecutive ranges."""
    spec = CRCS[algo]
    crc = 0
    for digest, size in zip(range_digests, range_sizes, strict=True):
        crc = spec.combine(crc, int.from_bytes(digest, "big"), size)
    return base64.b64encode(crc.to_bytes(spec.width // 8, "big")).decode()


def multipart_md5(part_digests: list[bytes]) -> str:
    """The S3 multipart ETag from the raw MD5 digests of the parts, in order."""
    return f"{hashlib.md5(b''.join(part_digests), usedforsecurity=False).hexdigest()}-{len(part_digests)}"


def compute(path: str, algo: str, params: dict | None = None) -> str:
    """Compute the checksum ``algo`` of the file at ``path`` in the encoding the source uses."""
    params = params or {}
    if algo in StreamHasher.SEQUENTIAL:
        h = StreamHasher(algo, params, size=os.lstat(path).st_size)
        for chunk in _read_chunks(path):
            h.update(chunk)
        return h.value()
    if algo == "s3-multipart-md5":
        return multipart_md5(_part_digests(path, int(params["partSize"]), "md5"))
    if algo == "s3-composite":
        return composite(params["base"], _part_digests(path, int(params["partSize"]), params["base"]))
    raise ValueError(f"unknown checksum algorithm {algo!r}")


def _part_digests(path: str, part_size: int, base: str) -> list[bytes]:
    digests = []
    with fs.open_regular(path) as fh:
        buf = bytearray(min(_BUF, part_size))
        view = memoryview(buf)
        while True:
            h = StreamHasher(base)
            remaining = part_size
            got = 0
            while remaining:
                n = fh.readinto(view[:min(len(buf), remaining)])
                if not n:
                    break
                h.update(view[:n])
                got += n
                remaining -= n
            if not got:
                break
            digests.append(h.digest())
    return digests


def composite(base: str, part_digests: list[bytes]) -> str:
    """An S3 composite (per-part) additional checksum: ``base64(base(d1 + ... + dN))-N`` over the parts' raw
    digests."""
    h = StreamHasher(base)
    h.update(b"".join(part_digests))
    return f"{base64.b64encode(h.digest()).decode()}-{len(part_digests)}"


def matches(path: str, entry: dict, computed: str | None = None) -> bool:
    """True iff the file exists, has the manifest size and (unless ``algo`` is ``size``) the manifest checksum.

    ``computed`` is the checksum the transfer already computed over exactly the bytes it wrote to ``path`` (in
    ``entry``'s algorithm and encoding); when given, the file is not read again. An entry whose checksum value is
    not known (``None``) never matches.
    """
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size != entry["size"]:
        return False
    checksum = entry.get("checksum") or {"algo": "size"}
    if checksum["algo"] == "size":
        # a checksum the agent recorded when it wrote the file (the source has none): checked when reading back
        recorded = checksum.get("recorded")
        if recorded is None or computed is not None:
            return True
        try:
            return compute(path, recorded["algo"], recorded) == recorded["value"]
        except OSError:
            return False
    if checksum.get("value") is None:
        return False
    try:
        actual = computed if computed is not None else compute(path, checksum["algo"], checksum)
    except OSError:
        return False
    return actual == checksum["value"]
