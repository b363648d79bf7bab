"""The whole config file (``HyperPodConfig``): its sections and the rules that span them."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import (
    Field,
    StringConstraints,
    ValidationInfo,
    model_validator,
)
from pydantic_core import InitErrorDetails

from ..facts import operator as operator_facts
from ..facts import production as prod_facts
from ..facts import rules
from ..facts.runtimes import PRESETS, dlc_registry_problem
from .base import (
    DnsLabel,
    Strict,
    _err,
    _raise_all,
)
from .capture import Capture
from .cluster import Cluster, Env
from .domain import Domain
from .endpoint import Endpoint
from .operator import Manifests, Operator
from .production import (
    CrdPaths,
    NoCrd,
    PrometheusTrigger,
    trigger_locations,
)


# ------------------------------------------------------------------------------------------------------------- config
class HyperPodConfig(Strict):
    """The whole config file."""

    crd_paths: ClassVar[CrdPaths] = {
        "api_version": NoCrd("the config file's own version"),
        "env": NoCrd("AWS side, not the custom resource"),
        "cluster": NoCrd("AWS side, not the custom resource"),
        "operator": NoCrd("how the operator is installed (add-on or chart values), not a custom resource field"),
        "manifests": NoCrd("how the stack delivers the manifests"),
        "namespaces": NoCrd("Namespace objects the stack owns"),
        "capture": NoCrd("AWS side: the capture bucket and key; the endpoints' spec.dataCapture.s3Uri points at "
                         "them"),
        "domain": NoCrd("AWS side: the zone and certificate; the endpoints' spec.tlsConfig / spec.dnsConfig point "
                        "at them"),
        "endpoints": NoCrd("one custom resource each"),
        "stack_name": NoCrd("AWS side, not the custom resource (the CloudFormation stack's name)"),
        "stack_layout": NoCrd("AWS side, not the custom resource (how the stack nests its templates)"),
    }
    api_version: Literal["hyperpod-inference/v1"]
    """The config file's version: hyperpod-inference/v1."""
    env: Env | None = None
    """The account and region the stack deploys to (required by the app)."""
    cluster: Cluster
    """The existing HyperPod EKS cluster the stack installs into."""
    operator: Operator = Field(default_factory=Operator)
    """How the HyperPod inference operator and its dependencies are installed."""
    manifests: Manifests = Field(default_factory=Manifests)
    """How the Kubernetes objects reach the cluster."""
    namespaces: list[DnsLabel] = Field(default_factory=list)
    """Namespaces the stack creates and owns (deleted on destroy); an endpoint elsewhere needs its namespace to exist
    already."""
    capture: Capture | None = None
    """The capture bucket and key shared by every endpoint's data capture; absent = capture off everywhere."""
    domain: Domain | None = None
    """The Route 53 zone and ACM certificate for endpoint domain names."""
    endpoints: list[Endpoint] = Field(default_factory=list)
    """The model endpoints, one operator custom resource each."""
    stack_name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9-]*$", max_length=128)] | None = Field(
        default=None, description="The CloudFormation stack the app builds from this file. Default: HyperPodInference "
                                  "for one config file, HyperPodInference-<eksClusterName> for several "
                                  "(cdk synth -c config=a.yaml,b.yaml).")
    stack_layout: Literal["single", "perNamespace"] = Field(
        default="single", description="single: every resource in one template. perNamespace: one nested stack per "
                                      "namespace (and endpoint stackGroup) holding its manifests, roles and outputs, "
                                      "for fleets beyond one template's limits. Changing it on a deployed stack moves "
                                      "every endpoint's manifest, which deletes and re-creates the endpoints "
                                      "(docs/fleets.md).")

    @model_validator(mode="after")
    def _cross_rules(self, info: ValidationInfo) -> HyperPodConfig:
        e: list[InitErrorDetails] = []
        if not (info.context or {}).get("cluster_object"):
            # The app imports the cluster the config describes: it needs all of it.
            if self.env is None:
                e.append(_err(("env",), "required (the stack deploys to this account and region)"))
            for field, alias in (("eks_cluster_name", "eksClusterName"), ("kubectl_role_arn", "kubectlRoleArn"),
                                 ("oidc_provider_arn", "oidcProviderArn"), ("vpc_id", "vpcId")):
                if getattr(self.cluster, field) is None:
                    e.append(_err(("cluster", alias), "required (the stack imports the cluster by it; only a "
                                  "HyperPodInference given a cluster object does without)"))
        account, region = (self.env.account, self.env.region) if self.env else (None, None)
        partition = rules.partition_of_region(region) if region else None
        # identifiers that must belong to env (and its partition)
        for at, arn in ((("cluster", "hyperpodClusterArn"), self.cluster.hyperpod_cluster_arn),
                        (("cluster", "kubectlRoleArn"), self.cluster.kubectl_role_arn),
                        (("cluster", "oidcProviderArn"), self.cluster.oidc_provider_arn),
                        *((("operator", f), getattr(self.operator, a)) for f, a in (
                            ("albControllerRoleArn", "alb_controller_role_arn"), ("kedaRoleArn", "keda_role_arn"),
                            ("s3CsiDriverRoleArn", "s3_csi_driver_role_arn"),
                            ("executionRoleArn", "execution_role_arn"))),
                        (("capture", "kms"), self.capture.kms if self.capture is not None else None)):
            if partition and arn and arn.startswith("arn:") and rules.arn_parts(arn)[0] != partition:
                e.append(_err(at, f"must be in the partition of env.region ({partition})", arn))
        m = rules.CLUSTER_ARN_RE.match(self.cluster.hyperpod_cluster_arn)
        if m and self.env and (m.group(1), m.group(2)) != (region, account):
            e.append(_err(("cluster", "hyperpodClusterArn"), f"must be in env.account / env.region ({account} / {region})"))
        m = rules.OIDC_RE.match(self.cluster.oidc_provider_arn or "")
        if m and self.env and (m.group(1), m.group(2)) != (account, region):
            e.append(_err(("cluster", "oidcProviderArn"), f"must be the provider of a cluster in {account} / {region}"))
        m = rules.IAM_ROLE_ARN_RE.match(self.cluster.kubectl_role_arn or "")
        if m and self.env and m.group(1) != account:
            e.append(_err(("cluster", "kubectlRoleArn"), f"must be a role in env.account ({account})"))
        # namespaces
        seen_ns: set[str] = set()
        for i, ns in enumerate(self.namespaces):
            if ns in rules.SYSTEM_NAMESPACES:
                e.append(_err(("namespaces", i), f"'{ns}' exists on every cluster; the stack only creates namespaces it owns"))
            if ns in seen_ns:
                e.append(_err(("namespaces", i), f"duplicate namespace '{ns}'"))
            seen_ns.add(ns)
        # operator region support (chart mode pulls the operator image from a regional registry)
        if self.operator.install == "chart" and region:
            problem = operator_facts.image_region_problem(region, self.operator.version)
            if problem:
                e.append(_err(("env", "region"), problem))
        files = self.manifests.delivery == "files"
        if self.domain is not None and files:
            if self.domain.certificate_arn is None:
                e.append(_err(("domain", "certificateArn"),
                              "required with manifests.delivery: files (an issued certificate's ARN is known only at deploy)"))
            if self.domain.hosted_zone_id is None:
                e.append(_err(("domain", "hostedZoneId"),
                              "required with manifests.delivery: files (a created zone's ID is known only at deploy)"))
        if self.capture is not None:
            c = self.capture
            if c.bucket_account and account and c.bucket_account != account:
                e.append(_err(("capture", "bucketAccount"),
                              f"the capture bucket must be in the cluster's account ({account}): the operator requires it"))
            if region and rules.kms_key_arn_problem(c.kms) is None and rules.arn_parts(c.kms)[2] != region:
                e.append(_err(("capture", "kms"), f"the key must be in env.region ({region})"))
        # endpoints
        names: dict[tuple[str, str], int] = {}
        domains: dict[str, int] = {}
        sm_names: dict[str, int] = {}
        for i, ep in enumerate(self.endpoints):
            at = ("endpoints", i)
            key = (ep.namespace, ep.name)
            if key in names:
                e.append(_err(at + ("name",), f"duplicate endpoint '{ep.namespace}/{ep.name}' (also endpoints[{names[key]}])"))
            names.setdefault(key, i)
            if ep.sagemaker_endpoint_name:
                low = ep.sagemaker_endpoint_name.lower()
                if low in sm_names:
                    e.append(_err(at + ("sagemakerEndpointName",),
                                  f"duplicate SageMaker endpoint name (also endpoints[{sm_names[low]}])"))
                sm_names.setdefault(low, i)
            for crd_path, loc, value in (
                    ("spec.loadBalancer.idleTimeoutSeconds", ("loadBalancer", "idleTimeoutSeconds"),
                     ep.load_balancer.idle_timeout_seconds if ep.load_balancer else None),
                    ("spec.modelCacheConfig.imageCache", ("imageCache",), ep.image_cache)):
                if value is not None and not prod_facts.version_has(self.operator.version, crd_path):
                    e.append(_err(at + loc, f"needs operator.version {prod_facts.FIELD_SINCE[crd_path]} or later "
                                  f"(have {self.operator.version}; {crd_path} is not in its CRD)"))
            for loc, trigger in trigger_locations(ep):
                if isinstance(trigger, PrometheusTrigger):
                    m = prod_facts.AMP_WORKSPACE_RE.match(trigger.server_address)
                    if m and m.group(1) != region:
                        e.append(_err(at + loc + ("serverAddress",), f"the workspace must be in env.region ({region}):"
                                      " KEDA queries it with the stack's role", trigger.server_address))
            if ep.weight_cache.mode == "operator" and not operator_facts.has_field(self.operator.version,
                                                                                   "spec.modelCacheConfig"):
                since = operator_facts.field_since("spec.modelCacheConfig")
                e.append(_err(at + ("weightCache", "mode"),
                              f"operator mode needs operator.version {since} or later (have {self.operator.version})"))
            if region and not ep.is_jumpstart and ep.image is None and ep.effective_runtime in PRESETS:
                problem = dlc_registry_problem(region)
                if problem:
                    e.append(_err(at + ("image",), problem))
            if ep.data_capture is not None and ep.data_capture.any_enabled:
                if self.capture is None:
                    e.append(_err(at + ("dataCapture",), "capture is enabled here but the top-level capture section is absent"))
                elif (ep.data_capture.load_balancer and ep.data_capture.load_balancer.enabled
                      and self.capture.bucket_encryption == "SSE-KMS"):
                    e.append(_err(at + ("dataCapture", "loadBalancer"),
                                  "ALB access logs cannot be written to a bucket whose default encryption is SSE-KMS "
                                  "(capture.bucketEncryption)"))
            if ep.domain_name is not None:
                if self.domain is None:
                    e.append(_err(at + ("domainName",), "needs the top-level domain section"))
                elif not rules.domain_within_zone(ep.domain_name, self.domain.zone_name):
                    e.append(_err(at + ("domainName",), f"must be inside domain.zoneName ({self.domain.zone_name})"))
                if ep.domain_name in domains:
                    e.append(_err(at + ("domainName",), f"already used by endpoints[{domains[ep.domain_name]}]"))
                domains.setdefault(ep.domain_name, i)
            if ep.stack_group is not None and self.stack_layout != "perNamespace":
                e.append(_err(at + ("stackGroup",), "only with stackLayout: perNamespace (it names a nested stack of "
                              "the endpoint's namespace)"))
            if ep.verify is not None and files:
                e.append(_err(at + ("verify",), "not available with manifests.delivery: files (nothing applies the resource)"))
            if ep.model.huggingface and ep.model.huggingface.token and ep.model.huggingface.token.secrets_manager_arn:
                m = rules.SECRETS_ARN_RE.match(ep.model.huggingface.token.secrets_manager_arn)
                if m and account and m.group(2) != account:
                    e.append(_err(at + ("model", "huggingface", "token", "secretsManagerArn"),
                                  f"must be a secret in env.account ({account})"))
        if self.domain is not None and len(domains) > 100:
            e.append(_err(("endpoints",), "at most 100 endpoint domain names per stack"))
        if self.domain is not None and domains:
            d = self.domain
            if d.certificate_arn is not None:
                if d.wildcard is not None:
                    e.append(_err(("domain", "wildcard"), "only applies to an issued certificate; leave it unset when "
                                  "certificateArn imports one", d.wildcard))
                problem = rules.certificate_region_problem(d.certificate_arn, region)
                if problem:
                    e.append(_err(("domain", "certificateArn"), problem, d.certificate_arn))
            else:
                problem = rules.issued_certificate_problem(d.zone_name, list(domains), d.wildcard)
                if problem:
                    e.append(_err(("domain", "wildcard" if d.wildcard is False else "certificateArn"), problem))
        _raise_all(type(self), e)
        return self

    # conveniences used by the stack -----------------------------------------------------------------------------
    @property
    def capture_enabled(self) -> bool:
        return any(ep.data_capture is not None and ep.data_capture.any_enabled for ep in self.endpoints)

    @property
    def alb_logs_enabled(self) -> bool:
        return any(ep.data_capture and ep.data_capture.load_balancer and ep.data_capture.load_balancer.enabled
                   for ep in self.endpoints)

    @property
    def needs_custom_service_accounts(self) -> bool:
        return any(ep.weight_cache.mode == "daemonset" and not ep.is_jumpstart for ep in self.endpoints)

