"""Generate a valid config with N endpoints for the scale benchmark and test:

    python benchmarks/gen_config.py N PROFILE > file.yaml

Profiles (every one uses ``manifests.delivery: kubectl``, so each chart becomes a real CloudFormation resource):

- ``common``: S3-sourced model, tier-3 (model pod) capture with a payload cap, a custom domain ``e<i>.example.com``
  in an imported zone with an imported certificate; no token, no verify, no weight cache.
- ``hf-token``: Hugging Face model with a Secrets Manager token and the daemonset weight cache.
- ``verify``: ``common`` plus ``sagemakerEndpointName`` and ``verify``.
- ``heavy``: the most a single endpoint costs: ``hf-token`` plus all three capture tiers, ``sagemakerEndpointName``,
  ``verify`` and, on the first 100 endpoints (the per-stack limit of names), a custom domain.

Endpoints are spread round-robin over a few namespaces (``--namespaces K``: ``ns0`` .. ``ns<K-1>`` instead of the
four default ones); ``--layout perNamespace`` sets ``stackLayout``. ``config(n, profile)`` returns the same data as
a dict.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

PROFILES = ("common", "hf-token", "verify")
#: Profiles for fleets only (not in the per-profile tables and snapshots of PROFILES).
FLEET_PROFILES = ("heavy",)
#: Endpoints with a custom domain in the ``heavy`` profile (the certificate's per-stack limit of names).
HEAVY_DOMAINS = 100
NAMESPACES = ("inference", "research", "team-a", "team-b")
ACCOUNT, REGION = "111122223333", "us-west-2"
COMMIT = "a09a35458c702b33eeacc393d103063234e8bc28"


def namespaces(count: int | None = None) -> tuple[str, ...]:
    """The default four namespaces, or ``ns0`` .. ``ns<count-1>``."""
    return NAMESPACES if count is None else tuple(f"ns{k}" for k in range(count))


def _endpoint(i: int, profile: str, spaces: tuple[str, ...] = NAMESPACES) -> dict[str, Any]:
    ep: dict[str, Any] = {
        "name": f"e{i}",
        "namespace": spaces[i % len(spaces)],
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
    elif profile == "heavy":
        ep.update(_endpoint(i, "hf-token", spaces))
        ep["sagemakerEndpointName"] = f"e{i}"
        ep["verify"] = {"contentType": "application/json", "failDeployment": False}
        ep["dataCapture"] = {
            "sagemakerEndpoint": {"enabled": True, "initialSamplingPercentage": 10, "captureModes": ["Input", "Output"]},
            "loadBalancer": {"enabled": True},
            "modelPod": {"enabled": True, "initialSamplingPercentage": 5, "maxPayloadSizeKB": 256}}
        if i < HEAVY_DOMAINS:
            ep["domainName"] = f"e{i}.example.com"
    else:
        raise ValueError(f"unknown profile {profile!r}; one of {', '.join(PROFILES + FLEET_PROFILES)}")
    return ep


def config(n: int, profile: str = "common", *, namespace_count: int | None = None,
           layout: str | None = None) -> dict[str, Any]:
    """A config dict with ``n`` endpoints of ``profile`` (over ``namespaces(namespace_count)``; ``layout``: the
    ``stackLayout``, left out when None)."""
    spaces = namespaces(namespace_count)
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
        "namespaces": list(spaces),
        "endpoints": [_endpoint(i, profile, spaces) for i in range(n)],
    }
    if layout is not None:
        cfg["stackLayout"] = layout
    if profile in ("common", "verify", "heavy"):
        cfg["capture"] = {"retentionDays": 90, "kms": "create"}
        cfg["domain"] = {
            "zoneName": "example.com",
            "hostedZoneId": "Z0123456789ABCDEFGHIJ",
            "certificateArn": (f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/"
                               "0a1b2c3d-0000-1111-2222-333344445555"),
        }
    return cfg


def dump(n: int, profile: str = "common", *, namespace_count: int | None = None, layout: str | None = None) -> str:
    return (f"# generated: {n} endpoint(s), profile {profile} (benchmarks/gen_config.py)\n"
            + yaml.safe_dump(config(n, profile, namespace_count=namespace_count, layout=layout), sort_keys=False,
                             width=120))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", type=int, help="number of endpoints")
    p.add_argument("profile", nargs="?", default="common", choices=PROFILES + FLEET_PROFILES)
    p.add_argument("--namespaces", type=int, default=None, help="spread over ns0..ns<K-1> instead of the default 4")
    p.add_argument("--layout", choices=("single", "perNamespace"), default=None, help="stackLayout")
    args = p.parse_args(argv)
    sys.stdout.write(dump(args.n, args.profile, namespace_count=args.namespaces, layout=args.layout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
