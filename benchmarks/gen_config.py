"""Generate a valid config with N endpoints for the scale benchmark and test:

    python benchmarks/gen_config.py N PROFILE > file.yaml

Profiles (every one uses ``manifests.delivery: kubectl``, so each chart becomes a real CloudFormation resource):

- ``common``: S3-sourced model, tier-3 (model pod) capture with a payload cap, a custom domain ``e<i>.example.com``
  in an imported zone with an imported certificate; no token, no verify, no weight cache.
- ``hf-token``: Hugging Face model with a Secrets Manager token and the daemonset weight cache.
- ``verify``: ``common`` plus ``sagemakerEndpointName`` and ``verify``.

Endpoints are spread round-robin over a few namespaces. ``config(n, profile)`` returns the same data as a dict.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

PROFILES = ("common", "hf-token", "verify")
NAMESPACES = ("inference", "research", "team-a", "team-b")
ACCOUNT, REGION = "111122223333", "us-west-2"
COMMIT = "a09a35458c702b33eeacc393d103063234e8bc28"


def _endpoint(i: int, profile: str) -> dict[str, Any]:
    ep: dict[str, Any] = {
        "name": f"e{i}",
        "namespace": NAMESPACES[i % len(NAMESPACES)],
        "instanceType": "ml.g5.8xlarge",
        "runtime": "vllm",
    }
    if profile in ("common", "verify"):
        ep["model"] = {"s3": {"bucket": "my-models", "prefix": f"model-{i}/"}}
        ep["dataCapture"] = {"modelPod": {"enabled": True, "maxPayloadSizeKB": 256}}
        ep["domainName"] = f"e{i}.example.com"
        if profile == "verify":
            ep["sagemakerEndpointName"] = f"e{i}"
            ep["verify"] = {"contentType": "application/json", "failDeployment": False}
    elif profile == "hf-token":
        ep["model"] = {"huggingface": {
            "modelId": "Qwen/Qwen2.5-7B-Instruct", "commitSHA": COMMIT, "prefetch": True,
            "token": {"secretsManagerArn": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hf-token-AbCdEf"}}}
        ep["weightCache"] = {"mode": "daemonset"}
    else:
        raise ValueError(f"unknown profile {profile!r}; one of {', '.join(PROFILES)}")
    return ep


def config(n: int, profile: str = "common") -> dict[str, Any]:
    """A config dict with ``n`` endpoints of ``profile``."""
    if n < 1:
        raise ValueError("n must be >= 1")
    cfg: dict[str, Any] = {
        "apiVersion": "hyperpod-inference/v1",
        "env": {"account": ACCOUNT, "region": REGION},
        "cluster": {
            "eksClusterName": "my-hp-eks",
            "hyperpodClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcd1234efgh",
            "kubectlRoleArn": f"arn:aws:iam::{ACCOUNT}:role/hp-eks-admin",
            "oidcProviderArn": (f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.{REGION}.amazonaws.com/id/"
                                "EXAMPLED539D4633E53DE1B71EXAMPLE"),
            "vpcId": "vpc-0abc1234",
        },
        "operator": {"install": "addon", "version": "v3.3", "dependencies": "create"},
        "manifests": {"delivery": "kubectl"},
        "namespaces": list(NAMESPACES),
        "endpoints": [_endpoint(i, profile) for i in range(n)],
    }
    if profile in ("common", "verify"):
        cfg["capture"] = {"retentionDays": 90, "kms": "create"}
        cfg["domain"] = {
            "zoneName": "example.com",
            "hostedZoneId": "Z0123456789ABCDEFGHIJ",
            "certificateArn": (f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/"
                               "0a1b2c3d-0000-1111-2222-333344445555"),
        }
    return cfg


def dump(n: int, profile: str = "common") -> str:
    return (f"# generated: {n} endpoint(s), profile {profile} (benchmarks/gen_config.py)\n"
            + yaml.safe_dump(config(n, profile), sort_keys=False, width=120))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", type=int, help="number of endpoints")
    p.add_argument("profile", nargs="?", default="common", choices=PROFILES)
    args = p.parse_args(argv)
    sys.stdout.write(dump(args.n, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
