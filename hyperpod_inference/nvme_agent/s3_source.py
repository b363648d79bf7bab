"""S3 source: list + HEAD for metadata, boto3's transfer manager (parallel ranged GETs) to download.

The endpoint is whatever boto3 resolves (``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3`` are honoured by boto3 itself).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import posixpath

log = logging.getLogger("nvme_agent")

MiB = 1024 * 1024


class TransferSettings:
    """Tunables of the S3 transfer (CLI flags / env ``NVME_AGENT_S3_*``)."""

    def __init__(self, max_concurrency: int | None = None, chunk_size: int | None = None,
                 max_io_queue: int | None = None, multipart_threshold: int | None = None):
        env = os.environ.get
        self.max_concurrency = int(max_concurrency or env("NVME_AGENT_S3_MAX_CONCURRENCY") or 16)
        self.chunk_size = int(chunk_size or env("NVME_AGENT_S3_CHUNK_SIZE") or 64 * MiB)
        self.max_io_queue = int(max_io_queue or env("NVME_AGENT_S3_MAX_IO_QUEUE") or 100)
        self.multipart_threshold = int(multipart_threshold or env("NVME_AGENT_S3_MULTIPART_THRESHOLD") or 16 * MiB)
        # bytes read from a response per write; fewer, larger writes cost less CPU (memory: io_chunk x io_queue)
        self.io_chunksize = int(env("NVME_AGENT_S3_IO_CHUNK_SIZE") or 256 * 1024)


def _client(spec: dict, settings: TransferSettings):
    import boto3
    from botocore.config import Config

    cfg = Config(
        max_pool_connections=max(settings.max_concurrency * 2, 10),
        retries={"max_attempts": 8, "mode": "adaptive"},
        user_agent_extra="hyperpod-nvme-agent",
    )
    return boto3.session.Session().client("s3", region_name=spec.get("region"), config=cfg)


def _checksum_for(client, bucket: str, key: str, head: dict) -> dict:
    """Pick the strongest checksum S3 gives for this object (see checksums.py for the algorithms).

    S3 additional checksums are used only when they cover the whole object: single-part objects, or
    ``ChecksumType: FULL_OBJECT``. Composite (per-part) checksums cannot be recomputed from the file.
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
    kms_or_ssec = head.get("SSECustomerAlgorithm") or str(head.get("ServerSideEncryption", "")).startswith("aws:kms")
    if not kms_or_ssec and len(etag) == 32 and all(c in "0123456789abcdef" for c in etag):
        return {"algo": "md5", "value": etag}
    if additional("ChecksumCRC32"):
        return {"algo": "crc32", "value": head["ChecksumCRC32"], "encoding": "base64"}
    if not kms_or_ssec and multipart:
        md5, _, parts = etag.partition("-")
        if len(md5) == 32 and parts.isdigit():
            try:
                part1 = client.head_object(Bucket=bucket, Key=key, PartNumber=1)
                part_size = int(part1["ContentLength"])
                size = int(head["ContentLength"])
                if part_size > 0 and -(-size // part_size) == int(parts):
                    return {"algo": "s3-multipart-md5", "value": etag, "partSize": part_size}
            except Exception as exc:  # noqa: BLE001 - any failure just downgrades to a size check
                log.debug("no part size for s3://%s/%s: %s", bucket, key, exc)
    return {"algo": "size"}


def plan(spec: dict, settings: TransferSettings) -> tuple[str, list[dict]]:
    """List the objects under the prefix; return (revision, manifest entries)."""
    client = _client(spec, settings)
    bucket, prefix = spec["bucket"], spec["prefix"]
    objects = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            rel = key[len(prefix):]
            if not rel or rel.endswith("/"):
                continue  # "directory" markers
            norm = posixpath.normpath(rel)
            if norm.startswith("../") or norm == ".." or norm.startswith("/"):
                raise ValueError(f"refusing object key outside the prefix: {key!r}")
            objects.append((key, norm))
    if not objects:
        raise FileNotFoundError(f"no objects under s3://{bucket}/{prefix}")

    def head(item):
        key, rel = item
        h = client.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        return {"path": rel, "key": key, "size": int(h["ContentLength"]), "etag": str(h.get("ETag", "")).strip('"'),
                "checksum": _checksum_for(client, bucket, key, h)}

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(settings.max_concurrency, 32)) as pool:
        entries = list(pool.map(head, objects))
    return "latest", sorted(entries, key=lambda e: e["path"])


def download(spec: dict, entries: list[dict], dest_dir: str, settings: TransferSettings, on_done) -> None:
    """Download ``entries`` into ``dest_dir`` with one shared transfer manager; call ``on_done(entry)`` per file.

    boto3 writes each file to a temporary name and renames it when complete, so a file under its final name is
    always whole. ``on_done`` runs on a transfer thread (the agent verifies checksums there, overlapping downloads).
    """
    from boto3.s3.transfer import TransferConfig, create_transfer_manager
    from s3transfer.subscribers import BaseSubscriber

    client = _client(spec, settings)
    config = TransferConfig(
        multipart_threshold=settings.multipart_threshold,
        multipart_chunksize=settings.chunk_size,
        max_concurrency=settings.max_concurrency,
        max_io_queue=settings.max_io_queue,
        io_chunksize=settings.io_chunksize,
        use_threads=True,
    )
    errors = []

    class Done(BaseSubscriber):
        def __init__(self, entry):
            self.entry = entry

        def on_done(self, future, **kwargs):
            try:
                future.result()
                on_done(self.entry)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append((self.entry["path"], exc))

    with create_transfer_manager(client, config) as manager:
        futures = []
        for e in entries:
            target = os.path.join(dest_dir, e["path"])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            # s3transfer HEADs the object and pins its ETag (If-Match) on every ranged GET
            futures.append(manager.download(spec["bucket"], e["key"], target, subscribers=[Done(e)]))
        for f in futures:
            try:
                f.result()
            except BaseException:  # noqa: BLE001 - collected by the subscriber
                pass
    if errors:
        path, exc = errors[0]
        raise RuntimeError(f"{len(errors)} file(s) failed, first {path}: {exc}") from exc
