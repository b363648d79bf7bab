"""The ``kubernetes`` family of ``doctor``: what the cluster's API answers through the kubeconfig. The kubeconfig itself,
the External Secrets Operator a Secrets Manager token needs, the namespaces and the objects the stack would create
(free, or already this stack's), and whether the kubectl role may create the NVMe agent's gc Role.

These checks need a kubeconfig for the cluster and skip without one; a kubeconfig that is there but wrong fails
``cluster.kubeconfig``. Their IDs keep the ``cluster.`` prefix they always had (``--only cluster`` still runs them).

``cluster.agent-role``: Kubernetes refuses to create a Role that grants more than its creator holds (unless it may
``escalate`` roles), and a RoleBinding to it unless the creator holds the Role's rules (or may ``bind`` it):
``facts.rbac``. The stack's kubectl handler applies the manifests as ``cluster.kubectlRoleArn``; the check asks the
API server, with a ``SubjectAccessReview`` per permission (a question, never stored: it changes nothing), whether the
Kubernetes user and groups that role is mapped to (its EKS access entry, else its aws-auth entry) hold them in each
namespace with a ``weightCache.mode: daemonset`` endpoint. Cluster admins (``AmazonEKSClusterAdminPolicy`` with
cluster scope, or ``system:masters``) hold everything.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields

from ...facts import naming
from ...facts import operator as operator_facts
from ...facts.rbac import AGENT_GC_ROLE_RULES, CREATE_ROLE_RULES, ESCALATE_RULE, Rule
from ...plan import ConfigPlan
from ...plan import ownership as plan_objects
from ..aws import Skip
from ..kube import Kube, KubeUnavailable
from .base import FAIL, MASTERS, PASS, SKIP, WARN, Context, Family, Result, each

FAMILY = Family("kubernetes", "what the cluster's API answers: kubeconfig, namespaces, objects, RBAC")

EXTERNAL_SECRETS_CRD = "externalsecrets.external-secrets.io"
AGENT_ROLE = "cluster.agent-role"
REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@FAMILY.check("cluster.kubeconfig", "the kubeconfig has a usable context for the cluster (for the checks inside it)",
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


@FAMILY.check("cluster.external-secrets", "External Secrets Operator serves external-secrets.io/v1 (for "
              "secretsManagerArn)", lambda c: f"CustomResourceDefinition {EXTERNAL_SECRETS_CRD}")
def check_external_secrets(ctx: Context) -> Iterator[Result]:
    if not ctx.secret_token_endpoints():
        return
    resource = f"CustomResourceDefinition {EXTERNAL_SECRETS_CRD}"
    served = ctx.crd_versions(EXTERNAL_SECRETS_CRD)
    if served is None or "v1" not in served:
        yield Result("cluster.external-secrets", FAIL, resource,
                     "absent" if served is None else f"serves {', '.join(served)}, not v1",
                     "install External Secrets Operator 0.17 or later (helm install external-secrets ...)")
    else:
        yield Result("cluster.external-secrets", PASS, resource, f"serves {', '.join(served)}")


@FAMILY.check("cluster.namespaces", "the namespaces the stack creates do not exist yet; the others do",
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
            elif labels.get(naming.MANAGED_BY_LABEL) == naming.MANAGED_BY_VALUE:
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


# ---------------------------------------------------------------------------------------------- object owners
#: kind -> (apiVersion, plural) of the objects ``cluster.object-owners`` reads (tests/ops checks them against a
#: synthesized stack).
OBJECT_KINDS: dict[str, tuple[str, str]] = {
    "InferenceEndpointConfig": (operator_facts.API_VERSION, "inferenceendpointconfigs"),
    "JumpStartModel": (operator_facts.API_VERSION, "jumpstartmodels"),
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


@FAMILY.check("cluster.object-owners", "no object the stack would create exists already unless this stack deployed it",
              lambda c: "Kubernetes objects of the stack")
def check_object_owners(ctx: Context) -> Iterator[Result]:
    for obj in planned_objects(ctx.plan()):
        yield from each("cluster.object-owners", obj.resource, lambda obj=obj: _object_owner(ctx, obj))


# ------------------------------------------------------------------------------------------ the agent's gc Role
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
    mode = ctx.authentication_mode()
    if "API" in mode.split("_AND_") or mode == "API":
        key = {"clusterName": ctx.eks_name, "principalArn": role}
        policies = ctx.aws.call("eks", "ListAssociatedAccessPolicies", **key, missing=("ResourceNotFoundException",))
        associated = (policies or {}).get("associatedAccessPolicies") or []
        if any(p.get("policyArn") == ctx.cluster_admin_policy and (p.get("accessScope") or {}).get("type") == "cluster"
               for p in associated):
            return Result(AGENT_ROLE, PASS, resource, "cluster admin (AmazonEKSClusterAdminPolicy): may create any Role")
        entry = ctx.aws.call("eks", "DescribeAccessEntry", **key, missing=("ResourceNotFoundException",))
        if entry is not None:
            found = entry["accessEntry"]
            return Subject(str(found.get("username") or role), tuple(found.get("kubernetesGroups") or ()),
                           "its EKS access entry", tuple(str(p.get("policyArn", "")).rsplit("/", 1)[-1]
                                                          for p in associated))
        if mode == "API":
            return Result(AGENT_ROLE, SKIP, resource, "the role has no access entry (see cluster.access-entry)")
    mappings, problem = ctx.aws_auth_mappings(role)
    if problem:
        return Result(AGENT_ROLE, SKIP, resource, f"the aws-auth ConfigMap cannot be read ({problem}; see "
                                                  "cluster.access-entry)")
    if not mappings:
        return Result(AGENT_ROLE, SKIP, resource, "neither an access entry nor aws-auth maps the role (see "
                                                  "cluster.access-entry)")
    groups = tuple(g for entry in mappings for g in entry.get("groups", []))
    if MASTERS in groups:
        return Result(AGENT_ROLE, PASS, resource, "mapped to system:masters in aws-auth: may create any Role")
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


@FAMILY.check(AGENT_ROLE, "the kubectl role may create the NVMe agent's gc Role (it holds the Role's rules, or "
                          "escalate)", lambda c: f"kubectl role {c.config.cluster.kubectl_role_arn}")
def check_agent_role(ctx: Context) -> Iterator[Result]:
    namespaces = daemonset_namespaces(ctx)
    if not namespaces:
        return
    role = str(ctx.config.cluster.kubectl_role_arn)
    if ctx.config.manifests.delivery == "files":
        yield Result(AGENT_ROLE, SKIP, f"namespaces {', '.join(namespaces)}",
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
            yield Result(AGENT_ROLE, PASS, resource, f"as mapped by {subject.source}, may create the gc Role and bind it")
            continue
        status = WARN if subject.access_policies else FAIL
        seen = (f"; its access policies ({', '.join(subject.access_policies)}) are authorized by EKS, which this "
                "review cannot see" if subject.access_policies else "")
        yield Result(AGENT_ROLE, status, resource,
                     f"as mapped by {subject.source}, lacks {', '.join(missing)}{seen}",
                     f"grant those in {ns} (a Role bound to {', '.join(subject.groups) or subject.user}), or make the "
                     "role cluster admin (docs/permissions.md)")
