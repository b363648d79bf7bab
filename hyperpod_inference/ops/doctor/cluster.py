"""The ``cluster`` family of ``doctor``: the HyperPod and EKS clusters as AWS describes them, the IAM pieces the stack
relies on (the OIDC provider, the kubectl role's trust and its cluster admin access), and whether the HyperPod
cluster's instance groups can hold the endpoints (room for their replicas, NVMe for a daemonset weight cache).

``identity.account``, ``cluster.hyperpod`` and ``cluster.eks`` are required (:data:`~.runner.REQUIRED_CHECKS`): the
last two are here.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

from ...facts import instances, kubectl
from ...facts.rules import account_root_arn, role_name_from_arn
from ..aws import Skip
from .base import AWS_AUTH, FAIL, MASTERS, PASS, Context, Family, Result, each

FAMILY = Family("cluster", "the HyperPod and EKS clusters, the kubectl role and room for the endpoints")

ASSUME_ACTIONS = {"sts:AssumeRole", "sts:*", "*"}


@FAMILY.check("cluster.hyperpod", "the HyperPod cluster exists, is InService and is orchestrated by "
              "cluster.eksClusterName", lambda c: c.config.cluster.hyperpod_cluster_arn)
def check_hyperpod(ctx: Context) -> Iterator[Result]:
    arn = ctx.config.cluster.hyperpod_cluster_arn
    found = ctx.hyperpod()
    if found is None:
        yield Result("cluster.hyperpod", FAIL, arn, f"no such HyperPod cluster in {ctx.region}",
                     "aws sagemaker list-clusters; set cluster.hyperpodClusterArn")
        return
    status = found.get("ClusterStatus")
    eks_arn = ((found.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
    if not eks_arn:
        yield Result("cluster.hyperpod", FAIL, arn, "not orchestrated by EKS (no Orchestrator.Eks.ClusterArn)",
                     "HyperPod inference needs a HyperPod cluster created with --orchestrator Eks")
    elif eks_arn.rsplit("/", 1)[-1] != ctx.eks_name:
        yield Result("cluster.hyperpod", FAIL, arn,
                     f"orchestrated by {eks_arn}, not cluster.eksClusterName {ctx.eks_name}",
                     f"set cluster.eksClusterName: {eks_arn.rsplit('/', 1)[-1]}")
    elif status != "InService":
        yield Result("cluster.hyperpod", FAIL, arn, f"status {status}, not InService",
                     f"aws sagemaker describe-cluster --cluster-name {arn} (wait for InService)")
    else:
        yield Result("cluster.hyperpod", PASS, arn, f"InService, orchestrated by {eks_arn}")


@FAMILY.check("cluster.eks", "the EKS cluster exists, is ACTIVE and is in cluster.vpcId",
              lambda c: f"EKS cluster {c.eks_name}")
def check_eks(ctx: Context) -> Iterator[Result]:
    resource = f"EKS cluster {ctx.eks_name}"
    found = ctx.eks()
    if found is None:
        yield Result("cluster.eks", FAIL, resource, f"no such EKS cluster in {ctx.region}",
                     "aws eks list-clusters; set cluster.eksClusterName")
        return
    vpc = (found.get("resourcesVpcConfig") or {}).get("vpcId")
    want = ctx.config.cluster.vpc_id
    if found.get("status") != "ACTIVE":
        yield Result("cluster.eks", FAIL, resource, f"status {found.get('status')}, not ACTIVE",
                     f"aws eks describe-cluster --name {ctx.eks_name}")
    elif want and vpc and vpc != want:
        yield Result("cluster.eks", FAIL, resource, f"in {vpc}, not cluster.vpcId {want}", f"set cluster.vpcId: {vpc}")
    else:
        yield Result("cluster.eks", PASS, resource, f"ACTIVE, Kubernetes {found.get('version')}, {vpc}")


@FAMILY.check("cluster.kubectl-layer", "the kubectl layer the library uses supports the cluster's Kubernetes version",
              lambda c: f"EKS cluster {c.eks_name}")
def check_kubectl_layer(ctx: Context) -> Iterator[Result]:
    resource = f"EKS cluster {ctx.eks_name}"
    version = str(ctx.eks_or_skip().get("version"))
    layer = kubectl.DEFAULT_LAYER
    served = ", ".join(layer.serves)
    if kubectl.default_layer_serves(version):
        yield Result("cluster.kubectl-layer", PASS, resource, f"Kubernetes {version}; {layer.package} serves {served}")
        return
    other = kubectl.layer_for(version)
    yield Result("cluster.kubectl-layer", FAIL, resource,
                 f"Kubernetes {version}; the library's {layer.package} (kubectl 1.{layer.minor}) serves only {served}",
                 f"upgrade the cluster to {served.split(', ')[-1]}" if other is None else
                 f"the cluster needs {other.package}; until the library uses it, upgrade the cluster to one of "
                 f"{served}")


@FAMILY.check("cluster.oidc-provider", "cluster.oidcProviderArn exists and is the cluster's OIDC issuer",
              lambda c: str(c.config.cluster.oidc_provider_arn))
def check_oidc(ctx: Context) -> Iterator[Result]:
    arn = str(ctx.config.cluster.oidc_provider_arn)
    fix = f"eksctl utils associate-iam-oidc-provider --cluster {ctx.eks_name} --approve; set cluster.oidcProviderArn"
    found = ctx.aws.call("iam", "GetOpenIDConnectProvider", OpenIDConnectProviderArn=arn, missing=("NoSuchEntity",))
    if found is None:
        yield Result("cluster.oidc-provider", FAIL, arn, "no such IAM OIDC provider", fix)
        return
    issuer = str(((ctx.eks_or_skip().get("identity") or {}).get("oidc") or {}).get("issuer", ""))
    url = str(found.get("Url", ""))
    if url.removeprefix("https://") != issuer.removeprefix("https://"):
        yield Result("cluster.oidc-provider", FAIL, arn, f"the provider is for {url}; the cluster's issuer is {issuer}",
                     fix)
    elif "sts.amazonaws.com" not in (found.get("ClientIDList") or []):
        yield Result("cluster.oidc-provider", FAIL, arn, "its audiences lack sts.amazonaws.com (IRSA needs it)",
                     f"aws iam add-client-id-to-open-id-connect-provider --open-id-connect-provider-arn {arn} "
                     "--client-id sts.amazonaws.com")
    else:
        yield Result("cluster.oidc-provider", PASS, arn, f"issuer {issuer}")


def _policy(document: Any) -> dict:
    if isinstance(document, str):
        return json.loads(urllib.parse.unquote(document))
    return document or {}


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def trusted_principals(document: Any) -> set[str]:
    """The AWS principals an IAM trust policy lets call sts:AssumeRole (statements with conditions included)."""
    out: set[str] = set()
    for statement in _listed(_policy(document).get("Statement") or []):
        if statement.get("Effect") != "Allow" or not ASSUME_ACTIONS & set(_listed(statement.get("Action") or [])):
            continue
        principal = statement.get("Principal") or {}
        if principal == "*":
            out.add("*")
        elif isinstance(principal, dict):
            out.update(str(p) for p in _listed(principal.get("AWS") or []))
    return out


@FAMILY.check("cluster.kubectl-role", "cluster.kubectlRoleArn exists and the stack's kubectl handler may assume it",
              lambda c: str(c.config.cluster.kubectl_role_arn))
def check_kubectl_role(ctx: Context) -> Iterator[Result]:
    arn = str(ctx.config.cluster.kubectl_role_arn)
    found = ctx.aws.call("iam", "GetRole", RoleName=role_name_from_arn(arn), missing=("NoSuchEntity",))
    if found is None:
        yield Result("cluster.kubectl-role", FAIL, arn, "no such IAM role", "set cluster.kubectlRoleArn")
        return
    principals = trusted_principals(found["Role"].get("AssumeRolePolicyDocument"))
    root = account_root_arn(ctx.region, ctx.account)
    account_root = {root, ctx.account, "*"}
    caller = ctx.identity()["Arn"]
    if principals & account_root:
        yield Result("cluster.kubectl-role", PASS, arn,
                     f"trusts account {ctx.account}: the kubectl handler role the stack creates (and {caller}) may "
                     "assume it")
    else:
        yield Result("cluster.kubectl-role", FAIL, arn,
                     f"trusts only {', '.join(sorted(principals)) or 'no AWS principal'}; the stack's kubectl handler "
                     f"runs under a role it creates in {ctx.account}, which cannot assume it",
                     f"add {root} to its trust policy (aws iam update-assume-role-policy "
                     f"--role-name {role_name_from_arn(arn)} --policy-document file://trust.json)")


@FAMILY.check("cluster.access-entry", "an EKS access entry (or aws-auth) makes cluster.kubectlRoleArn cluster admin",
              lambda c: f"access entry {c.config.cluster.kubectl_role_arn} on {c.eks_name}")
def check_access_entry(ctx: Context) -> Iterator[Result]:
    role = str(ctx.config.cluster.kubectl_role_arn)
    resource = f"access entry {role} on {ctx.eks_name}"
    fix = (f"aws eks create-access-entry --cluster-name {ctx.eks_name} --principal-arn {role}; aws eks "
           f"associate-access-policy --cluster-name {ctx.eks_name} --principal-arn {role} --policy-arn "
           f"{ctx.cluster_admin_policy} --access-scope type=cluster")
    mode = ctx.authentication_mode()
    if "API" in mode.split("_AND_") or mode == "API":
        found = ctx.aws.call("eks", "ListAssociatedAccessPolicies", clusterName=ctx.eks_name, principalArn=role,
                             missing=("ResourceNotFoundException",))
        if found is None and mode == "API":
            yield Result("cluster.access-entry", FAIL, resource, "the role has no access entry", fix)
            return
        admin = [p for p in (found or {}).get("associatedAccessPolicies") or []
                 if p.get("policyArn") == ctx.cluster_admin_policy
                 and (p.get("accessScope") or {}).get("type") == "cluster"]
        if admin:
            yield Result("cluster.access-entry", PASS, resource, "AmazonEKSClusterAdminPolicy, cluster scope")
            return
        if mode == "API":
            yield Result("cluster.access-entry", FAIL, resource,
                         "the access entry has no AmazonEKSClusterAdminPolicy with cluster scope", fix)
            return
    resource_map = f"aws-auth mapRoles {role} on {ctx.eks_name}"
    mappings, problem = ctx.aws_auth_mappings(role)
    if problem:
        yield Result("cluster.access-entry", FAIL, f"{AWS_AUTH} on {ctx.eks_name}",
                     f"{problem}: the authenticator cannot read the mappings", "kubectl edit configmap aws-auth -n "
                     "kube-system (each mapRoles entry: rolearn: <ARN>, username: <name>, groups: [<group>, ...])")
    elif any(MASTERS in entry.get("groups", []) for entry in mappings):
        yield Result("cluster.access-entry", PASS, resource_map, "mapped to system:masters")
    else:
        yield Result("cluster.access-entry", FAIL, resource,
                     f"authentication mode {mode}: neither an access entry nor aws-auth makes the role cluster admin",
                     fix if "API" in mode else "map the role to system:masters in the aws-auth ConfigMap")


# ------------------------------------------------------------------------------------ room for the endpoints
def _needed_replicas(ep: Any) -> int:
    spec = getattr(ep, "auto_scaling_spec", None)
    return spec.min_replicas if spec is not None else ep.replicas


def _groups(ctx: Context) -> list[dict]:
    return list(ctx.hyperpod_or_skip().get("InstanceGroups") or [])


def _count(group: dict) -> int:
    return int(group.get("CurrentCount", group.get("TargetCount", 0)) or 0)


@FAMILY.check("endpoint.instance-group", "every instance type an endpoint may use has an instance group with room "
              "for it", lambda c: "endpoints")
def check_instance_groups(ctx: Context) -> Iterator[Result]:
    for i, ep in enumerate(ctx.config.endpoints):
        yield from each("endpoint.instance-group", f"endpoints[{i}] ({ep.name})", lambda i=i, ep=ep: _instance_group(
            ctx, i, ep))


def _instance_group(ctx: Context, i: int, ep: Any) -> Result:
    resource = f"endpoints[{i}] ({ep.name})"
    types = ep.placement_types()
    if not types:
        raise Skip("the placement names no instance type")
    groups = _groups(ctx)
    by_type: dict[str, int] = {}
    for g in groups:
        by_type[g.get("InstanceType", "")] = by_type.get(g.get("InstanceType", ""), 0) + _count(g)
    listing = ", ".join(f"{g.get('InstanceGroupName')} ({g.get('InstanceType')} x{_count(g)})" for g in groups)
    missing = [t for t in types if t not in by_type]
    key = "instanceType" if ep.instance_type else "instanceTypes" if ep.instance_types else "nodeAffinity"
    if missing:
        return Result("endpoint.instance-group", FAIL, f"{resource}: {', '.join(missing)}",
                      f"the HyperPod cluster has no instance group of {', '.join(missing)}; it has {listing or 'none'}",
                      f"add an instance group (aws sagemaker update-cluster), or change endpoints[{i}].{key}")
    _, gpus = ep.accelerators
    capacity = 0
    for t in types:
        facts = instances.instance_facts(t)
        per_node = max(1, facts.count // gpus) if facts and gpus else 1
        capacity += by_type[t] * per_node
    need = _needed_replicas(ep)
    if capacity < need:
        return Result("endpoint.instance-group", FAIL, f"{resource}: {', '.join(types)}",
                      f"{need} replicas need room for {need}; the instance groups of {', '.join(types)} have room for "
                      f"{capacity} ({listing})", f"scale the instance group up, or lower endpoints[{i}].replicas")
    return Result("endpoint.instance-group", PASS, f"{resource}: {', '.join(types)}",
                  f"room for {capacity} replicas, {need} needed")


@FAMILY.check("endpoint.weight-cache", "the daemonset weight cache lands only on instance types with instance-store "
              "NVMe", lambda c: "endpoints")
def check_weight_cache(ctx: Context) -> Iterator[Result]:
    for i, ep in enumerate(ctx.config.endpoints):
        if ep.weight_cache.mode != "daemonset" or ep.is_jumpstart:
            continue

        def one(i: int = i, ep: Any = ep) -> Result:
            resource = f"endpoints[{i}] ({ep.name})"
            types = ep.placement_types() or sorted({g.get("InstanceType", "") for g in _groups(ctx)
                                                    if instances.instance_facts(g.get("InstanceType", ""))})
            without = [t for t in types if not (instances.instance_facts(t) and instances.instance_facts(t).nvme)]
            if without:
                return Result("endpoint.weight-cache", FAIL, resource,
                              f"weightCache.mode: daemonset, but {', '.join(without)} have no instance-store NVMe",
                              f"set endpoints[{i}].weightCache.mode: off, or an instance type with NVMe")
            return Result("endpoint.weight-cache", PASS, resource, f"NVMe on {', '.join(types)}")
        yield from each("endpoint.weight-cache", f"endpoints[{i}] ({ep.name})", one)
