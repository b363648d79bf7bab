"""``init``: a starter config from a real HyperPod cluster.

It reads the HyperPod cluster (its EKS orchestrator and instance groups), the EKS cluster (version, OIDC issuer,
VPC), the IAM OIDC provider of that issuer and the access entries that make a role cluster admin, and writes a config
with those values, a comment saying where each came from, and one endpoint (commented out) per instance group type.
It never overwrites a file and validates what it writes with the config loader. Read calls only.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..config.loader import ConfigError, load_config
from ..facts import instances, kubectl
from ..facts import operator as operator_facts
from .aws import Aws, Skip
from .doctor import CLUSTER_ADMIN_POLICY


class InitError(Exception):
    """What init cannot find, with the command that fixes it."""


@dataclass
class Discovered:
    region: str
    account: str
    hyperpod_name: str
    hyperpod_arn: str
    eks_name: str
    eks_version: str
    issuer: str
    vpc_id: str
    oidc_provider_arn: str
    kubectl_role_arn: str
    kubectl_role_source: str
    groups: list[tuple[str, str, int]] = field(default_factory=list)  # (name, instance type, count)
    dependencies_present: list[str] = field(default_factory=list)
    operator_addon: str | None = None
    addons_note: str | None = None  # why the add-ons could not be listed


def _need(value: object, problem: str) -> None:
    if not value:
        raise InitError(problem)


def discover(aws: Aws, hyperpod_cluster: str, *, kubectl_role_arn: str | None = None) -> Discovered:
    try:
        return _discover(aws, hyperpod_cluster, kubectl_role_arn)
    except Skip as skip:
        raise InitError(skip.reason) from None


def _discover(aws: Aws, name: str, role_arn: str | None) -> Discovered:
    region = aws.region
    hp = aws.call("sagemaker", "DescribeCluster", ClusterName=name, missing=("ResourceNotFound", "ValidationException"))
    _need(hp, f"no HyperPod cluster {name} in {region}: aws sagemaker list-clusters --region {region}")
    assert hp is not None
    eks_arn = ((hp.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
    _need(eks_arn, f"the HyperPod cluster {name} is not orchestrated by EKS (no Orchestrator.Eks.ClusterArn); "
                   "HyperPod inference needs one created with aws sagemaker create-cluster --orchestrator "
                   "'Eks={ClusterArn=...}'")
    eks_name = eks_arn.rsplit("/", 1)[-1]
    found = aws.call("eks", "DescribeCluster", name=eks_name, missing=("ResourceNotFoundException",))
    _need(found, f"the EKS cluster {eks_name} of {name} is not in {region}: aws eks list-clusters --region {region}")
    assert found is not None
    eks = found["cluster"]
    issuer = str(((eks.get("identity") or {}).get("oidc") or {}).get("issuer", ""))
    _need(issuer, f"the EKS cluster {eks_name} has no OIDC issuer")
    host = issuer.removeprefix("https://")
    providers = [p["Arn"] for p in (aws.call("iam", "ListOpenIDConnectProviders") or {})
                 .get("OpenIDConnectProviderList") or []]
    oidc = next((p for p in providers if p.split(":oidc-provider/", 1)[-1] == host), None)
    _need(oidc, f"no IAM OIDC provider for {issuer}: eksctl utils associate-iam-oidc-provider --cluster {eks_name} "
                f"--region {region} --approve")
    source = "given with --kubectl-role-arn"
    if role_arn is None:
        role_arn, source = _admin_role(aws, eks_name, eks)
    try:
        addons = set(aws.pages("eks", "ListAddons", "addons", clusterName=eks_name))
        addons_note = None
    except Skip as skip:  # the config is still useful: doctor checks the add-ons
        addons, addons_note = set(), skip.reason
    return Discovered(
        region=region, account=hp["ClusterArn"].split(":")[4], hyperpod_name=hp.get("ClusterName", name),
        hyperpod_arn=hp["ClusterArn"], eks_name=eks_name, eks_version=str(eks.get("version")), issuer=issuer,
        vpc_id=str((eks.get("resourcesVpcConfig") or {}).get("vpcId", "")), oidc_provider_arn=str(oidc),
        kubectl_role_arn=role_arn, kubectl_role_source=source,
        groups=[(g.get("InstanceGroupName", ""), g.get("InstanceType", ""),
                 int(g.get("CurrentCount", g.get("TargetCount", 0)) or 0)) for g in hp.get("InstanceGroups") or []],
        dependencies_present=sorted(addons & set(operator_facts.DEPENDENCY_ADDON_VERSIONS)),
        operator_addon=operator_facts.OPERATOR_ADDON_NAME if operator_facts.OPERATOR_ADDON_NAME in addons else None,
        addons_note=addons_note)


def _admin_role(aws: Aws, eks_name: str, eks: dict) -> tuple[str, str]:
    """An IAM role with an access entry holding AmazonEKSClusterAdminPolicy at cluster scope."""
    fix = (f"create one (aws eks create-access-entry --cluster-name {eks_name} --principal-arn <role ARN>; aws eks "
           f"associate-access-policy --cluster-name {eks_name} --principal-arn <role ARN> --policy-arn "
           f"{CLUSTER_ADMIN_POLICY} --access-scope type=cluster) or give one with --kubectl-role-arn")
    mode = str((eks.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")
    if mode == "CONFIG_MAP":
        raise InitError(f"the EKS cluster {eks_name} uses only the aws-auth ConfigMap: give the role mapped to "
                        "system:masters with --kubectl-role-arn")
    try:
        principals = list(aws.pages("eks", "ListAccessEntries", "accessEntries", clusterName=eks_name))
    except Skip as skip:
        raise InitError(f"the access entries of {eks_name} cannot be listed ({skip.reason}): give the cluster-admin "
                        "role with --kubectl-role-arn") from None
    for principal in principals:
        if ":role/" not in principal:
            continue
        policies = aws.call("eks", "ListAssociatedAccessPolicies", clusterName=eks_name, principalArn=principal,
                            missing=("ResourceNotFoundException",)) or {}
        if any(p.get("policyArn") == CLUSTER_ADMIN_POLICY and (p.get("accessScope") or {}).get("type") == "cluster"
               for p in policies.get("associatedAccessPolicies") or []):
            return principal, "the first role with an access entry holding AmazonEKSClusterAdminPolicy"
    raise InitError(f"no IAM role has cluster admin on {eks_name} through an access entry: {fix}")


def _endpoint_block(index: int, instance_type: str, group: str, count: int) -> list[str]:
    facts = instances.instance_facts(instance_type)
    what = (f"{facts.count} {'GPU' if facts.accelerator == 'nvidia' else 'Neuron device'}"
            f"{'s' if facts.count > 1 else ''}{', instance-store NVMe' if facts.nvme else ''}") if facts else "unknown"
    return [
        f"  # instance group {group}: {count} x {instance_type} ({what})",
        f"  # - name: model-{index}",
        "  #   namespace: inference",
        f"  #   instanceType: {instance_type}",
        "  #   replicas: 1",
        "  #   runtime: vllm",
        "  #   model:",
        "  #     huggingface: {modelId: Qwen/Qwen2.5-7B-Instruct, commitSHA: <40-hex commit>}",
    ]


def render(found: Discovered) -> str:
    layer = kubectl.DEFAULT_LAYER
    supported = "supported" if kubectl.default_layer_serves(found.eks_version) else "NOT supported"
    deps = "existing" if found.dependencies_present else "create"
    lines = [
        f"# Written by `python -m hyperpod_inference init --hyperpod-cluster {found.hyperpod_name} --region "
        f"{found.region}`.",
        "# Check it with `make doctor CONFIG=<this file>` before `make deploy`. Every key: docs/config-reference.md",
        "apiVersion: hyperpod-inference/v1",
        "env:",
        f"  account: \"{found.account}\"  # the account of the HyperPod cluster's ARN",
        f"  region: {found.region}",
        "cluster:",
        f"  eksClusterName: {found.eks_name}  # sagemaker describe-cluster: Orchestrator.Eks.ClusterArn "
        f"(Kubernetes {found.eks_version}, {supported} by {layer.package})",
        f"  hyperpodClusterArn: {found.hyperpod_arn}  # sagemaker describe-cluster: ClusterArn",
        f"  kubectlRoleArn: {found.kubectl_role_arn}  # {found.kubectl_role_source}",
        f"  oidcProviderArn: {found.oidc_provider_arn}  # iam list-open-id-connect-providers: the provider of "
        f"{found.issuer}",
        f"  vpcId: {found.vpc_id}  # eks describe-cluster: resourcesVpcConfig.vpcId",
        "operator:",
    ]
    if found.operator_addon:
        lines += ["  # the operator add-on is installed already: use install: existing with its executionRoleArn",
                  "  install: addon"]
    else:
        lines.append("  install: addon  # the operator add-on is not installed yet")
    missing = [d for d in operator_facts.DEPENDENCY_ADDON_VERSIONS if d not in found.dependencies_present]
    if found.addons_note:
        note = f"the add-ons could not be listed ({found.addons_note}): check with make doctor"
    elif not found.dependencies_present:
        note = "none of " + ", ".join(missing) + " is installed"
    else:
        note = f"installed already: {', '.join(found.dependencies_present)}" + (
            f"; install {', '.join(missing)} too (doctor names the versions)" if missing else "")
    lines.append(f"  dependencies: {deps}  # {note}")
    lines += ["namespaces: [inference]  # created and owned by the stack (it must not exist yet)",
              "endpoints: []  # uncomment one below (and remove the []) per model",
              "# endpoints:"]
    seen: set[str] = set()
    for name, instance_type, count in found.groups:
        if instance_type in seen:
            continue
        seen.add(instance_type)
        if instances.instance_facts(instance_type) is None:
            lines.append(f"  # instance group {name}: {count} x {instance_type} (no GPU or Neuron device in the "
                         "instance table)")
            continue
        lines += _endpoint_block(len(seen), instance_type, name, count)
    return "\n".join(lines) + "\n"


def write(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` after the loader accepted it; never over an existing file."""
    target = Path(path)
    if target.exists():
        raise InitError(f"{target} exists; init never overwrites a file: choose another with -o")
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=".init-", suffix=".yaml", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        try:
            load_config(tmp)
        except ConfigError as err:
            raise InitError(f"the config init wrote does not validate:\n{err}") from None
        try:
            os.link(tmp, target)  # fails when the file appeared meanwhile: still never overwritten
        except FileExistsError:
            raise InitError(f"{target} exists; init never overwrites a file: choose another with -o") from None
    finally:
        os.unlink(tmp)
