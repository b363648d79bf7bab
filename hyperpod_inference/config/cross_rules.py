"""The rules that span sections of the config file, each a named function the file's validator loops over.

A rule reads a :class:`ConfigView`: the sections that validated, each endpoint that validated with its index, and
which sections did not. The validator runs the rules both on a valid file and on one with field errors (over the
parts that did validate), so field errors and cross-section errors are reported in one run. A rule skips what it
cannot judge: a section that is invalid is neither present nor absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import InitErrorDetails

from ..facts import operator as operator_facts
from ..facts import production as prod_facts
from ..facts import rules
from ..facts.runtimes import PRESETS, dlc_registry_problem
from .autoscaling import PrometheusTrigger, trigger_locations
from .base import DnsLabel, Problems, _err, crd_values
from .capture import Capture
from .cluster import Cluster, Env
from .domain import Domain
from .endpoint import Endpoint
from .gateway import Gateway
from .operator import Manifests, Operator


@dataclass(frozen=True)
class ConfigView:
    """The parts of a config the rules may read. ``invalid`` names the sections that did not validate."""

    env: Env | None = None
    cluster: Cluster | None = None
    operator: Operator | None = None
    manifests: Manifests | None = None
    namespaces: list[str] = field(default_factory=list)
    capture: Capture | None = None
    domain: Domain | None = None
    stack_layout: str = "single"
    endpoints: list[tuple[int, Endpoint]] = field(default_factory=list)
    gateways: list[tuple[int, Gateway]] = field(default_factory=list)
    invalid: frozenset[str] = frozenset()

    @property
    def account(self) -> str | None:
        return self.env.account if self.env else None

    @property
    def region(self) -> str | None:
        return self.env.region if self.env else None

    def absent(self, section: str) -> bool:
        """The section is not in the file (and not merely invalid)."""
        return getattr(self, section) is None and section not in self.invalid

    @classmethod
    def of(cls, config: Any) -> ConfigView:
        """The view of a validated ``HyperPodConfig``."""
        return cls(env=config.env, cluster=config.cluster, operator=config.operator, manifests=config.manifests,
                   namespaces=list(config.namespaces), capture=config.capture, domain=config.domain,
                   stack_layout=config.stack_layout, endpoints=list(enumerate(config.endpoints)),
                   gateways=list(enumerate(config.gateways)))

    @classmethod
    def partial(cls, data: dict[str, Any], context: Any = None) -> ConfigView:
        """The view of a file that failed validation: each section validated on its own."""
        invalid: set[str] = set()

        def section(key: str, model: type[BaseModel], default: Any = None) -> Any:
            if key not in data or data[key] is None:
                return default
            try:
                return model.model_validate(data[key], context=context)
            except ValidationError:
                invalid.add(key)
                return None

        namespaces: list[str] = []
        try:
            namespaces = TypeAdapter(list[DnsLabel]).validate_python(data.get("namespaces") or [])
        except ValidationError:
            invalid.add("namespaces")
        endpoints: list[tuple[int, Endpoint]] = []
        raw = data.get("endpoints") or []
        for i, item in enumerate(raw if isinstance(raw, list) else []):
            try:
                endpoints.append((i, Endpoint.model_validate(item, context=context)))
            except ValidationError:
                invalid.add("endpoints")
        gateways: list[tuple[int, Gateway]] = []
        raw = data.get("gateways") or []
        for i, item in enumerate(raw if isinstance(raw, list) else []):
            try:
                gateways.append((i, Gateway.model_validate(item, context=context)))
            except ValidationError:
                invalid.add("gateways")
        layout = data.get("stackLayout", "single")
        return cls(env=section("env", Env), cluster=section("cluster", Cluster),
                   operator=section("operator", Operator, Operator()),
                   manifests=section("manifests", Manifests, Manifests()), namespaces=namespaces,
                   capture=section("capture", Capture), domain=section("domain", Domain),
                   stack_layout=layout if layout in ("single", "perNamespace") else "single", endpoints=endpoints,
                   gateways=gateways, invalid=frozenset(invalid))


Rule = Callable[[ConfigView], Problems]
CROSS_RULES: list[Rule] = []


def cross_rule(rule: Rule) -> Rule:
    """Register a rule; the validator runs every registered rule, in order."""
    CROSS_RULES.append(rule)
    return rule


def cross_problems(view: ConfigView) -> list[InitErrorDetails]:
    return [problem for rule in CROSS_RULES for problem in rule(view)]


# ------------------------------------------------------------------------------------------------ env and cluster
@cross_rule
def arns_in_env_partition(v: ConfigView) -> Problems:
    """Every ARN the config gives is in the partition of ``env.region``."""
    partition = rules.partition_of_region(v.region) if v.region else None
    if not partition:
        return
    c, op = v.cluster, v.operator
    arns = []
    if c is not None:
        arns += [(("cluster", "hyperpodClusterArn"), c.hyperpod_cluster_arn),
                 (("cluster", "kubectlRoleArn"), c.kubectl_role_arn),
                 (("cluster", "oidcProviderArn"), c.oidc_provider_arn)]
    if op is not None:
        arns += [(("operator", key), getattr(op, attr)) for key, attr in (
            ("albControllerRoleArn", "alb_controller_role_arn"), ("kedaRoleArn", "keda_role_arn"),
            ("s3CsiDriverRoleArn", "s3_csi_driver_role_arn"), ("executionRoleArn", "execution_role_arn"))]
    if v.capture is not None:
        arns.append((("capture", "kms"), v.capture.kms))
    for at, arn in arns:
        if arn and arn.startswith("arn:") and rules.arn_parts(arn)[0] != partition:
            yield _err(at, f"must be in the partition of env.region ({partition})", arn)


@cross_rule
def cluster_in_env(v: ConfigView) -> Problems:
    """The HyperPod cluster, the OIDC provider and the kubectl role belong to ``env``'s account and region."""
    c = v.cluster
    if c is None or v.env is None:
        return
    account, region = v.account, v.region
    m = rules.CLUSTER_ARN_RE.match(c.hyperpod_cluster_arn)
    if m and (m.group(1), m.group(2)) != (region, account):
        yield _err(("cluster", "hyperpodClusterArn"), f"must be in env.account / env.region ({account} / {region})")
    m = rules.OIDC_RE.match(c.oidc_provider_arn or "")
    if m and (m.group(1), m.group(2)) != (account, region):
        yield _err(("cluster", "oidcProviderArn"), f"must be the provider of a cluster in {account} / {region}")
    m = rules.IAM_ROLE_ARN_RE.match(c.kubectl_role_arn or "")
    if m and m.group(1) != account:
        yield _err(("cluster", "kubectlRoleArn"), f"must be a role in env.account ({account})")


