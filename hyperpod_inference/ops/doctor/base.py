"""What every family of ``doctor`` checks is written with: :class:`Result` (one line of output), :class:`Context` (the
config, the clients and the reads several checks share) and :class:`Family` (a family's registry of checks).

A check has an ID (``cluster.hyperpod``) and gives one :class:`Result` per resource it looked at: ``pass``, ``warn``,
``fail`` or ``skip`` (with why), the resource, what it found and the command or config key that fixes it. Only read
calls are made (:class:`~hyperpod_inference.ops.aws.Aws` refuses any other); a :class:`~..aws.Skip` raised by a check
makes that one check ``skip``. Every text of a result is one line of bounded length (:func:`~..text.one_line`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ...config.loader import DEFAULT_STACK_NAME, ConfigError, load_yaml_text
from ...config.models import HyperPodConfig
from ...facts.rules import arn_parts, eks_cluster_admin_policy_arn, role_name_from_arn
from ...plan import ConfigPlan, PlanContext, plan_config
from ..aws import Aws, Skip
from ..kube import Kube, KubeUnavailable, default_kubeconfig
from ..text import one_line

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"
#: The longest text of a result's field (an AWS error's message is cut well before).
MAX_FIELD_CHARS = 1000
#: The tag CloudFormation puts on the resources a stack creates.
STACK_TAG = "aws:cloudformation:stack-name"
MASTERS = "system:masters"
AWS_AUTH = "ConfigMap kube-system/aws-auth"


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
    """The config, the clients and what several checks read (each read once; a Skip is remembered too). What the
    stack would create is read from the config's plan (:func:`~hyperpod_inference.plan.plan_config`), as the
    app builds it: stack ``stack_name`` holding one ``HyperPodInference`` of id ``Default``."""

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

    def shared(self, key: str, read: Callable[[], Any]) -> Any:
        """What ``read`` returns, read once per run under ``key`` (a Skip it raises is remembered and raised again):
        for reads several checks of a family share, such as a model's Hub answers."""
        return self._once(key, read)

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

    def authentication_mode(self) -> str:
        """The EKS cluster's authentication mode (``API``, ``API_AND_CONFIG_MAP`` or ``CONFIG_MAP``)."""
        return str((self.eks_or_skip().get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")

    def addon(self, name: str) -> dict | None:
        def read() -> dict | None:
            found = self.aws.call("eks", "DescribeAddon", clusterName=self.eks_name, addonName=name,
                                  missing=("ResourceNotFoundException",))
            return found["addon"] if found else None
        return self._once(f"addon:{name}", read)

    def crd_versions(self, name: str) -> list[str] | None:
        """The served versions of CustomResourceDefinition ``name``, None when it does not exist."""
        status, body = self.kube_get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        if status == 404:
            return None
        if status != 200:
            raise Skip(f"GET customresourcedefinition {name} answered {status}")
        return [v.get("name") for v in (body.get("spec") or {}).get("versions") or [] if v.get("served")]

    def aws_auth_mappings(self, role_arn: str) -> tuple[list[dict], str | None]:
        """(the aws-auth ``mapRoles`` entries of ``role_arn``, why mapRoles cannot be read). No ConfigMap, or no
        mapRoles in it: no entries."""
        status, body = self.kube_get("/api/v1/namespaces/kube-system/configmaps/aws-auth")
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

    def secret_token_endpoints(self) -> list[Any]:
        """The endpoints whose Hugging Face token is a Secrets Manager secret."""
        return [ep for ep in self.config.endpoints if ep.model is not None and ep.model.huggingface is not None
                and ep.model.huggingface.token is not None and ep.model.huggingface.token.secrets_manager_arn]


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


def _same_role(a: str, b: str) -> bool:
    """Two role ARNs name one role: same partition, account and name (an aws-auth rolearn carries no path)."""
    try:
        (pa, _, _, aa), (pb, _, _, ab) = arn_parts(a), arn_parts(b)
    except ValueError:
        return False
    return (pa, aa) == (pb, ab) and role_name_from_arn(a) == role_name_from_arn(b)


CheckFn = Callable[[Context], Iterable[Result]]


@dataclass(frozen=True)
class Check:
    id: str
    family: str
    run: CheckFn
    resource: Callable[[Context], str]
    summary: str


class Family:
    """One family's checks, in the order they are registered (the order they run and print in). A check's ID is
    unique; the runner lists the families (:data:`~.runner.FAMILIES`), so a family's checks run because its module
    registers them on its own :class:`Family`, never as a side effect of another module's import."""

    def __init__(self, name: str, summary: str) -> None:
        self.name = name
        self.summary = summary
        self.checks: list[Check] = []

    def add(self, check_id: str, summary: str, resource: Callable[[Context], str], run: CheckFn) -> None:
        """Register ``run`` as check ``check_id``: ``resource`` names what it looks at when it skips as a whole."""
        if any(c.id == check_id for c in self.checks):
            raise ValueError(f"check {check_id} is registered twice")
        self.checks.append(Check(check_id, self.name, run, resource, summary))

    def check(self, check_id: str, summary: str, resource: Callable[[Context], str]) -> Callable[[CheckFn], CheckFn]:
        """Decorator form of :meth:`add`."""
        def register(fn: CheckFn) -> CheckFn:
            self.add(check_id, summary, resource, fn)
            return fn
        return register


def each(check_id: str, resource: str, run: Callable[[], Result | list[Result]]) -> list[Result]:
    """One resource of a check that looks at several: its Skip stays its own."""
    try:
        out = run()
    except Skip as skip:
        return [Result(check_id, SKIP, resource, skip.reason)]
    return out if isinstance(out, list) else [out]


def bucket_result(ctx: Context, check_id: str, name: str, *, imported: bool, key: str) -> Result:
    """Whether S3 bucket ``name`` can be what the config says: free (or this stack's) when the stack creates it, an
    existing bucket of this account when ``imported`` (config key ``key``)."""
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
