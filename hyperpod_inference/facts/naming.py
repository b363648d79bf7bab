"""Physical names the library chooses: one naming function, each service's length limit and character set.

:func:`physical_name` joins a prefix and parts with ``-``; a name longer than the service allows keeps its head and
ends in ``-<hash>``, a short SHA-256 digest of the whole name, so it stays deterministic and two long names that share
a head still differ. The helpers below are the library's own names (the TLS bucket, the operator execution role, the
capture buckets and key alias), each built by it, and the Kubernetes names and owner labels of what a stack applies
(:func:`kubernetes_scope` and the names built on it).

Names may carry deploy-time values (CDK tokens, ``${Token[...]}``): those parts are never shortened or checked here;
the helpers reserve room for them instead.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .metrics import ALARM_NAME_MAX
from .operator import EXECUTION_ROLE_NAME_PREFIX, TLS_BUCKET_PREFIX
from .rules import is_deploy_time


@dataclass(frozen=True)
class NameRule:
    """A service's rule for the names it accepts."""

    service: str
    max_length: int
    charset: str
    """The characters allowed, as the body of a regex character class."""
    separator: str = "-"
    """What joins the parts (and the hash) of a name."""
    min_length: int = 1
    pattern: str | None = None
    """A whole name's further rule, as a regex it must match in full (how it starts and ends, ...)."""
    pattern_says: str = ""

    def problem(self, name: str) -> str | None:
        """Why ``name`` is not a valid name here, or None. Deploy-time values are not checked."""
        if is_deploy_time(name):
            return None
        if len(name) > self.max_length:
            return f"{self.service} names are at most {self.max_length} characters ({name!r} has {len(name)})"
        if len(name) < self.min_length:
            return f"{self.service} names are at least {self.min_length} characters ({name!r})"
        if not re.fullmatch(f"[{self.charset}]+", name):
            return f"{self.service} names take only [{self.charset}] ({name!r})"
        if self.pattern is not None and not re.fullmatch(self.pattern, name):
            return f"{self.service} names {self.pattern_says} ({name!r})"
        return None


S3_BUCKET = NameRule("S3 bucket", 63, "a-z0-9.-")
IAM_ROLE = NameRule("IAM role", 64, "A-Za-z0-9_+=,.@-")
KMS_ALIAS = NameRule("KMS alias", 256, "A-Za-z0-9/_-")
LAMBDA_FUNCTION = NameRule("Lambda function", 64, "A-Za-z0-9_-")
ATHENA_WORKGROUP = NameRule("Athena workgroup", 128, "A-Za-z0-9._-")
GLUE_DATABASE = NameRule("Glue database", 255, "a-z0-9_", separator="_")
K8S_LABEL = NameRule("Kubernetes DNS-1123 label", 63, "a-z0-9-")
K8S_SUBDOMAIN = NameRule("Kubernetes DNS-1123 subdomain", 253, "a-z0-9.-")

# Whole names as the services take them (the rules above also check parts of a name).
S3_BUCKET_NAME = NameRule("S3 bucket", 63, "a-z0-9.-", min_length=3, pattern=r"(?!.*\.\.)[a-z0-9](.*[a-z0-9])?",
                          pattern_says="start and end with a letter or digit and hold no '..'")
KMS_ALIAS_NAME = NameRule("KMS alias", 256, "A-Za-z0-9/_-", pattern=r"alias/(?!aws/).+",
                          pattern_says="start with 'alias/' (not 'alias/aws/')")
CLOUDWATCH_DASHBOARD = NameRule("CloudWatch dashboard", 255, "A-Za-z0-9_-")
CLOUDWATCH_ALARM = NameRule("CloudWatch alarm", 255, " -~")
LOG_GROUP = NameRule("CloudWatch Logs log group", 512, "A-Za-z0-9._/#-")
SNS_TOPIC = NameRule("SNS topic", 256, "A-Za-z0-9_-")
STATE_MACHINE = NameRule("Step Functions state machine", 80, "A-Za-z0-9_-")
ATHENA_PREPARED_STATEMENT = NameRule("Athena prepared statement", 256, "A-Za-z0-9_@:", pattern=r"[A-Za-z_].*",
                                     pattern_says="start with a letter or '_'")
PROMETHEUS_RULE_GROUPS = NameRule("Prometheus rule groups namespace", 64, "A-Za-z0-9._-",
                                  pattern=r"[A-Za-z0-9].*", pattern_says="start with a letter or digit")