@cross_rule
def namespaces_owned_once(v: ConfigView) -> Problems:
    """``namespaces`` are not the cluster's own and are listed once."""
    seen: set[str] = set()
    for i, ns in enumerate(v.namespaces):
        if ns in rules.SYSTEM_NAMESPACES:
            yield _err(("namespaces", i), f"'{ns}' exists on every cluster; the stack only creates namespaces it owns")
        if ns in seen:
            yield _err(("namespaces", i), f"duplicate namespace '{ns}'")
        seen.add(ns)


@cross_rule
def operator_image_in_region(v: ConfigView) -> Problems:
    """``install: chart`` pulls the operator image from a regional registry: it must exist in ``env.region``."""
    if v.operator is not None and v.operator.install == "chart" and v.region:
        problem = operator_facts.image_region_problem(v.region, v.operator.version)
        if problem:
            yield _err(("env", "region"), problem)


@cross_rule
def files_delivery_needs_literal_domain(v: ConfigView) -> Problems:
    """``manifests.delivery: files`` writes every value at synth: an issued certificate or a created zone is not
    known then."""
    if v.domain is None or v.manifests is None or v.manifests.delivery != "files":
        return
    if v.domain.certificate_arn is None:
        yield _err(("domain", "certificateArn"),
                   "required with manifests.delivery: files (an issued certificate's ARN is known only at deploy)")
    if v.domain.hosted_zone_id is None:
        yield _err(("domain", "hostedZoneId"),
                   "required with manifests.delivery: files (a created zone's ID is known only at deploy)")


