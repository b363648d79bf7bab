"""RBAC facts: the rules of the Role the library creates for the NVMe agent's gc Job, and what Kubernetes asks of
whoever creates that Role.

Kubernetes' RBAC refuses to create a Role that grants more than its creator holds in that namespace, unless the
creator may ``escalate`` roles (``rbac.authorization.k8s.io``); a RoleBinding to it likewise needs the Role's rules or
``bind``. Cluster-admin holds everything. So a deployer without cluster-admin needs, in each namespace with a
``weightCache.mode: daemonset`` endpoint, ``create`` on roles and rolebindings and either every rule below or
``escalate`` and ``bind`` on roles.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    group: str
    resource: str
    verbs: tuple[str, ...]


#: The gc Role's rules, in the order the Role lists them (charts/nvme_cache.py builds the Role from this table).
AGENT_GC_ROLE_RULES = (
    Rule("", "pods", ("list",)),
    Rule("apps", "daemonsets", ("list",)),
    Rule("apps", "deployments", ("list",)),
    Rule("apps", "statefulsets", ("list",)),
    Rule("apps", "replicasets", ("list",)),
    Rule("batch", "jobs", ("list",)),
    Rule("batch", "cronjobs", ("list",)),
    Rule("", "configmaps", ("list", "delete")),
)

RBAC_GROUP = "rbac.authorization.k8s.io"
#: What creating the Role and its RoleBinding needs besides the Role's own rules (or escalate and bind).
CREATE_ROLE_RULES = (Rule(RBAC_GROUP, "roles", ("create",)), Rule(RBAC_GROUP, "rolebindings", ("create",)))
#: The verbs on roles that stand in for holding the Role's rules: escalate (create the Role), bind (bind it).
ESCALATE_RULE = Rule(RBAC_GROUP, "roles", ("escalate", "bind"))
