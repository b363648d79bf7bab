"""The agent against a real S3 API (moto server on loopback)."""

from __future__ import annotations

import base64
import collections
import io
import json
import os
import sys
import threading
import urllib.parse
import urllib.request
import zlib

import pytest
from boto3.s3.transfer import TransferConfig
from botocore.awsrequest import AWSResponse

from hyperpod_inference.nvme_agent import (
    cache,
    checksums,
    errors,
    layout,
    model_relative_dir,
    s3_checksum,
    s3_fetch,
    s3_source,
    space,
)
from hyperpod_inference.nvme_agent.config import AgentConfig

from .conftest import free_port, run_agent

MiB = 1024 * 1024


def put_model(s3, bucket, prefix="qwen/", files=None):
    files = files or {
        "config.json": b'{"model_type": "qwen2"}',
        "tokenizer.json": os.urandom(3000),
        "model-00001.safetensors": os.urandom(200_000),
    }
    for name, data in files.items():
        s3.put_object(Bucket=bucket, Key=prefix + name, Body=data)
    return files


def spec_of(bucket, prefix="qwen/"):
    return {"source": "s3", "bucket": bucket, "prefix": prefix, "region": "us-east-1"}


def on_agent_clients(monkeypatch, event: str, handler) -> None:
    """Registers the botocore event handler ``handler`` for ``event`` on every S3 client the agent makes in this
    process (the wrappers of several calls stack)."""
    original = s3_source._client

    def client_with_handler(spec, settings):
        client = original(spec, settings)
        client.meta.events.register(event, handler)
        return client

    monkeypatch.setattr(s3_source, "_client", client_with_handler)


def hook_requests(monkeypatch, event: str, handler, part_numbers: bool = False) -> None:
    """Registers ``handler(operation, object name)`` on every S3 client the agent makes in this process, for the
    requests matching the botocore ``before-send`` event ``event`` (e.g. ``before-send.s3.GetObject``). With
    ``part_numbers``, the name of a request for a part ends in ``?partNumber=N``."""

    def on_send(request, event_name, **_):
        url = urllib.parse.urlsplit(request.url)
        name = urllib.parse.unquote(url.path).rsplit("/", 1)[-1]
        part = urllib.parse.parse_qs(url.query).get("partNumber")
        handler(event_name.rsplit(".", 1)[-1], f"{name}?partNumber={part[0]}" if part and part_numbers else name)

    on_agent_clients(monkeypatch, event, on_send)


class _Body(io.BytesIO):
    """A response body as botocore reads it from urllib3 (``read``, ``readinto``, ``stream``)."""

    def stream(self, amt=1024, decode_content=None):
        while chunk := self.read(amt):
            yield chunk


def _part_checksum(head: dict, data: bytes) -> dict[str, str]:
    """The part checksum headers S3 sends with a part of an object whose CRC32 checksum is composite."""
    if not head.get("ChecksumCRC32"):
        return {}
    value = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    return {"x-amz-checksum-crc32": value, "x-amz-checksum-type": "COMPOSITE"}


def stored_bytes(s3, bucket: str, key: str, byte_range: str | None = None) -> bytes:
    """An object's bytes as stored, read from the endpoint over plain HTTP (moto takes unsigned requests), not through
    botocore, whose response reads the tests may intercept."""
    request = urllib.request.Request(f"{s3.meta.endpoint_url}/{bucket}/{urllib.parse.quote(key)}",
                                     headers={"Range": byte_range} if byte_range else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def answer_part_one(s3, monkeypatch, answer: str) -> None:
    """Answers the agent's GetObject for part 1 of a multipart object (``PartNumber=1``) the way ``answer`` says,
    whatever the installed moto does (moto before 5.2.6 sent the whole object, 5.2.6 sends the part):
    - ``"part"``, as S3 documents it: 206 with part 1's bytes and their Content-Range, ``x-amz-mp-parts-count``,
      and, when the request enables checksum mode, the part's own CRC32 (an object with a composite CRC32);
    - ``"whole-object"``, as some S3-compatible stores do: 200 with the whole object and no checksum.
    The answer is built from the stored object (moto is asked for HEADs and byte ranges only)."""

    def respond(request, **_):
        url = urllib.parse.urlsplit(request.url)
        if urllib.parse.parse_qs(url.query).get("partNumber") != ["1"]:
            return None
        bucket, key = urllib.parse.unquote(url.path).lstrip("/").split("/", 1)
        head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        total, etag = head["ContentLength"], head["ETag"]
        headers = {"ETag": etag, "Content-Type": "binary/octet-stream"}
        if answer == "whole-object":
            data = stored_bytes(s3, bucket, key)
            status = 200
        else:
            size = s3.head_object(Bucket=bucket, Key=key, PartNumber=1)["ContentLength"]
            data = stored_bytes(s3, bucket, key, f"bytes=0-{size - 1}")
            status = 206
            headers.update({"Content-Range": f"bytes 0-{size - 1}/{total}",
                            "x-amz-mp-parts-count": etag.strip('"').rsplit("-", 1)[1]})
            if request.headers.get("x-amz-checksum-mode") in ("ENABLED", b"ENABLED"):
                headers.update(_part_checksum(head, data))
        headers["Content-Length"] = str(len(data))
        return AWSResponse(request.url, status, headers, _Body(data))

    on_agent_clients(monkeypatch, "before-send.s3.GetObject", respond)


@pytest.fixture
def s3_part_gets(s3, monkeypatch):
    """Part-1 GETs answered as S3 answers them (:func:`answer_part_one`)."""
    answer_part_one(s3, monkeypatch, "part")


@pytest.fixture
def s3_gets(monkeypatch):
    """Counts GetObject requests per key made by the agent in this process."""
    counts = collections.Counter()
    hook_requests(monkeypatch, "before-send.s3.GetObject", lambda _, name: counts.update([name]))
    return counts


def test_cold_download_replaces_empty_dir_and_records_checksums(s3, bucket, tmp_path):
    # GIVEN a model in S3: a single-part object, one with an additional SHA256 checksum, and a multipart object
    files = put_model(s3, bucket)
    s3.put_object(Bucket=bucket, Key="qwen/generation_config.json", Body=b"{}", ChecksumAlgorithm="SHA256")
    big = os.urandom(11 * MiB)
    (tmp_path / "big").write_bytes(big)
    s3.upload_file(str(tmp_path / "big"), bucket, "qwen/model-00002.safetensors",
                   Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB))
    files.update({"generation_config.json": b"{}", "model-00002.safetensors": big})
    root = tmp_path / "nvme"
    spec = spec_of(bucket)
    # AND kubelet already created the (empty) model directory as a DirectoryOrCreate hostPath
    final = root / model_relative_dir(spec)
    final.mkdir(parents=True)

    # WHEN the agent ensures the model
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec), env=os.environ.copy())

    # THEN it prints the model dir, every file is there byte for byte, and the model is marked complete
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(final)
    for name, data in files.items():
        assert (final / name).read_bytes() == data
    assert (final / ".complete").is_file()
    assert not (final.parent / (final.name + ".partial")).exists()
    # AND the manifest records the checksum used for each object (no CRC32 here: MD5 ETags and a SHA-256)
    manifest = json.loads((final / "manifest.json").read_text())
    algos = {f["path"]: f["checksum"]["algo"] for f in manifest["files"]}
    assert algos["config.json"] == "md5"
    assert algos["generation_config.json"] == "sha256"
    assert algos["model-00002.safetensors"] == "s3-multipart-md5"
    assert manifest["source"]["bucket"] == bucket
    assert manifest["totalBytes"] == sum(len(d) for d in files.values())


