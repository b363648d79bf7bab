"""How fast the config loader refuses hostile YAML: a 10 KB file nested 5,000 deep, 1 MiB files of flat values, and
the default config and a 300-endpoint fleet for comparison, each loaded with `load_config` in-process.

    python benchmarks/config_limits.py [--rounds 5] [--write]

Each case is timed with libyaml (what PyYAML's wheels include) and with PyYAML's pure-Python parser alone, side by
side in one run (alternating order), after one untimed warm-up; the peak memory is traced (tracemalloc) in one more,
untimed run. Prints a Markdown section; `--write` puts it into the `## Config limits` section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from _common import REPO, machine, median, update_section

sys.path.insert(0, str(REPO))

import gen_config  # noqa: E402

from hyperpod_inference.config import ConfigError, load_config, loader  # noqa: E402

TARGET_SECONDS = 1.0


def cases() -> dict[str, str]:
    default = (REPO / "hyperpod.yaml").read_text()
    return {
        "10 KB nested 5,000 deep (flow sequences)": "x: " + "[" * 5000 + "]" * 5000 + "\n",
        "1 MiB, 500,000 flat values (one flow list)": "x: [" + ",".join("1" for _ in range(500_000)) + "]\n",
        "0.7 MiB, 60,000 flat values (block list)": "x:\n" + "".join(f"- v{i:06}\n" for i in range(60_000)),
        "the default config (accepted)": default,
        "300 `heavy` endpoints (benchmarks/gen_config.py; accepted)": gen_config.dump(300, "heavy"),
    }


@contextlib.contextmanager
def parser(kind: str) -> Iterator[None]:
    """``libyaml``: as installed; ``python``: PyYAML's pure-Python parser only."""
    saved = loader._EVENT_LOADER, loader._FastConfigYamlLoader
    if kind == "python":
        loader._EVENT_LOADER, loader._FastConfigYamlLoader = loader.yaml.SafeLoader, loader._ConfigYamlLoader
    try:
        yield
    finally:
        loader._EVENT_LOADER, loader._FastConfigYamlLoader = saved


def load(path: Path) -> str:
    try:
        load_config(path)
    except ConfigError as err:
        return str(err).split(": ", 2)[-1][:70]
    return "accepted"


def measure(rounds: int) -> list[tuple[str, str, str, float, float, float]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases().items():
            path = Path(tmp) / "hyperpod.yaml"
            path.write_text(text)
            times: dict[str, list[float]] = {"libyaml": [], "python": []}
            for kind in times:  # warm-up
                with parser(kind):
                    outcome = load(path)
            for r in range(rounds):
                for kind in (["libyaml", "python"] if r % 2 == 0 else ["python", "libyaml"]):
                    with parser(kind):
                        start = time.perf_counter()
                        load(path)
                        times[kind].append(time.perf_counter() - start)
            tracemalloc.start()
            load(path)
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            rows.append((name, f"{len(text.encode()):,}", outcome, median(times["libyaml"]),
                         median(times["python"]), peak))
    return rows


def markdown(rows: list[tuple[str, str, str, float, float, float]], rounds: int) -> str:
    worst = max(r[3] for r in rows)
    verdict = "meets" if worst <= TARGET_SECONDS else "misses"
    lines = [
        "`python benchmarks/config_limits.py --rounds N`: `load_config` in-process on hostile files, with libyaml and "
        f"with PyYAML's pure-Python parser side by side (alternating order). Machine: {machine()}. {rounds} rounds; "
        "medians; peak traced memory of one more run with libyaml.",
        "",
        "| file | bytes | outcome | libyaml (s) | pure Python (s) | peak (MiB) |",
        "|---|---:|---|---:|---:|---:|",
        *[f"| {n} | {b} | {o} | {lib:.3f} | {py:.3f} | {peak:.1f} |" for n, b, o, lib, py, peak in rows],
        "",
        f"**Slowest refusal or load with libyaml: {worst:.2f} s.** Target ≤ {TARGET_SECONDS:.0f} s: {verdict}. Before "
        "the event-level limits, the deep file was a `RecursionError` and a 1 MiB file of flat values took 46 s and "
        "346 MB to be refused.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--write", action="store_true", help="update the '## Config limits' section of BENCHMARKS.md")
    args = p.parse_args(argv)
    text = markdown(measure(args.rounds), args.rounds)
    print("## Config limits\n\n" + text)
    if args.write:
        update_section("Config limits", text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
