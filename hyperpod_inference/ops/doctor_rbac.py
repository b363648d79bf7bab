"""``doctor``'s check that whoever applies the manifests may create the NVMe agent's gc Role.

Kubernetes refuses to create a Role that grants more than its creator holds (unless it may ``escalate`` roles), and
a RoleBinding to it unless the creator holds the Role's rules (or may ``bind`` it): ``facts.rbac``. The stack's
kubectl handler applies the manifests as ``cluster.kubectlRoleArn``; the check asks the API server, with a
``SubjectAccessReview`` per permission (a question, never stored: it changes nothing), whether the Kubernetes user
and groups that role is mapped to (its EKS access entry, else its aws-auth entry) hold them in each namespace with a
``weightCache.mode: daemonset`` endpoint. Cluster admins (``AmazonEKSClusterAdminPolicy`` with cluster scope, or
``system:masters``) hold everything. Registered with doctor's ``check`` (imported by ``doctor``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..facts.rbac import AGENT_GC_ROLE_RULES, CREATE_ROLE_RULES, ESCALATE_RULE, Rule
from .aws import Skip
from .doctor import FAIL, MASTERS, PASS, SKIP, WARN, Context, Result, aws_auth_mappings, check
from .kube import KubeUnavailable

CHECK_ID = "cluster.agent-role"
REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True)
class Subject:
    """A Kubernetes identity: the user and groups an IAM role is mapped to, and where the mapping came from."""

    user: str
    groups: tuple[str, ...]
    source: str
    #: EKS access policies other than cluster admin: EKS authorizes them, not RBAC, and a review without the
    #: caller's session cannot see what they grant.
    access_policies: tuple[str, ...] = ()


def daemonset_namespaces(ctx: Context) -> list[str]:
    """The namespaces where the stack creates the agent's gc Role."""
    return sorted({ep.namespace for ep in ctx.config.endpoints
                   if ep.weight_cache is not None and ep.weight_cache.mode == "daemonset"})


def kubectl_subject(ctx: Context) -> Subject | Result:
    """The Kubernetes identity of ``cluster.kubectlRoleArn``, or a Result when it is cluster admin or has none."""
    role = str(ctx.config.cluster.kubectl_role_arn)
    resource = f"kubectl role {role}"
    mode = str((ctx.eks_or_skip().get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP")
    if "API" in mode.split("_AND_") or mode == "API":
        key = {"clusterName": ctx.eks_name, "principalArn": role}
        policies = ctx.aws.call("eks", "ListAssociatedAccessPolicies", **key, missing=("ResourceNotFoundException",))
        associated = (policies or {}).get("associatedAccessPolicies") or []
        if any(p.get("policyArn") == ctx.cluster_admin_policy and (p.get("accessScope") or {}).get("type") == "cluster"
               for p in associated):
            return Result(CHECK_ID, PASS, resource, "cluster admin (AmazonEKSClusterAdminPolicy): may create any Role")
        entry = ctx.aws.call("eks", "DescribeAccessEntry", **key, missing=("ResourceNotFoundException",))
        if entry is not None:
            found = entry["accessEntry"]
            return Subject(str(found.get("username") or role), tuple(found.get("kubernetesGroups") or ()),
                           "its EKS access entry", tuple(str(p.get("policyArn", "")).rsplit("/", 1)[-1]
                                                          for p in associated))
        if mode == "API":
            return Result(CHECK_ID, SKIP, resource, "the role has no access entry (see cluster.access-entry)")
    mappings, problem = aws_auth_mappings(ctx, role)
    if problem:
        return Result(CHECK_ID, SKIP, resource, f"the aws-auth ConfigMap cannot be read ({problem}; see "
                                                "cluster.access-entry)")
    if not mappings:
        return Result(CHECK_ID, SKIP, resource, "neither an access entry nor aws-auth maps the role (see "
                                                "cluster.access-entry)")
    groups = tuple(g for entry in mappings for g in entry.get("groups", []))
    if MASTERS in groups:
        return Result(CHECK_ID, PASS, resource, "mapped to system:masters in aws-auth: may create any Role")
    return Subject(str(mappings[0].get("username") or role), groups, "its aws-auth entry")


def review(ctx: Context, subject: Subject, namespace: str, rule: Rule, verb: str) -> bool:
    """Whether ``subject`` may ``verb`` ``rule``'s resource in ``namespace``: one SubjectAccessReview."""
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": subject.user, "groups": [*subject.groups, "system:authenticated"],
        "resourceAttributes": {"namespace": namespace, "verb": verb, "group": rule.group, "resource": rule.resource}}}
    try:
        status, answer = ctx.kube().post(REVIEWS, body)
    except KubeUnavailable as err:
        raise Skip(str(err)) from None
    if status >= 300:
        raise Skip(f"the API server answered {status} to a SubjectAccessReview: doctor's credentials need create "
                   "on subjectaccessreviews (authorization.k8s.io), as cluster admins have")
    return bool((answer.get("status") or {}).get("allowed"))


def missing_permissions(ctx: Context, subject: Subject, namespace: str) -> list[str]:
    """What ``subject`` lacks to create the gc Role and its RoleBinding in ``namespace``, as ``verb group/resource``
    (empty: it may)."""
    def lacks(rule: Rule) -> list[str]:
        return [f"{verb} {rule.group or 'core'}/{rule.resource}" for verb in rule.verbs
                if not review(ctx, subject, namespace, rule, verb)]

    missing = [m for rule in CREATE_ROLE_RULES for m in lacks(rule)]
    if lacks(ESCALATE_RULE):
        rules = [m for rule in AGENT_GC_ROLE_RULES for m in lacks(rule)]
        if rules:
            missing += [*rules, f"(or escalate and bind on {ESCALATE_RULE.group}/{ESCALATE_RULE.resource})"]
    return missing


@check(CHECK_ID, "the kubectl role may create the NVMe agent's gc Role (it holds the Role's rules, or escalate)",
       lambda c: f"kubectl role {c.config.cluster.kubectl_role_arn}")
def check_agent_role(ctx: Context) -> Iterator[Result]:
    namespaces = daemonset_namespaces(ctx)
    if not namespaces:
        return
    role = str(ctx.config.cluster.kubectl_role_arn)
    if ctx.config.manifests.delivery == "files":
        yield Result(CHECK_ID, SKIP, f"namespaces {', '.join(namespaces)}",
                     "manifests.delivery: files: the tool that applies the files creates the Role; its identity "
                     "needs what docs/permissions.md lists (or cluster-admin)")
        return
    subject = kubectl_subject(ctx)
    if isinstance(subject, Result):
        yield subject
        return
    for ns in namespaces:
        resource = f"kubectl role {role} ({subject.user}) in namespace {ns}"
        missing = missing_permissions(ctx, subject, ns)
        if not missing:
            yield Result(CHECK_ID, PASS, resource, f"as mapped by {subject.source}, may create the gc Role and bind it")
            continue
        status = WARN if subject.access_policies else FAIL
        seen = (f"; its access policies ({', '.join(subject.access_policies)}) are authorized by EKS, which this "
                "review cannot see" if subject.access_policies else "")
        yield Result(CHECK_ID, status, resource,
                     f"as mapped by {subject.source}, lacks {', '.join(missing)}{seen}",
                     f"grant those in {ns} (a Role bound to {', '.join(subject.groups) or subject.user}), or make the "
                     "role cluster admin (docs/permissions.md)")