def test_warm_hit_needs_no_network_and_updates_last_used(s3, bucket, tmp_path, aws_env):
    # GIVEN a model already complete in the cache
    put_model(s3, bucket)
    root = tmp_path / "nvme"
    spec = spec_of(bucket)
    final = cache.ensure(str(root), spec)
    before = layout.last_used(final)

    # WHEN ensure runs again with S3 unreachable (endpoint pointing at a closed port)
    env = dict(aws_env, AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}")
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec), env=env, timeout=30)

    # THEN it succeeds from the cache and records the use for LRU
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == final
    assert layout.last_used(final) >= before


def test_leftover_partial_is_resumed_and_bad_files_refetched(s3, bucket, tmp_path, s3_gets):
    # GIVEN a .partial of a killed run: one good file, one truncated, one corrupted (same size), a stray temp file
    files = put_model(s3, bucket)
    root = tmp_path / "nvme"
    spec = spec_of(bucket)
    partial = root / (model_relative_dir(spec) + ".partial")
    partial.mkdir(parents=True)
    (partial / "config.json").write_bytes(files["config.json"])
    (partial / "tokenizer.json").write_bytes(files["tokenizer.json"][:100])
    bad = bytearray(files["model-00001.safetensors"])
    bad[1000] ^= 0xFF
    (partial / "model-00001.safetensors").write_bytes(bytes(bad))
    (partial / "model-00001.safetensors.a1B2c3").write_bytes(b"half a download")
    # AND a reader sees no model while only the partial exists
    assert not layout.is_complete(str(root / model_relative_dir(spec)))

    # WHEN the agent ensures the model
    final = cache.ensure(str(root), spec)

    # THEN only the truncated and the corrupted files were fetched again
    assert s3_gets["config.json"] == 0
    assert s3_gets["tokenizer.json"] == 1
    assert s3_gets["model-00001.safetensors"] == 1
    # AND the published model is correct and holds no stray files
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data
    assert sorted(os.listdir(final)) == sorted([*files, "manifest.json", ".complete", ".last-used"])


def test_verify_detects_corruption_and_next_ensure_fetches_the_model_into_a_fresh_directory(s3, bucket, tmp_path,
                                                                                           s3_gets):
    # GIVEN a complete model whose weights file got corrupted on disk
    files = put_model(s3, bucket)
    root = tmp_path / "nvme"
    spec = spec_of(bucket)
    final = cache.ensure(str(root), spec)
    s3_gets.clear()
    path = os.path.join(final, "model-00001.safetensors")
    with open(path, "r+b") as fh:
        fh.seek(10)
        fh.write(b"\x00\x01\x02")
    # AND the fast path trusts the marker (no re-hashing on a hit)
    assert layout.is_complete(final)

    # WHEN verify runs
    result = run_agent("verify", "--cache-root", root, "--model", json.dumps(spec), env=os.environ.copy())

    # THEN it reports the corrupt file and unmarks the model
    assert result.returncode == 5, result.stderr
    assert json.loads(result.stdout) == {"state": "corrupt", "corrupt": ["model-00001.safetensors"]}
    assert not layout.is_complete(final)
    # AND the next ensure fetches the model again (a published directory without a valid completion record is never
    # resumed: the model server may have written into it) and the model is whole again
    cache.ensure(str(root), spec)
    assert dict(s3_gets) == {name: 1 for name in files}
    assert open(path, "rb").read() == files["model-00001.safetensors"]
    assert cache.verify(str(root), spec) == ("ok", [])


def test_disk_too_small_fails_with_exit_4_and_marks_nothing(s3, bucket, tmp_path):
    # GIVEN a 203 kB model and a (simulated) disk of 150 kB
    put_model(s3, bucket)
    root = tmp_path / "nvme"
    spec = spec_of(bucket)

    # WHEN the agent ensures the model
    result = run_agent("ensure", "--cache-root", root, "--model", json.dumps(spec),
                       env=dict(os.environ, NVME_AGENT_FAKE_DISK_BYTES="150000"))

    # THEN it fails with exit code 4 and a message naming needed and available bytes
    assert result.returncode == 4, result.stderr
    assert "need 203023 bytes" in result.stderr
    assert "available 150000 bytes" in result.stderr
    # AND nothing is marked complete
    assert not list(root.rglob(".complete"))


def test_watermark_percent_counts_against_free_space(s3, bucket, tmp_path):
    # GIVEN a disk where the model fits, but not with 50% kept free
    put_model(s3, bucket)
    root = tmp_path / "nvme"
    root.mkdir()
    space.disk_usage_hook = lambda _root: (300_000, 400_000)

    # WHEN ensuring with --min-free-percent 50 semantics
    # THEN the agent refuses (203 kB needed, 200 kB must stay free of 300 kB available)
    with pytest.raises(errors.InsufficientSpace, match="watermark of 200000 bytes"):
        cache.ensure(str(root), spec_of(bucket), AgentConfig(min_free_percent=50))
    assert not list(root.rglob(".complete"))


def test_python_m_nvme_agent_runs_from_a_copy_of_agent_source_files(s3, bucket, tmp_path):
    # GIVEN the agent's files written out as the ConfigMap mount would, outside the repository
    from hyperpod_inference.nvme_agent import agent_source_files

    mount = tmp_path / "mount"
    (mount / "nvme_agent").mkdir(parents=True)
    for name, content in agent_source_files().items():
        (mount / "nvme_agent" / name).write_text(content)
    files = put_model(s3, bucket)
    spec = spec_of(bucket)

    # WHEN `python -m nvme_agent ensure` runs from that copy, in a directory outside the repo
    result = run_agent("ensure", "--cache-root", tmp_path / "nvme", "--model", json.dumps(spec),
                       env=os.environ.copy(), pythonpath=str(mount), cwd=str(tmp_path))

    # THEN it downloads the model
    assert result.returncode == 0, result.stderr
    assert open(os.path.join(result.stdout.strip(), "config.json"), "rb").read() == files["config.json"]


@pytest.fixture
def s3_requests(monkeypatch):
    """The agent's S3 requests in this process, in the order they were sent: ``(operation, object name)`` (no name
    for a listing; ``name?partNumber=N`` for a request for a part)."""
    sent = []
    hook_requests(monkeypatch, "before-send.s3",
                  lambda op, name: sent.append((op, name if op != "ListObjectsV2" else "")), part_numbers=True)
    return sent


def test_the_agents_client_leaves_response_timestamps_unparsed(s3, bucket):
    # GIVEN an object in S3
    s3.put_object(Bucket=bucket, Key="qwen/config.json", Body=b"{}")

    # WHEN the agent's client lists it and HEADs it
    client = s3_source.s3_client(AgentConfig(), spec_of(bucket))
    listed = client.list_objects_v2(Bucket=bucket, Prefix="qwen/")["Contents"][0]
    head = client.head_object(Bucket=bucket, Key="qwen/config.json")

    # THEN their timestamps are the strings S3 sent (the agent reads none; parsing each costs CPU), the rest as usual
    assert isinstance(listed["LastModified"], str) and isinstance(head["LastModified"], str)
    assert head["ContentLength"] == 2 and listed["Size"] == 2


def test_each_file_is_looked_up_right_before_its_gets_and_files_go_in_order(s3, bucket, tmp_path, s3_requests):
    # GIVEN a three-file model (each object small: one GET)
    files = put_model(s3, bucket)

    # WHEN one transfer thread downloads it
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket), AgentConfig(concurrency=1))

    # THEN one listing, then per file in path order its HEAD and then its GET: a file's bytes are on their way
    # before the next file is looked up (no HEAD-everything phase before the first GET)
    names = sorted(files)
    assert s3_requests == [("ListObjectsV2", ""), *[(op, n) for n in names for op in ("HeadObject", "GetObject")]]
    # AND the manifest has the checksums those HEADs gave (MD5 ETags here)
    assert {f["path"]: f["checksum"]["algo"] for f in layout.read_manifest(final)["files"]} == dict.fromkeys(names, "md5")