@cross_rule
def capture_in_env(v: ConfigView) -> Problems:
    """An imported capture bucket is in the cluster's account; the capture key is in ``env.region``."""
    c = v.capture
    if c is None:
        return
    if c.bucket_account and v.account and c.bucket_account != v.account:
        yield _err(("capture", "bucketAccount"),
                   f"the capture bucket must be in the cluster's account ({v.account}): the operator requires it")
    if v.region and rules.kms_key_arn_problem(c.kms) is None and rules.arn_parts(c.kms)[2] != v.region:
        yield _err(("capture", "kms"), f"the key must be in env.region ({v.region})")


# ------------------------------------------------------------------------------------------------------ endpoints
@cross_rule
def unique_endpoint_names(v: ConfigView) -> Problems:
    """``namespace/name`` and ``sagemakerEndpointName`` (case-insensitive) are unique."""
    names: dict[tuple[str, str], int] = {}
    sm_names: dict[str, int] = {}
    for i, ep in v.endpoints:
        key = (ep.namespace, ep.name)
        if key in names:
            yield _err(("endpoints", i, "name"), f"duplicate endpoint '{ep.namespace}/{ep.name}' "
                       f"(also endpoints[{names[key]}])")
        names.setdefault(key, i)
        if ep.sagemaker_endpoint_name:
            low = ep.sagemaker_endpoint_name.lower()
            if low in sm_names:
                yield _err(("endpoints", i, "sagemakerEndpointName"),
                           f"duplicate SageMaker endpoint name (also endpoints[{sm_names[low]}])")
            sm_names.setdefault(low, i)


@cross_rule
def fields_in_operator_version(v: ConfigView) -> Problems:
    """A field the chosen ``operator.version``'s CRD lacks is refused, naming the version that has it: every CRD path
    an endpoint writes (:func:`~.base.crd_values`) against the release table's ``FIELDS_SINCE``, so a new field needs
    no line here."""
    if v.operator is None:
        return
    version = v.operator.version
    for i, ep in v.endpoints:
        refused: list[str] = []  # a refused field's own fields are not named again
        for crd_path, loc in crd_values(ep, "spec"):
            if any(crd_path.startswith(f"{r}.") for r in refused) or operator_facts.has_field(version, crd_path):
                continue
            refused.append(crd_path)
            yield _err(("endpoints", i, *loc), f"needs operator.version {operator_facts.field_since(crd_path)} or "
                       f"later (have {version}; {crd_path} is not in its CRD)")
        if ep.weight_cache.mode == "operator" and not operator_facts.has_field(version, "spec.modelCacheConfig"):
            since = operator_facts.field_since("spec.modelCacheConfig")
            yield _err(("endpoints", i, "weightCache", "mode"),
                       f"operator mode needs operator.version {since} or later (have {version})")


@cross_rule
def gateway_addon_version(v: ConfigView) -> Problems:
    """An endpoint's Inference Gateway needs the add-on that installs the gateway controller: a pinned
    ``operator.addonVersion`` below it is refused."""
    op = v.operator
    if op is None or op.install != "addon" or not op.addon_version:
        return
    gateway = [i for i, ep in v.endpoints if ep.inference_gateway is not None and ep.inference_gateway.enabled]
    minimum = operator_facts.GATEWAY_MIN_ADDON_VERSION
    if gateway and operator_facts.Version(op.addon_version) < minimum:
        yield _err(("operator", "addonVersion"), f"endpoints[{gateway[0]}].inferenceGateway needs the add-on from "
                   f"{minimum} (it installs the gateway controller); have {op.addon_version}", op.addon_version)


