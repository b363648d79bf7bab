"""Synth time of the default app vs an empty CDK app. Run manually (takes a few minutes):

    python benchmarks/synth.py [--rounds 5] [--write]

Each round runs, in alternating order, `cdk synth --no-notices -q -o <fresh dir>` of
(a) the default app at the repository root (default `hyperpod.yaml`), and
(b) an empty CDK app (one empty `Stack`, same venv, same CLI, same flags and same feature flags from `cdk.json`)
in a temporary folder, and
(c) the same empty app with aws-cdk-lib's built-in CloudFormation validator off, as the default app has it, and
(d) that app importing the libraries the default app imports, with the cdk-nag checks on (the libraries' floor).
Prints a Markdown section with the medians, the median of the per-round ratios, and the CLI's own performance counters
(where the time goes); `--write` puts it into the `## Synth time` section of BENCHMARKS.md. The headline figure is the
like-for-like ratio (a) / (c): what this library adds to a synth; (a) / (b) is shown beside it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from _common import REPO, machine, median, perf_counters, synth, tool_versions, update_section

EMPTY_APP = '''import aws_cdk as cdk

app = cdk.App()
cdk.Stack(app, "Empty")
app.synth()
'''
# The same empty app with aws-cdk-lib's built-in CloudFormation validator off, as the default app has it: the
# like-for-like comparison of what this library adds.
EMPTY_APP_NO_VALIDATOR = EMPTY_APP.replace("cdk.App()", "cdk.App(builtin_cloud_formation_validation=False)")
# The same empty app (validator off) importing what the default app imports from aws-cdk-lib, its kubectl layer,
# cdk8s, cdk8s-plus-28 and cdk-nag, with the cdk-nag checks on: what those libraries cost before this library builds
# anything, the floor of any app that uses them.
LIBRARIES_APP = """import aws_cdk as cdk
import cdk8s  # noqa: F401
import cdk8s_plus_28  # noqa: F401
from aws_cdk import aws_athena, aws_certificatemanager, aws_eks, aws_glue, aws_iam, aws_kms  # noqa: F401
from aws_cdk import aws_lambda, aws_logs, aws_route53, aws_s3, custom_resources  # noqa: F401
from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer  # noqa: F401
from cdk_nag import AwsSolutionsChecks