@pytest.mark.parametrize("answer", ["part", "whole-object"])
def test_a_multipart_objects_part_size_comes_with_its_first_part(s3, bucket, tmp_path, s3_requests, monkeypatch,
                                                                 answer):
    # GIVEN a 3-part object (5 MiB parts, verified per part by its multipart ETag), on an endpoint that answers a
    # GET of part 1 with that part (as S3 and SeaweedFS do) or with the whole object (as some stores do)
    answer_part_one(s3, monkeypatch, answer)
    data = upload_3_parts(s3, bucket, "qwen/w.safetensors", tmp_path)

    # WHEN one transfer thread downloads it
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket), AgentConfig(concurrency=1))

    # THEN the part size comes from GETting part 1, whose bytes are the file's first range: no HEAD for the part size
    # and one GET per part in all; where the answer is not part 1's range, that GET is dropped for a HEAD of part 1
    parts = [("GetObject", "w.safetensors?partNumber=1"), ("GetObject", "w.safetensors"),
             ("GetObject", "w.safetensors")]
    if answer == "whole-object":
        parts[1:1] = [("HeadObject", "w.safetensors?partNumber=1"), ("GetObject", "w.safetensors")]
    assert s3_requests == [("ListObjectsV2", ""), ("HeadObject", "w.safetensors"), *parts]
    # AND either way the file is whole and was verified per 5 MiB part
    assert open(os.path.join(final, "w.safetensors"), "rb").read() == data
    [entry] = layout.read_manifest(final)["files"]
    assert entry["checksum"]["algo"] == "s3-multipart-md5"
    assert entry["checksum"]["partSize"] == 5 * MiB


def test_a_kept_part_one_response_serves_only_that_range_and_is_closed_otherwise(tmp_path):
    class Body:
        closed = False

        def close(self):
            self.closed = True

    job = s3_fetch.FileJob({"path": "f", "key": "k", "size": 10}, str(tmp_path), AgentConfig())
    # a response for bytes [0, 4) serves the range [0, 4) once
    kept = {"Body": Body()}
    job.first = (kept, 4)
    assert job.take_first(4) is kept and not kept["Body"].closed
    assert job.take_first(4) is None
    # a first range of another size gets a GET of its own, and the kept response's connection is closed
    job.first = (kept, 4)
    assert job.take_first(5) is None and kept["Body"].closed
    # so is one still kept when the file is closed (it failed before its first range was fetched)
    unused = {"Body": Body()}
    job.first = (unused, 4)
    job.close(keep=False)
    assert unused["Body"].closed and job.first is None


def test_an_object_replaced_after_the_listing_fails_naming_it(s3, bucket, tmp_path, monkeypatch):
    # GIVEN a model whose tokenizer is overwritten right after the agent listed the prefix
    put_model(s3, bucket)
    original = s3_source.plan

    def plan_then_overwrite(spec, settings):
        planned = original(spec, settings)
        s3.put_object(Bucket=bucket, Key="qwen/tokenizer.json", Body=b"a newer tokenizer")
        return planned

    monkeypatch.setattr(s3_source, "plan", plan_then_overwrite)

    # WHEN the agent ensures the model THEN it fails naming the object and what changed, and marks nothing
    with pytest.raises(RuntimeError, match=r"tokenizer.json changed after it was listed .*run the agent again"):
        cache.ensure(str(tmp_path / "nvme"), spec_of(bucket))
    assert not list((tmp_path / "nvme").rglob(".complete"))

    # AND the next run, which lists the new object, succeeds
    monkeypatch.setattr(s3_source, "plan", original)
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket))
    assert open(os.path.join(final, "tokenizer.json"), "rb").read() == b"a newer tokenizer"


def test_schedule_hands_out_ranges_of_prepared_files_before_preparing_more():
    # GIVEN a schedule of three files
    import threading

    a, b, c = "file-a", "file-b", "file-c"
    schedule = s3_source._Schedule([a, b, c])

    # WHEN two threads take tasks THEN they prepare the first two files
    assert schedule.next() == (a, None)
    assert schedule.next() == (b, None)
    # AND WHEN the first file turns out to have ranges 1 and 2 beside the one its thread GETs itself
    schedule.prepared(a, [1, 2])
    # THEN the next tasks are those ranges, before the third file is prepared
    assert [schedule.next(), schedule.next(), schedule.next()] == [(a, 1), (a, 2), (c, None)]

    # AND WHEN nothing is left but a file being prepared, a thread asking for work waits for its ranges
    got = []
    waiter = threading.Thread(target=lambda: got.append(schedule.next()))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not got
    schedule.prepared(b, [1])
    waiter.join(5)
    assert got == [(b, 1)]
    # AND once every file is prepared and every range handed out, there is no more work
    schedule.prepared(c, [])
    assert schedule.next() is None


def test_stopped_schedule_hands_out_nothing_and_wakes_waiting_threads():
    # GIVEN a thread waiting for the ranges of a file that is being prepared
    import threading

    schedule = s3_source._Schedule(["file-a", "file-b"])
    assert schedule.next() == ("file-a", None)
    assert schedule.next() == ("file-b", None)
    got = []
    waiter = threading.Thread(target=lambda: got.append(schedule.next()))
    waiter.start()

    # WHEN the download is interrupted
    schedule.stop()

    # THEN the waiting thread ends with no task, and the ranges of a file prepared afterwards are not handed out
    waiter.join(5)
    assert got == [None]
    schedule.prepared("file-a", [1, 2])
    assert schedule.next() is None


def test_a_transfer_threads_read_buffer_grows_to_the_largest_range_it_has_read():
    sizes = []

    def thread():
        # a thread that has only read small files holds a small buffer; it grows for a larger range and is reused
        for want in (2, 3000, 2, MiB, 5000):
            buffer = s3_fetch._read_buffer(want)
            sizes.append(len(buffer))
            buffer[want - 1] = 1  # it is writable, and long enough

    worker = threading.Thread(target=thread)
    worker.start()
    worker.join()
    assert sizes == [2, 3000, 3000, MiB, MiB]


def _mapping_of(buffer: memoryview) -> tuple[int, dict]:
    """(address, smaps fields) of the mapping that holds ``buffer``."""
    import ctypes

    address = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    found = None
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if "-" in head[0] and ":" not in head[0]:
                start, end = (int(x, 16) for x in head[0].split("-"))
                found = {} if start <= address < end else None
            elif found is not None:
                found[head[0].rstrip(":")] = head[1:]
                if head[0] == "VmFlags:":
                    return address, found
    raise AssertionError("no mapping holds the buffer")


@pytest.mark.skipif(not os.path.isdir("/sys/kernel/mm/transparent_hugepage"),
                    reason="Linux with transparent huge pages (/proc/self/smaps, MADV_HUGEPAGE)")
