"""``doctor``: read-only checks of the account and the cluster a config deploys to, one function per check.

Each check has an ID (``cluster.hyperpod``), and gives one :class:`Result` per resource it looked at: ``pass``,
``warn``, ``fail`` or ``skip`` (with why), the resource, what it found and the command or config key that fixes it.
Only read calls are made (:class:`~hyperpod_inference.ops.aws.Aws` refuses any other); throttling and access denied
make that one check ``skip``. The checks inside the cluster need a kubeconfig for it and skip without one; a
kubeconfig that is there but wrong fails ``cluster.kubeconfig``. What the stack would create is read from the config's
plan (:func:`~hyperpod_inference.plan.plan_config`), as the app builds it: stack ``stack_name`` holding one
``HyperPodInference`` of id ``Default``.

"Nothing could be checked" is never a pass: a skipped :data:`REQUIRED_CHECKS` result (no credentials, an expired
session, access denied on the identity call or the cluster descriptions), or a run whose every result skipped, exits
:data:`EXIT_INCOMPLETE` (:func:`exit_status`). Every text of a result is one line of bounded length.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from typing import Any

from ..config.loader import DEFAULT_STACK_NAME, ConfigError, load_yaml_text
from ..config.models import HyperPodConfig
from ..facts import instances, kubectl, naming
from ..facts import operator as operator_facts
from ..facts.rules import account_root_arn, arn_parts, eks_cluster_admin_policy_arn, role_name_from_arn
from ..facts.versions import Version
from ..plan import ConfigPlan, PlanContext, plan_config
from ..plan import ownership as plan_objects
from .aws import Aws, Skip
from .kube import Kube, KubeUnavailable, default_kubeconfig
from .text import one_line

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"

#: The oldest CDK bootstrap stack the synthesized template accepts (its ``CheckBootstrapVersion`` rule; a test
#: checks this against a synthesized template).
MIN_BOOTSTRAP_VERSION = 6
TOOLKIT_STACK = "CDKToolkit"
#: The label the stack puts on every namespace it creates (charts and ``assembly/kubernetes_side.py``; a test checks
#: they agree).
MANAGED_BY = ("app.kubernetes.io/managed-by", "hyperpod-inference-cdk")
#: The tag CloudFormation puts on the resources a stack creates.
STACK_TAG = "aws:cloudformation:stack-name"
#: The checks without which doctor's answer means nothing: when one skips (it could not run), the run exits
#: EXIT_INCOMPLETE, whatever else passed.
REQUIRED_CHECKS = ("identity.account", "cluster.hyperpod", "cluster.eks")
#: doctor's exit statuses (documented in docs/troubleshooting.md and ``doctor --help``).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
#: The longest text of a result's field (an AWS error's message is cut well before).
MAX_FIELD_CHARS = 1000
MASTERS = "system:masters"
AWS_AUTH = "ConfigMap kube-system/aws-auth"
OPERATOR_GROUP = "inference.sagemaker.aws.amazon.com"
OPERATOR_CRDS = (f"inferenceendpointconfigs.{OPERATOR_GROUP}", f"jumpstartmodels.{OPERATOR_GROUP}")
EXTERNAL_SECRETS_CRD = "externalsecrets.external-secrets.io"
ASSUME_ACTIONS = {"sts:AssumeRole", "sts:*", "*"}


@dataclass(frozen=True)
class Result:
    check: str
    status: str
    resource: str
    detail: str
    fix: str = ""

    def __post_init__(self) -> None:
        for name in ("resource", "detail", "fix"):  # whatever a service answered: one line, bounded
            object.__setattr__(self, name, one_line(getattr(self, name), MAX_FIELD_CHARS))

    def as_json(self) -> dict[str, str]:
        return asdict(self)


class Context:
    """The config, the clients and what several checks read (each read once; a Skip is remembered too)."""

    def __init__(self, config: HyperPodConfig, aws: Aws, *, kubeconfig: str | None = None,
                 stack_name: str | None = None) -> None:
        self.config = config
        self.aws = aws
        self.kubeconfig = kubeconfig or default_kubeconfig()
        self.stack_name = stack_name or config.stack_name or DEFAULT_STACK_NAME
        self.account = config.env.account if config.env else ""
        self.region = config.env.region if config.env else aws.region
        self._memo: dict[str, Any] = {}

    def _once(self, key: str, read: Callable[[], Any]) -> Any:
        if key not in self._memo:
            try:
                self._memo[key] = read()
            except Skip as skip:
                self._memo[key] = skip
        value = self._memo[key]
        if isinstance(value, Skip):
            raise Skip(value.reason)
        return value

    @property
    def eks_name(self) -> str:
        return self.config.cluster.eks_cluster_name or ""

    @property
    def cluster_admin_policy(self) -> str:
        """AmazonEKSClusterAdminPolicy's ARN in the partition of the config's Region."""
        return eks_cluster_admin_policy_arn(self.region)

    def identity(self) -> dict:
        return self._once("identity", lambda: self.aws.call("sts", "GetCallerIdentity"))

    def hyperpod(self) -> dict | None:
        return self._once("hyperpod", lambda: self.aws.call(
            "sagemaker", "DescribeCluster", ClusterName=self.config.cluster.hyperpod_cluster_arn,
            missing=("ResourceNotFound", "ValidationException")))

    def hyperpod_or_skip(self) -> dict:
        found = self.hyperpod()
        if found is None:
            raise Skip("the HyperPod cluster could not be read (see cluster.hyperpod)")
        return found

    def eks(self) -> dict | None:
        def read() -> dict | None:
            found = self.aws.call("eks", "DescribeCluster", name=self.eks_name, missing=("ResourceNotFoundException",))
            return found["cluster"] if found else None
        return self._once("eks", read)

    def eks_or_skip(self) -> dict:
        found = self.eks()
        if found is None:
            raise Skip(f"the EKS cluster {self.eks_name} could not be read (see cluster.eks)")
        return found

    def addon(self, name: str) -> dict | None:
        def read() -> dict | None:
            found = self.aws.call("eks", "DescribeAddon", clusterName=self.eks_name, addonName=name,
                                  missing=("ResourceNotFoundException",))
            return found["addon"] if found else None
        return self._once(f"addon:{name}", read)

    def kube_client(self) -> Kube | KubeUnavailable:
        """The cluster's API through the kubeconfig, or why not (read once)."""
        def read() -> Kube | KubeUnavailable:
            cluster = self.eks_or_skip()
            try:
                return Kube.from_kubeconfig(self.kubeconfig, cluster_arn=cluster["arn"],
                                            endpoint=cluster.get("endpoint"))
            except KubeUnavailable as err:
                return err
        return self._once("kube", read)

    def kube(self) -> Kube:
        found = self.kube_client()
        if isinstance(found, KubeUnavailable):
            raise Skip(f"{found} (see cluster.kubeconfig)" if found.broken else str(found))
        return found

    def kube_get(self, path: str, *, metadata_only: bool = False) -> tuple[int, dict]:
        try:
            return self.kube().get(path, metadata_only=metadata_only)
        except KubeUnavailable as err:
            raise Skip(str(err)) from None

    def plan(self) -> ConfigPlan:
        """The config's plan as the app builds it: ``HyperPodInferenceStack`` ``stack_name`` holds one
        ``HyperPodInference`` of id ``Default`` (so the Kubernetes scope is the one a synth of the config gives)."""
        return self._once("plan", lambda: plan_config(self.config, PlanContext.of(
            self.config, stack_name=self.stack_name, construct_id="Default", path_in_stack="Default")))

    @property
    def kubernetes_scope(self) -> str:
        """The value of the ``hyperpod-inference/stack`` label on every object this stack creates."""
        return self.plan().context.kubernetes_scope

    def owned_by_stack(self, tags: dict[str, str] | None) -> bool:
        return (tags or {}).get(STACK_TAG) == self.stack_name


