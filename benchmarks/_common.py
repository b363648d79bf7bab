"""Shared helpers of the synth and scale benchmarks: running `cdk synth`, medians, and BENCHMARKS.md sections."""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
NVME_SECTION = "NVMe agent"
NVME_PLACEHOLDER = "(see the NVMe agent benchmark)"
SYNTH_FLAGS = ["synth", "--no-notices", "-q"]
MANIFEST_TYPE = "Custom::AWSCDK-EKS-KubernetesResource"


def venv_bin() -> Path:
    """The repository's venv, else the running interpreter's folder (the CLI runs `python3 app.py` from PATH)."""
    local = REPO / ".venv" / "bin"
    return local if (local / "python3").exists() else Path(sys.executable).parent


def cdk_cli() -> str:
    local = REPO / "node_modules" / ".bin" / "cdk"
    return str(local) if local.exists() else (shutil.which("cdk") or "cdk")


def cdk_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    env.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
    # as `make` runs it: the venv's python3, then the Node that package.json pins (node_modules/.bin)
    env["PATH"] = os.pathsep.join([str(venv_bin()), str(REPO / "node_modules" / ".bin"), env.get("PATH", "")])
    return env


def compile_package() -> None:
    """The package's bytecode, as `make synth` (and pip, for an installed package) leaves it: without it, where
    PYTHONDONTWRITEBYTECODE is set, every synth of the default app compiles the package again, while the libraries it
    is measured against come compiled."""
    subprocess.run([str(venv_bin() / "python3"), "-m", "compileall", "-q", "-x", "/lambda/", "hyperpod_inference"],
                   cwd=REPO, check=True, stdout=subprocess.DEVNULL)


def synth(cwd: Path, outdir: Path, context: dict[str, str] | None = None) -> tuple[float, float]:
    """One `cdk synth --no-notices -q -o outdir` in cwd, into a fresh outdir: (wall seconds, CPU seconds of the CLI
    and every process it waited for). Raises on failure."""
    if outdir.exists():
        shutil.rmtree(outdir)
    cmd = [cdk_cli(), *SYNTH_FLAGS, "-o", str(outdir)]
    for k, v in (context or {}).items():
        cmd += ["-c", f"{k}={v}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=cdk_env(), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` in {cwd} failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
    return elapsed, cpu


def perf_counters(outdir: Path) -> dict[str, float]:
    """The CLI's performance counters of a synth (milliseconds), without the call counts; {} if absent."""
    path = outdir / "performance-counters.json"
    if not path.exists():
        return {}
    counters = json.loads(path.read_text()).get("counters", {})
    return {k: v for k, v in counters.items() if not k.endswith("(cnt)")}


def median(values: list[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    return f"2 cores ({platform.machine()}, {os.cpu_count()} visible CPUs, shared; Python {platform.python_version()})"


def tool_versions() -> str:
    versions = []
    try:
        out = subprocess.run([cdk_cli(), "--version"], env=cdk_env(), capture_output=True, text=True, timeout=120)
        versions.append(f"CDK CLI {out.stdout.split()[0]}" if out.stdout else "CDK CLI ?")
    except (OSError, subprocess.SubprocessError):
        versions.append("CDK CLI ?")
    try:
        out = subprocess.run(["node", "--version"], env=cdk_env(), capture_output=True, text=True, timeout=60)
        versions.append(f"Node {out.stdout.strip().lstrip('v') or '?'}")
    except (OSError, subprocess.SubprocessError):
        versions.append("Node ?")
    try:
        from importlib.metadata import version

        versions.append(f"aws-cdk-lib {version('aws-cdk-lib')}")
    except Exception:  # noqa: BLE001 - informational only
        pass
    return ", ".join(versions)


def template_stats(outdir: Path) -> list[dict[str, Any]]:
    """Per synthesized template (top-level and nested): resources, outputs, bytes, biggest manifest property."""
    stats = []
    for path in sorted(outdir.glob("*.template.json")):
        tpl = json.loads(path.read_text())
        resources = tpl.get("Resources", {})
        manifest_sizes = [len(r.get("Properties", {}).get("Manifest", ""))
                          if isinstance(r.get("Properties", {}).get("Manifest"), str)
                          else len(json.dumps(r.get("Properties", {}).get("Manifest"), separators=(",", ":")))
                          for r in resources.values() if r.get("Type") == MANIFEST_TYPE]
        stats.append({
            "file": path.name,
            "nested": path.name.endswith(".nested.template.json"),
            "resources": len(resources),
            "outputs": len(tpl.get("Outputs", {})),
            "bytes": path.stat().st_size,
            "max_manifest_bytes": max(manifest_sizes, default=0),
        })
    return stats


def update_section(title: str, body: str, path: Path = BENCHMARKS_MD) -> None:
    """Replace (or add, above the NVMe agent section) `## <title>` in BENCHMARKS.md, keeping every other section."""
    text = path.read_text() if path.exists() else (
        "# Benchmarks\n\nMeasured with the scripts in `benchmarks/`; each section names the script that writes it.\n")
    section = f"## {title}\n\n{body.strip()}\n"
    if not re.search(rf"^## {re.escape(NVME_SECTION)}\s*$", text, flags=re.M):
        text = text.rstrip() + f"\n\n## {NVME_SECTION}\n\n{NVME_PLACEHOLDER}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\s*\n.*?(?=^## |\Z)", flags=re.M | re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section + "\n", text, count=1)
    else:
        nvme = re.search(rf"^## {re.escape(NVME_SECTION)}\s*$", text, flags=re.M)
        assert nvme is not None
        text = text[:nvme.start()] + section + "\n" + text[nvme.start():]
    path.write_text(text.rstrip() + "\n")