def test_read_buffers_are_page_aligned_slices_of_a_mapping_advised_for_huge_pages():
    # WHEN two transfer threads take buffers of odd sizes
    buffers = {}
    threads = [threading.Thread(target=lambda n=n: buffers.__setitem__(n, s3_fetch._read_buffer(n)))
               for n in (3000, MiB + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (a, a_map), (b, b_map) = _mapping_of(buffers[3000]), _mapping_of(buffers[MiB + 1])
    # THEN each is exactly as long as asked, starts on its own page, and writing one leaves the other alone
    assert (len(buffers[3000]), len(buffers[MiB + 1])) == (3000, MiB + 1)
    assert a % 4096 == 0 and b % 4096 == 0 and abs(a - b) >= 4096
    buffers[3000][:] = b"a" * 3000
    buffers[MiB + 1][:] = b"b" * (MiB + 1)
    assert bytes(buffers[3000]) == b"a" * 3000
    # AND they are private memory that the kernel may back with transparent huge pages (VmFlags "hg")
    for mapping in (a_map, b_map):
        assert "hg" in mapping["VmFlags"] and "sh" not in mapping["VmFlags"]


def test_reads_stay_within_the_read_size_in_a_larger_buffer_kept_from_before(s3, bucket, tmp_path, response_reads,
                                                                            monkeypatch):
    # GIVEN transfer threads that hold 1 MiB buffers (from an earlier run with the default read size)
    files = put_model(s3, bucket)
    kept = {}
    monkeypatch.setattr(s3_fetch, "_read_buffer", lambda size: kept.setdefault(
        threading.get_ident(), memoryview(bytearray(MiB))))
    sizes = []
    response_reads.intercept(lambda data, length: sizes.append(len(data)) or data)
    # WHEN the agent downloads with 64 KiB reads
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket), AgentConfig(read_size=65536))
    # THEN no read is larger than 64 KiB, and the files are whole
    assert kept and max(sizes) == 65536
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data


@pytest.fixture
def file_writes(monkeypatch):
    """Records the agent's file writes in this process: ``file_writes.writes`` is a list of ``(path, direct, offset,
    length)`` for each ``os.pwrite`` that wrote (``direct``: through a descriptor opened with ``O_DIRECT``);
    ``file_writes.fail_direct(errno)`` makes every direct write raise that error (``failed`` counts them), and
    ``file_writes.refuse_direct_open()`` makes opening with ``O_DIRECT`` fail with EINVAL."""
    import errno as errno_module

    real_open, real_pwrite = os.open, os.pwrite

    class Writes:
        writes = []
        opened = {}  # fd -> (path, direct)
        direct_error = None
        refuse_open = False
        failed = 0

        def fail_direct(self, code):
            self.direct_error = code

        def refuse_direct_open(self):
            self.refuse_open = True

        def by_file(self, direct: bool) -> dict:
            totals = collections.Counter()
            for path, was_direct, _, length in self.writes:
                if was_direct == direct:
                    # the temporary name: .<name>.<random>.download
                    totals[os.path.basename(path)[1:].rsplit(".", 2)[0]] += length
            return dict(totals)

    writes = Writes()

    def open_(path, flags, *args, **kwargs):
        direct = bool(flags & getattr(os, "O_DIRECT", 0))
        if direct and writes.refuse_open:
            raise OSError(errno_module.EINVAL, "Invalid argument", path)
        fd = real_open(path, flags, *args, **kwargs)
        writes.opened[fd] = (os.fspath(path), direct)
        return fd

    def pwrite(fd, data, offset):
        path, direct = writes.opened.get(fd, (None, False))
        if direct and writes.direct_error is not None:
            writes.failed += 1
            raise OSError(writes.direct_error, os.strerror(writes.direct_error))
        n = real_pwrite(fd, data, offset)
        if path is not None:
            writes.writes.append((path, direct, offset, n))
        return n

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "pwrite", pwrite)
    return writes


def put_block_model(s3, bucket, tmp_path, prefix="blocks/"):
    """A 14-byte file, a single-part 3 MiB + 5 bytes (one GET) and a multipart 12 MiB + 5 bytes (5 MiB parts)."""
    files = {"config.json": b'{"a": "block"}', "tokenizer.json": os.urandom(3 * MiB + 5)}
    for name, data in files.items():
        s3.put_object(Bucket=bucket, Key=prefix + name, Body=data)
    files["w.safetensors"] = upload_3_parts(s3, bucket, prefix + "w.safetensors", tmp_path)
    return files


def test_whole_blocks_are_written_with_direct_io_and_tails_through_the_page_cache(s3, bucket, tmp_path, s3_part_gets,
                                                                                  file_writes):
    # GIVEN files of 14 bytes, 3 MiB + 5 bytes (one GET) and 12 MiB + 5 bytes (one GET per 5 MiB part)
    files = put_block_model(s3, bucket, tmp_path)

    # WHEN the agent downloads them
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "blocks/"))

    # THEN every whole 4 KiB block went to the disk with direct I/O, at aligned offsets, in whole read buffers
    direct = [(offset, length) for _, is_direct, offset, length in file_writes.writes if is_direct]
    assert direct and all(offset % 4096 == 0 and length % 4096 == 0 for offset, length in direct)
    assert max(length for _, length in direct) == MiB
    assert file_writes.by_file(direct=True) == {"tokenizer.json": 3 * MiB, "w.safetensors": 12 * MiB}
    # AND only the partial blocks at the ends of files went through the page cache
    assert file_writes.by_file(direct=False) == {"config.json": 14, "tokenizer.json": 5, "w.safetensors": 5}
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data


def test_direct_io_off_writes_everything_through_the_page_cache(s3, bucket, tmp_path, file_writes, monkeypatch):
    # GIVEN direct I/O turned off
    files = put_block_model(s3, bucket, tmp_path)
    monkeypatch.setenv("NVME_AGENT_DIRECT_IO", "0")

    # WHEN the agent downloads THEN nothing is opened with O_DIRECT and every write is at most 32 KiB
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "blocks/"))
    assert not [fd for fd, (_, direct) in file_writes.opened.items() if direct]
    assert file_writes.by_file(direct=False) == {name: len(data) for name, data in files.items()}
    assert max(length for *_, length in file_writes.writes) == 32 * 1024
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data


@pytest.mark.parametrize("direct_io", ["1", "0"])
def test_responses_are_received_into_the_read_buffer_only_for_direct_writes(s3, bucket, tmp_path, file_writes,
                                                                            monkeypatch, direct_io):
    # GIVEN direct I/O on (writes from the page-aligned read buffer) or off (page-cache mode)
    import botocore.response

    files = put_block_model(s3, bucket, tmp_path)
    monkeypatch.setenv("NVME_AGENT_DIRECT_IO", direct_io)
    calls = collections.Counter()
    for name in ("read", "readinto"):
        original = getattr(botocore.response.StreamingBody, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(botocore.response.StreamingBody, name, counted)

    # WHEN the agent downloads the model
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "blocks/"))

    # THEN with direct I/O every response is received into the read buffer (readinto), and in page-cache mode each
    # read's bytes are hashed and written as they come (read: urllib3's readinto would copy them once more)
    if direct_io == "1":
        assert calls["readinto"] and not calls["read"]
    else:
        assert calls["read"] and not calls["readinto"]
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data


@pytest.mark.parametrize("refused", ["open", "write"])
def test_a_filesystem_that_refuses_direct_io_gets_everything_through_the_page_cache(s3, bucket, tmp_path, file_writes,
                                                                                    refused, caplog, monkeypatch):
    # GIVEN a cache filesystem that refuses O_DIRECT (tmpfs on older kernels refuses the open; another filesystem
    # may accept the open and refuse the writes)
    import errno

    files = put_block_model(s3, bucket, tmp_path)
    if refused == "open":
        file_writes.refuse_direct_open()
    else:
        file_writes.fail_direct(errno.EINVAL)
    monkeypatch.setenv("NVME_AGENT_CONCURRENCY", "1")

    # WHEN the agent downloads
    with caplog.at_level("INFO", logger="nvme_agent"):
        final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "blocks/"))

    # THEN the files are whole and correct, all written through the page cache
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data
    assert file_writes.by_file(direct=False) == {name: len(data) for name, data in files.items()}
    # AND the refusal was logged once, after which direct I/O was not tried again
    assert sum("direct I/O refused" in r.getMessage() for r in caplog.records) == 1
    assert file_writes.failed == (1 if refused == "write" else 0)