CheckFn = Callable[[Context], Iterable[Result]]


@dataclass(frozen=True)
class Check:
    id: str
    run: CheckFn
    resource: Callable[[Context], str]
    summary: str


CHECKS: list[Check] = []


def check(check_id: str, summary: str, resource: Callable[[Context], str]) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        CHECKS.append(Check(check_id, fn, resource, summary))
        return fn
    return register


def _each(check_id: str, resource: str, run: Callable[[], Result | list[Result]]) -> list[Result]:
    """One resource of a check that looks at several: its Skip stays its own."""
    try:
        out = run()
    except Skip as skip:
        return [Result(check_id, SKIP, resource, skip.reason)]
    return out if isinstance(out, list) else [out]


# ------------------------------------------------------------------------------------------ identity and bootstrap
@check("identity.account", "the caller's credentials are of env.account", lambda c: "sts get-caller-identity")
def check_account(ctx: Context) -> Iterator[Result]:
    me = ctx.identity()
    if me["Account"] != ctx.account:
        yield Result("identity.account", FAIL, me["Arn"],
                     f"the credentials are of account {me['Account']}; the config deploys to env.account "
                     f"{ctx.account}", "use credentials of that account (AWS_PROFILE), or set env.account")
    else:
        yield Result("identity.account", PASS, me["Arn"], f"account {ctx.account}")


@check("bootstrap.cdk-toolkit", "the CDK bootstrap stack exists at a version the template needs",
       lambda c: f"CloudFormation stack {TOOLKIT_STACK} in {c.region}")
def check_bootstrap(ctx: Context) -> Iterator[Result]:
    resource = f"CloudFormation stack {TOOLKIT_STACK} in {ctx.region}"
    fix = f"make bootstrap (cdk bootstrap aws://{ctx.account}/{ctx.region})"
    found = ctx.aws.call("cloudformation", "DescribeStacks", StackName=TOOLKIT_STACK, missing=("ValidationError",))
    stacks = (found or {}).get("Stacks") or []
    if not stacks:
        yield Result("bootstrap.cdk-toolkit", FAIL, resource, "the account and Region are not bootstrapped", fix)
        return
    stack = stacks[0]
    status = stack.get("StackStatus", "")
    outputs = {o.get("OutputKey"): o.get("OutputValue") for o in stack.get("Outputs") or []}
    version = outputs.get("BootstrapVersion")
    if status.endswith(("FAILED", "IN_PROGRESS")) or status.startswith(("DELETE", "ROLLBACK")):
        yield Result("bootstrap.cdk-toolkit", FAIL, resource, f"the stack is {status}", fix)
    elif version is None or not str(version).isdigit():
        yield Result("bootstrap.cdk-toolkit", FAIL, resource, "the stack has no BootstrapVersion output", fix)
    elif int(version) < MIN_BOOTSTRAP_VERSION:
        yield Result("bootstrap.cdk-toolkit", FAIL, resource,
                     f"bootstrap version {version}; the template needs at least {MIN_BOOTSTRAP_VERSION}", fix)
    else:
        yield Result("bootstrap.cdk-toolkit", PASS, resource, f"bootstrap version {version}")


# ------------------------------------------------------------------------------------------------------- cluster
@check("cluster.hyperpod", "the HyperPod cluster exists, is InService and is orchestrated by cluster.eksClusterName",
       lambda c: c.config.cluster.hyperpod_cluster_arn)
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