@cross_rule
def spec_overrides_in_operator_version(v: ConfigView) -> Problems:
    """``specOverrides`` paths the library does not write must be fields of the chosen ``operator.version``: a later
    operator's field names the version that has it, an unknown one the nearest known field
    (``specOverridesUnchecked: true`` skips this, warned)."""
    if v.operator is None:
        return
    for i, ep in v.endpoints:
        if ep.spec_overrides and not ep.spec_overrides_unchecked:
            for path, message in prod_facts.override_version_problems(ep.spec_overrides, ep.kind, v.operator.version):
                yield _err(("endpoints", i, "specOverrides", *path), message)


@cross_rule
def endpoint_services_in_region(v: ConfigView) -> Problems:
    """A Prometheus workspace KEDA queries, and the preset's Deep Learning Container registry, are in
    ``env.region``."""
    region = v.region
    if not region:
        return
    for i, ep in v.endpoints:
        for loc, trigger in trigger_locations(ep):
            if isinstance(trigger, PrometheusTrigger):
                m = prod_facts.AMP_WORKSPACE_RE.match(trigger.server_address)
                if m and m.group(1) != region:
                    yield _err(("endpoints", i, *loc, "serverAddress"), f"the workspace must be in env.region "
                               f"({region}): KEDA queries it with the stack's role", trigger.server_address)
        if not ep.is_jumpstart and ep.image is None and ep.effective_runtime in PRESETS:
            problem = dlc_registry_problem(region)
            if problem:
                yield _err(("endpoints", i, "image"), problem)


@cross_rule
def capture_needs_section(v: ConfigView) -> Problems:
    """An endpoint's ``dataCapture`` needs the top-level ``capture``; ALB logs cannot go to an SSE-KMS bucket."""
    for i, ep in v.endpoints:
        dc = ep.data_capture
        if dc is None or not dc.any_enabled:
            continue
        if v.absent("capture"):
            yield _err(("endpoints", i, "dataCapture"),
                       "capture is enabled here but the top-level capture section is absent")
        elif v.capture is not None and dc.load_balancer and dc.load_balancer.enabled \
                and v.capture.bucket_encryption == "SSE-KMS":
            yield _err(("endpoints", i, "dataCapture", "loadBalancer"),
                       "ALB access logs cannot be written to a bucket whose default encryption is SSE-KMS "
                       "(capture.bucketEncryption)")


def _domains(v: ConfigView) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, ep in v.endpoints:
        if ep.domain_name is not None:
            out.setdefault(ep.domain_name, i)
    return out


@cross_rule
def domain_names(v: ConfigView) -> Problems:
    """An endpoint's ``domainName`` needs the ``domain`` section, lies inside its zone and is used once (at most
    100 per stack)."""
    seen: dict[str, int] = {}
    for i, ep in v.endpoints:
        if ep.domain_name is None:
            continue
        if v.absent("domain"):
            yield _err(("endpoints", i, "domainName"), "needs the top-level domain section")
        elif v.domain is not None and not rules.domain_within_zone(ep.domain_name, v.domain.zone_name):
            yield _err(("endpoints", i, "domainName"), f"must be inside domain.zoneName ({v.domain.zone_name})")
        if ep.domain_name in seen:
            yield _err(("endpoints", i, "domainName"), f"already used by endpoints[{seen[ep.domain_name]}]")
        seen.setdefault(ep.domain_name, i)
    if v.domain is not None and len(seen) > 100:
        yield _err(("endpoints",), "at most 100 endpoint domain names per stack")


@cross_rule
def certificate_covers_domains(v: ConfigView) -> Problems:
    """An imported certificate is in ``env.region`` (``wildcard`` unset); an issued one can cover the names."""
    domains = _domains(v)
    d = v.domain
    if d is None or not domains:
        return
    if d.certificate_arn is not None:
        if d.wildcard is not None:
            yield _err(("domain", "wildcard"), "only applies to an issued certificate; leave it unset when "
                       "certificateArn imports one", d.wildcard)
        problem = rules.certificate_region_problem(d.certificate_arn, v.region)
        if problem:
            yield _err(("domain", "certificateArn"), problem, d.certificate_arn)
    else:
        problem = rules.issued_certificate_problem(d.zone_name, list(domains), d.wildcard)
        if problem:
            yield _err(("domain", "wildcard" if d.wildcard is False else "certificateArn"), problem)