#: (CloudFormation type, property) -> the rule of the physical name the library gives it: every such name is checked
#: at synth (``assembly/limits.py``), a deploy-time value in one included.
PHYSICAL_NAME_RULES: dict[tuple[str, str], NameRule] = {
    ("AWS::S3::Bucket", "BucketName"): S3_BUCKET_NAME,
    ("AWS::IAM::Role", "RoleName"): IAM_ROLE,
    ("AWS::KMS::Alias", "AliasName"): KMS_ALIAS_NAME,
    ("AWS::CloudWatch::Dashboard", "DashboardName"): CLOUDWATCH_DASHBOARD,
    ("AWS::CloudWatch::Alarm", "AlarmName"): CLOUDWATCH_ALARM,
    ("AWS::CloudWatch::CompositeAlarm", "AlarmName"): CLOUDWATCH_ALARM,
    ("AWS::Logs::LogGroup", "LogGroupName"): LOG_GROUP,
    ("AWS::Lambda::Function", "FunctionName"): LAMBDA_FUNCTION,
    ("AWS::SNS::Topic", "TopicName"): SNS_TOPIC,
    ("AWS::StepFunctions::StateMachine", "StateMachineName"): STATE_MACHINE,
    ("AWS::Athena::WorkGroup", "Name"): ATHENA_WORKGROUP,
    ("AWS::Athena::PreparedStatement", "StatementName"): ATHENA_PREPARED_STATEMENT,
    ("AWS::Glue::Database", "DatabaseInput.Name"): GLUE_DATABASE,
    ("AWS::APS::RuleGroupsNamespace", "Name"): PROMETHEUS_RULE_GROUPS,
}

#: Widths reserved for values known only at deploy time (an account ID; the longest Region name, e.g. ap-southeast-5).
ACCOUNT_LENGTH = 12
MAX_REGION_LENGTH = 14


def physical_name(*parts: str, rule: NameRule, max_length: int | None = None, hash_length: int = 8,
                  trim_head: bool = False) -> str:
    """``parts`` joined by the service's separator (``-``; ``_`` for Glue), at most ``max_length`` (default: the
    service's limit) characters.

    A longer name becomes ``<head>-<hash>``: the head of the name and the first ``hash_length`` hex digits of the
    SHA-256 of the whole name. ``trim_head`` drops separators at the end of the head (no ``--`` before the hash).
    Raises ValueError for characters the service refuses. Parts holding deploy-time values make the name unshortened.
    """
    sep = rule.separator
    name = sep.join(p for p in parts if p)
    limit = rule.max_length if max_length is None else max_length
    if is_deploy_time(name):
        return name
    if len(name) > limit:
        digest = hashlib.sha256(name.encode()).hexdigest()[:hash_length]
        head = name[: limit - hash_length - 1]
        name = f"{head.rstrip(sep) if trim_head else head}{sep}{digest}"
    problem = rule.problem(name)
    if problem:
        raise ValueError(problem)
    return name


def dns_safe(text: str, *, default: str) -> str:
    """``text`` lowercased, runs of characters other than ``a-z0-9-`` as one ``-``, no ``-`` at either end."""
    base = re.sub(r"[^a-z0-9-]+", "-", text.lower())
    return re.sub(r"-{2,}", "-", base).strip("-") or default


# --- the library's names ------------------------------------------------------------------------------------------

def tls_bucket_name(scope_name: str, account: str, region: str) -> str:
    """``hyperpod-tls-<scope>-<account>-<region>``: under the operator managed policy's ``hyperpod-tls*`` statements,
    and carrying the stack (``scope_name``: the stack's name, with the construct's id when it is not ``Default``), so
    two stacks in one account and Region never collide. ``<scope>`` is DNS-safe and shortened with a 6-hex digest so
    the name fits 63 characters (with room for a deploy-time account and Region)."""
    account_len = ACCOUNT_LENGTH if is_deploy_time(account) else len(account)
    region_len = MAX_REGION_LENGTH if is_deploy_time(region) else len(region)
    room = S3_BUCKET.max_length - len(TLS_BUCKET_PREFIX) - 3 - account_len - region_len
    base = physical_name(dns_safe(scope_name, default="hyperpod"), rule=S3_BUCKET, max_length=room, hash_length=6,
                         trim_head=True)
    return f"{TLS_BUCKET_PREFIX}-{base}-{account}-{region}"


#: The folder of the TLS certificates the operator writes to a bucket the managed policy does not cover.
TLS_CERTIFICATE_FOLDER = "hyperpod-inference"
#: The longest ``<scope>`` segment of :func:`tls_certificate_prefix` (a DNS label: short in IAM ARNs and S3 URIs).
TLS_CERTIFICATE_SCOPE_LENGTH = 63


