"""Architecture diagram of a synthesized stack: cdk.out template + manifests -> Graphviz .dot -> PNG.

Reads ``<cdk.out>/<Stack>.template.json`` and ``<cdk.out>/manifests/*.yaml`` (written by ``make synth``) and draws:

* AWS side: S3 buckets, KMS key, IAM roles, Route 53 zone, ACM certificate, Secrets Manager secrets, EKS add-ons,
  the kubectl provider and its manifests, the endpoint-verification custom resource with its Lambda functions;
* Kubernetes side, one box per namespace: ServiceAccounts, custom resources, ExternalSecrets, ConfigMaps, DaemonSets...

Edges: IAM role <-> ServiceAccount (IRSA: the role's trust ``sub`` and the ServiceAccount's
``eks.amazonaws.com/role-arn`` annotation), role -> bucket / key / zone / certificate / secret (from the resources of
its IAM policy statements), custom resource -> bucket (``s3Uri``), key (``kmsKeyId``), zone (``hostedZoneId``),
certificate (``acmArn``), and the references between Kubernetes objects.

Values the stack creates show up in the manifests as ``<LogicalId>`` / ``<LogicalId.Attr>`` placeholders; literal
names and ARNs (bucket names, alias ARNs, imported zone and certificate) are matched against the template, and
anything not created by the stack is drawn as a dashed "imported" node.

Usage: python tools/diagram.py [--cdk-out cdk.out] [--stack NAME] [--dot docs/architecture.dot]
                               [--png docs/architecture.png]
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROLE_ARN_ANNOTATION = "eks.amazonaws.com/role-arn"
SA_PREFIX = "system:serviceaccount:"
HASH_SUFFIX = re.compile(r"[0-9A-F]{8}$")
#: the content hash the library appends to some Kubernetes names (code ConfigMap, gc Job): shown as "-<hash>"
K8S_HASH_SUFFIX = re.compile(r"-[0-9a-f]{10}$")
#: the label naming the stack's Kubernetes scope, the head of every Kubernetes name the library chooses: left out of
#: labels (a diagram shows one stack)
STACK_LABEL = "hyperpod-inference/stack"
PLACEHOLDER = re.compile(r"<([A-Za-z][A-Za-z0-9]*)(?:\.[A-Za-z0-9.]+)?>")

# logical-ID prefixes (construct scopes) shortened in labels, first match wins
LABEL_PREFIXES = [
    (re.compile(r"^EndpointVerificationProvider\d+s\d+sProviderwaiterstatemachine"), "WaiterStateMachine"),
    (re.compile(r"^EndpointVerificationProvider\d+s\d+sProviderframework"), "Framework-"),
    (re.compile(r"^EndpointVerificationProvider\d+s\d+s"), "Verify"),
    (re.compile(r"^DependencyRoles"), ""),
    (re.compile(r"^DependencyAddons"), ""),
    (re.compile(r"^DataCapture"), "Capture"),
    (re.compile(r"^Domain(?=HostedZone|Certificate)"), ""),
    (re.compile(r"^.*KubectlProvider.*$"), "KubectlProvider"),
]

# resource type -> (group, type caption, fill colour)
AWS_TYPES = {
    "AWS::S3::Bucket": ("storage", "S3 bucket", "#d9f2d0"),
    "AWS::KMS::Key": ("storage", "KMS key", "#f9d5d3"),
    "AWS::SecretsManager::Secret": ("storage", "Secrets Manager secret", "#f9d5d3"),
    "AWS::IAM::Role": ("iam", "IAM role", "#fde2c4"),
    "AWS::Route53::HostedZone": ("dns", "Route 53 hosted zone", "#e4dcf5"),
    "AWS::CertificateManager::Certificate": ("dns", "ACM certificate", "#e4dcf5"),
    "AWS::EKS::Addon": ("eks", "EKS add-on", "#ffe9a8"),
    "AWS::CloudFormation::Stack": ("kubectl", "nested stack", "#eeeeee"),
    "AWS::Lambda::LayerVersion": ("kubectl", "Lambda layer", "#eeeeee"),
    "Custom::AWSCDK-EKS-KubernetesResource": ("kubectl", "kubectl manifest", "#eeeeee"),
    "Custom::SageMakerEndpointVerification": ("verify", "verification", "#fff3d6"),
    "AWS::Lambda::Function": ("verify", "Lambda function", "#fff3d6"),
    "AWS::StepFunctions::StateMachine": ("verify", "state machine", "#fff3d6"),
}
# not drawn: attached to another node (policies, alias, log groups) or noise
SKIPPED_TYPES = {"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::S3::BucketPolicy", "AWS::KMS::Alias",
                 "AWS::Logs::LogGroup", "AWS::CDK::Metadata", "AWS::Lambda::Permission"}
AWS_GROUPS = {
    "iam": "IAM roles",
    "storage": "Data capture, TLS and secrets",
    "dns": "Custom domain",
    "eks": "EKS add-ons",
    "kubectl": "kubectl manifests (applied by CloudFormation)",
    "verify": "Endpoint verification",
    "analytics": "Capture analytics (Athena and Glue)",
    "other": "Other resources",
}
#: The capture analytics (Athena workgroup, named queries and prepared statements, Glue database and tables): one
#: node, captioned with how many of each it stands for.
ANALYTICS_NODE = "CaptureAnalytics"
ANALYTICS_TYPES = {"AWS::Athena::WorkGroup": "workgroup", "AWS::Athena::NamedQuery": "named queries",
                   "AWS::Athena::PreparedStatement": "prepared statements", "AWS::Glue::Database": "Glue database",
                   "AWS::Glue::Table": "Glue tables"}
# the CDK custom-resource provider framework (its Lambda functions and waiter state machine): one node
FRAMEWORK = re.compile(r"^(.*Provider)(?:framework|waiterstatemachine)")
# roles assumed only by these services and used by a function / state machine are folded into that node
SERVICE_ROLE_PRINCIPALS = {"lambda.amazonaws.com", "states.amazonaws.com"}
GRANT_TARGET_TYPES = {"AWS::S3::Bucket", "AWS::KMS::Key", "AWS::Route53::HostedZone",
                      "AWS::CertificateManager::Certificate", "AWS::SecretsManager::Secret"}
K8S_COLOUR = "#d6e6fb"
CR_COLOUR = "#b9d3f7"
EDGE_STYLES = {
    "irsa": 'color="#c7511f", penwidth=2, fontcolor="#c7511f"',
    "grant": 'color="#7a5a00", fontcolor="#7a5a00"',
    "uses": 'color="#1f5fbf", fontcolor="#1f5fbf"',
    "k8s": 'color="#5b7fa8", fontcolor="#5b7fa8", style=dashed',
    "aws": 'color="#777777", fontcolor="#555555"',
    "applies": 'color="#999999", fontcolor="#777777", style=dotted',
}


@dataclass
class Node:
    id: str
    name: str           # short label
    caption: str        # type line
    group: str          # AWS group key, or "ns:<namespace>" on the Kubernetes side
    fill: str = "#ffffff"
    imported: bool = False


@dataclass
class Edge:
    src: str
    dst: str
    kind: str
    labels: list[str] = field(default_factory=list)
    both: bool = False  # IRSA: trust and annotation agree
    to_cluster: bool = False  # drawn to the destination's namespace box


@dataclass
class Graph:
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], Edge] = field(default_factory=dict)
    title: str = ""

    def add_edge(self, src: str, dst: str, kind: str, label: str = "") -> Edge:
        edge = self.edges.setdefault((src, dst, kind), Edge(src, dst, kind))
        if label and label not in edge.labels:
            edge.labels.append(label)
        return edge

    def pairs(self, kind: str | None = None) -> set[tuple[str, str]]:
        """(source name, destination name) of the edges (of one kind), for tests and review."""
        return {(self.nodes[e.src].name, self.nodes[e.dst].name) for e in self.edges.values()
                if kind is None or e.kind == kind}


# --- reading cdk.out ---------------------------------------------------------------------------------------------

def find_template(cdk_out: Path, stack: str | None) -> Path:
    if stack:
        return cdk_out / f"{stack}.template.json"
    found = sorted(p for p in cdk_out.glob("*.template.json") if not p.name.endswith(".nested.template.json"))
    if len(found) != 1:
        raise SystemExit(f"{cdk_out}: expected one stack template, found {[p.name for p in found]} (use --stack)")
    return found[0]


def load_manifests(folder: Path) -> list[dict]:
    docs = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind"):
                docs.append(doc)
    return docs


# --- CloudFormation values ----------------------------------------------------------------------------------------

def flatten(value) -> str:
    """A CloudFormation value as one string; references become ``<LogicalId>`` / ``<LogicalId.Attr>``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return str(value)
    if isinstance(value, dict) and len(value) == 1:
        (fn, arg), = value.items()
        if fn == "Ref":
            return "aws" if arg == "AWS::Partition" else f"<{arg}>"
        if fn == "Fn::GetAtt":
            parts = arg.split(".", 1) if isinstance(arg, str) else arg
            return f"<{parts[0]}.{parts[1]}>" if len(parts) > 1 else f"<{parts[0]}>"
        if fn == "Fn::Join":
            sep, items = arg
            return sep.join(flatten(i) for i in items)
        if fn == "Fn::Sub":
            text = arg[0] if isinstance(arg, list) else arg
            return re.sub(r"\$\{([^}!]+)\}", lambda m: f"<{m.group(1)}>", text)
    if isinstance(value, list):
        return " ".join(flatten(v) for v in value)
    return "<?>"