app = cdk.App(builtin_cloud_formation_validation=False)
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
cdk.Stack(app, "Empty")
app.synth()
"""
TARGET = 1.5
WHERE_THE_TIME_GOES = """Where the time goes (profiled with `python -X importtime`, cProfile of `app.py` under `cdk synth` and a
node CPU profile of the jsii kernel): aws-cdk-lib's built-in CloudFormation validator (a WASM engine) costs about
3 s of start-up plus about 1 s per template of this app, which is why the app leaves it off (`-c cfnValidation=true`
turns it on; cfn-lint checks every template in the tests). In-process, the default app takes about 3.2-3.4 s against
the empty app's 0.5 s (both import aws-cdk-lib, 0.7 s): importing cdk8s, cdk8s-plus-28 and cdk-nag, about 0.45 s;
importing the library with the aws-cdk-lib modules it uses (EKS with its kubectl and AWS CLI layer assemblies, about
0.2 s; Glue and Athena, 0.1 s; Lambda and custom resources, 0.1 s) and its pydantic config models (0.2 s), about
0.9 s; building the constructs, about 0.9 s (about 110 constructs created in the jsii kernel, about 500 round trips
in all, and 0.2 s stripping the agent's source); synthesis with cdk-nag, about 0.65 s. Every one of those modules
serves the default config (capture with analytics, a custom domain, verification, the NVMe cache), so they load for
it: the libraries-alone row is their floor. The rest of the CLI's time is the same for both apps."""
COUNTERS = ["phase:Load", "phase:Construction", "phase:Synthesis", "validateTemplates", "fs.copyFileSync"]


def make_empty_app(folder: Path, source: str = EMPTY_APP) -> Path:
    """An empty app with the repository's feature flags (the same `cdk.json` context, minus the app's own keys)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "app.py").write_text(source)
    context = json.loads((REPO / "cdk.json").read_text()).get("context", {})
    context = {k: v for k, v in context.items() if k not in ("config", "stackName")}
    (folder / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "context": context}, indent=1))
    return folder


def measure(rounds: int, work: Path) -> dict[str, object]:
    empty = make_empty_app(work / "empty-app")
    bare = make_empty_app(work / "empty-app-no-validator", EMPTY_APP_NO_VALIDATOR)
    libraries = make_empty_app(work / "libraries-app", LIBRARIES_APP)
    cases = {"default": REPO, "empty": empty, "empty-no-validator": bare, "libraries": libraries}
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    counters: dict[str, list[dict[str, float]]] = {k: [] for k in cases}
    ratios, like_for_like, floor = [], [], []
    # one untimed warm-up of each (jsii package cache, Python bytecode, page cache)
    for name, cwd in cases.items():
        synth(cwd, work / f"warm-{name}")
        shutil.rmtree(work / f"warm-{name}", ignore_errors=True)
    for r in range(rounds):
        order = list(cases) if r % 2 == 0 else list(reversed(cases))
        for name in order:
            out = work / f"out-{name}-{r}"
            t, c = synth(cases[name], out)
            times[name].append(t)
            cpu[name].append(c)
            counters[name].append(perf_counters(out))
            shutil.rmtree(out, ignore_errors=True)
            print(f"round {r + 1}/{rounds} {name}: {t:.2f} s wall, {c:.2f} s CPU", file=sys.stderr)
        ratios.append(times["default"][-1] / times["empty"][-1])
        like_for_like.append(times["default"][-1] / times["empty-no-validator"][-1])
        floor.append(times["libraries"][-1] / times["empty-no-validator"][-1])
    return {"times": times, "cpu": cpu, "counters": counters, "ratios": ratios, "like_for_like": like_for_like,
            "floor": floor}


def counter_median(samples: list[dict[str, float]], key: str) -> str:
    values = [s.get(key, 0.0) for s in samples if s]
    return f"{median(values) / 1000:.2f}" if values else "n/a"


def markdown(result: dict[str, object], rounds: int) -> str:
    times: dict[str, list[float]] = result["times"]  # type: ignore[assignment]
    counters: dict[str, list[dict[str, float]]] = result["counters"]  # type: ignore[assignment]
    cpu: dict[str, list[float]] = result["cpu"]  # type: ignore[assignment]
    ratios: list[float] = result["ratios"]  # type: ignore[assignment]
    like_for_like: list[float] = result["like_for_like"]  # type: ignore[assignment]
    floor: list[float] = result["floor"]  # type: ignore[assignment]
    md, me, ratio = median(times["default"]), median(times["empty"]), median(ratios)
    mb, headline = median(times["empty-no-validator"]), median(like_for_like)
    cd, ce, cb = median(cpu["default"]), median(cpu["empty"]), median(cpu["empty-no-validator"])
    verdict = "meets" if headline <= TARGET else "misses"
    lines = [
        "`python benchmarks/synth.py --rounds N`: wall time of `cdk synth --no-notices -q -o <fresh dir>`, the default "
        "app (default `hyperpod.yaml`: one endpoint, kubectl delivery, cdk-nag on) against an empty CDK app (one empty "
        "`Stack`, same venv, CLI, flags and feature flags), interleaved in alternating order after one untimed "
        f"warm-up each. Machine: {machine()}; {tool_versions()}. {rounds} rounds; medians.",
        "",
        "| app | wall runs (s) | wall median (s) | CPU median (s) |",
        "|---|---|---:|---:|",
        f"| default app | {' / '.join(f'{t:.2f}' for t in times['default'])} | {md:.2f} | {cd:.2f} |",
        f"| empty app | {' / '.join(f'{t:.2f}' for t in times['empty'])} | {me:.2f} | {ce:.2f} |",
        f"| empty app, built-in validator off | {' / '.join(f'{t:.2f}' for t in times['empty-no-validator'])} | "
        f"{median(times['empty-no-validator']):.2f} | {median(cpu['empty-no-validator']):.2f} |",
        f"| empty app, validator off, importing the default app's libraries, cdk-nag on | "
        f"{' / '.join(f'{t:.2f}' for t in times['libraries'])} | {median(times['libraries']):.2f} | "
        f"{median(cpu['libraries']):.2f} |",
        "",
        "CPU is user + system time of the CLI and the processes it waited for (the app, the jsii kernel); it is less "
        "sensitive than wall time to other load on the shared cores.",
        "",
        f"**Like for like, default / empty app with the built-in validator off: {headline:.2f}×** (median of the "
        f"per-round ratios {' / '.join(f'{x:.2f}' for x in like_for_like)}; ratio of medians {md / mb:.2f}×; CPU ratio "
        f"{cd / cb:.2f}×). Target ≤ {TARGET}×: {verdict}. Both apps then leave out aws-cdk-lib's built-in "
        "CloudFormation validator, which the default app turns off because cfn-lint covers it in the tests "
        "(`-c cfnValidation=true` turns it back on), so this is what the library itself adds to a synth.",
        "",
        f"The libraries alone: the empty app that imports what the default app imports (aws-cdk-lib's EKS, Lambda, "
        f"Glue, Athena, Route 53, ACM and custom-resource modules, the kubectl layer, cdk8s, cdk8s-plus-28, cdk-nag) "
        f"and runs the cdk-nag checks, building nothing, takes {median(floor):.2f}× the empty app with the validator "
        f"off (per round {' / '.join(f'{x:.2f}' for x in floor)}): that much of the like-for-like ratio is spent "
        "before this library builds a construct.",
        "",
        f"Against an empty app with the validator on (CDK's default): {ratio:.2f}× (per round "
        f"{' / '.join(f'{x:.2f}' for x in ratios)}; ratio of medians {md / me:.2f}×; CPU ratio {cd / ce:.2f}×).",
    ]
    rows = [(key, *(counter_median(counters[c], key) for c in ("default", "empty", "empty-no-validator")))
            for key in COUNTERS]
    if any(v != "n/a" for row in rows for v in row[1:]):
        lines += ["", "Where the time goes (median of the `performance-counters.json` that aws-cdk-lib writes during "
                  "synth, seconds):", "", "| counter | default app | empty app | empty app, validator off |",
                  "|---|---:|---:|---:|"]
        lines += [f"| `{key}` | {a} | {b} | {c} |" for key, a, b, c in rows]
    lines += ["", WHERE_THE_TIME_GOES]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--write", action="store_true", help="update the '## Synth time' section of BENCHMARKS.md")
    p.add_argument("--work-dir", default=None, help="where the temporary app and output folders go")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="synth-bench-", dir=args.work_dir))
    try:
        result = measure(args.rounds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = markdown(result, args.rounds)
    print("## Synth time\n\n" + text)
    if args.write:
        update_section("Synth time", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