def tls_certificate_prefix(scope_name: str) -> str:
    """``hyperpod-inference/<scope>``: the key prefix (no leading or trailing ``/``) under which the operator writes
    TLS certificates to a bucket outside the managed policy's ``hyperpod-tls*`` statements, so the execution role's
    grant on that bucket is scoped to this stack's own objects and two stacks sharing the bucket never reach each
    other's. ``<scope>`` is ``scope_name`` (the stack's name, with the construct's id when it is not ``Default``)
    made DNS-safe, at most 63 characters, shortened with a 6-hex digest of the whole name."""
    scope = physical_name(dns_safe(scope_name, default="hyperpod"), rule=K8S_LABEL,
                          max_length=TLS_CERTIFICATE_SCOPE_LENGTH, hash_length=6, trim_head=True)
    return f"{TLS_CERTIFICATE_FOLDER}/{scope}"


def execution_role_name(stack_name: str, region: str) -> str:
    """``SageMakerHyperPodInference-<stack name>-<region>``, at most 64 characters.

    Longer names keep their head and end in an 8-hex digest of the full name. With a deploy-time Region the
    stack-name part is shortened so that any Region still fits."""
    if not is_deploy_time(region):
        return physical_name(EXECUTION_ROLE_NAME_PREFIX, stack_name, region, rule=IAM_ROLE)
    room = IAM_ROLE.max_length - len(EXECUTION_ROLE_NAME_PREFIX) - 2 - (MAX_REGION_LENGTH + 2)
    return f"{EXECUTION_ROLE_NAME_PREFIX}-{physical_name(stack_name, rule=IAM_ROLE, max_length=room)}-{region}"


#: A ``<base>`` starting with one of these could make a name start with a prefix S3 reserves (``xn--``, ``sthree-``,
#: ``amzn-s3-demo-``): the base is followed by ``-``.
_BASE_RESERVED = ("sthree", "amzn-s3-demo", "xn-")
_CAPTURE_LONGEST_SUFFIX = "-capture-logs--"  # <base>-capture-logs-<account>-<region>, the longest capture name


def capture_name_base_limit(account: str, region: str) -> int:
    """The longest ``<base>`` such that every capture name built from it fits an S3 bucket name."""
    account_len = ACCOUNT_LENGTH if is_deploy_time(account) else len(account)
    region_len = MAX_REGION_LENGTH if is_deploy_time(region) else len(region)
    return S3_BUCKET.max_length - len(_CAPTURE_LONGEST_SUFFIX) - account_len - region_len


def capture_name_base(stack_name: str, account: str, region: str) -> str:
    """``<base>`` of the capture names from the stack name: DNS-safe, never starting with a prefix S3 reserves,
    shortened with a 6-hex digest to :func:`capture_name_base_limit`."""
    base = dns_safe(stack_name, default="hyperpod")
    if base.startswith(_BASE_RESERVED):
        base = f"hp-{base}"
    return physical_name(base, rule=S3_BUCKET, max_length=capture_name_base_limit(account, region), hash_length=6,
                         trim_head=True)


def capture_name_prefix_problem(prefix: str, account: str, region: str) -> str | None:
    """Why a user-chosen ``<base>`` (``physical_name_prefix``) cannot make the capture names, or None."""
    if not re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", prefix) or "--" in prefix:
        return "must be lowercase letters, digits and single '-', starting and ending with a letter or digit"
    if prefix.startswith(_BASE_RESERVED):
        return "starts with a prefix S3 reserves"
    limit = capture_name_base_limit(account, region)
    if len(prefix) > limit:
        return (f"at most {limit} characters here (bucket names are limited to 63 with the "
                "'-capture-logs-<account>-<region>' suffix)")
    return None


def capture_bucket_name(base: str, account: str, region: str) -> str:
    return physical_name(base, "capture", account, region, rule=S3_BUCKET)


def capture_log_bucket_name(base: str, account: str, region: str) -> str:
    return physical_name(base, "capture-logs", account, region, rule=S3_BUCKET)


def capture_key_alias(base: str) -> str:
    return "alias/" + physical_name(base, "data-capture", rule=KMS_ALIAS, max_length=KMS_ALIAS.max_length - 6)


def capture_workgroup_name(base: str) -> str:
    """``<base>-capture``: the Athena workgroup over the captured data."""
    return physical_name(base, "capture", rule=ATHENA_WORKGROUP)