def test_a_direct_write_that_fails_otherwise_fails_the_download(s3, bucket, tmp_path, file_writes):
    # GIVEN a disk that runs out of space under a direct write (ENOSPC, not a refusal of direct I/O)
    import errno

    put_block_model(s3, bucket, tmp_path)
    file_writes.fail_direct(errno.ENOSPC)

    # WHEN the agent downloads THEN it fails naming the error, and nothing is complete or left over
    with pytest.raises(RuntimeError, match="No space left on device"):
        cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "blocks/"))
    assert file_writes.failed
    assert not list((tmp_path / "nvme").rglob(".complete"))
    assert not list((tmp_path / "nvme").rglob("*.download"))


def upload_3_parts(client, bucket, key, tmp_path, extra_args: dict | None = None) -> bytes:
    """Uploads 12 MiB + 5 bytes of random data as a 3-part multipart object (5 MiB parts); returns the data."""
    data = os.urandom(12 * MiB + 5)
    (tmp_path / "big").write_bytes(data)
    client.upload_file(str(tmp_path / "big"), bucket, key, ExtraArgs=extra_args,
                       Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB))
    return data


def put_mixed_model(s3, bucket, tmp_path, prefix="mix/"):
    """A single-part object (MD5 ETag), one with a full-object SHA256, and a 3-part multipart object."""
    files = {"config.json": b'{"a": 1}', "generation_config.json": os.urandom(70_000)}
    s3.put_object(Bucket=bucket, Key=prefix + "config.json", Body=files["config.json"])
    s3.put_object(Bucket=bucket, Key=prefix + "generation_config.json", Body=files["generation_config.json"],
                  ChecksumAlgorithm="SHA256")
    files["w.safetensors"] = upload_3_parts(s3, bucket, prefix + "w.safetensors", tmp_path)
    return files


