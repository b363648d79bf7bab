"""Which checksum verifies an S3 object, from its HEAD: a full-object SHA or CRC, a composite (per-part) checksum, the
MD5 ETag of a single-part or multipart object, or only the size (the algorithms are :mod:`.checksums`'). A per-part
checksum also needs the size of part 1, which :func:`head_part_one` asks for (the transfer learns it from the GET of
part 1 instead, see :meth:`.s3_fetch.FileJob.get_part_one`).
"""

from __future__ import annotations

import logging

from .checksums import crt_checksums

log = logging.getLogger("nvme_agent")


def head_part_one(client, bucket: str, key: str) -> int:
    """Size of part 1 of a multipart object, by a HEAD with ``PartNumber=1``."""
    return int(client.head_object(Bucket=bucket, Key=key, PartNumber=1)["ContentLength"])


def checksum_for(client, bucket: str, key: str, head: dict, part_one=None) -> dict:
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

    A per-part checksum needs the part size: ``part_one()`` gives it (default: :func:`head_part_one`).
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
                part_size_cache.append(part_one() if part_one else head_part_one(client, bucket, key))
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


class ObjectChanged(RuntimeError):
    """An object was replaced between the listing and its HEAD."""


def describe_one(client, bucket: str, entry: dict, part_one=None) -> None:
    """HEAD one listed object and set ``entry["checksum"]`` (see :func:`checksum_for`, which gets ``part_one``)."""
    head = client.head_object(Bucket=bucket, Key=entry["key"], ChecksumMode="ENABLED")
    etag = str(head.get("ETag", "")).strip('"')
    if (entry.get("etag") and etag != entry["etag"]) or int(head["ContentLength"]) != entry["size"]:
        raise ObjectChanged(f"s3://{bucket}/{entry['key']} changed after it was listed (ETag {entry.get('etag')!r}, "
                            f"{entry['size']} bytes; now {etag!r}, {head['ContentLength']} bytes): run the agent "
                            f"again")
    entry["checksum"] = checksum_for(client, bucket, entry["key"], head, part_one)

