"""The ``init`` and ``doctor`` subcommands of ``python -m hyperpod_inference``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # boto3 loads only when init or doctor runs, not for schema or validate
    import boto3

DEFAULT_OUTPUT = "hyperpod.local.yaml"

INIT_EXIT_STATUSES = """exit status:
  0  the config was written
  1  nothing written: the cluster lacks a piece (the message names the command that adds it), the file exists, or
     the config would not validate
  2  usage: no Region (give --region or set AWS_REGION)
  3  nothing written: AWS could not be read (no credentials, an expired session, an unknown AWS_PROFILE, access
     denied, throttling); the message says what to fix
"""
DOCTOR_EXIT_STATUSES = """exit status:
  0  every required check ran and nothing failed (warnings, and skipped checks other than the required ones, allowed)
  1  at least one check failed
  2  doctor could not start: the config does not load, has no env, or --only names no check
  3  incomplete: a required check (identity.account, cluster.hyperpod, cluster.eks) could not run, or none could (no
     credentials, an expired session, an unknown AWS_PROFILE, access denied); nothing was proven: fix what the last
     line says and run doctor again
"""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    init = sub.add_parser("init", help="write a starter config from a HyperPod cluster (read-only AWS calls)",
                          epilog=INIT_EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    init.add_argument("--hyperpod-cluster", required=True, help="the HyperPod cluster's name or ARN")
    init.add_argument("--region", help="its Region (default: the AWS configuration's)")
    init.add_argument("--kubectl-role-arn", help="the cluster-admin role (default: found through the access entries)")
    init.add_argument("-o", "--output", default=DEFAULT_OUTPUT, help=f"the file to write (default {DEFAULT_OUTPUT}; "
                      "never overwritten)")
    doctor = sub.add_parser("doctor", help="read-only checks of the account and the cluster a config deploys to",
                            epilog=DOCTOR_EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    doctor.add_argument("-c", "--config", default="hyperpod.yaml", help="the config file (default hyperpod.yaml)")
    doctor.add_argument("--json", action="store_true", help="one JSON object per check result, one a line")
    doctor.add_argument("--only", help="comma-separated check IDs, prefixes or families (e.g. "
                        "cluster,operator.addon,kubernetes)")
    doctor.add_argument("--kubeconfig", help="the kubeconfig (default $KUBECONFIG or ~/.kube/config)")
    doctor.add_argument("--stack-name", help="the stack's name (default the config's stackName, else "
                        "HyperPodInference)")


def run_init(args: argparse.Namespace, session: boto3.Session | None = None) -> int:
    from .aws import Aws, AwsUnusable
    from .init import EXIT_UNREADABLE, EXIT_USAGE, EXIT_WRITTEN, InitError, discover, render, write

    try:
        aws = Aws(args.region, session=session)
        if not aws.region:
            print("init: no Region: give --region or set AWS_REGION", file=sys.stderr)
            return EXIT_USAGE
        found = discover(aws, args.hyperpod_cluster, kubectl_role_arn=args.kubectl_role_arn)
        write(args.output, render(found))
    except AwsUnusable as err:
        print(f"init: nothing written to {args.output}: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    except InitError as err:
        print(f"init: {err}" if str(args.output) in str(err) else f"init: nothing written to {args.output}: {err}",
              file=sys.stderr)
        return err.status
    print(f"wrote {args.output}; next: make doctor CONFIG={args.output}")
    return EXIT_WRITTEN


def run_doctor(args: argparse.Namespace, session: boto3.Session | None = None) -> int:
    from ..config import ConfigError, load_config
    from .aws import Aws, AwsUnusable
    from .doctor import runner
    from .doctor.base import Context

    try:
        config = load_config(args.config)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return runner.EXIT_USAGE
    if config.env is None:
        print(f"{args.config}: env: required by doctor (the account and Region to check)", file=sys.stderr)
        return runner.EXIT_USAGE
    only = args.only.split(",") if args.only else None
    try:
        runner.selected(only)
    except ValueError as err:
        print(f"doctor: {err}", file=sys.stderr)
        return runner.EXIT_USAGE
    try:
        ctx = Context(config, Aws(config.env.region, session=session), kubeconfig=args.kubeconfig,
                      stack_name=args.stack_name)
        results = runner.run(ctx, only)
    except AwsUnusable as err:
        print(f"doctor: nothing was checked: {err}", file=sys.stderr)
        return runner.EXIT_INCOMPLETE
    if args.json:
        sys.stdout.write("".join(json.dumps(r.as_json()) + "\n" for r in results))
    else:
        sys.stdout.write(runner.render(results))
    status = runner.exit_status(results)
    if status == runner.EXIT_INCOMPLETE:
        missing = runner.incomplete(results)
        names = list(dict.fromkeys(r.check for r in missing))  # every check when all skipped: the first three named
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        print(f"doctor: incomplete, nothing above is a pass: {shown} could not run: {missing[0].detail}",
              file=sys.stderr)
    return status
