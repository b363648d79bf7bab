"""``python -m hyperpod_inference schema`` prints the JSON Schema of the config file;
``python -m hyperpod_inference validate FILE`` checks a config without synthesizing."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hyperpod-inference", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("schema", help="print the JSON Schema of the config file")
    check = sub.add_parser("validate", help="validate a config file and report every problem")
    check.add_argument("file")
    args = parser.parse_args(argv)
    from .config import ConfigError, config_json_schema, load_config

    if args.command == "schema":
        print(json.dumps(config_json_schema(), indent=2))
        return 0
    try:
        load_config(args.file)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"{args.file}: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