@pytest.fixture
def no_read_back(monkeypatch):
    """Fails the test if a file is hashed by reading it back (checksums.compute)."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"file read back for verification: {args}")

    monkeypatch.setattr(checksums, "compute", refuse)


@pytest.fixture(params=["readinto", "read"])
def response_reads(request, monkeypatch):
    """Intercepts what the agent receives from S3 responses, on either read path of the downloader: ``readinto``
    (the default where botocore's StreamingBody has it) or ``read`` (botocore without it, e.g. 1.34).

    ``response_reads.intercept(fn)``: ``fn(data, content_length)`` returns the bytes to deliver instead, or None to
    break the connection there (the exception the real transport raises on that path)."""

    import botocore.exceptions
    import botocore.response

    class Interceptor:
        path = request.param
        fn = None

        def intercept(self, fn):
            self.fn = fn

    interceptor = Interceptor()
    if request.param == "readinto":
        original = botocore.response.StreamingBody.readinto

        def readinto(self, buffer):
            n = original(self, buffer)
            if interceptor.fn is None or not n:
                return n
            data = interceptor.fn(bytes(buffer[:n]), int(self._content_length or 0))
            if data is None:
                raise botocore.exceptions.ResponseStreamingError(error="connection reset by peer")
            buffer[:n] = data
            return n

        monkeypatch.setattr(botocore.response.StreamingBody, "readinto", readinto)
    else:
        monkeypatch.setattr(s3_fetch, "_readinto_of", lambda body: None)
        original = botocore.response.StreamingBody.read

        def read(self, amt=None):
            data = original(self, amt)
            if interceptor.fn is None or not data:
                return data
            data = interceptor.fn(data, int(self._content_length or 0))
            if data is None:
                raise botocore.exceptions.ResponseStreamingError(error="connection reset by peer")
            return data

        monkeypatch.setattr(botocore.response.StreamingBody, "read", read)
    return interceptor


def flip_a_bit_once(flipped: list):
    """A ``response_reads`` interceptor that flips one bit in the first read of more than 100 bytes from a response of
    at least 1 MiB, once; it appends to ``flipped`` when it did."""
    def corrupt_once(data, length):
        if not flipped and len(data) > 100 and length >= MiB:
            flipped.append(True)
            data = data[:50] + bytes([data[50] ^ 1]) + data[51:]
        return data

    return corrupt_once


def test_streaming_download_verifies_in_flight_without_reading_files_back(s3, bucket, tmp_path, no_read_back):
    # GIVEN objects verified by MD5 ETag, full-object SHA256 and multipart ETag
    files = put_mixed_model(s3, bucket, tmp_path)
    spec = spec_of(bucket, "mix/")

    # WHEN the agent downloads them while reading a file back for hashing would fail
    final = cache.ensure(str(tmp_path / "nvme"), spec, AgentConfig(chunk_size=4 * MiB))

    # THEN the model is complete and correct: every checksum was computed while streaming
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data
    algos = {f["path"]: f["checksum"]["algo"] for f in layout.read_manifest(final)["files"]}
    assert algos == {"config.json": "md5", "generation_config.json": "sha256", "w.safetensors": "s3-multipart-md5"}
    assert not [n for n in os.listdir(final) if n.endswith(".download")]


def test_bytes_corrupted_in_flight_are_detected_and_fetched_again(s3, bucket, tmp_path, s3_part_gets, s3_gets,
                                                                  response_reads, no_read_back):
    # GIVEN a transport that flips one bit in the first chunk it delivers of the multipart object
    files = put_mixed_model(s3, bucket, tmp_path)
    flipped = []
    response_reads.intercept(flip_a_bit_once(flipped))

    # WHEN the agent downloads the model
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "mix/"))

    # THEN the in-flight checksum caught it: that file alone was fetched again (3 parts, twice), and it is correct
    assert flipped
    assert s3_gets["w.safetensors"] == 6
    assert s3_gets["config.json"] == 1
    assert open(os.path.join(final, "w.safetensors"), "rb").read() == files["w.safetensors"]


def test_persistent_corruption_fails_with_exit_5_and_marks_nothing(s3, bucket, tmp_path, response_reads):
    # GIVEN a transport that corrupts every response
    put_model(s3, bucket)
    response_reads.intercept(lambda data, length: bytes([data[0] ^ 1]) + data[1:])

    # WHEN the agent ensures the model THEN verification fails after the retries, nothing is complete or left over
    with pytest.raises(errors.VerificationFailed):
        cache.ensure(str(tmp_path / "nvme"), spec_of(bucket))
    assert errors.VerificationFailed.exit_code == 5
    assert not list((tmp_path / "nvme").rglob(".complete"))
    assert not list((tmp_path / "nvme").rglob("*.download"))


def test_broken_stream_is_resumed_by_fetching_the_range_again(s3, bucket, tmp_path, s3_gets, response_reads,
                                                              monkeypatch):
    # GIVEN a connection that breaks once in the middle of a response
    files = put_model(s3, bucket)
    calls = []

    def break_second_read(data, length):
        calls.append(1)
        return None if len(calls) == 2 else data

    response_reads.intercept(break_second_read)

    # WHEN the agent downloads with small reads (so the break happens mid-file)
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket), AgentConfig(read_size=65536, concurrency=1))

    # THEN the broken range was requested once more and every file is correct
    assert len(calls) > 2
    assert sum(s3_gets.values()) == len(files) + 1
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data


@pytest.fixture
def keep_alive_s3(aws_env):
    """A minimal HTTP/1.1 keep-alive server answering ranged GetObject for one object (moto answers every request
    with ``Connection: close``, so it cannot show connection reuse); yields (endpoint, data, connections seen,
    options): ``options["ignore_range"] = True`` makes it answer every GET with the whole object (200)."""
    import http.server
    import re
    import threading

    data = os.urandom(3 * MiB + 5)
    connections = []
    options = {"ignore_range": False}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            connections.append(self.client_address)

        def do_GET(self):  # noqa: N802 - http.server's naming
            start, end = map(int, re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers["Range"]).groups())
            if options["ignore_range"]:
                start, end = 0, len(data) - 1
            body = data[start:end + 1]
            try:
                self.send_response(200 if options["ignore_range"] else 206)
                self.send_header("Content-Length", str(len(body)))
                if not options["ignore_range"]:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                self.send_header("ETag", '"0123456789abcdef0123456789abcdef"')
                self.end_headers()
                self.wfile.write(body)
            except (ConnectionResetError, BrokenPipeError):  # the agent drops a whole-object answer to a range
                self.close_connection = True

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", data, connections, options
    server.shutdown()
    server.server_close()


def crc32_entry(data: bytes, checksum: bool = True) -> dict:
    """The manifest entry of ``data`` as object ``m/w.bin``, verified by its CRC32 (or by its size only)."""
    crc = {"algo": "crc32", "value": base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode(),
           "encoding": "base64"}
    return {"path": "w.bin", "key": "m/w.bin", "size": len(data), "etag": "",
            "checksum": crc if checksum else {"algo": "size"}}


@pytest.mark.parametrize("fast_read,direct_io", [(False, True), (True, True), (False, False)])
def test_connections_are_reused_after_fully_read_responses(keep_alive_s3, tmp_path, monkeypatch, fast_read,
                                                           direct_io):
    # GIVEN one object fetched in four ranged GETs, one at a time, from a server that keeps connections open (on the
    # public read path, on the opt-in fast one, and in page-cache mode, which reads with StreamingBody.read)
    endpoint, data, connections, _ = keep_alive_s3
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    settings = AgentConfig(concurrency=1, chunk_size=MiB, fast_read=fast_read,
                                          direct_io=direct_io)
    entry = crc32_entry(data)
    done = []

    # WHEN the agent downloads it
    s3_source.download({"bucket": "b", "region": "us-east-1"}, [entry], str(tmp_path), settings,
                       lambda e, computed: done.append(computed))

    # THEN all four responses came over one connection (a body read to its end gives its connection back to the
    # pool), and the file and its in-flight CRC32 are right
    assert len(connections) == 1
    assert done == [entry["checksum"]["value"]]
    assert (tmp_path / "w.bin").read_bytes() == data


def test_a_checksum_mismatch_botocore_finds_while_reading_fetches_the_range_again(tmp_path):
    # GIVEN a response read through botocore's StreamingBody whose own checksum (S3 sends one with a whole object or,
    # on S3, with a part) botocore finds wrong at its end, once
    import botocore.exceptions

    data = os.urandom(3000)
    gets = []

    class Body:
        def __init__(self, broken):
            self.broken, self.sent = broken, False

        def read(self, amt=None):
            if self.sent:
                return b""
            self.sent = True
            if self.broken:
                raise botocore.exceptions.FlexibleChecksumError(error_msg="Expected checksum x did not match y")
            return data

        def close(self):
            pass

    class Client:
        def get_object(self, **kwargs):
            gets.append(kwargs["Range"])
            return {"Body": Body(broken=len(gets) == 1), "ContentRange": f"bytes 0-{len(data) - 1}/{len(data)}",
                    "ContentLength": len(data)}

    settings = AgentConfig()
    job = s3_fetch.FileJob({"path": "f", "key": "k", "size": len(data), "checksum": {"algo": "size"}},
                             str(tmp_path), settings)
    job.open()

    # WHEN the agent fetches the range
    s3_fetch.fetch_range(Client(), "b", job, 0, settings, s3_fetch.streaming_errors())

    # THEN it was fetched again and written whole
    assert gets == [f"bytes=0-{len(data) - 1}"] * 2
    os.close(job.fd)
    assert open(job.tmp, "rb").read() == data


def test_an_endpoint_that_ignores_range_headers_fails_the_file_instead_of_corrupting_it(keep_alive_s3, tmp_path,
                                                                                       monkeypatch):
    # GIVEN an endpoint that answers every ranged GET with the whole object, and an object verified by size only
    # (a KMS-encrypted object without additional checksums), fetched in four ranges
    endpoint, data, _, options = keep_alive_s3
    options["ignore_range"] = True
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    settings = AgentConfig(concurrency=1, chunk_size=MiB)
    done = []

    # WHEN the agent downloads it THEN the file fails, naming the range and the cause, and nothing is in place
    with pytest.raises(RuntimeError, match=r"bytes 0-1048575 was answered with Content-Range None .*ignore Range"):
        s3_source.download({"bucket": "b", "region": "us-east-1"}, [crc32_entry(data, checksum=False)],
                           str(tmp_path), settings, lambda e, computed: done.append(e))
    assert not done
    assert not list(tmp_path.iterdir())


def test_composite_additional_checksum_is_used_and_verified_per_part(tmp_path, monkeypatch):
    # GIVEN a KMS-encrypted multipart object (its ETag is no MD5) with a composite CRC32 of 3 parts of 4 MiB
    data = os.urandom(10 * MiB)
    parts = [data[i:i + 4 * MiB] for i in range(0, len(data), 4 * MiB)]
    part_crcs = b"".join(zlib.crc32(p).to_bytes(4, "big") for p in parts)
    value = base64.b64encode(zlib.crc32(part_crcs).to_bytes(4, "big")).decode() + "-3"
    head = {"ETag": '"0123456789abcdef0123456789abcdef-3"', "ServerSideEncryption": "aws:kms",
            "ChecksumCRC32": value, "ChecksumType": "COMPOSITE", "ContentLength": len(data)}

    class PartClient:
        def head_object(self, **kw):
            assert kw["PartNumber"] == 1
            return {"ContentLength": 4 * MiB}

    # WHEN the agent picks the checksum THEN it is the composite CRC32 with the part size (not just the size)
    checksum = s3_checksum.checksum_for(PartClient(), "b", "k", head)
    assert checksum == {"algo": "s3-composite", "base": "crc32", "value": value, "partSize": 4 * MiB}
    # AND reading the file back (verify) computes the same value, and a changed byte does not
    path = tmp_path / "f"
    path.write_bytes(data)
    assert checksums.matches(str(path), {"size": len(data), "checksum": checksum})
    path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    assert not checksums.matches(str(path), {"size": len(data), "checksum": checksum})
    # AND the streaming downloader hashes one range per part and combines them to the same value
    settings = AgentConfig(chunk_size=MiB)
    job = s3_fetch.FileJob({"path": "f", "key": "k", "size": len(data), "checksum": checksum}, str(tmp_path),
                             settings)
    assert job.ranges == [(0, 4 * MiB), (4 * MiB, 8 * MiB), (8 * MiB, 10 * MiB)]
    for (start, end), hasher in zip(job.ranges, job.hashers, strict=True):
        hasher.update(data[start:end])
    assert job.computed() == value


def put_crc_model(s3_crc, s3, bucket, tmp_path, prefix="crc/"):
    """Objects uploaded with boto3's default CRC32 (single-part, 3-part multipart) and one without (MD5 ETag)."""
    files = {"config.json": b'{"b": 2}', "tokenizer.json": os.urandom(9 * MiB + 1)}
    s3_crc.put_object(Bucket=bucket, Key=prefix + "tokenizer.json", Body=files["tokenizer.json"])
    s3.put_object(Bucket=bucket, Key=prefix + "config.json", Body=files["config.json"])
    files["w.safetensors"] = upload_3_parts(s3_crc, bucket, prefix + "w.safetensors", tmp_path)
    return files


@pytest.fixture
def composite_heads(monkeypatch):
    """HeadObject answers for multipart objects as S3 (and SeaweedFS) give them: ``<crc32>-<parts>`` with
    ``ChecksumType: COMPOSITE`` (moto omits both, which leaves the value ambiguous)."""

    def fix(parsed, **_):
        etag = str(parsed.get("ETag", "")).strip('"')
        if "-" in etag and parsed.get("ChecksumCRC32") and "PartsCount" not in parsed:
            parsed["ChecksumCRC32"] += "-" + etag.rsplit("-", 1)[1]
            parsed["ChecksumType"] = "COMPOSITE"

    on_agent_clients(monkeypatch, "after-call.s3.HeadObject", fix)


def test_crc32_is_preferred_over_md5_and_verified_in_flight(s3_crc, s3, bucket, tmp_path, s3_gets, composite_heads,
                                                            no_read_back, monkeypatch):
    # GIVEN objects carrying S3 CRC32 checksums (full-object and composite) and one that has only its MD5 ETag
    files = put_crc_model(s3_crc, s3, bucket, tmp_path)

    # WHEN the agent downloads them while reading a file back for hashing would fail
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "crc/"), AgentConfig(chunk_size=4 * MiB))

    # THEN every file is correct, and the manifest records CRC32 where S3 has one and MD5 where it does not
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data
    checks = {f["path"]: f["checksum"] for f in layout.read_manifest(final)["files"]}
    assert checks["tokenizer.json"]["algo"] == "crc32"
    assert checks["tokenizer.json"]["value"] == base64.b64encode(
        zlib.crc32(files["tokenizer.json"]).to_bytes(4, "big")).decode()
    assert checks["w.safetensors"]["algo"] == "s3-composite"
    assert checks["w.safetensors"]["base"] == "crc32"
    assert checks["w.safetensors"]["value"].endswith("-3")
    assert checks["w.safetensors"]["partSize"] == 5 * MiB
    assert checks["config.json"]["algo"] == "md5"
    # AND the full-object CRC32 object came in parallel ranges (3 of 4 MiB), whose CRCs were combined
    assert s3_gets["tokenizer.json"] == 3
    # AND verify re-hashes the files with the recorded checksums: intact, then a byte changed on disk is found
    monkeypatch.undo()  # reading back is allowed again
    spec = spec_of(bucket, "crc/")
    assert cache.verify(str(tmp_path / "nvme"), spec) == ("ok", [])
    with open(os.path.join(final, "w.safetensors"), "r+b") as fh:
        fh.seek(7 * MiB)
        byte = fh.read(1)
        fh.seek(7 * MiB)
        fh.write(bytes([byte[0] ^ 1]))
    assert cache.verify(str(tmp_path / "nvme"), spec) == ("corrupt", ["w.safetensors"])


