"""Start-up cost of checking a config: `python -m hyperpod_inference validate hyperpod.yaml` against `python -c pass`.

    python benchmarks/validate.py [--rounds 20] [--config hyperpod.yaml] [--write]

Both run with the repository venv's Python from the repository root, interleaved in alternating order after one
untimed warm-up each (which also writes the bytecode caches, as a normal install has them). Prints a Markdown section
with the medians and the median of the per-round differences; `--write` puts it into the `## Validate time` section
of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

from _common import REPO, machine, median, update_section, venv_bin

TARGET_ABOVE = 0.6  # seconds above `python -c pass`


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure with bytecode caches, as an installed package has them
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run; raises if it fails (a failing validate would measure
    nothing useful). CPU time is what the command itself costs, whatever else loads the shared cores."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
    return elapsed, _children_cpu() - cpu


def measure(rounds: int, config: str) -> dict[str, list[float]]:
    python = str(venv_bin() / "python")
    cases = {"validate": [python, "-m", "hyperpod_inference", "validate", config], "pass": [python, "-c", "pass"]}
    for cmd in cases.values():  # untimed warm-up: page cache, bytecode
        run(cmd)
    times: dict[str, list[float]] = {name: [] for name in (*cases, *(f"{c} cpu" for c in cases))}
    for r in range(rounds):
        for name in (list(cases) if r % 2 == 0 else list(reversed(cases))):
            wall, cpu = run(cases[name])
            times[name].append(wall)
            times[f"{name} cpu"].append(cpu)
    times["difference"] = [v - p for v, p in zip(times["validate"], times["pass"], strict=True)]
    times["cpu difference"] = [v - p for v, p in zip(times["validate cpu"], times["pass cpu"], strict=True)]
    return times


def markdown(times: dict[str, list[float]], rounds: int, config: str) -> str:
    mv, mp, diff = median(times["validate"]), median(times["pass"]), median(times["difference"])
    verdict = "meets" if diff <= TARGET_ABOVE else "misses"
    return "\n".join([
        f"`python benchmarks/validate.py --rounds N`: wall time of `python -m hyperpod_inference validate {config}` "
        "against `python -c pass`, the same venv's Python from the repository root, interleaved in alternating order "
        f"after one untimed warm-up each. Machine: {machine()}. {rounds} rounds; medians.",
        "",
        "| command | wall median (s) | fastest (s) | slowest (s) | CPU median (s) |",
        "|---|---:|---:|---:|---:|",
        f"| `python -m hyperpod_inference validate {config}` | {mv:.3f} | {min(times['validate']):.3f} | "
        f"{max(times['validate']):.3f} | {median(times['validate cpu']):.3f} |",
        f"| `python -c pass` | {mp:.3f} | {min(times['pass']):.3f} | {max(times['pass']):.3f} | "
        f"{median(times['pass cpu']):.3f} |",
        "",
        f"**Above `python -c pass`: {diff:.2f} s** wall (median of the per-round differences; "
        f"{median(times['cpu difference']):.2f} s of CPU, user + system, which other load on the shared cores does "
        f"not inflate; load average {os.getloadavg()[0]:.1f} at the end). Target ≤ {TARGET_ABOVE} s above it: "
        f"{verdict}. The command loads only the config models (pydantic, PyYAML); the package imports "
        "aws-cdk-lib, cdk8s and the jsii kernel only when a construct or chart is first used.",
    ]) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--config", default="hyperpod.yaml", help="config file, relative to the repository root")
    p.add_argument("--write", action="store_true", help="update the '## Validate time' section of BENCHMARKS.md")
    args = p.parse_args(argv)
    if not (REPO / args.config).is_file():
        p.error(f"{args.config}: no such file under {REPO.name}/")
    text = markdown(measure(args.rounds, args.config), args.rounds, args.config)
    print("## Validate time\n\n" + text)
    if args.write:
        update_section("Validate time", text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