def capture_database_name(base: str) -> str:
    """``<base>_capture`` (``-`` as ``_``): the Glue database of the capture tables."""
    return physical_name(base.replace("-", "_"), "capture", rule=GLUE_DATABASE)


# --- the stack's name scope and its IAM names -----------------------------------------------------------------------

#: The app's stack for one config file without ``stackName``.
DEFAULT_STACK_NAME = "HyperPodInference"


def default_stack_name(stack_name: str | None, eks_cluster_name: str | None, *, several: bool) -> str:
    """``stackName``, else ``HyperPodInference`` for one config file, ``HyperPodInference-<eksClusterName>`` for
    several."""
    if stack_name:
        return stack_name
    if several and eks_cluster_name:
        return f"{DEFAULT_STACK_NAME}-{eks_cluster_name}"
    return DEFAULT_STACK_NAME


def name_scope(stack_name: str, construct_id: str) -> str:
    """What every name a ``HyperPodInference`` chooses carries, so two stacks (or two constructs in one stack) never
    collide: the stack's name, with the construct's id when it is not ``Default``."""
    return stack_name if construct_id == "Default" else f"{stack_name}-{construct_id}"


def alarm_name(scope_name: str, namespace: str, endpoint_name: str, kind: str) -> str:
    """``<scope>-<namespace>-<name>-<kind>`` (cut at :data:`~.metrics.ALARM_NAME_MAX`): an endpoint's alarm (``health`` is the composite that
    notifies the topic). Known at synth, so the topic policy names the alarms' ARNs without referring to them."""
    return f"{scope_name}-{namespace}-{endpoint_name}-{kind}"[:ALARM_NAME_MAX]


def service_account_role_name(scope_name: str, namespace: str, owner: str, purpose: str) -> str:
    """``<scope>-<namespace>-<owner>-<purpose>`` (at most 64, shortened with a hash): the deterministic name of a
    service account's IRSA role when manifests are delivered as files (their annotations need the real ARN)."""
    return physical_name(dns_safe(scope_name, default="hyperpod"), namespace, owner, purpose, rule=IAM_ROLE)


def gated_model_role_name(scope_name: str) -> str:
    """``<scope>-jumpstart-gated``: the JumpStart gated-model role's name with files delivery."""
    return physical_name(dns_safe(scope_name, default="hyperpod"), "jumpstart-gated", rule=IAM_ROLE)


def role_arn(partition: str, account: str, name: str) -> str:
    """``arn:<partition>:iam::<account>:role/<name>``: the ARN of a role the stack names (the one place role ARNs
    are formed)."""
    return f"arn:{partition}:iam::{account}:role/{name}"


# --- Kubernetes names and owner labels ------------------------------------------------------------------------------

#: The label every object the library creates carries, with :data:`MANAGED_BY_VALUE` (:data:`MANAGED_BY`).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "hyperpod-inference-cdk"
MANAGED_BY: Mapping[str, str] = MappingProxyType({MANAGED_BY_LABEL: MANAGED_BY_VALUE})
#: The label naming the stack (and construct) an object belongs to: its value is :func:`kubernetes_scope`.
STACK_LABEL = "hyperpod-inference/stack"
#: The longest :func:`kubernetes_scope`: every name built from it stays a DNS-1123 label (63) with its suffixes.
KUBERNETES_SCOPE_LENGTH = 30
_SCOPE_DIGEST_LENGTH = 6


def kubernetes_scope(name_scope: str, stack_name: str, path_in_stack: str) -> str:
    """``<name scope>-<digest>``: what every Kubernetes object name the library chooses starts with, and the value
    of :data:`STACK_LABEL`.

    ``name_scope`` (the stack's name, with the construct's id unless it is ``Default``) made DNS-safe and shortened
    keeps it readable; the 6-hex digest of ``<stack name>/<construct path in the stack>`` makes it exact, so two stacks
    (also names differing only in case or punctuation) and two constructs of one id under two parents never share a
    name. At most :data:`KUBERNETES_SCOPE_LENGTH` characters, a DNS-1123 label."""
    digest = hashlib.sha256(f"{stack_name}/{path_in_stack}".encode()).hexdigest()[:_SCOPE_DIGEST_LENGTH]
    head = physical_name(dns_safe(name_scope, default="hyperpod"), rule=K8S_LABEL,
                         max_length=KUBERNETES_SCOPE_LENGTH - _SCOPE_DIGEST_LENGTH - 1, hash_length=4, trim_head=True)
    return f"{head.strip('-')}-{digest}"