@pytest.mark.parametrize("answer", ["part", "whole-object"])
def test_byte_flipped_in_crc32_verified_objects_is_caught_and_fetched_again(s3_crc, s3, bucket, tmp_path, s3_gets,
                                                                            composite_heads, response_reads,
                                                                            no_read_back, monkeypatch, answer):
    # GIVEN a transport that flips one bit in the first chunk of the single-part CRC32 object and of the first 5 MiB
    # range of the multipart (composite CRC32) object, on an endpoint that answers a GET of part 1 with that part and
    # its own CRC32 (S3) or with the whole object (then the agent drops it and GETs part 1 as a range, which carries
    # no checksum)
    answer_part_one(s3, monkeypatch, answer)
    files = put_crc_model(s3_crc, s3, bucket, tmp_path)
    flipped = set()

    def corrupt_once_per_length(data, length):
        if len(data) > 100 and length in (9 * MiB + 1, 5 * MiB) and length not in flipped:
            flipped.add(length)
            data = data[:50] + bytes([data[50] ^ 1]) + data[51:]
        return data

    response_reads.intercept(corrupt_once_per_length)

    # WHEN the agent downloads the model with one transfer thread (so that the first 5 MiB response is part 1)
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "crc/"), AgentConfig(concurrency=1))

    # THEN the CRC32 checks caught both and those files alone were fetched again: the part that came with its own
    # CRC32 alone (3 GETs + 1); without it the composite check fails at the end and all 3 parts come again (the
    # dropped whole-object answer + 3 + 3)
    assert flipped == {9 * MiB + 1, 5 * MiB}
    assert s3_gets["tokenizer.json"] == 2
    assert s3_gets["w.safetensors"] == (4 if answer == "part" else 7)
    assert s3_gets["config.json"] == 1
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data
    algos = {f["path"]: f["checksum"]["algo"] for f in layout.read_manifest(final)["files"]}
    assert algos == {"config.json": "md5", "tokenizer.json": "crc32", "w.safetensors": "s3-composite"}


def test_crc64nvme_and_crc32c_objects_are_verified_in_flight(s3_crc, bucket, tmp_path, s3_gets, response_reads,
                                                             no_read_back):
    # GIVEN objects uploaded with CRC-64/NVME (single-part, and a 3-part multipart upload, whose CRC-64/NVME is
    # full-object) and with CRC-32C, and a transport that flips a bit once in the multipart object
    files = {"config.json": b'{"c": 3}', "tokenizer.json": os.urandom(70_000)}
    s3_crc.put_object(Bucket=bucket, Key="n/config.json", Body=files["config.json"], ChecksumAlgorithm="CRC64NVME")
    s3_crc.put_object(Bucket=bucket, Key="n/tokenizer.json", Body=files["tokenizer.json"], ChecksumAlgorithm="CRC32C")
    files["w.safetensors"] = upload_3_parts(s3_crc, bucket, "n/w.safetensors", tmp_path,
                                            extra_args={"ChecksumAlgorithm": "CRC64NVME"})
    flipped = []
    response_reads.intercept(flip_a_bit_once(flipped))

    # WHEN the agent downloads the model in 4 MiB ranges
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket, "n/"), AgentConfig(chunk_size=4 * MiB))

    # THEN each object was verified by its own CRC, computed while streaming (range CRCs combined for the big one),
    # the corrupted object alone was fetched again (4 ranges, twice), and every file is correct
    algos = {f["path"]: f["checksum"]["algo"] for f in layout.read_manifest(final)["files"]}
    assert algos == {"config.json": "crc64nvme", "tokenizer.json": "crc32c", "w.safetensors": "crc64nvme"}
    assert flipped
    assert s3_gets["w.safetensors"] == 8
    assert s3_gets["config.json"] == 1
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data


def test_object_without_additional_checksum_is_verified_by_md5(s3, bucket, tmp_path, monkeypatch, no_read_back):
    # GIVEN a single-part and a multipart object uploaded without S3 additional checksums
    files = put_model(s3, bucket, files={"config.json": b"{}", "tokenizer.json": os.urandom(5000)})
    big = os.urandom(11 * MiB)
    (tmp_path / "big").write_bytes(big)
    s3.upload_file(str(tmp_path / "big"), bucket, "qwen/w.safetensors",
                   Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB))
    files["w.safetensors"] = big
    hashed = collections.Counter()
    original = checksums.StreamHasher.__init__

    def counting_init(self, algo, *args, **kwargs):
        hashed[algo] += 1
        original(self, algo, *args, **kwargs)

    monkeypatch.setattr(checksums.StreamHasher, "__init__", counting_init)

    # WHEN the agent downloads them
    final = cache.ensure(str(tmp_path / "nvme"), spec_of(bucket))

    # THEN they were verified by MD5 (ETag / multipart ETag) and nothing else
    algos = {f["path"]: f["checksum"]["algo"] for f in layout.read_manifest(final)["files"]}
    assert algos == {"config.json": "md5", "tokenizer.json": "md5", "w.safetensors": "s3-multipart-md5"}
    assert set(hashed) == {"md5"}
    for name, data in files.items():
        assert open(os.path.join(final, name), "rb").read() == data


