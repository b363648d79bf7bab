"""Streaming file checksums (stdlib only). Memory use is one read buffer per call.

Algorithms (the ``algo`` of a manifest entry):

- ``md5``: hex MD5 (S3 ETag of a single-part, non-KMS object).
- ``s3-multipart-md5``: the S3 multipart ETag ``md5(md5(part1)+...+md5(partN))-N``; needs the part size, which the
  agent reads from ``HeadObject(PartNumber=1)``. Every AWS SDK/CLI uploader uses equal parts (except the last), which
  is what this check assumes.
- ``sha256`` / ``sha1`` / ``crc32``: S3 additional checksums (base64 of the big-endian digest), or, for ``sha256``
  in hex, the Hub's LFS sha256.
- ``git-sha1``: the git blob id the Hub reports for non-LFS files: ``sha1(b"blob <size>\\0" + content)``.
- ``size``: only the size can be checked (KMS-encrypted objects, composite checksums, unknown ETag schemes).
"""

from __future__ import annotations

import base64
import hashlib
import os
import zlib

_BUF = 4 * 1024 * 1024


def _read_chunks(path: str, size: int = _BUF):
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(size)
        view = memoryview(buf)
        while True:
            n = fh.readinto(buf)
            if not n:
                return
            yield view[:n]


def compute(path: str, algo: str, params: dict | None = None) -> str:
    """Compute the checksum ``algo`` of the file at ``path`` in the encoding the source uses."""
    params = params or {}
    if algo == "md5":
        h = hashlib.md5(usedforsecurity=False)
        for chunk in _read_chunks(path):
            h.update(chunk)
        return h.hexdigest()
    if algo == "git-sha1":
        h = hashlib.sha1(usedforsecurity=False)
        h.update(b"blob %d\0" % os.path.getsize(path))
        for chunk in _read_chunks(path):
            h.update(chunk)
        return h.hexdigest()
    if algo in ("sha256", "sha1"):
        h = hashlib.new(algo)
        for chunk in _read_chunks(path):
            h.update(chunk)
        return base64.b64encode(h.digest()).decode() if params.get("encoding") == "base64" else h.hexdigest()
    if algo == "crc32":
        crc = 0
        for chunk in _read_chunks(path):
            crc = zlib.crc32(chunk, crc)
        return base64.b64encode(crc.to_bytes(4, "big")).decode()
    if algo == "s3-multipart-md5":
        part_size = int(params["partSize"])
        digests = []
        with open(path, "rb", buffering=0) as fh:
            while True:
                h = hashlib.md5(usedforsecurity=False)
                remaining = part_size
                got = 0
                while remaining:
                    chunk = fh.read(min(_BUF, remaining))
                    if not chunk:
                        break
                    h.update(chunk)
                    got += len(chunk)
                    remaining -= len(chunk)
                if not got:
                    break
                digests.append(h.digest())
        return f"{hashlib.md5(b''.join(digests), usedforsecurity=False).hexdigest()}-{len(digests)}"
    raise ValueError(f"unknown checksum algorithm {algo!r}")


def matches(path: str, entry: dict) -> bool:
    """True iff the file exists, has the manifest size and (unless ``algo`` is ``size``) the manifest checksum."""
    try:
        if os.path.getsize(path) != entry["size"]:
            return False
    except OSError:
        return False
    checksum = entry.get("checksum") or {"algo": "size"}
    if checksum["algo"] == "size":
        return True
    actual = compute(path, checksum["algo"], checksum)
    return actual == checksum["value"]