@check("cluster.eks", "the EKS cluster exists, is ACTIVE and is in cluster.vpcId", lambda c: f"EKS cluster {c.eks_name}")
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


@check("cluster.kubectl-layer", "the kubectl layer the library uses supports the cluster's Kubernetes version",
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


@check("cluster.kubeconfig", "the kubeconfig has a usable context for the cluster (for the checks inside it)",
       lambda c: f"kubeconfig {c.kubeconfig}")
def check_kubeconfig(ctx: Context) -> Iterator[Result]:
    resource = f"kubeconfig {ctx.kubeconfig}"
    found = ctx.kube_client()
    if isinstance(found, Kube):
        yield Result("cluster.kubeconfig", PASS, resource, f"context {found.context_name}, server {found.server}")
    elif found.broken:
        yield Result("cluster.kubeconfig", FAIL, resource, str(found),
                     f"fix the file, or write it again: aws eks update-kubeconfig --name {ctx.eks_name} --kubeconfig "
                     f"{ctx.kubeconfig}; or give another with --kubeconfig")
    else:
        yield Result("cluster.kubeconfig", SKIP, resource, f"{found}; the checks inside the cluster skip")


@check("cluster.oidc-provider", "cluster.oidcProviderArn exists and is the cluster's OIDC issuer",
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


@check("cluster.kubectl-role", "cluster.kubectlRoleArn exists and the stack's kubectl handler may assume it",
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


def _aws_auth_problem(entries: Any) -> str | None:
    """Why the aws-auth ``mapRoles`` (parsed) is not what the authenticator reads: a list of mappings, each with a
    ``rolearn`` string and ``groups`` a list of strings. None when it is."""
    if not isinstance(entries, list):
        return f"mapRoles must be a list of role mappings, not {type(entries).__name__}"
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            return f"mapRoles entry {i + 1} must be a mapping (rolearn, username, groups), not {type(entry).__name__}"
        rolearn = entry.get("rolearn")
        if not isinstance(rolearn, str):
            return f"mapRoles entry {i + 1} has no rolearn"
        groups = entry.get("groups", [])
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            shown = "a string" if isinstance(groups, str) else type(groups).__name__
            return (f"mapRoles entry {i + 1} (rolearn {rolearn}): groups must be a list of group names "
                    f"(groups: [system:masters]), not {shown}")
    return None


def aws_auth_mappings(ctx: Context, role_arn: str) -> tuple[list[dict], str | None]:
    """(the aws-auth ``mapRoles`` entries of ``role_arn``, why mapRoles cannot be read). No ConfigMap, or no
    mapRoles in it: no entries."""
    status, body = ctx.kube_get("/api/v1/namespaces/kube-system/configmaps/aws-auth")
    if status == 404:
        return [], None
    if status != 200:
        raise Skip(f"GET {AWS_AUTH} answered {status}")
    text = (body.get("data") or {}).get("mapRoles")
    if text is None:
        return [], None
    try:
        entries = load_yaml_text(str(text), f"{AWS_AUTH} mapRoles") or []
    except ConfigError as err:
        return [], f"mapRoles is not valid YAML: {'; '.join(f'{w}: {m}' for w, m in err.problems)}"
    problem = _aws_auth_problem(entries)
    if problem:
        return [], problem
    return [entry for entry in entries if _same_role(entry["rolearn"], role_arn)], None


def _aws_auth(ctx: Context, role_arn: str) -> tuple[bool, str | None]:
    """(the aws-auth ConfigMap maps ``role_arn`` to system:masters, why its mapRoles cannot be read)."""
    mappings, problem = aws_auth_mappings(ctx, role_arn)
    return any(MASTERS in entry.get("groups", []) for entry in mappings), problem


def _same_role(a: str, b: str) -> bool:
    """Two role ARNs name one role: same partition, account and name (an aws-auth rolearn carries no path)."""
    try:
        (pa, _, _, aa), (pb, _, _, ab) = arn_parts(a), arn_parts(b)
    except ValueError:
        return False
    return (pa, aa) == (pb, ab) and role_name_from_arn(a) == role_name_from_arn(b)


@check("cluster.access-entry", "an EKS access entry (or aws-auth) makes cluster.kubectlRoleArn cluster admin",
       lambda c: f"access entry {c.config.cluster.kubectl_role_arn} on {c.eks_name}")
def check_access_entry(ctx: Context) -> Iterator[Result]:
    role = str(ctx.config.cluster.kubectl_role_arn)
    resource = f"access entry {role} on {ctx.eks_name}"
    fix = (f"aws eks create-access-entry --cluster-name {ctx.eks_name} --principal-arn {role}; aws eks "
           f"associate-access-policy --cluster-name {ctx.eks_name} --principal-arn {role} --policy-arn "
           f"{ctx.cluster_admin_policy} --access-scope type=cluster")
    mode = str((ctx.eks_or_skip().get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")
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
    granted, problem = _aws_auth(ctx, role)
    if problem:
        yield Result("cluster.access-entry", FAIL, f"{AWS_AUTH} on {ctx.eks_name}",
                     f"{problem}: the authenticator cannot read the mappings", "kubectl edit configmap aws-auth -n "
                     "kube-system (each mapRoles entry: rolearn: <ARN>, username: <name>, groups: [<group>, ...])")
    elif granted:
        yield Result("cluster.access-entry", PASS, resource_map, "mapped to system:masters")
    else:
        yield Result("cluster.access-entry", FAIL, resource,
                     f"authentication mode {mode}: neither an access entry nor aws-auth makes the role cluster admin",
                     fix if "API" in mode else "map the role to system:masters in the aws-auth ConfigMap")


# ------------------------------------------------------------------------------------------------------ operator
def _addon_state(addon: dict) -> str:
    return f"{addon.get('addonVersion')} ({addon.get('status')})"


@check("operator.addon", "per operator.install, the operator add-on is absent or present at a compatible version",
       lambda c: f"add-on {operator_facts.OPERATOR_ADDON_NAME} on {c.eks_name}")
def check_operator_addon(ctx: Context) -> Iterator[Result]:
    name = operator_facts.OPERATOR_ADDON_NAME
    resource = f"add-on {name} on {ctx.eks_name}"
    op = ctx.config.operator
    found = ctx.addon(name)
    wanted = op.addon_version or operator_facts.release(op.version).addon_version
    if op.install == "existing":
        minimum = operator_facts.release(op.version).addon_version
        if found is None:
            yield Result("operator.addon", FAIL, resource, "install: existing, but the add-on is not installed",
                         "set operator.install: addon (the stack installs it)")
        elif Version(found.get("addonVersion", "v0")) < Version(minimum):
            yield Result("operator.addon", FAIL, resource,
                         f"{_addon_state(found)} ships an operator older than operator.version {op.version} "
                         f"(add-on {minimum})", f"aws eks update-addon --cluster-name {ctx.eks_name} --addon-name "
                         f"{name} --addon-version {minimum}; or set operator.version")
        elif found.get("status") != "ACTIVE":
            yield Result("operator.addon", WARN, resource,
                         f"{_addon_state(found)}: the add-on reports ACTIVE only once its controller runs, which "
                         "needs a node with room for its pods", f"kubectl get pods -n {operator_facts.OPERATOR_NAMESPACE}")
        else:
            yield Result("operator.addon", PASS, resource, f"installed: {_addon_state(found)}")
        return
    if found is None:
        yield Result("operator.addon", PASS, resource, f"absent: the stack installs the operator ({op.install}, "
                     f"{wanted if op.install == 'addon' else op.version})")
    elif ctx.owned_by_stack(found.get("tags")):
        yield Result("operator.addon", PASS, resource, f"installed by stack {ctx.stack_name}: {_addon_state(found)}")
    else:
        yield Result("operator.addon", FAIL, resource,
                     f"already installed ({_addon_state(found)}) outside stack {ctx.stack_name}: install: "
                     f"{op.install} would install the operator twice",
                     "set operator.install: existing and operator.executionRoleArn (its role)")


def _dependency_check(dependency: str) -> CheckFn:
    check_id = f"operator.dependency.{dependency}"

    def run(ctx: Context) -> Iterator[Result]:
        resource = f"add-on {dependency} on {ctx.eks_name}"
        minimum = operator_facts.DEPENDENCY_ADDON_VERSIONS[dependency]
        found = ctx.addon(dependency)
        if ctx.config.operator.dependencies == "create":
            if found is None:
                yield Result(check_id, PASS, resource, f"absent: the stack creates it ({minimum})")
            elif ctx.owned_by_stack(found.get("tags")):
                yield Result(check_id, PASS, resource, f"created by stack {ctx.stack_name}: {_addon_state(found)}")
            else:
                yield Result(check_id, FAIL, resource,
                             f"already installed ({_addon_state(found)}): dependencies: create would fail on it",
                             "set operator.dependencies: existing")
            return
        create = (f"aws eks create-addon --cluster-name {ctx.eks_name} --addon-name {dependency} --addon-version "
                  f"{minimum}")
        if found is None:
            yield Result(check_id, FAIL, resource, "not installed, and dependencies: existing creates nothing",
                         f"{create}; or set operator.dependencies: create")
        elif Version(found.get("addonVersion", "v0")) < Version(minimum):
            yield Result(check_id, FAIL, resource, f"{_addon_state(found)} is below the operator's minimum {minimum}",
                         f"aws eks update-addon --cluster-name {ctx.eks_name} --addon-name {dependency} "
                         f"--addon-version {minimum}")
        elif found.get("status") not in ("ACTIVE", "UPDATING"):
            yield Result(check_id, WARN, resource, f"{_addon_state(found)}",
                         f"aws eks describe-addon --cluster-name {ctx.eks_name} --addon-name {dependency}")
        else:
            yield Result(check_id, PASS, resource, f"installed: {_addon_state(found)} (minimum {minimum})")
    return run


for _dependency in operator_facts.DEPENDENCY_ADDON_VERSIONS:
    check(f"operator.dependency.{_dependency}", f"the {_dependency} add-on is present at its minimum version or will "
          "be created", lambda c, d=_dependency: f"add-on {d} on {c.eks_name}")(_dependency_check(_dependency))


def _crd(ctx: Context, name: str) -> list[str] | None:
    """The served versions of CRD ``name``, None when it does not exist."""
    status, body = ctx.kube_get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    if status == 404:
        return None
    if status != 200:
        raise Skip(f"GET customresourcedefinition {name} answered {status}")
    return [v.get("name") for v in (body.get("spec") or {}).get("versions") or [] if v.get("served")]


@check("operator.crds", "the operator's CRDs are present (install: existing) or come with the stack's install",
       lambda c: f"CRDs {', '.join(OPERATOR_CRDS)}")
def check_crds(ctx: Context) -> Iterator[Result]:
    install = ctx.config.operator.install
    addon = ctx.addon(operator_facts.OPERATOR_ADDON_NAME) if install != "existing" else None
    ours = addon is not None and ctx.owned_by_stack(addon.get("tags"))
    for name in OPERATOR_CRDS:
        resource = f"CustomResourceDefinition {name}"
        served = _crd(ctx, name)
        if install == "existing":
            if served is None:
                yield Result("operator.crds", FAIL, resource, "absent: install: existing needs an installed operator",
                             "set operator.install: addon")
            elif "v1" not in served:
                yield Result("operator.crds", FAIL, resource, f"serves {served}, not v1", "upgrade the operator")
            else:
                yield Result("operator.crds", PASS, resource, f"serves {', '.join(served)}")
        elif served is None or ours:
            yield Result("operator.crds", PASS, resource, "absent: the stack's install brings it" if served is None
                         else f"installed by stack {ctx.stack_name}'s operator")
        else:
            yield Result("operator.crds", FAIL, resource,
                         f"present (serves {', '.join(served)}) though the stack installs the operator: another "
                         "install (a Helm release?) owns it", "set operator.install: existing")


def _token_endpoints(ctx: Context) -> list[Any]:
    return [ep for ep in ctx.config.endpoints if ep.model is not None and ep.model.huggingface is not None
            and ep.model.huggingface.token is not None and ep.model.huggingface.token.secrets_manager_arn]


@check("cluster.external-secrets", "External Secrets Operator serves external-secrets.io/v1 (for secretsManagerArn)",
       lambda c: f"CustomResourceDefinition {EXTERNAL_SECRETS_CRD}")
def check_external_secrets(ctx: Context) -> Iterator[Result]:
    if not _token_endpoints(ctx):
        return
    resource = f"CustomResourceDefinition {EXTERNAL_SECRETS_CRD}"
    served = _crd(ctx, EXTERNAL_SECRETS_CRD)
    if served is None or "v1" not in served:
        yield Result("cluster.external-secrets", FAIL, resource,
                     "absent" if served is None else f"serves {', '.join(served)}, not v1",
                     "install External Secrets Operator 0.17 or later (helm install external-secrets ...)")
    else:
        yield Result("cluster.external-secrets", PASS, resource, f"serves {', '.join(served)}")


@check("cluster.namespaces", "the namespaces the stack creates do not exist yet; the others do",
       lambda c: "namespaces")
def check_namespaces(ctx: Context) -> Iterator[Result]:
    owned = list(ctx.config.namespaces)
    used = sorted({ep.namespace for ep in ctx.config.endpoints} - set(owned))
    for ns in [*owned, *used]:
        status, body = ctx.kube_get(f"/api/v1/namespaces/{ns}")
        resource = f"namespace {ns}"
        labels = (body.get("metadata") or {}).get("labels") or {}
        if ns in owned:
            if status == 404:
                yield Result("cluster.namespaces", PASS, resource, "absent: the stack creates it")
            elif labels.get(MANAGED_BY[0]) == MANAGED_BY[1]:
                yield Result("cluster.namespaces", PASS, resource, "created by a stack of this library")
            else:
                yield Result("cluster.namespaces", FAIL, resource,
                             "exists already and the stack never adopts a namespace (destroy would delete it)",
                             f"remove {ns} from namespaces: (its endpoints then use it as it is)")
        elif status == 404:
            yield Result("cluster.namespaces", FAIL, resource, "an endpoint uses it; it does not exist and is not in "
                         "namespaces:", f"add {ns} to namespaces: (the stack creates it), or kubectl create namespace "
                         f"{ns}")
        else:
            yield Result("cluster.namespaces", PASS, resource, "exists (an endpoint's namespace the stack does not own)")


#: kind -> (apiVersion, plural) of the objects ``cluster.object-owners`` reads (tests/ops checks them against a
#: synthesized stack).
OBJECT_KINDS: dict[str, tuple[str, str]] = {
    "InferenceEndpointConfig": (f"{OPERATOR_GROUP}/v1", "inferenceendpointconfigs"),
    "JumpStartModel": (f"{OPERATOR_GROUP}/v1", "jumpstartmodels"),
    "ServiceAccount": ("v1", "serviceaccounts"),
    "Secret": ("v1", "secrets"),
    "SecretStore": ("external-secrets.io/v1", "secretstores"),
    "ExternalSecret": ("external-secrets.io/v1", "externalsecrets"),
    "DaemonSet": ("apps/v1", "daemonsets"),
    "NetworkPolicy": ("networking.k8s.io/v1", "networkpolicies"),
    "Role": ("rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "rolebindings"),
}


@dataclass(frozen=True)
class PlannedObject(plan_objects.PlannedObject):
    """A Kubernetes object the plan names (:func:`~hyperpod_inference.plan.ownership.planned_objects`), with where
    the API serves it."""

    @classmethod
    def of(cls, obj: plan_objects.PlannedObject) -> PlannedObject:
        return cls(**{f.name: getattr(obj, f.name) for f in fields(plan_objects.PlannedObject)})

    @property
    def api_version(self) -> str:
        return OBJECT_KINDS[self.kind][0]

    @property
    def plural(self) -> str:
        return OBJECT_KINDS[self.kind][1]

    @property
    def path(self) -> str:
        api = self.api_version
        return f"{'/api/v1' if api == 'v1' else '/apis/' + api}/namespaces/{self.namespace}/{self.plural}/{self.name}"

    @property
    def resource(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def planned_objects(plan: ConfigPlan) -> list[PlannedObject]:
    """The objects of ``plan`` doctor looks at (:func:`~hyperpod_inference.plan.ownership.planned_objects`)."""
    return [PlannedObject.of(o) for o in plan_objects.planned_objects(plan)]


def _object_owner(ctx: Context, obj: PlannedObject) -> Result:
    check_id = "cluster.object-owners"
    scope = ctx.kubernetes_scope
    status, body = ctx.kube_get(obj.path, metadata_only=True)
    if status == 404:
        return Result(check_id, PASS, obj.resource, f"free: the stack creates it ({obj.used_by})")
    if status == 406:
        raise Skip(f"GET {obj.path} answered 406: the API does not serve metadata-only reads")
    if status != 200:
        raise Skip(f"GET {obj.path} answered {status}")
    labels = (body.get("metadata") or {}).get("labels") or {}
    owner = labels.get(naming.STACK_LABEL)
    if owner == scope:
        return Result(check_id, PASS, obj.resource, f"already deployed by this stack ({naming.STACK_LABEL}={scope}): "
                      "the deploy updates it (one that moves it to another manifest, a change of stackLayout, "
                      "stackGroup or namespace, needs the -c hyperpod-inference:adoptExisting=true migration of "
                      "docs/fleets.md)")
    delete = f"kubectl delete {obj.plural} {obj.name} -n {obj.namespace}"
    if obj.endpoint is not None:
        rename = (f"give the endpoint another name (endpoints[{obj.endpoint}].name) or namespace, or delete the "
                  f"object if nothing uses it ({delete})")
    else:
        rename = f"delete the object if nothing uses it ({delete}), or give the stack another stackName"
    if obj.kind == "Secret":
        deploy = (f"the stack's ExternalSecret writes it for {obj.used_by}: External Secrets Operator overwrites a "
                  "Secret of that name (creationPolicy: Owner), and the stack's destroy would delete it")
    else:
        deploy = (f"the deploy creates it for {obj.used_by} and fails with AlreadyExists (the stack never adopts an "
                  "object)")
    if owner:
        return Result(check_id, FAIL, obj.resource, f"exists, labelled {naming.STACK_LABEL}={owner} (another "
                      f"stack's; this one is {scope}): {deploy}", rename)
    if obj.endpoint is not None and labels.get(naming.MANAGED_BY_LABEL) == naming.MANAGED_BY_VALUE:
        return Result(check_id, WARN, obj.resource,
                      f"exists with {naming.MANAGED_BY_LABEL}={naming.MANAGED_BY_VALUE} but no "
                      f"{naming.STACK_LABEL} label: created by a release before per-stack labels, by this stack or "
                      "another", f"if this stack deployed it, deploy: the update labels it {scope}; if another "
                      f"stack did, {rename}")
    return Result(check_id, FAIL, obj.resource, f"exists with no owner label ({naming.STACK_LABEL}): made by hand or "
                  f"by another tool; {deploy}", rename)


@check("cluster.object-owners", "no object the stack would create exists already unless this stack deployed it",
       lambda c: "Kubernetes objects of the stack")
def check_object_owners(ctx: Context) -> Iterator[Result]:
    for obj in planned_objects(ctx.plan()):
        yield from _each("cluster.object-owners", obj.resource, lambda obj=obj: _object_owner(ctx, obj))


# ----------------------------------------------------------------------------------------------------- endpoints
def _needed_replicas(ep: Any) -> int:
    spec = getattr(ep, "auto_scaling_spec", None)
    return spec.min_replicas if spec is not None else ep.replicas


def _groups(ctx: Context) -> list[dict]:
    return list(ctx.hyperpod_or_skip().get("InstanceGroups") or [])


def _count(group: dict) -> int:
    return int(group.get("CurrentCount", group.get("TargetCount", 0)) or 0)


@check("endpoint.instance-group", "every instance type an endpoint may use has an instance group with room for it",
       lambda c: "endpoints")
def check_instance_groups(ctx: Context) -> Iterator[Result]:
    for i, ep in enumerate(ctx.config.endpoints):
        yield from _each("endpoint.instance-group", f"endpoints[{i}] ({ep.name})", lambda i=i, ep=ep: _instance_group(
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


@check("endpoint.weight-cache", "the daemonset weight cache lands only on instance types with instance-store NVMe",
       lambda c: "endpoints")
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
        yield from _each("endpoint.weight-cache", f"endpoints[{i}] ({ep.name})", one)


@check("endpoint.model-s3", "an S3 model prefix exists and holds files", lambda c: "endpoints")
def check_model_s3(ctx: Context) -> Iterator[Result]:
    for i, ep in enumerate(ctx.config.endpoints):
        source = ep.model.s3 if ep.model is not None else None
        if source is None:
            continue
        uri = f"s3://{source.bucket}/{source.folder_prefix}"

        def one(i: int = i, source: Any = source, uri: str = uri) -> Result:
            resource = f"endpoints[{i}].model.s3 {uri}"
            found = ctx.aws.call("s3", "ListObjectsV2", Bucket=source.bucket, Prefix=source.folder_prefix, MaxKeys=1,
                                 missing=("NoSuchBucket",))
            if found is None:
                return Result("endpoint.model-s3", FAIL, resource, f"no bucket {source.bucket}",
                              f"set endpoints[{i}].model.s3.bucket")
            if not found.get("KeyCount") and not found.get("Contents"):
                return Result("endpoint.model-s3", FAIL, resource, "no object under the prefix",
                              f"aws s3 sync ./model {uri}")
            return Result("endpoint.model-s3", PASS, resource, "holds files")
        yield from _each("endpoint.model-s3", f"endpoints[{i}].model.s3 {uri}", one)


@check("endpoint.token-secret", "a Secrets Manager token secret exists (described, never read)", lambda c: "endpoints")
def check_token_secret(ctx: Context) -> Iterator[Result]:
    for ep in _token_endpoints(ctx):
        i = ctx.config.endpoints.index(ep)
        arn = ep.model.huggingface.token.secrets_manager_arn

        def one(i: int = i, arn: str = arn) -> Result:
            resource = f"endpoints[{i}] secret {arn}"
            found = ctx.aws.call("secretsmanager", "DescribeSecret", SecretId=arn,
                                 missing=("ResourceNotFoundException",))
            if found is None:
                return Result("endpoint.token-secret", FAIL, resource, "no such secret",
                              f"aws secretsmanager create-secret ...; or set endpoints[{i}].model.huggingface.token")
            if found.get("DeletedDate"):
                return Result("endpoint.token-secret", FAIL, resource, "scheduled for deletion",
                              f"aws secretsmanager restore-secret --secret-id {arn}")
            return Result("endpoint.token-secret", PASS, resource, "exists (its value was not read)")
        yield from _each("endpoint.token-secret", f"endpoints[{i}] secret {arn}", one)


# ----------------------------------------------------------------------------------------------- capture, domain
def _bucket(ctx: Context, check_id: str, name: str, *, imported: bool, key: str) -> Result:
    resource = f"S3 bucket {name}"
    status = ctx.aws.status("s3", "HeadBucket", Bucket=name)
    if status == 403:
        return Result(check_id, FAIL, resource, "the name belongs to another account (HeadBucket: 403)",
                      f"set {key} to a bucket of this account" if imported else
                      "choose another stackName (the bucket names derive from it)")
    if status == 404:
        if imported:
            return Result(check_id, FAIL, resource, "no such bucket", f"set {key} to an existing bucket, or null")
        return Result(check_id, PASS, resource, "free: the stack creates it")
    if imported:
        return Result(check_id, PASS, resource, "exists and the caller may use it")
    tags = ctx.aws.call("s3", "GetBucketTagging", Bucket=name, missing=("NoSuchTagSet",)) or {}
    if ctx.owned_by_stack({t["Key"]: t["Value"] for t in tags.get("TagSet") or []}):
        return Result(check_id, PASS, resource, f"created by stack {ctx.stack_name}")
    return Result(check_id, FAIL, resource, f"exists in this account, not created by stack {ctx.stack_name} (a "
                  "retained bucket of an earlier stack?): CloudFormation cannot create it again",
                  f"import it: set {key}: {name}")


@check("capture.bucket", "the capture bucket names are free, or the imported bucket exists", lambda c: "capture")
def check_capture_bucket(ctx: Context) -> Iterator[Result]:
    capture = ctx.config.capture
    if capture is None:
        return
    if capture.bucket_name:
        names = [(capture.bucket_name, True)]
    else:
        base = naming.capture_name_base(ctx.stack_name, ctx.account, ctx.region)
        names = [(naming.capture_bucket_name(base, ctx.account, ctx.region), False),
                 (naming.capture_log_bucket_name(base, ctx.account, ctx.region), False)]
    for name, imported in names:
        yield from _each("capture.bucket", f"S3 bucket {name}",
                         lambda n=name, imp=imported: _bucket(ctx, "capture.bucket", n, imported=imp,
                                                              key="capture.bucketName"))


@check("operator.tls-bucket", "the TLS bucket name is free, or the imported bucket exists", lambda c: "TLS bucket")
def check_tls_bucket(ctx: Context) -> Iterator[Result]:
    op = ctx.config.operator
    name = op.tls_bucket_name or naming.tls_bucket_name(ctx.stack_name, ctx.account, ctx.region)
    yield from _each("operator.tls-bucket", f"S3 bucket {name}", lambda: _bucket(
        ctx, "operator.tls-bucket", name, imported=bool(op.tls_bucket_name), key="operator.tlsBucketName"))


@check("domain.hosted-zone", "domain.hostedZoneId exists and is domain.zoneName", lambda c: "domain")
def check_zone(ctx: Context) -> Iterator[Result]:
    domain = ctx.config.domain
    if domain is None:
        return
    zone = domain.zone_name.rstrip(".")
    if not domain.hosted_zone_id:
        listed = ctx.aws.call("route53", "ListHostedZonesByName", DNSName=zone, MaxItems="1") or {}
        same = [z for z in listed.get("HostedZones") or [] if z.get("Name", "").rstrip(".") == zone
                and not (z.get("Config") or {}).get("PrivateZone")]
        if same:
            yield Result("domain.hosted-zone", WARN, f"hosted zone {zone}",
                         f"a public zone {zone} exists already ({same[0]['Id']}); the stack would create a second one",
                         f"set domain.hostedZoneId: {same[0]['Id'].rsplit('/', 1)[-1]}")
        else:
            yield Result("domain.hosted-zone", PASS, f"hosted zone {zone}", "the stack creates it (delegate it)")
        return
    resource = f"hosted zone {domain.hosted_zone_id}"
    found = ctx.aws.call("route53", "GetHostedZone", Id=domain.hosted_zone_id, missing=("NoSuchHostedZone",))
    if found is None:
        yield Result("domain.hosted-zone", FAIL, resource, "no such hosted zone", "set domain.hostedZoneId")
        return
    name = found["HostedZone"]["Name"].rstrip(".")
    if name != zone:
        yield Result("domain.hosted-zone", FAIL, resource, f"the zone is {name}, not domain.zoneName {zone}",
                     "set domain.hostedZoneId or domain.zoneName")
    else:
        outside = [ep.domain_name for ep in ctx.config.endpoints if ep.domain_name
                   and not (ep.domain_name == zone or ep.domain_name.endswith("." + zone))]
        if outside:
            yield Result("domain.hosted-zone", FAIL, resource, f"{', '.join(outside)} are not in {zone}",
                         "set the endpoints' domainName inside the zone")
        else:
            yield Result("domain.hosted-zone", PASS, resource, f"{name}")


def covers(pattern: str, name: str) -> bool:
    """Whether a certificate name (``*.example.com`` covers exactly one label) covers ``name``."""
    pattern, name = pattern.lower().rstrip("."), name.lower().rstrip(".")
    if pattern.startswith("*."):
        head, _, rest = name.partition(".")
        return bool(head) and rest == pattern[2:]
    return pattern == name


@check("domain.certificate", "an imported certificate is ISSUED and covers every endpoint name", lambda c: "domain")
def check_certificate(ctx: Context) -> Iterator[Result]:
    domain = ctx.config.domain
    if domain is None or not domain.certificate_arn:
        return
    arn = domain.certificate_arn
    found = ctx.aws.call("acm", "DescribeCertificate", CertificateArn=arn, missing=("ResourceNotFoundException",))
    if found is None:
        yield Result("domain.certificate", FAIL, arn, "no such certificate", "set domain.certificateArn, or null")
        return
    cert = found["Certificate"]
    names = [cert.get("DomainName", ""), *(cert.get("SubjectAlternativeNames") or [])]
    wanted = [ep.domain_name for ep in ctx.config.endpoints if ep.domain_name]
    uncovered = [n for n in wanted if not any(covers(p, n) for p in names)]
    if cert.get("Status") != "ISSUED":
        yield Result("domain.certificate", FAIL, arn, f"status {cert.get('Status')}, not ISSUED",
                     f"aws acm describe-certificate --certificate-arn {arn} (complete its validation)")
    elif uncovered:
        yield Result("domain.certificate", FAIL, arn, f"does not cover {', '.join(uncovered)} (it has "
                     f"{', '.join(names)})", "issue a certificate for those names, or set domain.certificateArn: null")
    else:
        yield Result("domain.certificate", PASS, arn, f"ISSUED for {', '.join(names)}")


def _key_arns(ctx: Context) -> list[tuple[str, str]]:
    out = []
    capture = ctx.config.capture
    if capture is not None and capture.kms.startswith("arn:"):
        out.append(("capture.kms", capture.kms))
    for i, ep in enumerate(ctx.config.endpoints):
        model = ep.model
        if model is not None and model.s3 is not None and model.s3.kms_key_arn:
            out.append((f"endpoints[{i}].model.s3.kmsKeyArn", model.s3.kms_key_arn))
        token = model.huggingface.token if model is not None and model.huggingface is not None else None
        if token is not None and token.kms_key_arn:
            out.append((f"endpoints[{i}].model.huggingface.token.kmsKeyArn", token.kms_key_arn))
    return out


@check("kms.key", "every KMS key given by ARN exists and is enabled", lambda c: "KMS keys")
def check_keys(ctx: Context) -> Iterator[Result]:
    for key, arn in _key_arns(ctx):
        def one(key: str = key, arn: str = arn) -> Result:
            resource = f"{key} {arn}"
            found = ctx.aws.call("kms", "DescribeKey", KeyId=arn, missing=("NotFoundException",))
            if found is None:
                return Result("kms.key", FAIL, resource, "no such key", f"set {key}")
            state = found["KeyMetadata"].get("KeyState")
            if state != "Enabled":
                return Result("kms.key", FAIL, resource, f"key state {state}, not Enabled",
                              f"aws kms enable-key --key-id {arn}" if state == "Disabled" else f"set {key}")
            return Result("kms.key", PASS, resource, "Enabled")
        yield from _each("kms.key", f"{key} {arn}", one)


from . import doctor_alarms as doctor_alarms  # noqa: E402  (registers alarms.topic with the checks above)
from . import doctor_rbac as doctor_rbac  # noqa: E402  (registers cluster.agent-role with the checks above)

# -------------------------------------------------------------------------------------------------------- runner
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)


def selected(only: Iterable[str] | None) -> list[Check]:
    """The checks ``only`` names (an ID, or a prefix such as ``operator``); ValueError for a name that matches none."""
    if not only:
        return list(CHECKS)
    wanted = [w.strip() for w in only if w.strip()]
    unknown = [w for w in wanted if not any(c.id == w or c.id.startswith(w + ".") for c in CHECKS)]
    if unknown:
        raise ValueError(f"no check {', '.join(unknown)}; the checks: {', '.join(CHECK_IDS)}")
    return [c for c in CHECKS if any(c.id == w or c.id.startswith(w + ".") for w in wanted)]


def run(ctx: Context, only: Iterable[str] | None = None) -> list[Result]:
    results: list[Result] = []
    for chk in selected(only):
        try:
            results.extend(chk.run(ctx))
        except Skip as skip:
            results.append(Result(chk.id, SKIP, chk.resource(ctx), skip.reason))
    return results


def incomplete(results: list[Result]) -> list[Result]:
    """The skipped results that make the run say nothing: those of REQUIRED_CHECKS, or every result when all skipped."""
    skipped = [r for r in results if r.status == SKIP]
    if results and len(skipped) == len(results):
        return skipped
    return [r for r in skipped if r.check in REQUIRED_CHECKS]


def exit_status(results: list[Result]) -> int:
    """EXIT_INCOMPLETE when a required check could not run (or nothing could), else EXIT_FAILED when a check failed,
    else EXIT_OK."""
    if incomplete(results):
        return EXIT_INCOMPLETE
    return EXIT_FAILED if any(r.status == FAIL for r in results) else EXIT_OK


def render(results: list[Result]) -> str:
    lines = []
    for r in results:
        lines.append(f"{r.status.upper():4}  {r.check:34} {r.resource}: {r.detail}")
        if r.fix and r.status != PASS:
            lines.append(f"{'':40} fix: {r.fix}")
    counts = {s: sum(r.status == s for r in results) for s in (PASS, WARN, FAIL, SKIP)}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines) + "\n"