def as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def short_name(logical_id: str) -> str:
    name = HASH_SUFFIX.sub("", logical_id) if len(logical_id) > 8 else logical_id
    for pattern, repl in LABEL_PREFIXES:
        if pattern.search(name):
            name = pattern.sub(repl, name, count=1)
            break
    return name or logical_id


def wrap_camel(name: str, width: int = 22) -> str:
    """Long CamelCase names on two lines, split at the capital nearest the middle."""
    if len(name) <= width or "-" in name:
        return name
    cuts = [i for i in range(1, len(name)) if name[i].isupper() and not name[i - 1].isupper()]
    if not cuts:
        return name
    cut = min(cuts, key=lambda i: abs(i - len(name) / 2))
    return name[:cut] + "\n" + name[cut:]


class Builder:
    def __init__(self, template: dict, manifests: list[dict], title: str = ""):
        self.resources: dict[str, dict] = template.get("Resources", {})
        self.manifests = manifests
        self.g = Graph(title=title)
        self.bucket_names: dict[str, str] = {}
        self.alias_keys: dict[str, str] = {}
        self.role_names: dict[str, str] = {}
        self.folded_roles: dict[str, str] = {}   # role logical ID -> function / state machine using it
        self.role_policies: dict[str, list[dict]] = {}
        self.endpoint_crs: dict[str, str] = {}   # SageMaker endpoint name -> CR node
        self.merged: dict[str, str] = {}         # provider-framework resource -> its one node
        self.scopes = sorted({((d.get("metadata") or {}).get("labels") or {}).get(STACK_LABEL) for d in manifests}
                             - {None}, key=len, reverse=True)

    def unscoped(self, name: str) -> str:
        """``name`` (a Kubernetes name or a logical ID) without the stack's scope in it."""
        for scope in self.scopes:
            if name.startswith(scope + "-"):
                return name[len(scope) + 1:]
            camel = "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", scope) if p)
            if camel in name:
                return name.replace(camel, "", 1)
        return name

    # ids
    @staticmethod
    def k8s_id(kind: str, namespace: str | None, name: str) -> str:
        return f"k8s:{namespace or '_cluster'}/{kind}/{name}"

    def build(self) -> Graph:
        self._index()
        self._aws_nodes()
        self._k8s_nodes()
        self._policy_edges()
        self._irsa_edges()
        self._aws_edges()
        self._k8s_edges()
        return self.g

    # --- indexes
    def _index(self) -> None:
        for lid, res in self.resources.items():
            props = res.get("Properties", {})
            rtype = res.get("Type")
            if rtype == "AWS::S3::Bucket" and props.get("BucketName") is not None:
                self.bucket_names[flatten(props["BucketName"])] = lid
            elif rtype == "AWS::KMS::Alias":
                target = PLACEHOLDER.findall(flatten(props.get("TargetKeyId")))
                if target:
                    self.alias_keys[flatten(props.get("AliasName"))] = target[0]
            elif rtype == "AWS::IAM::Role" and props.get("RoleName") is not None:
                self.role_names[flatten(props["RoleName"])] = lid
            elif rtype in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                for role in as_list(props.get("Roles")):
                    for rid in PLACEHOLDER.findall(flatten(role)):
                        self.role_policies.setdefault(rid, []).append(props.get("PolicyDocument", {}))
            if rtype == "AWS::IAM::Role":
                for pol in as_list(props.get("Policies")):
                    self.role_policies.setdefault(lid, []).append(pol.get("PolicyDocument", {}))
        for lid, res in self.resources.items():
            m = FRAMEWORK.match(lid)
            if m and res.get("Type") in ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine"):
                self.merged[lid] = m.group(1) + "Framework"
        for lid, res in self.resources.items():
            if res.get("Type") in ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine"):
                for rid in PLACEHOLDER.findall(flatten(res.get("Properties", {}).get("Role")))[:1] + \
                        PLACEHOLDER.findall(flatten(res.get("Properties", {}).get("RoleArn")))[:1]:
                    if self._service_only_role(rid):
                        self.folded_roles[rid] = self.merged.get(lid, lid)

    def _service_only_role(self, lid: str) -> bool:
        res = self.resources.get(lid, {})
        if res.get("Type") != "AWS::IAM::Role":
            return False
        stmts = res.get("Properties", {}).get("AssumeRolePolicyDocument", {}).get("Statement", [])
        services = set()
        for st in stmts:
            principal = st.get("Principal", {})
            if set(principal) != {"Service"}:
                return False
            services.update(as_list(principal["Service"]))
        return bool(services) and services <= SERVICE_ROLE_PRINCIPALS

    # --- nodes
    def _aws_nodes(self) -> None:
        analytics = [res.get("Type", "") for res in self.resources.values() if res.get("Type") in ANALYTICS_TYPES]
        if analytics:
            counts = "\n".join(f"{analytics.count(t)} {what}" for t, what in ANALYTICS_TYPES.items()
                                if t in analytics)
            self.g.nodes[ANALYTICS_NODE] = Node(ANALYTICS_NODE, "CaptureAnalytics", counts, "analytics", "#d9f2d0")
        for lid, res in self.resources.items():
            rtype = res.get("Type", "")
            if rtype in SKIPPED_TYPES or rtype in ANALYTICS_TYPES or lid in self.folded_roles:
                continue
            if lid in self.merged:
                nid = self.merged[lid]
                parts = sum(1 for v in self.merged.values() if v == nid)
                self.g.nodes[nid] = Node(nid, "ProviderFramework", f"CDK provider framework ({parts} resources)",
                                         "verify", "#fff3d6")
                continue
            group, caption, fill = AWS_TYPES.get(rtype, ("other", rtype.split("::", 1)[-1], "#f2f2f2"))
            props = res.get("Properties", {})
            name = short_name(self.unscoped(lid))
            if rtype == "AWS::EKS::Addon":
                name = props.get("AddonName", name)
            elif rtype == "Custom::SageMakerEndpointVerification":
                name = f"Verify {props.get('EndpointName', '')}".strip()
            self.g.nodes[lid] = Node(lid, name, caption, group, fill)

    def _external(self, kind: str, ident: str) -> str:
        """Node for something the stack references but does not create."""
        captions = {"bucket": ("storage", "S3 bucket", "#d9f2d0"), "key": ("storage", "KMS key", "#f9d5d3"),
                    "zone": ("dns", "Route 53 hosted zone", "#e4dcf5"),
                    "cert": ("dns", "ACM certificate", "#e4dcf5"),
                    "secret": ("storage", "Secrets Manager secret", "#f9d5d3"),
                    "role": ("iam", "IAM role", "#fde2c4")}
        group, caption, fill = captions[kind]
        nid = f"ext:{kind}:{ident}"
        if nid not in self.g.nodes:
            name = ident
            if kind == "cert":
                name = "certificate/" + ident.rsplit("/", 1)[-1][:8] + "..."
            elif kind == "secret":
                name = ident.rsplit(":", 1)[-1]
            elif kind == "key":
                name = ident.rsplit(":", 1)[-1]
            self.g.nodes[nid] = Node(nid, name, caption + " (imported)", group, fill, imported=True)
        return nid

    def _k8s_nodes(self) -> None:
        for doc in self.manifests:
            meta = doc.get("metadata", {})
            kind = doc["kind"]
            if kind == "Namespace":
                continue
            ns = meta.get("namespace")
            nid = self.k8s_id(kind, ns, meta.get("name", "?"))
            is_cr = doc.get("apiVersion", "").startswith("inference.sagemaker.aws.amazon.com")
            label = K8S_HASH_SUFFIX.sub("-<hash>", self.unscoped(meta.get("name", "?")))
            self.g.nodes[nid] = Node(nid, label, kind, f"ns:{ns or '(cluster)'}",
                                     CR_COLOUR if is_cr else K8S_COLOUR)
            if is_cr:
                spec = doc.get("spec", {})
                endpoint = spec.get("endpointName") or (spec.get("sageMakerEndpoint") or {}).get("name")
                if endpoint:
                    self.endpoint_crs[endpoint] = nid

    def _k8s_node(self, kind: str, ns: str | None, name: str) -> str:
        """An object referenced but not in the manifests (created by an add-on, ESO or by hand): dashed."""
        nid = self.k8s_id(kind, ns, name)
        if nid not in self.g.nodes:
            self.g.nodes[nid] = Node(nid, name, kind + " (not in manifests)", f"ns:{ns or '(cluster)'}",
                                     "#ffffff", imported=True)
        return nid

    # --- resolving values to nodes
    def resolve(self, value, hint: str | None = None) -> list[str]:
        """Node ids a value points at: placeholders of stack resources, else literal names / ARNs."""
        text = value if isinstance(value, str) else flatten(value)
        out = []
        for lid in PLACEHOLDER.findall(text):
            res = self.resources.get(lid)
            if res is None:
                continue
            if res.get("Type") == "AWS::KMS::Alias":
                lid = self.alias_keys.get(flatten(res["Properties"].get("AliasName")), lid)
            lid = self.folded_roles.get(lid, lid)
            lid = self.merged.get(lid, lid)
            if lid in self.g.nodes and lid not in out:
                out.append(lid)
        if out:
            return out
        m = re.match(r"^s3://([^/<>]+)", text) or re.match(r"^arn:[\w-]+:s3:::([^/*<>]+)", text)
        if m or hint == "bucket":
            name = m.group(1) if m else text
            if not name or "*" in name:
                return []
            return [self.bucket_names.get(name) or self._external("bucket", name)]
        m = re.match(r"^arn:[\w-]+:kms:[^:]*:[^:]*:(alias/.+)$", text)
        if m:
            key = self.alias_keys.get(m.group(1))
            return [key] if key else [self._external("key", m.group(1))]
        if re.match(r"^arn:[\w-]+:kms:", text) and "*" not in text:
            return [self._external("key", text)]
        m = re.match(r"^arn:[\w-]+:route53:::hostedzone/([A-Z0-9]+)$", text)
        if m or (hint == "zone" and re.match(r"^[A-Z0-9]+$", text)):
            return [self._external("zone", m.group(1) if m else text)]
        if re.match(r"^arn:[\w-]+:acm:[^:]*:[^:]*:certificate/[\w-]+$", text):
            return [self._external("cert", text)]
        if re.match(r"^arn:[\w-]+:secretsmanager:[^:]*:[^:]*:secret:[^*]+$", text):
            return [self._external("secret", text)]
        m = re.match(r"^arn:[\w-]+:iam::[^:]*:role/(.+)$", text)
        if m:
            return [self.role_names.get(m.group(1)) or self._external("role", m.group(1))]
        return []

    # --- edges
    def _policy_edges(self) -> None:
        """role -> bucket / key / zone / certificate / secret it is granted on (folded roles: from their user)."""
        for role, docs in self.role_policies.items():
            src = self.folded_roles.get(role, role)
            if src not in self.g.nodes:
                continue
            for doc in docs:
                for st in as_list(doc.get("Statement")):
                    if st.get("Effect", "Allow") != "Allow":
                        continue
                    services = sorted({a.split(":")[0] for a in as_list(st.get("Action")) if ":" in a})
                    for res in as_list(st.get("Resource")):
                        for dst in self.resolve(res):
                            dtype = ("AWS::Lambda::Function" if dst in self.merged.values()
                                     else self.resources.get(dst, {}).get("Type"))
                            wanted = dst.startswith("ext:") or dtype in GRANT_TARGET_TYPES or (
                                src != role and dtype in ("AWS::Lambda::Function", "AWS::StepFunctions::StateMachine"))
                            if wanted and dst != src:
                                self.g.add_edge(src, dst, "grant", "/".join(services))

    def _irsa_edges(self) -> None:
        # trust policy: role -> system:serviceaccount:<ns>:<name>
        for lid, res in self.resources.items():
            if res.get("Type") != "AWS::IAM::Role" or lid not in self.g.nodes:
                continue
            for st in as_list(res.get("Properties", {}).get("AssumeRolePolicyDocument", {}).get("Statement")):
                for _op, conds in (st.get("Condition") or {}).items():
                    for key, values in conds.items():
                        if not key.endswith(":sub"):
                            continue
                        for sub in as_list(values):
                            if isinstance(sub, str) and sub.startswith(SA_PREFIX):
                                ns, _, name = sub[len(SA_PREFIX):].partition(":")
                                sa = self._k8s_node("ServiceAccount", ns, name)
                                self.g.add_edge(lid, sa, "irsa", "IRSA trust")
        # ServiceAccount annotation -> role
        for doc in self.manifests:
            if doc["kind"] != "ServiceAccount":
                continue
            meta = doc["metadata"]
            arn = (meta.get("annotations") or {}).get(ROLE_ARN_ANNOTATION)
            if not arn:
                continue
            sa = self.k8s_id("ServiceAccount", meta.get("namespace"), meta["name"])
            for role in self.resolve(arn):
                edge = self.g.edges.get((role, sa, "irsa"))
                if edge:
                    edge.both = True
                    edge.labels = ["IRSA"]
                else:
                    self.g.add_edge(role, sa, "irsa", "role-arn annotation only")

    def _aws_edges(self) -> None:
        for res in self.resources.values():
            props = res.get("Properties", {})
            if res.get("Type") == "AWS::Glue::Table":
                location = (props.get("TableInput") or {}).get("StorageDescriptor", {}).get("Location", "")
                for dst in self.resolve(location, hint="bucket"):
                    self.g.add_edge(ANALYTICS_NODE, dst, "aws", "table location")
            elif res.get("Type") == "AWS::Athena::WorkGroup":
                output = ((props.get("WorkGroupConfiguration") or {}).get("ResultConfiguration") or {}).get(
                    "OutputLocation", "")
                for dst in self.resolve(output, hint="bucket"):
                    self.g.add_edge(ANALYTICS_NODE, dst, "aws", "query results")
        for lid, res in self.resources.items():
            if lid not in self.g.nodes:
                continue
            rtype = res.get("Type")
            props = res.get("Properties", {})
            if rtype == "AWS::EKS::Addon":
                if props.get("ServiceAccountRoleArn") is not None:
                    for dst in self.resolve(props["ServiceAccountRoleArn"]):
                        self.g.add_edge(lid, dst, "aws", "service account role")
                config = flatten(props.get("ConfigurationValues", ""))
                for dst in self.resolve(config):
                    self.g.add_edge(lid, dst, "aws", "config")
                for name, dst in self.bucket_names.items():
                    if name and f'"{name}"' in config and dst in self.g.nodes:
                        self.g.add_edge(lid, dst, "aws", "config")
            elif rtype == "AWS::CertificateManager::Certificate":
                for opt in as_list(props.get("DomainValidationOptions")):
                    for dst in self.resolve(opt.get("HostedZoneId", ""), hint="zone"):
                        self.g.add_edge(lid, dst, "aws", "DNS validation")
            elif rtype == "AWS::S3::Bucket":
                logging = props.get("LoggingConfiguration") or {}
                if logging.get("DestinationBucketName") is not None:
                    for dst in self.resolve(logging["DestinationBucketName"], hint="bucket"):
                        self.g.add_edge(lid, dst, "aws", "access logs")
                for rule in as_list((props.get("BucketEncryption") or {}).get("ServerSideEncryptionConfiguration")):
                    key = (rule.get("ServerSideEncryptionByDefault") or {}).get("KMSMasterKeyID")
                    if key is not None:
                        for dst in self.resolve(key):
                            self.g.add_edge(lid, dst, "aws", "SSE-KMS")
            elif rtype == "AWS::CloudFormation::Stack":
                for dst in self.resolve(props.get("Parameters", {})):
                    if self.resources.get(dst, {}).get("Type") == "AWS::Lambda::LayerVersion":
                        self.g.add_edge(dst, lid, "aws", "layer")
            elif rtype == "Custom::AWSCDK-EKS-KubernetesResource":
                for dst in self.resolve(props.get("ServiceToken", "")):
                    self.g.add_edge(dst, lid, "applies", "applies")
                self._manifest_edges(lid, props.get("Manifest"))
            elif rtype == "Custom::SageMakerEndpointVerification":
                for dst in self.resolve(props.get("ServiceToken", "")):
                    self.g.add_edge(lid, dst, "aws", "provider")
                cr = self.endpoint_crs.get(props.get("EndpointName"))
                if cr:
                    self.g.add_edge(lid, cr, "aws", "invokes endpoint")

    def _manifest_edges(self, lid: str, manifest) -> None:
        """kubectl manifest resource -> the first object it applies in each namespace."""
        try:
            objs = json.loads(flatten(manifest))
        except (TypeError, ValueError):
            return
        seen = set()
        for obj in objs if isinstance(objs, list) else []:
            meta = obj.get("metadata", {})
            if obj.get("kind") == "Namespace":
                # the namespace is drawn as a box: point at the box (first object in it)
                ns = meta.get("name")
                target = next((n.id for n in self.g.nodes.values() if n.group == f"ns:{ns}"), None)
                lhead = True
            else:
                ns = meta.get("namespace")
                target = self.k8s_id(obj.get("kind", "?"), ns, meta.get("name", "?"))
                lhead = False
            if ns in seen or target not in self.g.nodes:
                continue
            seen.add(ns)
            edge = self.g.add_edge(lid, target, "applies", "applies")
            edge.to_cluster = lhead

    def _k8s_edges(self) -> None:
        for doc in self.manifests:
            kind = doc["kind"]
            if kind == "Namespace":
                continue
            meta = doc.get("metadata", {})
            ns = meta.get("namespace")
            src = self.k8s_id(kind, ns, meta["name"])
            spec = doc.get("spec") or {}
            if doc.get("apiVersion", "").startswith("inference.sagemaker.aws.amazon.com"):
                self._cr_edges(src, spec)
            if kind == "SecretStore":
                sa = (((spec.get("provider") or {}).get("aws") or {}).get("auth") or {}).get("jwt", {}) \
                    .get("serviceAccountRef", {}).get("name")
                if sa:
                    self.g.add_edge(src, self._k8s_node("ServiceAccount", ns, sa), "k8s", "auth")
            if kind == "ExternalSecret":
                store = (spec.get("secretStoreRef") or {}).get("name")
                if store:
                    self.g.add_edge(src, self._k8s_node("SecretStore", ns, store), "k8s", "store")
                target = (spec.get("target") or {}).get("name") or meta["name"]
                self.g.add_edge(src, self._k8s_node("Secret", ns, target), "k8s", "writes")
                for item in as_list(spec.get("data")):
                    for dst in self.resolve(((item or {}).get("remoteRef") or {}).get("key", "")):
                        self.g.add_edge(src, dst, "uses", "reads")
            for key, value in walk(spec):
                if key == "serviceAccountName" and isinstance(value, str):
                    self.g.add_edge(src, self._k8s_node("ServiceAccount", ns, value), "k8s", "runs as")
                elif key == "configMap" and isinstance(value, dict) and value.get("name"):
                    self.g.add_edge(src, self._k8s_node("ConfigMap", ns, value["name"]), "k8s", "mounts")
                elif key in ("secretKeyRef", "tokenSecretRef") and isinstance(value, dict) and value.get("name"):
                    self.g.add_edge(src, self._k8s_node("Secret", ns, value["name"]), "k8s", "secret")

    def _cr_edges(self, src: str, spec: dict) -> None:
        """Operator custom resource -> capture bucket, KMS key, hosted zone, certificate, TLS / model bucket."""
        capture = spec.get("dataCapture") or {}
        if capture.get("s3Uri"):
            for dst in self.resolve(capture["s3Uri"], hint="bucket"):
                self.g.add_edge(src, dst, "uses", "s3Uri")
        for key, value in walk(capture):
            if key == "kmsKeyId" and isinstance(value, str):
                for dst in self.resolve(value):
                    self.g.add_edge(src, dst, "uses", "kmsKeyId")
        tls = spec.get("tlsConfig") or {}
        acm = (tls.get("customCertificateConfig") or {}).get("acmArn")
        if acm:
            for dst in self.resolve(acm):
                self.g.add_edge(src, dst, "uses", "acmArn")
        if tls.get("tlsCertificateOutputS3Uri"):
            for dst in self.resolve(tls["tlsCertificateOutputS3Uri"], hint="bucket"):
                self.g.add_edge(src, dst, "uses", "TLS output")
        zone = (spec.get("dnsConfig") or {}).get("hostedZoneId")
        if zone:
            for dst in self.resolve(zone, hint="zone"):
                self.g.add_edge(src, dst, "uses", "hostedZoneId")
        bucket = (((spec.get("modelSourceConfig") or {}).get("s3Storage")) or {}).get("bucketName")
        if bucket:
            for dst in self.resolve(bucket, hint="bucket"):
                self.g.add_edge(src, dst, "uses", "model")