def test_checksum_choice_for_crc32_variants():
    class PartClient:
        def head_object(self, **kw):
            return {"ContentLength": 5 * MiB}

    md5 = "0123456789abcdef0123456789abcdef"
    size = 12 * MiB
    pick = lambda head: s3_checksum.checksum_for(PartClient(), "b", "k", dict(head, ContentLength=size))  # noqa: E731
    # a single-part object's CRC32 is full-object and wins over its MD5 ETag
    assert pick({"ETag": md5, "ChecksumCRC32": "AAAAAA=="})["algo"] == "crc32"
    # a multipart object's FULL_OBJECT CRC32 too
    assert pick({"ETag": md5 + "-3", "ChecksumCRC32": "AAAAAA==", "ChecksumType": "FULL_OBJECT"})["algo"] == "crc32"
    # a composite CRC32 is checked per part
    assert pick({"ETag": md5 + "-3", "ChecksumCRC32": "AAAAAA==-3", "ChecksumType": "COMPOSITE"}) == {
        "algo": "s3-composite", "base": "crc32", "value": "AAAAAA==-3", "partSize": 5 * MiB}
    # a multipart object's CRC32 without part count nor type is ambiguous: the multipart ETag is used
    assert pick({"ETag": md5 + "-3", "ChecksumCRC32": "AAAAAA=="})["algo"] == "s3-multipart-md5"
    # a full-object SHA-256 still comes first
    assert pick({"ETag": md5, "ChecksumCRC32": "AAAAAA==", "ChecksumSHA256": "x="})["algo"] == "sha256"


def test_checksum_choice_for_crc32c_and_crc64nvme_with_and_without_awscrt(monkeypatch):
    class PartClient:
        def head_object(self, **kw):
            return {"ContentLength": 5 * MiB}

    md5 = "0123456789abcdef0123456789abcdef"
    pick = lambda head: s3_checksum.checksum_for(PartClient(), "b", "k", dict(head, ContentLength=12 * MiB))  # noqa: E731
    # WITH awscrt (a dev dependency): a CRC-64/NVME is used, also on a multipart object without ChecksumType (S3
    # has it only as a full-object checksum); it wins over a CRC32 (zlib's is ~4x slower)
    assert checksums.crt_checksums() is not None
    both = {"ETag": md5, "ChecksumCRC32": "AAAAAA==", "ChecksumCRC32C": "AAAAAA==", "ChecksumCRC64NVME": "AAAAAAAAAAA="}
    assert pick(both) == {"algo": "crc64nvme", "value": "AAAAAAAAAAA=", "encoding": "base64"}
    assert pick({"ETag": md5 + "-3", "ChecksumCRC64NVME": "AAAAAAAAAAA="})["algo"] == "crc64nvme"
    # a CRC-32C: full-object on a single-part object, composite per part, ambiguous without part count and type
    assert pick({"ETag": md5, "ChecksumCRC32C": "AAAAAA=="})["algo"] == "crc32c"
    assert pick({"ETag": md5 + "-3", "ChecksumCRC32C": "AAAAAA==-3", "ChecksumType": "COMPOSITE"}) == {
        "algo": "s3-composite", "base": "crc32c", "value": "AAAAAA==-3", "partSize": 5 * MiB}
    assert pick({"ETag": md5 + "-3", "ChecksumCRC32C": "AAAAAA=="})["algo"] == "s3-multipart-md5"

    # WITHOUT awscrt: CRC32 when there is one, else the MD5 ETag
    monkeypatch.setattr(s3_checksum, "crt_checksums", lambda: None)
    assert pick(both)["algo"] == "crc32"
    assert pick({"ETag": md5, "ChecksumCRC32C": "AAAAAA==", "ChecksumCRC64NVME": "AAAAAAAAAAA="})["algo"] == "md5"


@pytest.fixture
def crc32_impl(request, monkeypatch):
    """Selects the CRC-32 implementation (``isal``, a dev dependency, or zlib's when isal cannot be imported) for the
    test's duration."""
    if request.param == "zlib":
        monkeypatch.setitem(sys.modules, "isal.isal_zlib", None)  # makes the import fail
    checksums.crc32_function.cache_clear()
    yield checksums.crc32_function()
    checksums.crc32_function.cache_clear()


@pytest.mark.parametrize("crc32_impl", ["auto"], indirect=True)
def test_crc32_uses_isal_when_importable(crc32_impl, monkeypatch):
    import isal.isal_zlib

    assert crc32_impl is isal.isal_zlib.crc32
    # AND without isal, zlib's
    monkeypatch.setitem(sys.modules, "isal.isal_zlib", None)  # makes the import fail
    checksums.crc32_function.cache_clear()
    assert checksums.crc32_function() is zlib.crc32


@pytest.mark.parametrize("algo,check,crc32_impl", [
    ("crc32", 0xCBF43926, "auto"), ("crc32", 0xCBF43926, "zlib"), ("crc32c", 0xE3069283, "auto"),
    ("crc64nvme", 0xAE8B14860A799888, "auto")], indirect=["crc32_impl"])
def test_crc_of_ranges_equals_the_crc_of_the_whole(algo, check, crc32_impl, tmp_path):
    # GIVEN the catalogue check value of the algorithm (the CRC of b"123456789")
    width = checksums.CRCS[algo].width // 8
    assert checksums.StreamHasher(algo).digest() == bytes(width)

    def crc(data):
        h = checksums.StreamHasher(algo)
        h.update(data)
        return h.digest()

    assert int.from_bytes(crc(b"123456789"), "big") == check
    # WHEN data is cut into ranges (empty ones too) THEN the combined range CRCs equal the CRC of the whole
    data = os.urandom(3 * 65536 + 17)
    for cuts in ([], [1], [65536, 65537], [0, 5, 5, 100_000, len(data)]):
        bounds = [0, *cuts, len(data)]
        ranges = [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        value = checksums.crc_of_ranges(algo, [crc(r) for r in ranges], [len(r) for r in ranges])
        assert value == base64.b64encode(crc(data)).decode()
    # AND reading the file back (verify) computes the same value
    (tmp_path / "f").write_bytes(data)
    assert checksums.compute(str(tmp_path / "f"), algo) == value


def test_crc32c_without_awscrt_fails_naming_the_module(monkeypatch):
    monkeypatch.setattr(checksums, "crt_checksums", lambda: None)
    with pytest.raises(ValueError, match="'crc32c' needs the awscrt module"):
        checksums.StreamHasher("crc32c")


@pytest.mark.parametrize("name", ["read_size", "write_size"])
def test_io_sizes_below_a_page_are_refused_naming_the_setting(name):
    with pytest.raises(ValueError, match=f"{name.replace('_', ' ')} must be at least 4096, got 100"):
        AgentConfig(**{name: 100})


def test_objects_verified_by_size_only_get_a_recorded_crc32_that_verify_checks(s3, bucket, tmp_path, monkeypatch):
    # GIVEN objects S3 gives no usable checksum for (e.g. SSE-KMS without additional checksums): size only
    files = put_model(s3, bucket)
    monkeypatch.setattr(s3_checksum, "checksum_for", lambda *args, **kwargs: {"algo": "size"})
    root = str(tmp_path / "nvme")
    final = cache.ensure(root, spec_of(bucket))

    # THEN the manifest records a CRC32 of the bytes written for each of them
    recorded = {f["path"]: f["checksum"] for f in layout.read_manifest(final)["files"]}
    for name, data in files.items():
        crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
        assert recorded[name] == {"algo": "size", "recorded": {"algo": "crc32", "value": crc}}

    # WHEN a file is overwritten with same-size garbage THEN verify (and so the warm DaemonSet's check) finds it
    path = os.path.join(final, "model-00001.safetensors")
    with open(path, "r+b") as fh:
        fh.write(b"\0" * 16)
    assert cache.verify(root, spec_of(bucket)) == ("corrupt", ["model-00001.safetensors"])
