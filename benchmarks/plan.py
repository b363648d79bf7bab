"""In-process cost of planning a config: `plan_config` of `hyperpod.yaml` (and of a 300-endpoint fleet) against
`load_config` of the same file, which every use pays first.

    python benchmarks/plan.py [--rounds 20] [--write]

Both run in one interpreter after one untimed warm-up each, interleaved in alternating order; medians. Planning
imports no aws-cdk-lib or jsii (checked here too). `--write` puts the section into `## Plan time` of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import REPO, machine, median, update_section

sys.path.insert(0, str(REPO))
from gen_config import config as fleet_config  # noqa: E402

from hyperpod_inference.config.loader import load_config  # noqa: E402
from hyperpod_inference.plan import PlanContext, plan_config  # noqa: E402

TARGET_MS = 500.0  # planning hyperpod.yaml in-process


def measure(rounds: int, path: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"load": [], "plan": []}
    config = load_config(path)
    context = PlanContext.of(config, stack_name="HyperPodInference")
    plan_config(config, context)  # warm-up
    for _ in range(rounds):
        start = time.perf_counter()
        config = load_config(path)
        times["load"].append(time.perf_counter() - start)
        start = time.perf_counter()
        plan_config(config, context)
        times["plan"].append(time.perf_counter() - start)
    return times


def markdown(default: dict[str, list[float]], fleet: dict[str, list[float]], rounds: int) -> str:
    pd, ld = median(default["plan"]) * 1000, median(default["load"]) * 1000
    pf, lf = median(fleet["plan"]) * 1000, median(fleet["load"]) * 1000
    jsii = sorted(m for m in sys.modules if m.split(".")[0] in ("aws_cdk", "jsii", "cdk8s"))
    return "\n".join([
        f"`python benchmarks/plan.py --rounds N`: in one interpreter, `plan_config` of a config against `load_config` "
        f"of its file, alternating after one untimed warm-up. Machine: {machine()}. {rounds} rounds; medians; load "
        f"average {os.getloadavg()[0]:.1f} at the end. Modules of aws-cdk-lib, jsii or cdk8s loaded: {len(jsii)}.",
        "",
        "| config | load_config (ms) | plan_config (ms) | plan / load |",
        "|---|---:|---:|---:|",
        f"| hyperpod.yaml (1 endpoint) | {ld:.1f} | {pd:.2f} | {pd / ld:.2f}× |",
        f"| 300 `heavy` endpoints | {lf:.1f} | {pf:.1f} | {pf / lf:.2f}× |",
        "",
        f"**Planning hyperpod.yaml: {pd:.2f} ms**; target ≤ {TARGET_MS:.0f} ms: "
        f"{'meets' if pd <= TARGET_MS else 'misses'}.",
    ]) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--write", action="store_true", help="update the '## Plan time' section of BENCHMARKS.md")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Path(tmp) / "fleet.yaml"
        fleet.write_text(yaml.safe_dump(fleet_config(300, "heavy")))
        text = markdown(measure(args.rounds, REPO / "hyperpod.yaml"), measure(max(3, args.rounds // 5), fleet),
                        args.rounds)
    print("## Plan time\n\n" + text)
    if args.write:
        update_section("Plan time", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
