"""Scale of a fleet with the number of endpoints. Run manually (takes several minutes):

    python benchmarks/scale.py [--rounds 3] [--fleet 300] [--write]

1. Synth time: `cdk synth --no-notices -q -o <fresh dir> -c config=<generated>` (cdk-nag on) of the `heavy` profile
   (benchmarks/gen_config.py: Hugging Face token, NVMe cache, all capture tiers, verify, 100 custom domains) with
   `stackLayout: perNamespace` over 10 namespaces, 1 endpoint against the fleet (300), interleaved over rounds (the
   order alternates); the median of the per-round ratios.
2. Cost per endpoint, per profile, summed over every template (parent, namespace stacks, kubectl provider):
   (total at N=20 - total at N=10) / 10 over the same 10 namespaces, so the pieces paid once per namespace or per
   stack are left out; resources, template bytes and outputs.
3. Limits, for every synthesized config: resources per template < 500, template < 1 MB, outputs <= 200, and every
   `Custom::AWSCDK-EKS-KubernetesResource` manifest < 256 KB.

Prints a Markdown section; `--write` puts it into the `## Scale` section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import gen_config
from _common import REPO, machine, median, synth, template_stats, tool_versions, update_section

MAX_RESOURCES = 500
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_OUTPUTS = 200
MAX_MANIFEST_BYTES = 256 * 1024
NAMESPACES = 10
TIME_TARGET = 3.0
#: Template bytes per `heavy` endpoint before nested stacks (hf-token profile, measured at edb48b6), and the target.
BYTES_BEFORE = 13_500
BYTES_TARGET = BYTES_BEFORE / 2
COST_SIZES = (10, 20)


def write_config(work: Path, n: int, profile: str) -> Path:
    path = work / f"config-{profile}-{n}.yaml"
    path.write_text(gen_config.dump(n, profile, namespace_count=NAMESPACES, layout="perNamespace"))
    return path


def synth_stats(work: Path, n: int, profile: str, tag: str) -> tuple[float, float, list[dict[str, Any]]]:
    out = work / f"out-{profile}-{n}-{tag}"
    wall, cpu = synth(REPO, out, {"config": str(write_config(work, n, profile))})
    stats = template_stats(out)
    shutil.rmtree(out, ignore_errors=True)
    return wall, cpu, stats


def limit_problems(label: str, stats: list[dict[str, Any]]) -> list[str]:
    problems = []
    for s in stats:
        where = f"{label}: {s['file']}"
        if s["resources"] >= MAX_RESOURCES:
            problems.append(f"{where}: {s['resources']} resources (limit {MAX_RESOURCES})")
        if s["bytes"] >= MAX_TEMPLATE_BYTES:
            problems.append(f"{where}: {s['bytes']} bytes (limit {MAX_TEMPLATE_BYTES})")
        if s["outputs"] > MAX_OUTPUTS:
            problems.append(f"{where}: {s['outputs']} outputs (limit {MAX_OUTPUTS})")
        if s["max_manifest_bytes"] >= MAX_MANIFEST_BYTES:
            problems.append(f"{where}: a manifest of {s['max_manifest_bytes']} bytes (limit {MAX_MANIFEST_BYTES})")
    return problems


def total(stats: list[dict[str, Any]], key: str) -> int:
    return sum(s[key] for s in stats)


def run(rounds: int, fleet: int, work: Path) -> dict[str, Any]:
    sizes = [1, fleet]
    times: dict[int, list[float]] = {n: [] for n in sizes}
    cpus: dict[int, list[float]] = {n: [] for n in sizes}
    ratios: list[float] = []
    stats: dict[tuple[str, int], list[dict[str, Any]]] = {}
    synth_stats(work, 1, "heavy", "warm")  # untimed warm-up
    for r in range(rounds):
        this: dict[int, float] = {}
        for n in sizes if r % 2 == 0 else sizes[::-1]:
            wall, cpu, st = synth_stats(work, n, "heavy", str(r))
            times[n].append(wall)
            cpus[n].append(cpu)
            this[n] = wall
            stats[("heavy", n)] = st
            print(f"round {r + 1}/{rounds} heavy N={n}: {wall:.2f} s wall, {cpu:.2f} s CPU", file=sys.stderr)
        ratios.append(this[fleet] / this[1])
    cost: dict[str, dict[str, float]] = {}
    for profile in (*gen_config.PROFILES, *gen_config.FLEET_PROFILES):
        for n in COST_SIZES:
            stats[(profile, n)] = synth_stats(work, n, profile, "count")[2]
            print(f"counted {profile} N={n}", file=sys.stderr)
        low, high = stats[(profile, COST_SIZES[0])], stats[(profile, COST_SIZES[1])]
        step = COST_SIZES[1] - COST_SIZES[0]
        cost[profile] = {k: (total(high, k) - total(low, k)) / step for k in ("resources", "bytes", "outputs")}
    problems = [p for (profile, n), st in sorted(stats.items()) for p in limit_problems(f"{profile} N={n}", st)]
    return {"times": times, "cpus": cpus, "ratios": ratios, "stats": stats, "cost": cost, "problems": problems}


def markdown(res: dict[str, Any], rounds: int, fleet: int) -> str:
    times, cpus, stats = res["times"], res["cpus"], res["stats"]
    ratio = median(res["ratios"])
    heavy_bytes = res["cost"]["heavy"]["bytes"]
    lines = [
        "`python benchmarks/scale.py --rounds N`: configs from `benchmarks/gen_config.py` with `stackLayout: "
        f"perNamespace` over {NAMESPACES} namespaces (kubectl delivery), synthesized with `cdk synth --no-notices -q "
        f"-o <fresh dir> -c config=<file>` (cdk-nag on). Machine: {machine()}; {tool_versions()}. {rounds} "
        "interleaved rounds after one untimed warm-up; medians.",
        "",
        "| `heavy` endpoints | wall runs (s) | wall median (s) | CPU median (s) | templates | resources (all) "
        "| largest template (bytes) | most resources in one | most outputs in one |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in (1, fleet):
        st = stats[("heavy", n)]
        lines.append(
            f"| {n} | {' / '.join(f'{x:.1f}' for x in times[n])} | {median(times[n]):.2f} | {median(cpus[n]):.2f} "
            f"| {len(st)} | {total(st, 'resources')} | {max(s['bytes'] for s in st):,} "
            f"| {max(s['resources'] for s in st)} | {max(s['outputs'] for s in st)} |")
    lines += [
        "",
        f"Synth time {fleet} / 1 endpoint: **{ratio:.2f}×** (median of per-round ratios; target ≤ {TIME_TARGET:.0f}×: "
        f"{'meets' if ratio <= TIME_TARGET else 'misses'}).",
        "",
        f"Cost of one more endpoint, summed over all templates: (N={COST_SIZES[1]} − N={COST_SIZES[0]}) / "
        f"{COST_SIZES[1] - COST_SIZES[0]}, same namespaces (the agent code, namespaces, operator and providers are paid "
        "once per namespace or stack and are not in it).",
        "",
        "| profile | resources per endpoint | template bytes per endpoint | outputs per endpoint |",
        "|---|---:|---:|---:|",
    ]
    for profile, c in res["cost"].items():
        lines.append(f"| `{profile}` | {c['resources']:.1f} | {c['bytes']:,.0f} | {c['outputs']:.1f} |")
    lines += [
        "",
        f"`heavy`: {heavy_bytes:,.0f} bytes per endpoint (target ≤ {BYTES_TARGET:,.0f}, half of {BYTES_BEFORE:,}: "
        f"{'meets' if heavy_bytes <= BYTES_TARGET else 'misses'}).",
        "",
        f"Limits (< {MAX_RESOURCES} resources, < 1 MB, ≤ {MAX_OUTPUTS} outputs per template, every manifest < 256 KB), "
        "on every template above:",
        "",
    ]
    lines += [f"- **exceeded**: {p}" for p in res["problems"]] or ["- all within the limits."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--fleet", type=int, default=300, help="endpoints of the fleet synth (timed against 1)")
    p.add_argument("--write", action="store_true", help="update the '## Scale' section of BENCHMARKS.md")
    p.add_argument("--work-dir", default=None, help="where the generated configs and output folders go")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="scale-bench-", dir=args.work_dir))
    try:
        res = run(args.rounds, args.fleet, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = markdown(res, args.rounds, args.fleet)
    print("## Scale\n\n" + text)
    if args.write:
        update_section("Scale", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
