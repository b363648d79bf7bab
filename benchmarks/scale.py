"""Scale of the stack with the number of endpoints. Run manually (takes several minutes):

    python benchmarks/scale.py [--rounds 3] [--sizes 1,10,50,100] [--write]

1. Synth time: `cdk synth --no-notices -q -o <fresh dir> -c config=<generated>` of the `common` profile
   (benchmarks/gen_config.py) with 1, 10, 50 and 100 endpoints, interleaved over rounds (the order of the sizes
   rotates each round); medians, and the median per-round ratio to the 1-endpoint synth.
2. CloudFormation resources added per endpoint, per profile: (resources at N=11 - resources at N=1) / 10, counted in
   the synthesized templates; the top-level stack and the kubectl provider's nested stack are counted separately.
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
TIME_TARGET = 2.0
COMMON_RESOURCES_TARGET = 3


def write_config(work: Path, n: int, profile: str) -> Path:
    path = work / f"config-{profile}-{n}.yaml"
    path.write_text(gen_config.dump(n, profile))
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


def top(stats: list[dict[str, Any]]) -> dict[str, Any]:
    return next(s for s in stats if not s["nested"])


def nested_resources(stats: list[dict[str, Any]]) -> int:
    return sum(s["resources"] for s in stats if s["nested"])


def run(rounds: int, sizes: list[int], work: Path) -> dict[str, Any]:
    times: dict[int, list[float]] = {n: [] for n in sizes}
    cpus: dict[int, list[float]] = {n: [] for n in sizes}
    ratios: dict[int, list[float]] = {n: [] for n in sizes}
    stats: dict[tuple[str, int], list[dict[str, Any]]] = {}
    synth_stats(work, 1, "common", "warm")  # untimed warm-up
    for r in range(rounds):
        order = sizes[r % len(sizes):] + sizes[:r % len(sizes)]
        this: dict[int, float] = {}
        for n in order:
            wall, cpu, st = synth_stats(work, n, "common", str(r))
            times[n].append(wall)
            cpus[n].append(cpu)
            this[n] = wall
            stats[("common", n)] = st
            print(f"round {r + 1}/{rounds} common N={n}: {wall:.2f} s wall, {cpu:.2f} s CPU", file=sys.stderr)
        for n in sizes:
            ratios[n].append(this[n] / this[sizes[0]])
    per_endpoint: dict[str, dict[str, Any]] = {}
    for profile in gen_config.PROFILES:
        for n in (1, 11):
            if (profile, n) not in stats:
                stats[(profile, n)] = synth_stats(work, n, profile, "count")[2]
                print(f"counted {profile} N={n}", file=sys.stderr)
        one, eleven = stats[(profile, 1)], stats[(profile, 11)]
        per_endpoint[profile] = {
            "top1": top(one)["resources"], "top11": top(eleven)["resources"],
            "per_endpoint": (top(eleven)["resources"] - top(one)["resources"]) / 10,
            "nested1": nested_resources(one), "nested11": nested_resources(eleven),
            "nested_per_endpoint": (nested_resources(eleven) - nested_resources(one)) / 10,
            "outputs_per_endpoint": (top(eleven)["outputs"] - top(one)["outputs"]) / 10,
            "bytes_per_endpoint": (top(eleven)["bytes"] - top(one)["bytes"]) / 10,
        }
    problems = [p for (profile, n), st in sorted(stats.items()) for p in limit_problems(f"{profile} N={n}", st)]
    return {"times": times, "cpus": cpus, "ratios": ratios, "stats": stats, "per_endpoint": per_endpoint,
            "problems": problems}


def markdown(res: dict[str, Any], rounds: int, sizes: list[int]) -> str:
    times, cpus, ratios, stats = res["times"], res["cpus"], res["ratios"], res["stats"]
    biggest = sizes[-1]
    big_ratio = median(ratios[biggest])
    lines = [
        "`python benchmarks/scale.py --rounds N`: configs from `benchmarks/gen_config.py` (kubectl delivery, endpoints "
        "spread over 4 namespaces), synthesized with `cdk synth --no-notices -q -o <fresh dir> -c config=<file>` "
        f"(cdk-nag on). Machine: {machine()}; {tool_versions()}. {rounds} interleaved rounds (size order rotated each "
        "round) after one untimed warm-up; medians.",
        "",
        "### Synth time, `common` profile",
        "",
        "| endpoints | wall runs (s) | wall median (s) | CPU median (s) | ratio to 1 endpoint | resources (top / nested) "
        "| outputs | template bytes | biggest manifest (bytes) |",
        "|---:|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for n in sizes:
        st = stats[("common", n)]
        t = top(st)
        lines.append(
            f"| {n} | {' / '.join(f'{x:.1f}' for x in times[n])} | {median(times[n]):.2f} | {median(cpus[n]):.2f} "
            f"| {median(ratios[n]):.2f}× | {t['resources']} / {nested_resources(st)} | {t['outputs']} | {t['bytes']:,} "
            f"| {max(s['max_manifest_bytes'] for s in st):,} |")
    lines += [
        "",
        f"Ratio {biggest} endpoints / 1 endpoint: **{big_ratio:.2f}×** (median of per-round ratios; target ≤ "
        f"{TIME_TARGET}×: {'meets' if big_ratio <= TIME_TARGET else 'misses'}).",
        "",
        "### CloudFormation resources per endpoint",
        "",
        "(resources at N=11 − resources at N=1) / 10, from the synthesized templates. The top-level stack and the "
        "nested stack of aws-cdk-lib's kubectl provider are counted separately (the nested stack is one "
        "`AWS::CloudFormation::Stack` resource in the top-level count).",
        "",
        "| profile | top-level N=1 → N=11 | per endpoint (top-level) | nested N=1 → N=11 | per endpoint (nested) "
        "| outputs per endpoint | template bytes per endpoint |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for profile, pe in res["per_endpoint"].items():
        lines.append(f"| `{profile}` | {pe['top1']} → {pe['top11']} | **{pe['per_endpoint']:.1f}** | {pe['nested1']} → "
                     f"{pe['nested11']} | {pe['nested_per_endpoint']:.1f} | {pe['outputs_per_endpoint']:.1f} | "
                     f"{pe['bytes_per_endpoint']:,.0f} |")
    common = res["per_endpoint"]["common"]["per_endpoint"]
    lines += [
        "",
        f"`common`: {common:.1f} resources per endpoint (target ≤ {COMMON_RESOURCES_TARGET}: "
        f"{'meets' if common <= COMMON_RESOURCES_TARGET else 'misses'}).",
        "",
        "### Limits",
        "",
        f"Checked on every synthesized template above: < {MAX_RESOURCES} resources, < 1 MB, ≤ {MAX_OUTPUTS} outputs, "
        f"every manifest resource's manifest < 256 KB.",
        "",
    ]
    lines += [f"- **exceeded**: {p}" for p in res["problems"]] or ["- all within the limits."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", default="1,10,50,100", help="endpoint counts of the timing runs; the first is the base")
    p.add_argument("--write", action="store_true", help="update the '## Scale' section of BENCHMARKS.md")
    p.add_argument("--work-dir", default=None, help="where the generated configs and output folders go")
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="scale-bench-", dir=args.work_dir))
    try:
        res = run(args.rounds, sizes, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = markdown(res, args.rounds, sizes)
    print("## Scale\n\n" + text)
    if args.write:
        update_section("Scale", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
