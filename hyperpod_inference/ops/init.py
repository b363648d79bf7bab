"""``init``: a starter config from a real HyperPod cluster.

It reads the HyperPod cluster (its EKS orchestrator and instance groups), the EKS cluster (version, OIDC issuer,
VPC), the IAM OIDC provider of that issuer and the access entries that make a role cluster admin, and writes a config
with those values, a comment saying where each came from, and one endpoint (commented out) per instance group type.
Read calls only.

Every value goes through PyYAML's emitter and every comment through :func:`~hyperpod_inference.ops.text.one_line`
(whatever AWS answered, an HTML error page included, is one line of printable text), and the text is read back
before anything is written: it must give exactly the values meant, and validate with the config loader (errors name
the file init was asked to write). Otherwise nothing is written; an existing file is never overwritten.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..config.loader import ConfigError, load_yaml_text, parse_config
from ..facts import instances, kubectl
from ..facts import operator as operator_facts
from ..facts.rules import eks_cluster_admin_policy_arn
from .aws import Aws, Skip
from .text import one_line

#: init's exit statuses (documented in docs/troubleshooting.md and ``init --help``): written; nothing written because
#: the cluster lacks a piece, the file exists or the config would not validate; usage; AWS could not be read
#: (credentials, access denied, throttling).
EXIT_WRITTEN, EXIT_NOT_WRITTEN, EXIT_USAGE, EXIT_UNREADABLE = 0, 1, 2, 3
#: The longest comment init writes (an AWS error in a note is cut well before).
MAX_COMMENT_CHARS = 400
#: How a role is given to init, on the command line and through make.
GIVE_ROLE = "with --kubectl-role-arn (make init KUBECTL_ROLE_ARN=<role ARN>)"


class InitError(Exception):
    """What init cannot find, with the command that fixes it; ``status``: init's exit status."""

    def __init__(self, message: str, status: int = EXIT_NOT_WRITTEN) -> None:
        super().__init__(message)
        self.status = status


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
        raise InitError(skip.reason, EXIT_UNREADABLE) from None


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
    admin_policy = eks_cluster_admin_policy_arn(aws.region)
    fix = (f"create one (aws eks create-access-entry --cluster-name {eks_name} --principal-arn <role ARN>; aws eks "
           f"associate-access-policy --cluster-name {eks_name} --principal-arn <role ARN> --policy-arn "
           f"{admin_policy} --access-scope type=cluster) or give one {GIVE_ROLE}")
    mode = str((eks.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")
    if mode == "CONFIG_MAP":
        raise InitError(f"the EKS cluster {eks_name} uses only the aws-auth ConfigMap: give the role mapped to "
                        f"system:masters {GIVE_ROLE}")
    try:
        principals = list(aws.pages("eks", "ListAccessEntries", "accessEntries", clusterName=eks_name))
    except Skip as skip:
        raise InitError(f"the access entries of {eks_name} cannot be listed ({skip.reason}): give the cluster-admin "
                        f"role {GIVE_ROLE}", EXIT_UNREADABLE) from None
    for principal in principals:
        if ":role/" not in principal:
            continue
        policies = aws.call("eks", "ListAssociatedAccessPolicies", clusterName=eks_name, principalArn=principal,
                            missing=("ResourceNotFoundException",)) or {}
        if any(p.get("policyArn") == admin_policy and (p.get("accessScope") or {}).get("type") == "cluster"
               for p in policies.get("associatedAccessPolicies") or []):
            return principal, "the first role with an access entry holding AmazonEKSClusterAdminPolicy"
    raise InitError(f"no IAM role has cluster admin on {eks_name} through an access entry: {fix}")


def _scalar(value: Any) -> str:
    """``value`` as PyYAML's emitter writes it, on one line (a string with a line break of any kind double-quoted,
    the break escaped)."""
    def emit(style: str | None) -> str:
        text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=float("inf"),
                              default_style=style)
        return text.removesuffix("\n").removesuffix("\n...")
    text = emit(None)
    return text if not any(c in text for c in "\n\r\x85\u2028\u2029") else emit('"')


class _Document:
    """A config written line by line: each value through PyYAML's emitter, each comment one line (``one_line``).
    ``data`` is what the text must read back as."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.data: dict[str, Any] = {}
        self._section: dict[str, Any] = self.data

    @staticmethod
    def _note(note: str | None) -> str:
        return f"  # {one_line(note, MAX_COMMENT_CHARS)}" if note else ""

    def comment(self, text: str, indent: int = 0) -> None:
        self.lines.append(f"{'  ' * indent}# {one_line(text, MAX_COMMENT_CHARS)}".rstrip())

    def commented_yaml(self, value: Any, indent: int) -> None:
        """``value`` as YAML, commented out (uncommenting it gives YAML that parses)."""
        text = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False, width=float("inf"))
        self.lines += [f"{'  ' * indent}# {line}".rstrip() for line in text.splitlines()]

    def section(self, key: str, note: str | None = None) -> None:
        """A top-level mapping ``key:``; the values after it go in it."""
        self.lines.append(f"{_scalar(key)}:{self._note(note)}")
        self._section = self.data[key] = {}

    def value(self, key: str, value: Any, note: str | None = None) -> None:
        """``key: value`` in the current section (top level: call :meth:`top` first)."""
        indent = "  " if self._section is not self.data else ""
        self.lines.append(f"{indent}{_scalar(key)}: {_scalar(value)}{self._note(note)}")
        self._section[key] = value

    def top(self) -> None:
        self._section = self.data

    def text(self) -> str:
        text = "\n".join(self.lines) + "\n"
        if yaml.safe_load(text) != self.data:  # the emitter's guarantee, checked: the file says what init meant
            raise InitError("the config init wrote does not read back as the values it found (please report this)")
        return text


def _endpoint_example(index: int, instance_type: str) -> list[dict[str, Any]]:
    return [{"name": f"model-{index}", "namespace": "inference", "instanceType": instance_type, "replicas": 1,
             "runtime": "vllm", "model": {"huggingface": {"modelId": "Qwen/Qwen2.5-7B-Instruct",
                                                          "commitSHA": "<40-hex commit>"}}}]


def _group_note(group: str, count: int, instance_type: str) -> str:
    facts = instances.instance_facts(instance_type)
    if facts is None:
        return f"instance group {group}: {count} x {instance_type} (no GPU or Neuron device in the instance table)"
    what = (f"{facts.count} {'GPU' if facts.accelerator == 'nvidia' else 'Neuron device'}"
            f"{'s' if facts.count > 1 else ''}{', instance-store NVMe' if facts.nvme else ''}")
    return f"instance group {group}: {count} x {instance_type} ({what})"


def render(found: Discovered) -> str:
    layer = kubectl.DEFAULT_LAYER
    supported = "supported" if kubectl.default_layer_serves(found.eks_version) else "NOT supported"
    doc = _Document()
    doc.comment(f"Written by `python -m hyperpod_inference init --hyperpod-cluster {found.hyperpod_name} --region "
                f"{found.region}`.")
    doc.comment("Check it with `make doctor CONFIG=<this file>` before `make deploy`. Every key: "
                "docs/config-reference.md")
    doc.value("apiVersion", "hyperpod-inference/v1")
    doc.section("env")
    doc.value("account", found.account, "the account of the HyperPod cluster's ARN")
    doc.value("region", found.region)
    doc.section("cluster")
    doc.value("eksClusterName", found.eks_name, f"sagemaker describe-cluster: Orchestrator.Eks.ClusterArn "
              f"(Kubernetes {found.eks_version}, {supported} by {layer.package})")
    doc.value("hyperpodClusterArn", found.hyperpod_arn, "sagemaker describe-cluster: ClusterArn")
    doc.value("kubectlRoleArn", found.kubectl_role_arn, found.kubectl_role_source)
    doc.value("oidcProviderArn", found.oidc_provider_arn,
              f"iam list-open-id-connect-providers: the provider of {found.issuer}")
    doc.value("vpcId", found.vpc_id, "eks describe-cluster: resourcesVpcConfig.vpcId")
    doc.section("operator")
    if found.operator_addon:
        doc.comment("the operator add-on is installed already: use install: existing with its executionRoleArn", 1)
        doc.value("install", "addon")
    else:
        doc.value("install", "addon", "the operator add-on is not installed yet")
    missing = [d for d in operator_facts.DEPENDENCY_ADDON_VERSIONS if d not in found.dependencies_present]
    if found.addons_note:
        note = f"the add-ons could not be listed ({found.addons_note}): check with make doctor"
    elif not found.dependencies_present:
        note = "none of " + ", ".join(missing) + " is installed"
    else:
        note = f"installed already: {', '.join(found.dependencies_present)}" + (
            f"; install {', '.join(missing)} too (doctor names the versions)" if missing else "")
    doc.value("dependencies", "existing" if found.dependencies_present else "create", note)
    doc.top()
    doc.value("namespaces", ["inference"], "created and owned by the stack (it must not exist yet)")
    doc.value("endpoints", [], "uncomment one below (and remove the []) per model")
    doc.comment("endpoints:")
    seen: set[str] = set()
    for name, instance_type, count in found.groups:
        if instance_type in seen:
            continue
        seen.add(instance_type)
        doc.comment(_group_note(name, count, instance_type), 1)
        if instances.instance_facts(instance_type) is not None:
            doc.commented_yaml(_endpoint_example(len(seen), instance_type), 1)
    return doc.text()


def write(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` after the loader accepted it (its errors name ``path``); never over an existing
    file, and nothing at all when it does not validate or cannot be written."""
    target = Path(path)
    if target.exists():
        raise InitError(f"{target} exists; init never overwrites a file: choose another with -o")
    try:
        parse_config(load_yaml_text(text, str(target)), str(target))
    except ConfigError as err:
        raise InitError(f"nothing written: the config for {target} does not validate:\n{err}") from None
    folder = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".init-", suffix=".yaml", dir=folder)
    except OSError as err:
        raise InitError(f"cannot write {target}: {err.strerror} ({folder})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.link(tmp, target)  # fails when the file appeared meanwhile: still never overwritten
    except FileExistsError:
        raise InitError(f"{target} exists; init never overwrites a file: choose another with -o") from None
    except OSError as err:
        raise InitError(f"cannot write {target}: {err.strerror}") from None
    finally:
        os.unlink(tmp)