def walk(obj, key=None):
    """(key, value) of every dict entry, depth first."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k, v
            yield from walk(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk(v, key)


def build_graph(template: dict, manifests: list[dict], title: str = "") -> Graph:
    return Builder(template, manifests, title).build()


def load_graph(cdk_out: str | Path, stack: str | None = None, manifests_dir: str | Path | None = None) -> Graph:
    cdk_out = Path(cdk_out)
    template_path = find_template(cdk_out, stack)
    template = json.loads(template_path.read_text())
    manifests = load_manifests(Path(manifests_dir) if manifests_dir else cdk_out / "manifests")
    return build_graph(template, manifests, title=template_path.name.removesuffix(".template.json"))


# --- dot ----------------------------------------------------------------------------------------------------------

def q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def node_label(node: Node) -> str:
    lines = "<br/>".join(html.escape(part) for part in wrap_camel(node.name).split("\n"))
    caption = "<br/>".join(html.escape(part) for part in node.caption.split("\n"))
    return (f'<<font point-size="9" color="#555555">{caption}</font><br/>'
            f'<b>{lines}</b>>')


def to_dot(graph: Graph) -> str:
    out = [
        "digraph architecture {",
        f'  graph [rankdir=LR, compound=true, newrank=true, nodesep=0.25, ranksep=0.9, fontname="Helvetica", '
        f'fontsize=20, labelloc=t, label={q(graph.title + " - AWS resources and Kubernetes objects")}];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=12, margin="0.12,0.05"];',
        '  edge [fontname="Helvetica", fontsize=9, arrowsize=0.7];',
    ]

    def emit(node: Node, indent: str) -> None:
        style = '"rounded,filled,dashed"' if node.imported else '"rounded,filled"'
        out.append(f"{indent}{q(node.id)} [label={node_label(node)}, fillcolor={q(node.fill)}, style={style}];")

    aws_groups: dict[str, list[Node]] = {}
    namespaces: dict[str, list[Node]] = {}
    for node in graph.nodes.values():
        if node.group.startswith("ns:"):
            namespaces.setdefault(node.group[3:], []).append(node)
        else:
            aws_groups.setdefault(node.group, []).append(node)

    out.append('  subgraph cluster_aws {')
    out.append('    label="AWS (CloudFormation stack)"; fontsize=16; style="rounded"; color="#ff9900"; '
               'penwidth=2; bgcolor="#fffaf2";')
    for key in list(AWS_GROUPS):
        nodes = aws_groups.get(key)
        if not nodes:
            continue
        out.append(f"    subgraph cluster_aws_{key} {{")
        out.append(f'      label={q(AWS_GROUPS[key])}; fontsize=12; style="rounded,dashed"; color="#c8a060";')
        for node in sorted(nodes, key=lambda n: (n.caption, n.name)):
            emit(node, "      ")
        out.append("    }")
    out.append("  }")

    out.append('  subgraph cluster_k8s {')
    out.append('    label="Kubernetes (HyperPod EKS cluster)"; fontsize=16; style="rounded"; color="#326ce5"; '
               'penwidth=2; bgcolor="#f4f8ff";')
    for ns in sorted(namespaces):
        slug = re.sub(r"\W", "_", ns)
        managed = all(n.imported for n in namespaces[ns])
        label = f"namespace {ns}" + (" (add-on managed)" if managed else "")
        out.append(f"    subgraph cluster_ns_{slug} {{")
        out.append(f'      label={q(label)}; fontsize=12; style="rounded,dashed"; color="#326ce5";')
        for node in sorted(namespaces[ns], key=lambda n: (n.caption, n.name)):
            emit(node, "      ")
        out.append("    }")
    out.append("  }")

    plan = plan_layout(graph)
    for edge in sorted(graph.edges.values(), key=lambda e: (e.kind, e.src, e.dst)):
        attrs = [EDGE_STYLES[edge.kind]]
        if edge.labels:
            attrs.append(f"label={q(', '.join(edge.labels))}")
        if edge.kind == "irsa":
            attrs.append("dir=both" if edge.both else ("dir=back" if edge.labels == ["role-arn annotation only"]
                                                       else "dir=forward"))
        key = (edge.src, edge.dst)
        if key not in plan.constraints:
            attrs.append("constraint=false")
        elif plan.minlen.get(key, 1) > 1:
            attrs.append(f"minlen={plan.minlen[key]}")
        if edge.to_cluster:
            ns = graph.nodes[edge.dst].group[3:]
            attrs.append("lhead=cluster_ns_" + re.sub(r"\W", "_", ns))
        out.append(f"  {q(edge.src)} -> {q(edge.dst)} [{', '.join(attrs)}];")
    for src, dst in sorted(plan.invisible):
        minlen = plan.minlen.get((src, dst), 1)
        out.append(f"  {q(src)} -> {q(dst)} [style=invis{f', minlen={minlen}' if minlen > 1 else ''}];")
    if plan.column:
        out.append("  {rank=same; " + "; ".join(q(nid) for nid in plan.column) + "}")

    out.append(LEGEND)
    out.append("}")
    return "\n".join(out) + "\n"


LEGEND = """  legend [shape=plaintext, style="", label=<<table border="1" cellborder="0" cellspacing="2" cellpadding="2"
    color="#999999"><tr><td colspan="2"><b>Edges</b></td></tr>
    <tr><td><font color="#c7511f"><b>&#8212;&#8212;</b></font></td><td align="left">IRSA: role trust sub / role-arn annotation</td></tr>
    <tr><td><font color="#7a5a00">&#8212;&#8212;</font></td><td align="left">IAM policy grant (service prefixes)</td></tr>
    <tr><td><font color="#1f5fbf">&#8212;&#8212;</font></td><td align="left">custom resource field -&gt; AWS resource</td></tr>
    <tr><td><font color="#5b7fa8">- - -</font></td><td align="left">Kubernetes reference</td></tr>
    <tr><td><font color="#777777">&#8212;&#8212;</font></td><td align="left">CloudFormation reference</td></tr>
    <tr><td><font color="#999999">&#183;&#183;&#183;&#183;</font></td><td align="left">applied by the kubectl provider</td></tr>
    <tr><td>[ dashed ]</td><td align="left">imported / not in the manifests</td></tr></table>>];"""


@dataclass
class LayoutPlan:
    constraints: set[tuple[str, str]]            # drawn edges that set ranks (columns)
    minlen: dict[tuple[str, str], int]
    column: list[str]                            # IAM roles, buckets, key, zone, certificate: one column
    invisible: set[tuple[str, str]] = field(default_factory=set)  # rank-only edges


COLUMN_GROUPS = ("iam", "storage", "dns")


def plan_layout(graph: Graph) -> LayoutPlan:
    """Columns (ranks, left to right): the AWS box left of the Kubernetes box, and next to it one column holding the
    IAM roles and everything roles and custom resources point at (buckets, key, zone, certificate), so the IRSA and
    custom-resource edges stay short.

    * Kubernetes -> AWS edges and role -> resource grants do not set columns;
    * the edges into that last AWS column, and the AWS -> Kubernetes edges, get a ``minlen``.
    """
    is_k8s = {nid: nid.startswith("k8s:") for nid in graph.nodes}
    column = sorted(nid for nid, node in graph.nodes.items() if not is_k8s[nid] and node.group in COLUMN_GROUPS)
    in_column = set(column)
    constraints, minlen = set(), {}
    succ: dict[str, list[str]] = {}
    pred: dict[str, list[str]] = {}
    for e in graph.edges.values():
        if is_k8s[e.src] and not is_k8s[e.dst]:
            continue
        if e.kind == "grant" and e.dst in in_column:
            continue
        constraints.add((e.src, e.dst))
        if is_k8s[e.src] or is_k8s[e.dst] or (e.src in in_column and e.dst in in_column):
            continue
        succ.setdefault(e.src, []).append(e.dst)
        pred.setdefault(e.dst, []).append(e.src)
    ranks: dict[str, int] = {}

    def visit(node: str, depth: int, path: frozenset) -> None:
        if ranks.get(node, -1) >= depth or node in path:
            return
        ranks[node] = depth
        for nxt in succ.get(node, []):
            visit(nxt, depth + 1, path | {node})

    for nid in graph.nodes:
        if not is_k8s[nid]:
            visit(nid, 0, frozenset())
    last = max(ranks.values(), default=0)
    pulled = set(in_column)
    for e in graph.edges.values():
        if is_k8s[e.dst] and not is_k8s[e.src] and not succ.get(e.src):
            pulled.add(e.src)  # an AWS sink pointing into Kubernetes (kubectl manifest): last column too
    for nid in pulled:
        for p in pred.get(nid, []):
            if p not in pulled:
                minlen[(p, nid)] = max(minlen.get((p, nid), 1), last - ranks[p])
        ranks[nid] = last
    for e in graph.edges.values():
        if is_k8s[e.dst] and not is_k8s[e.src]:
            minlen[(e.src, e.dst)] = last - ranks.get(e.src, 0) + 1
    # Kubernetes objects nothing on the AWS side points at (files delivery): pinned right of the last AWS column
    invisible = set()
    anchor = max((nid for nid in ranks), key=lambda nid: (ranks[nid], nid in in_column), default=None)
    has_in = {dst for src, dst in constraints}
    for nid in graph.nodes:
        if is_k8s[nid] and nid not in has_in and anchor is not None:
            invisible.add((anchor, nid))
            minlen[(anchor, nid)] = last - ranks[anchor] + 1
    return LayoutPlan(constraints, minlen, column, invisible)


#: The PNG's tEXt keyword holding the SHA-256 of the .dot it was drawn from: Graphviz's bytes differ between its
#: releases, so a test compares this digest with the .dot a fresh synth gives, never the pixels.
DOT_DIGEST_KEY = "hyperpod-diagram-dot-sha256"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def dot_digest(dot_text: str) -> str:
    return hashlib.sha256(dot_text.encode()).hexdigest()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def stamp_png(png: bytes, dot_text: str) -> bytes:
    """``png`` with a tEXt chunk after its header naming the digest of ``dot_text``."""
    if not png.startswith(_PNG_SIGNATURE):
        raise ValueError("not a PNG")
    header_end = 8 + 4 + 4 + struct.unpack(">I", png[8:12])[0] + 4  # signature, IHDR (length, type, data, CRC)
    text = _chunk(b"tEXt", DOT_DIGEST_KEY.encode() + b"\0" + dot_digest(dot_text).encode())
    return png[:header_end] + text + png[header_end:]


def png_dot_digest(png: bytes) -> str | None:
    """The digest :func:`stamp_png` wrote, or None."""
    pos = 8
    while pos + 8 <= len(png):
        length, kind = struct.unpack(">I", png[pos:pos + 4])[0], png[pos + 4:pos + 8]
        data = png[pos + 8:pos + 8 + length]
        if kind == b"tEXt" and data.startswith(DOT_DIGEST_KEY.encode() + b"\0"):
            return data.split(b"\0", 1)[1].decode()
        pos += 12 + length
    return None


def render(dot_text: str, png: Path, dot_file: Path | None = None) -> None:
    binary = shutil.which("dot")
    if not binary:
        raise SystemExit("graphviz 'dot' not found: apt-get install -y graphviz")
    if dot_file:
        dot_file.parent.mkdir(parents=True, exist_ok=True)
        dot_file.write_text(dot_text)
    png.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([binary, "-Tpng", "-Gdpi=110"], input=dot_text.encode(), check=True, capture_output=True)
    png.write_bytes(stamp_png(done.stdout, dot_text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cdk-out", default="cdk.out")
    parser.add_argument("--stack", default=None, help="stack name (default: the only stack template in cdk.out)")
    parser.add_argument("--manifests", default=None, help="manifests folder (default: <cdk-out>/manifests)")
    parser.add_argument("--dot", default="docs/architecture.dot", help="write the .dot here ('' to skip)")
    parser.add_argument("--png", default="docs/architecture.png", help="render the PNG here ('' to skip)")
    args = parser.parse_args(argv)
    graph = load_graph(args.cdk_out, args.stack, args.manifests)
    dot_text = to_dot(graph)
    if args.png:
        render(dot_text, Path(args.png), Path(args.dot) if args.dot else None)
    elif args.dot:
        Path(args.dot).write_text(dot_text)
    else:
        sys.stdout.write(dot_text)
    counts = {}
    for edge in graph.edges.values():
        counts[edge.kind] = counts.get(edge.kind, 0) + 1
    print(f"diagram: {len(graph.nodes)} nodes, edges {dict(sorted(counts.items()))} -> {args.png or args.dot}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
