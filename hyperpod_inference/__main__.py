"""``python -m hyperpod_inference schema [-o FILE]`` prints (or writes) the JSON Schema of the config file;
``python -m hyperpod_inference validate FILE [--strict]`` checks a config without synthesizing: every problem, then
every warning (acknowledged ones with their reason); ``--strict`` fails on an unacknowledged warning;
``python -m hyperpod_inference init --hyperpod-cluster NAME`` writes a starter config from a real cluster and
``python -m hyperpod_inference doctor -c FILE`` checks the account and the cluster (both read-only)."""

from __future__ import annotations

import argparse
import json
import sys


def schema_text(schema: dict) -> str:
    """The schema as committed in hyperpod.schema.json: two-space indented JSON, keys in model order, final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hyperpod-inference", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    schema = sub.add_parser("schema", help="print the JSON Schema of the config file")
    schema.add_argument("-o", "--output", help="write it to this file instead (e.g. hyperpod.schema.json)")
    check = sub.add_parser("validate", help="validate a config file and report every problem")
    check.add_argument("file")
    check.add_argument("--strict", action="store_true",
                       help="fail (exit 1) on a warning the config does not acknowledge (acknowledgeWarnings)")
    from .ops.cli import add_parsers, run_doctor, run_init

    add_parsers(sub)
    args = parser.parse_args(argv)
    if args.command in ("init", "doctor"):
        return run_init(args) if args.command == "init" else run_doctor(args)
    from .config import ConfigError, config_json_schema, load_config

    if args.command == "schema":
        text = schema_text(config_json_schema())
        if args.output:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(text)
            print(f"wrote {args.output}")
        else:
            sys.stdout.write(text)
        return 0
    try:
        config = load_config(args.file)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    from .config.warnings import all_warnings

    findings = all_warnings(config)
    open_ = [f for f in findings if f.reason is None]
    for f in findings:
        if f.reason is None:
            print(f"{args.file}: warning {f.warning.id}: {f.path}: {f.warning.message}", file=sys.stderr)
        else:
            print(f"{args.file}: acknowledged {f.warning.id}: {f.path}: {f.reason}")
    if open_ and args.strict:
        print(f"{args.file}: {len(open_)} unacknowledged warning(s) with --strict (acknowledge each in "
              "acknowledgeWarnings with its reason, or fix it)", file=sys.stderr)
        return 1
    print(f"{args.file}: valid" + (f" ({len(open_)} warning(s))" if open_ else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