def owner_labels(scope: str) -> dict[str, str]:
    """The labels of every object the library creates: managed by this library, in the stack ``scope`` names."""
    return {**MANAGED_BY, STACK_LABEL: scope}


def _digest(text: str, length: int = 10) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def token_sync_name(scope: str, sync_key: str) -> str:
    """``<scope>-hf-token-<hash of the sync key>``: the Secret, SecretStore and ExternalSecret of one Secrets Manager
    token sync (its ServiceAccount adds ``-reader``)."""
    return "-".join(p for p in (scope, "hf-token", _digest(sync_key)) if p)


def warm_daemonset_name(scope: str, warm_key: str) -> str:
    """``<scope>-nvme-warm-<hash of the warm key>``: the warm DaemonSet (and the stem of its NetworkPolicy and models
    ConfigMaps); adding or removing an endpoint it warms never renames it."""
    return "-".join(p for p in (scope, "nvme-warm", _digest(warm_key)) if p)


def models_configmap_name(warm_name: str, models_json: str) -> str:
    """``<warm DaemonSet>-models-<hash of its content>``: the immutable models ConfigMap; new models, a new name."""
    return f"{warm_name}-models-{_digest(models_json)}"


def agent_code_prefix(scope: str) -> str:
    """``<scope>-nvme-agent``: the stem of the agent code ConfigMaps (``<prefix>-<code hash>``) and the gc Job."""
    return "-".join(p for p in (scope, "nvme-agent") if p)


def model_reader_service_account_name(scope: str, endpoint_name: str) -> str:
    """``<scope>-<endpoint>-model-reader``, at most 253 characters: an endpoint's own ServiceAccount."""
    return physical_name(scope, endpoint_name, "model-reader", rule=K8S_SUBDOMAIN)


def shared_unit_name(namespace: str, what: str, object_name: str) -> str:
    """``<namespace>-<what>-<8 hex of object_name>``: the manifest (chart and ``Manifest…`` resource) of a shared
    piece, named after the name of the objects it holds. Objects that get another name come in another manifest
    resource, which CloudFormation creates (and the pods roll onto) before it deletes the old one; never in the old
    one, whose ``kubectl apply --prune`` would delete them while pods still use them."""
    return f"{namespace}-{what}-{_digest(object_name, 8)}"


#: Hex digits of the SHA-256 digest in a content-named Kubernetes object (``<stem>-<digest>``).
HASH_LENGTH = 10


def hashed_name(stem: str, key: str, length: int = HASH_LENGTH) -> str:
    """``<stem>-<first length hex digits of sha256(key)>``: the name of an object named by its content (a Job)."""
    return f"{stem}-{_digest(key, length)}"


def hf_token_names(scope: str, sync_key: str) -> dict[str, str]:
    """The Kubernetes names of a Secrets Manager token sync: :func:`token_sync_name` for the Secret, SecretStore and
    ExternalSecret, ``…-reader`` for the ServiceAccount ESO reads with."""
    base = token_sync_name(scope, sync_key)
    return {"secret": base, "store": base, "external_secret": base, "service_account": f"{base}-reader"}


def deny_ingress_policy_name(name: str) -> str:
    return f"{name}-deny-ingress"


#: The default name prefix of the NVMe agent's code ConfigMaps (a chart used on its own, outside a stack).
AGENT_CODE_CONFIGMAP = "nvme-agent-code"


def agent_code_configmap_name(prefix: str, code_hash: str) -> str:
    """``<prefix>-<first 10 hex digits of the code hash>``: named by the agent code it holds."""
    return f"{prefix}-{code_hash[:HASH_LENGTH]}"


def agent_gc_name(prefix: str) -> str:
    """``<prefix>-gc``: the gc Job's ServiceAccount, Role, RoleBinding and NetworkPolicy (and its Job's stem)."""
    return f"{prefix}-gc"


# --- delivery units (a manifest file and, with kubectl delivery, a KubernetesManifest resource each) ---------------

def endpoint_unit_name(namespace: str, endpoint_name: str) -> str:
    return f"{namespace}-{endpoint_name}"


def namespace_unit_name(namespace: str) -> str:
    return f"namespace-{namespace}"


def gateway_unit_name(namespace: str, name: str) -> str:
    """The manifest of the Inference Gateway ``name`` of ``namespace``."""
    return f"{namespace}-gateway-{name}"


def pascal(name: str) -> str:
    """``team-a`` -> ``TeamA``: the construct-ID form of a Kubernetes name."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", name) if p)