@cross_rule
def stack_group_needs_layout(v: ConfigView) -> Problems:
    """``stackGroup`` names a nested stack: only with ``stackLayout: perNamespace``."""
    for i, ep in v.endpoints:
        if ep.stack_group is not None and v.stack_layout != "perNamespace":
            yield _err(("endpoints", i, "stackGroup"), "only with stackLayout: perNamespace (it names a nested stack "
                       "of the endpoint's namespace)")


@cross_rule
def verify_needs_kubectl(v: ConfigView) -> Problems:
    """``verify`` waits for the applied resource: not with ``manifests.delivery: files``."""
    if v.manifests is None or v.manifests.delivery != "files":
        return
    for i, ep in v.endpoints:
        if ep.verify is not None:
            yield _err(("endpoints", i, "verify"),
                       "not available with manifests.delivery: files (nothing applies the resource)")


@cross_rule
def token_secret_in_account(v: ConfigView) -> Problems:
    """A Secrets Manager token is a secret of ``env.account`` (the reader role is)."""
    for i, ep in v.endpoints:
        hf = ep.model.huggingface
        if hf and hf.token and hf.token.secrets_manager_arn:
            m = rules.SECRETS_ARN_RE.match(hf.token.secrets_manager_arn)
            if m and v.account and m.group(2) != v.account:
                yield _err(("endpoints", i, "model", "huggingface", "token", "secretsManagerArn"),
                           f"must be a secret in env.account ({v.account})")


@cross_rule
def token_secret_in_region(v: ConfigView) -> Problems:
    """A Secrets Manager token is a secret of ``env.region``: the SecretStore the stack writes reads Secrets Manager
    in the stack's region (docs/huggingface.md says why the rule is not a SecretStore of the secret's region)."""
    for i, ep in v.endpoints:
        hf = ep.model.huggingface
        if hf and hf.token and hf.token.secrets_manager_arn:
            m = rules.SECRETS_ARN_RE.match(hf.token.secrets_manager_arn)
            if m and v.region and m.group(1) != v.region:
                yield _err(("endpoints", i, "model", "huggingface", "token", "secretsManagerArn"),
                           f"endpoint {ep.name}: the secret is in {m.group(1)}, and the stack's SecretStore reads "
                           f"Secrets Manager in env.region ({v.region}), so the token never syncs: replicate the "
                           f"secret to {v.region} (Secrets Manager replication) and give the replica's ARN")


# ------------------------------------------------------------------------------- what importing the cluster needs
#: The ``cluster`` fields the app needs to import the cluster by name (``HyperPodInferenceStack``).
IMPORT_FIELDS = (("eks_cluster_name", "eksClusterName"), ("kubectl_role_arn", "kubectlRoleArn"),
                 ("oidc_provider_arn", "oidcProviderArn"), ("vpc_id", "vpcId"))


def cluster_import_problems(config: Any, *, env_given: bool = False) -> list[tuple[str, str]]:
    """What ``HyperPodInferenceStack`` (which imports the cluster by name) needs of a config that a
    ``HyperPodInference`` given a cluster object does without: ``env`` and the cluster's fields, as
    ``(YAML path, message)``."""
    how = ("the stack imports the cluster by it; fill it in, or pass cluster= (an eks.ICluster) to a "
           "HyperPodInference in your own stack, which takes it from the cluster object")
    out: list[tuple[str, str]] = []
    if config.env is None and not env_given:
        out.append(("env", "required by HyperPodInferenceStack (the stack deploys to this account and region); fill "
                           "it in, or add a HyperPodInference to your own stack, which takes its env"))
    for attr, alias in IMPORT_FIELDS:
        if getattr(config.cluster, attr) is None:
            out.append((f"cluster.{alias}", f"required by HyperPodInferenceStack ({how})"))
    alarms = config.observability.alarms
    if alarms is not None and alarms.sns_topic_arn is None and not alarms.create_topic:
        out.append(("observability.alarms", "needs snsTopicArn or createTopic: true (where the alarms go); only a "
                                            "HyperPodInference in your own stack can take an sns.ITopic instead"))
    return out
