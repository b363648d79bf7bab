"""``HyperPodInference``: HyperPod inference on an existing HyperPod EKS cluster, as one construct for any stack.

Composition and order (deletion runs in reverse, so the operator outlives the resources it finalizes):
  dependency add-ons -> operator (add-on or chart) -> roles, service accounts, secrets -> custom resources.

Every endpoint goes through :meth:`HyperPodInference.add_endpoint`, the config's endpoints included. What depends on
the whole set of endpoints (the add-on's ``enableCustomServiceAccounts``, the gated-model role's trust, the domain's
certificate names and DNS grants, the output fold, size checks) is computed at synth, so endpoints added after
construction count.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import cdk8s
import cdk8s_plus_28 as kplus
import jsii
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_route53 as route53
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct, IConstruct, IValidation

from . import outputs as commands
from .charts.endpoint import EndpointChart, EndpointWiring, add_objects
from .charts.hf_token import external_secret_objects, token_names, token_secret_ref
from .charts.nvme_cache import NvmeAgentCode, NvmeAgentGc, NvmeCache, NvmeCachePlan, model_reader_service_account
from .config.loader import ConfigError, parse_config
from .config.models import Endpoint, HyperPodConfig
from .config.warnings import ConfigWarning, acknowledgment, config_warnings, endpoint_warnings
from .constructs.analytics import CaptureAnalytics
from .constructs.autoscaling import KedaTriggerAccess
from .constructs.data_capture import DataCaptureStorage
from .constructs.domain import CustomDomain, delegation_instructions
from .constructs.endpoint_verification import EndpointVerification
from .constructs.irsa import ServiceAccountRef, ServiceAccountRole
from .constructs.lazy import is_unresolved
from .constructs.model_access import grant_model_read, grant_secret_read
from .constructs.observability import InferenceObservability
from .constructs.observed import observed_endpoints
from .delivery import MAX_OUTPUTS, ManifestDelivery, ManifestUnit, pascal, stack_limit_problems, template_counts
from .facts import naming
from .facts.operator import EXECUTION_ROLE_NAME_PREFIX
from .facts.rules import partition_of_region
from .manifests import with_placeholders
from .operator_install import OperatorInstall
from .ownership import claim_objects, claim_operator, shared_object_problems

#: Context key: ``retain`` keeps the single namespaces manifest of earlier releases (retained), for the migration.
LEGACY_NAMESPACES_CONTEXT = "hyperpod-inference:legacyNamespaces"
#: Context key: ``true`` applies the manifests onto objects that exist (adopting them) instead of creating them; only
#: for the documented migrations that move a manifest with its objects retained (docs/fleets.md). Namespaces are
#: always created.
ADOPT_EXISTING_CONTEXT = "hyperpod-inference:adoptExisting"


def _namespace(chart: cdk8s.Chart, name: str) -> kplus.Namespace:
    return kplus.Namespace(chart, f"Namespace-{name}", metadata=cdk8s.ApiObjectMetadata(
        name=name, labels={"app.kubernetes.io/managed-by": "hyperpod-inference-cdk"}))


@dataclass
class InferenceEndpoint:
    """What :meth:`HyperPodInference.add_endpoint` built for one endpoint.

    ``custom_resource`` is the synthesized InferenceEndpointConfig / JumpStartModel (deploy-time values as tokens);
    ``manifest`` the ``KubernetesManifest`` applying it (None with ``manifests.delivery: files``); the roles are None
    when the endpoint needs none.
    """

    endpoint: Endpoint
    chart_name: str
    custom_resource: dict[str, Any]
    manifest: eks.KubernetesManifest | None
    model_reader_role: iam.IRole | None = None
    token_reader_role: iam.IRole | None = None
    verification: EndpointVerification | None = None



class HyperPodInference(Construct):
    """Everything HyperPod inference needs on an existing cluster, from one validated config, in your stack.

    :param config: the validated config (``load_config``). With ``cluster``, the ``cluster`` section needs only
        ``hyperpodClusterArn`` and, unless the cluster object carries a literal one, ``oidcProviderArn``; ``env``
        may be absent (the enclosing stack's is taken)
    :param cluster: the EKS cluster (``aws_eks.ICluster``) whose kubectl provider applies the manifests. Default:
        none, for ``manifests.delivery: files``; ``HyperPodInferenceStack`` imports the one the config describes.
    :param capture_bucket: the capture bucket instead of ``capture.bucketName``. One created in the same stack is
        policied like one the library creates; any other is never re-policied (the statements go to an output).
    :param capture_key: the capture key instead of ``capture.kms``, with the same rule for its key policy.
    :param tls_bucket: the operator's TLS bucket instead of ``operator.tlsBucketName``.
    :param hosted_zone: the Route 53 zone instead of ``domain.hostedZoneId`` (its name must be ``domain.zoneName``).
    :param certificate: the ACM certificate instead of ``domain.certificateArn``.
    :param execution_role: the operator's execution role (``install: existing``) instead of
        ``operator.executionRoleArn``; its name must start with ``SageMakerHyperPodInference`` when literal. Its trust
        cannot be checked: a warning says so.
    :param alarm_topic: the SNS topic the alarms notify (an imported ``sns.ITopic``) instead of
        ``observability.alarms.snsTopicArn`` / ``createTopic``.

    Attributes: ``execution_role``, ``tls_bucket``, ``capture`` (DataCaptureStorage, once an endpoint captures),
    ``capture_analytics`` (CaptureAnalytics: Glue tables, Athena workgroup and queries, with ``capture``),
    ``domain`` (CustomDomain, once an endpoint has a domain name), ``endpoints`` (chart name -> InferenceEndpoint),
    ``custom_resources`` and ``manifest_resources`` (chart name -> custom resource / KubernetesManifest),
    ``observability`` (InferenceObservability: dashboards, alarms, Prometheus rules; set at synth).
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: HyperPodConfig,
                 cluster: eks.ICluster | None = None, capture_bucket: s3.IBucket | None = None,
                 capture_key: kms.IKey | None = None, tls_bucket: s3.IBucket | None = None,
                 hosted_zone: route53.IHostedZone | None = None, certificate: acm.ICertificate | None = None,
                 execution_role: iam.IRole | None = None, alarm_topic: sns.ITopic | None = None) -> None:
        super().__init__(scope, construct_id)
        # The synth-time work (_finalize) runs when the aspect visits this childless construct: first among this
        # construct's children, so what it adds is visited by every aspect too, and the aspect is called back once
        # instead of for every construct below.
        self._synth_hook = Construct(self, "SynthHook")
        self.stack = cdk.Stack.of(self)
        self._validate_props(config, cluster, execution_role)
        self._validate_resource_props(config, capture_bucket=capture_bucket, capture_key=capture_key,
                                      tls_bucket=tls_bucket, hosted_zone=hosted_zone, certificate=certificate,
                                      alarm_topic=alarm_topic)
        # What the names the library chooses carry, so two stacks (or two of these in one stack) never collide: the
        # stack's name, and this construct's id unless it is Default.
        self.name_scope = naming.name_scope(self.stack.stack_name, construct_id)
        #: What every Kubernetes name the library chooses starts with, and the owner label's value: the stack and
        #: this construct's path in it, so two stacks in one namespace, or two constructs of one id under two parents,
        #: never share an object.
        self.kubernetes_scope = naming.kubernetes_scope(
            self.name_scope, self.stack.stack_name, self.node.path[len(self.stack.node.path):].lstrip("/"))
        self._agent_code_prefix = naming.agent_code_prefix(self.kubernetes_scope)
        if config.env is None:
            # The enclosing stack's env: the config's rules that depend on it (ARNs in its account, region support)
            # apply as they do to a config that names it.
            data = config.model_dump(by_alias=True, exclude_none=True)
            data["env"] = {"account": self.stack.account, "region": self.stack.region}
            config = parse_config(data, f"{self.node.path} config")
        self.config = config
        self.cluster = cluster
        self.region: str = self.stack.region
        self.account: str = self.stack.account
        self.oidc_provider_arn = self._oidc_provider_arn(config, cluster)
        self._capture_props = (capture_bucket, capture_key)
        self._domain_props = (hosted_zone, certificate)
        self._files = config.manifests.delivery == "files"
        self.partition = partition_of_region(self.region) if not is_unresolved(self.region) else cdk.Aws.PARTITION
        self.delivery = ManifestDelivery(
            cluster if not self._files else None, owner_labels=naming.owner_labels(self.kubernetes_scope),
            adopt_existing=str(self.node.try_get_context(ADOPT_EXISTING_CONTEXT)).lower() == "true")
        self.endpoints: dict[str, InferenceEndpoint] = {}
        self._added: list[Endpoint] = []
        self._sealed = False
        self._scope_keys: dict[Construct, str] = {}
        #: Where each endpoint's alarms go (its manifest's scope: a nested stack with perNamespace), by ns/name.
        self._alarm_scopes: dict[str, Construct] = {}
        self._durations: dict[int, cdk.Duration] = {}
        self._token_syncs: dict[str, tuple[iam.IRole, set[str | None]]] = {}
        self._warm_groups: dict[str, _WarmGroup] = {}
        #: Per namespace: the agent code unit's name -> (scope, namespace, depends_on); delivered at synth (_seal).
        self._code_units: dict[str, tuple[Construct, str, list[str]]] = {}
        self.capture: DataCaptureStorage | None = None
        self.capture_analytics: CaptureAnalytics | None = None
        self.domain: CustomDomain | None = None
        self._endpoint_outputs: list[tuple[Endpoint, str, list[cdk.CfnOutput]]] = []
        #: ``stackLayout: perNamespace``: (namespace, stackGroup) -> the nested stack holding its endpoints.
        self.nested_stacks: dict[tuple[str, str | None], cdk.NestedStack] = {}

        claim_operator(self, config, cluster)
        self.operator = OperatorInstall(self, config=config, oidc_provider_arn=self.oidc_provider_arn,
                                        delivery=self.delivery, cluster=cluster, endpoints=self._added,
                                        name_scope=self.name_scope,
                                        tls_bucket=tls_bucket, execution_role=execution_role)
        self.execution_role = self.operator.execution_role
        self.tls_bucket = self.operator.tls_bucket
        self.s3_csi_role = self.operator.s3_csi_role
        self._add_namespaces()
        for warning in config_warnings(config):
            self._report(warning, warning.annotation_id, warning.path, acknowledgment(config, warning.id))
        for endpoint in config.endpoints:
            self._add(endpoint)
        self._global_outputs()
        self.node.add_validation(_SizeLimits(self))
        self.keda_triggers: KedaTriggerAccess | None = None
        self._alarm_topic = alarm_topic
        self.observability: InferenceObservability | None = None
        cdk.Aspects.of(self._synth_hook).add(_Finalize(self))

    # ------------------------------------------------------------------------------------------------- props
    def _validate_props(self, config: HyperPodConfig, cluster: eks.ICluster | None,
                        execution_role: iam.IRole | None) -> None:
        problems: list[str] = []
        stack = self.stack
        if is_unresolved(stack.account) or is_unresolved(stack.region):
            problems.append("the enclosing stack needs a literal env (account and region): IRSA trust conditions "
                            "and physical names are exact")
        elif config.env is not None and (config.env.account, config.env.region) != (stack.account, stack.region):
            problems.append(f"config env ({config.env.account} / {config.env.region}) differs from the enclosing "
                            f"stack's ({stack.account} / {stack.region})")
        if config.manifests.delivery == "kubectl" and cluster is None:
            problems.append("cluster: required with manifests.delivery: kubectl (the cluster whose kubectl provider "
                            "applies the manifests)")
        if cluster is None and config.cluster.eks_cluster_name is None:
            problems.append("cluster.eksClusterName: required without a cluster object (the operator add-on names "
                            "the cluster); fill it in, or pass cluster= (an eks.ICluster)")
        if cluster is not None and config.manifests.delivery == "kubectl" and cluster.kubectl_layer is None:
            problems.append(f"cluster: {cluster.node.path} has no kubectl_layer, so its kubectl handler has only the "
                            "AWS CLI and every manifest would fail at deploy; import it with kubectl_layer= (e.g. "
                            "aws_cdk.lambda_layer_kubectl_v33.KubectlV33Layer(stack, \"KubectlLayer\"), the layer "
                            "matching its Kubernetes version)")
        object_oidc = self._object_oidc_arn(cluster)
        if object_oidc is not None and config.cluster.oidc_provider_arn is not None \
                and object_oidc != config.cluster.oidc_provider_arn:
            problems.append(f"cluster: its OIDC provider is {object_oidc}, but cluster.oidcProviderArn is "
                            f"{config.cluster.oidc_provider_arn}; IRSA trusts would name the wrong provider. Leave "
                            "cluster.oidcProviderArn out (the object's is used) or make them the same")
        if cluster is not None and config.cluster.eks_cluster_name and not is_unresolved(cluster.cluster_name) \
                and cluster.cluster_name != config.cluster.eks_cluster_name:
            problems.append(f"cluster: named {cluster.cluster_name!r}, but cluster.eksClusterName is "
                            f"{config.cluster.eks_cluster_name!r}")
        if execution_role is not None:
            if config.operator.install != "existing":
                problems.append("execution_role: only used with operator.install: existing (the library creates the "
                                "role for addon and chart)")
            name = execution_role.role_name
            if not is_unresolved(name) and not name.startswith(EXECUTION_ROLE_NAME_PREFIX):
                problems.append(f"execution_role: the role name must start with {EXECUTION_ROLE_NAME_PREFIX} (the "
                                f"managed policy only passes such roles), got {name!r}")
        if problems:
            raise ValueError(f"HyperPodInference {self.node.path}: " + "; ".join(problems))
        if execution_role is not None:
            self._annotations.add_warning_v2(
                "hyperpod-inference:executionRoleTrust",
                "execution_role: its trust policy cannot be checked here; it must trust sagemaker.amazonaws.com and "
                "the operator's service account")

    def _validate_resource_props(self, config: HyperPodConfig, **props: Any) -> None:
        """A resource object given both as a prop and in the config: named by the prop and the config key."""
        problems: list[str] = []
        capture, domain = config.capture, config.domain
        for prop, key, configured in (
                ("capture_bucket", "capture.bucketName", capture is not None and capture.bucket_name is not None),
                ("capture_key", "capture.kms", capture is not None and capture.kms != "create"),
                ("tls_bucket", "operator.tlsBucketName", config.operator.tls_bucket_name is not None),
                ("hosted_zone", "domain.hostedZoneId", domain is not None and domain.hosted_zone_id is not None),
                ("certificate", "domain.certificateArn", domain is not None and domain.certificate_arn is not None)):
            if props[prop] is not None and configured:
                problems.append(f"{prop}: given, and the config sets {key} too; give one (the prop, or {key})")
        for prop, section in (("capture_bucket", "capture"), ("capture_key", "capture"),
                              ("hosted_zone", "domain"), ("certificate", "domain")):
            if props[prop] is not None and getattr(config, section) is None:
                problems.append(f"{prop}: given, but the config has no {section} section to use it for")
        zone = props["hosted_zone"]
        if zone is not None and domain is not None and not is_unresolved(zone.zone_name) \
                and zone.zone_name.rstrip(".") != domain.zone_name.rstrip("."):
            problems.append(f"hosted_zone: its name is {zone.zone_name!r}, but domain.zoneName is "
                            f"{domain.zone_name!r}")
        alarms = config.observability.alarms
        if alarms is not None and props["alarm_topic"] is not None and (alarms.sns_topic_arn or alarms.create_topic):
            problems.append("alarm_topic: given, and the config sets observability.alarms.snsTopicArn or createTopic "
                            "too; give one")
        if alarms is not None and props["alarm_topic"] is None and not (alarms.sns_topic_arn or alarms.create_topic):
            problems.append("observability.alarms: needs snsTopicArn or createTopic: true (where the alarms go), or "
                            "an imported sns.ITopic as the alarm_topic prop")
        if props["certificate"] is not None and domain is not None and domain.wildcard is not None:
            problems.append("certificate: given, so domain.wildcard (which shapes an issued certificate) does not "
                            "apply; leave domain.wildcard out")
        if problems:
            raise ValueError(f"HyperPodInference {self.node.path}: " + "; ".join(problems))

    @staticmethod
    def _object_oidc_arn(cluster: eks.ICluster | None) -> str | None:
        """The cluster object's literal OIDC provider ARN, or None (no object, no provider, or a token)."""
        if cluster is None:
            return None
        try:
            arn = cluster.open_id_connect_provider.open_id_connect_provider_arn
        except jsii.errors.JSIIError:
            return None
        return None if arn is None or is_unresolved(arn) else arn

    @staticmethod
    def _oidc_provider_arn(config: HyperPodConfig, cluster: eks.ICluster | None) -> str:
        arn = config.cluster.oidc_provider_arn
        if arn is None and cluster is not None:
            try:
                arn = cluster.open_id_connect_provider.open_id_connect_provider_arn
            except jsii.errors.JSIIError:
                arn = None
        if arn is None:
            raise ValueError("cluster.oidcProviderArn: required (the cluster object carries no OIDC provider)")
        if is_unresolved(arn):
            raise ValueError("cluster.oidcProviderArn: the cluster object's OIDC provider ARN is a deploy-time token; "
                             "give the literal ARN in the config so IRSA trust conditions stay exact")
        return arn

    # ---------------------------------------------------------------------------------------------- endpoints
    def add_endpoint(self, endpoint: Endpoint | Mapping[str, Any], *,
                     scope: Construct | None = None) -> InferenceEndpoint:
        """Add one endpoint (an ``Endpoint``, or a mapping with the YAML's own keys, validated here with every
        problem named by its path in the endpoint) and everything it needs:
        token sync, NVMe cache, per-pod IAM, capture and domain wiring, verification and outputs.

        The config's cross-endpoint rules apply against the endpoints already added (unique names, SageMaker
        endpoint names and domain names; the sections it needs), each problem named by its path. ``scope``
        places the endpoint's roles and manifest (e.g. in a nested stack); default: this construct. Endpoints of a
        namespace and stack share what they can (the sync of one Secrets Manager token and its reader role, one warm
        DaemonSet for alike agent pods); the warm DaemonSets are built at synth, so add every endpoint before the app
        is synthesized or its manifests are read (an endpoint added after that is an error).
        """
        return self._add(self._check_against_config(endpoint), scope)

    def _check_against_config(self, endpoint: Endpoint | Mapping[str, Any]) -> Endpoint:
        data = self.config.model_dump(by_alias=True, exclude_none=True)
        given = endpoint.model_dump(by_alias=True, exclude_none=True) if isinstance(endpoint, Endpoint) else \
            dict(endpoint) if isinstance(endpoint, Mapping) else endpoint
        data["endpoints"] = [*(e.model_dump(by_alias=True, exclude_none=True) for e in self._added), given]
        try:
            parsed = parse_config(data, "add_endpoint").endpoints[-1]
        except ConfigError as err:
            prefix = f"endpoints[{len(self._added)}]"
            problems = [(p[len(prefix):].lstrip(".") or "<endpoint>", m) if p.startswith(prefix) else (p, m)
                        for p, m in err.problems]
            label = f"{given.get('namespace')}/{given.get('name')}" if isinstance(given, dict) else "<endpoint>"
            raise ConfigError(f"add_endpoint({label})", problems) from None
        return endpoint if isinstance(endpoint, Endpoint) else parsed

    def _add(self, endpoint: Endpoint, scope: Construct | None = None) -> InferenceEndpoint:
        if self._sealed:
            raise ValueError(f"add_endpoint({endpoint.namespace}/{endpoint.name}): the app was already synthesized "
                             "(or its manifests read); add every endpoint before that")
        scope = scope or self._default_scope(endpoint)
        scope_key = self._scope_key(scope)
        self._added.append(endpoint)
        self._alarm_scopes[f"{endpoint.namespace}/{endpoint.name}"] = scope
        self.operator.endpoint_added(endpoint)
        name = naming.endpoint_unit_name(endpoint.namespace, endpoint.name)
        base_deps = [self._namespace_units[endpoint.namespace]] if endpoint.namespace in self._namespace_units else []
        deps = list(base_deps)
        support_objs: list[dict[str, Any]] = []
        token = token_secret_ref(endpoint, scope_key, self.kubernetes_scope)
        hf = endpoint.model.huggingface
        token_role = model_role = None
        if hf is not None and hf.token is not None and hf.token.secrets_manager_arn:
            token_unit, token_role = self._token_sync(self._stack_home(scope), endpoint, base_deps)
            deps.append(token_unit)
        s3_source = endpoint.model.s3
        wiring: dict[str, Any] = {"region": self.region}
        plan = None
        if endpoint.weight_cache.mode == "daemonset":
            sa_name = None
            if s3_source is not None:
                sa_name = model_reader_service_account(endpoint, None, self.kubernetes_scope)["metadata"]["name"]
                model_role = self._service_account_role(scope, endpoint.namespace, endpoint.name, sa_name,
                                                        "ModelReader")
                grant_model_read(model_role, bucket=s3_source.bucket, prefix=s3_source.prefix,
                                 kms_key_arn=s3_source.kms_key_arn)
                support_objs.append(model_reader_service_account(endpoint, self.manifest_role_arn(model_role),
                                                                 self.kubernetes_scope))
            plan = NvmeCachePlan(endpoint, self.region, token, sa_name, code_configmap_prefix=self._agent_code_prefix,
                                 share_across_namespaces=endpoint.weight_cache.share_across_namespaces,
                                 lease_sidecar=endpoint.weight_cache.lease_sidecar, group_scope=scope_key,
                                 name_scope=self.kubernetes_scope)
            wiring.update(kubernetes_volumes=plan.volumes(), init_containers=plan.init_containers(),
                          model_volume_name=endpoint.weight_cache.volume_name, service_account_name=sa_name)
            deps.append(self._agent_code_unit(endpoint.namespace, base_deps))
        else:
            # The operator hands the token to its own init container (and, without prefetch, to the runtime).
            wiring["token_secret"] = token
            if s3_source is not None and self.s3_csi_role is not None:
                # The operator mounts the bucket through the S3 CSI driver: read on exactly this model's prefix.
                grant_model_read(self.s3_csi_role, bucket=s3_source.bucket, prefix=s3_source.prefix,
                                 kms_key_arn=s3_source.kms_key_arn)
        if endpoint.data_capture is not None and endpoint.data_capture.any_enabled:
            capture = self._capture_for(endpoint)
            wiring.update(capture_s3_uri=capture.s3_uri, capture_kms_key_id=capture.kms_key_id)
        if endpoint.domain_name:
            domain = self._domain_for(endpoint.domain_name)
            wiring.update(certificate_arn=domain.certificate_arn, hosted_zone_id=domain.hosted_zone_id,
                          tls_output_s3_uri=self.tls_bucket.s3_uri)
        if support_objs:
            support = self.delivery.chart(naming.shared_unit_name(endpoint.namespace, "reader", sa_name))
            add_objects(support, support_objs)
            self.delivery.deliver(scope, support.node.id, support, depends_on=base_deps)
            deps.append(support.node.id)
        if plan is not None:
            # The warm DaemonSet is shared by every endpoint with the same agent pod; built at synth (_seal), once
            # every endpoint is known.
            group = self._warm_groups.setdefault(plan.warm_name, _WarmGroup(self._stack_home(scope), [], list(deps)))
            group.plans.append(plan)
        chart = EndpointChart(self.delivery.k8s_app, name, endpoint=endpoint, wiring=EndpointWiring(**wiring))
        unit = self.delivery.deliver(scope, name, chart, depends_on=deps, after=list(self.operator.dependencies),
                                     custom_resource=True)
        added = InferenceEndpoint(endpoint, name, chart.resource, unit.resource, model_role, token_role)
        self.endpoints[name] = added
        added.verification = self._verify(scope, endpoint, unit)
        self._warn(endpoint, name)
        self._endpoint_outputs.append((endpoint, *self._outputs_for(scope, endpoint, added)))
        return added

    def _scope_key(self, scope: Construct) -> str:
        """Which stack of this construct ``scope`` is in: '' for the enclosing stack, else the nested stack's path
        below this construct. Shared per-namespace objects (token syncs, warm DaemonSets) carry it in their names, so
        two stacks never apply objects of the same name."""
        known = self._scope_keys.get(scope)
        if known is None:
            stack = cdk.Stack.of(scope)
            path, mine = stack.node.path, self.node.path + "/"
            known = "" if stack is self.stack else path[len(mine):] if path.startswith(mine) else path
            self._scope_keys[scope] = known
        return known

    def _token_sync(self, scope: Construct, endpoint: Endpoint, depends_on: list[str]) -> tuple[str, iam.IRole]:
        """The namespace's sync of the endpoint's Secrets Manager token (created on first use, shared by every
        endpoint of the namespace and stack that names the same secret): its unit name and reader role."""
        hf = endpoint.model.huggingface
        assert hf is not None and hf.token is not None and hf.token.secrets_manager_arn
        scope_key = self._scope_key(scope)
        names = token_names(endpoint, scope_key, self.kubernetes_scope)
        unit_name = naming.shared_unit_name(endpoint.namespace, "token", names["secret"])
        sync = self._token_syncs.get(unit_name)
        if sync is None:
            role = self._service_account_role(scope, endpoint.namespace, unit_name[len(endpoint.namespace) + 1:],
                                              names["service_account"], "Reader")
            chart = self.delivery.chart(unit_name)
            add_objects(chart, external_secret_objects(endpoint, region=self.region, scope_key=scope_key,
                                                       name_scope=self.kubernetes_scope,
                                                       role_arn=self.manifest_role_arn(role)))
            self.delivery.deliver(scope, unit_name, chart, depends_on=depends_on)
            sync = self._token_syncs[unit_name] = (role, set())
        role, keys = sync
        if hf.token.kms_key_arn not in keys:
            grant_secret_read(role, secret_arn=hf.token.secrets_manager_arn, kms_key_arn=hf.token.kms_key_arn)
            keys.add(hf.token.kms_key_arn)
        return unit_name, role

    def _seal(self) -> None:
        """Once every endpoint is added (at synth, or when the manifests are first read): each namespace's agent
        code with its gc Job (in the image and on the nodes of one of its agent pods), then the shared warm
        DaemonSets, each with the models of all its endpoints. No endpoint can be added after this."""
        if self._sealed:
            return
        self._sealed = True
        plans: dict[str, list[NvmeCachePlan]] = {}
        for group in self._warm_groups.values():
            for plan in group.plans:
                plans.setdefault(plan.endpoint.namespace, []).append(plan)
        for name, (scope, namespace, depends_on) in self._code_units.items():
            chart = self.delivery.chart(name)
            NvmeAgentCode(chart, "AgentCode", namespace=namespace, name_prefix=self._agent_code_prefix)
            NvmeAgentGc(chart, "AgentGc", plan=min(plans[namespace], key=lambda p: p.endpoint.name))
            # Not pruned: after an agent change the previous code ConfigMap stays for the pods that still mount it
            # (a pod of the old spec restarting during or after the rollout) until the gc Job finds it unused.
            # (the endpoints delivered before it, which depend on it by name, wait for it: ManifestDelivery.deliver)
            self.delivery.deliver(scope, name, chart, depends_on=depends_on, prune=False)
        for warm_name, group in self._warm_groups.items():
            unit_name = naming.shared_unit_name(group.plans[0].endpoint.namespace, "warm", warm_name)
            chart = self.delivery.chart(unit_name)
            NvmeCache(chart, "NvmeCache", plans=group.plans)
            self.delivery.deliver(group.scope, unit_name, chart, depends_on=group.depends_on)
        claim_objects(self)

    def _default_scope(self, endpoint: Endpoint) -> Construct:
        """This construct (``stackLayout: single``), or the nested stack of the endpoint's namespace and
        ``stackGroup`` (``perNamespace``), created on first use."""
        if self.config.stack_layout != "perNamespace":
            return self
        return self._nested_stack(endpoint.namespace, endpoint.stack_group)

    def _nested_stack(self, namespace: str, group: str | None) -> cdk.NestedStack:
        key = (namespace, group)
        nested = self.nested_stacks.get(key)
        if nested is None:
            # '.' is in neither a namespace nor a group, so the ids of two keys never coincide.
            construct_id = ".".join(p for p in ("Namespace", *key) if p)
            nested = cdk.NestedStack(self, construct_id, description=(
                f"SageMaker HyperPod inference: namespace {namespace}"
                + (f", stack group {group}" if group else "")
                + f" of {self.name_scope} (hyperpod-inference-cdk)"))
            self.nested_stacks[key] = nested
        return nested

    # ------------------------------------------------------------------------------- homes of shared pieces
    def _namespace_home(self, namespace: str) -> Construct:
        """Where a namespace's one-per-namespace pieces (the agent code and its gc Job and RBAC) live, whatever the
        order of the endpoints: this construct (``stackLayout: single``), or the namespace's own nested stack
        ``Namespace.<ns>`` (``perNamespace``; created for them when every endpoint of the namespace has a
        ``stackGroup``). Reordering, adding or removing endpoints never moves them."""
        if self.config.stack_layout != "perNamespace":
            return self
        return self._nested_stack(namespace, None)

    def _stack_home(self, scope: Construct) -> Construct:
        """Where the pieces shared by the endpoints of one stack live (token syncs, warm DaemonSets): this construct
        for the enclosing stack, else the stack ``scope`` is in (a namespace's or group's nested stack). It depends on
        the stack only, never on which endpoint came first."""
        stack = cdk.Stack.of(scope)
        return self if stack is self.stack else stack

    def stack_label(self, stack: cdk.Stack) -> str:
        """Which part of the config a stack of this construct holds: ``namespace team-a (stackGroup g)`` for a
        nested stack, ``stack <name>`` otherwise."""
        for (ns, group), nested in self.nested_stacks.items():
            if nested is stack:
                return f"namespace {ns}" + (f" (stackGroup {group})" if group else "")
        return f"stack {stack.stack_name}"

    def template_labels(self) -> dict[str, tuple[str, str]]:
        """Nested template file name -> (the namespace and group it holds, how to split it): for
        :func:`~hyperpod_inference.delivery.template_size_problems`."""
        return {nested.template_file: (self.stack_label(nested), _way_out(ns, group))
                for (ns, group), nested in self.nested_stacks.items()}

    def _service_account_role(self, scope: Construct, namespace: str, owner: str, sa_name: str,
                              purpose: str) -> ServiceAccountRole:
        """The IRSA role of ``namespace``/``sa_name``, for ``owner`` (an endpoint, or a shared token sync)."""
        # With files delivery nothing resolves the manifests' values at deploy: the role gets a deterministic name
        # (the naming function), so the ServiceAccount's annotation carries its real ARN (manifest_role_arn).
        role_name = naming.service_account_role_name(self.name_scope, namespace, owner, purpose) \
            if self._files else None
        return ServiceAccountRole(
            scope, f"{pascal(namespace)}{pascal(owner)}{purpose}Role",
            oidc_provider_arn=self.oidc_provider_arn, role_name=role_name,
            service_account=ServiceAccountRef(namespace, sa_name),
            description=f"{purpose} for {namespace}/{owner} (hyperpod-inference-cdk)")

    def manifest_role_arn(self, role: iam.IRole) -> str:
        """A role's ARN as a manifest carries it: the literal ARN of a named role with files delivery (the GitOps
        manifests are applied without CloudFormation), the deploy-time ARN otherwise."""
        if not self._files or role.node.default_child is None:
            return role.role_arn
        name = role.node.default_child.role_name
        if not isinstance(name, str) or is_unresolved(name):
            return role.role_arn
        return naming.role_arn(self.partition, self.account, name)

    def _agent_code_unit(self, namespace: str, depends_on: list[str]) -> str:
        """The namespace's shared NVMe agent code unit, by name (after the code's name prefix): registered once, in the
        namespace's home (:meth:`_namespace_home`), built and delivered at synth (:meth:`_seal`), when every agent pod
        of the namespace is known."""
        name = naming.shared_unit_name(namespace, "agent", self._agent_code_prefix)
        self._code_units.setdefault(name, (self._namespace_home(namespace), namespace, list(depends_on)))
        return name

    def _add_namespaces(self) -> None:
        """One manifest resource per owned namespace, created (never applied): an existing namespace fails the deploy
        with kubectl's AlreadyExists instead of being adopted, and so is never deleted with the stack.

        The context key ``hyperpod-inference:legacyNamespaces=retain`` instead keeps the single ``namespaces``
        manifest of earlier releases, retained on removal: the first step of the migration (docs/upgrades.md)."""
        self._namespace_units: dict[str, str] = {}
        if not self.config.namespaces:
            return
        if self.node.try_get_context(LEGACY_NAMESPACES_CONTEXT) == "retain":
            chart = self.delivery.chart("namespaces")
            for ns in self.config.namespaces:
                _namespace(chart, ns)
            unit = self.delivery.deliver(self, "namespaces", chart, overwrite=True)
            if unit.resource is not None:
                unit.resource.node.find_child("Resource").apply_removal_policy(cdk.RemovalPolicy.RETAIN)
            self._namespace_units = dict.fromkeys(self.config.namespaces, "namespaces")
            return
        for ns in self.config.namespaces:
            name = naming.namespace_unit_name(ns)
            chart = self.delivery.chart(name)
            _namespace(chart, ns)
            self.delivery.deliver(self, name, chart, overwrite=False)
            self._namespace_units[ns] = name

    # ------------------------------------------------------------------------------------ capture and domain
    def _capture_for(self, endpoint: Endpoint) -> DataCaptureStorage:
        cap = self.config.capture
        assert cap is not None, "the config rules require the capture section for an endpoint that captures"
        tier2 = bool(endpoint.data_capture and endpoint.data_capture.load_balancer
                     and endpoint.data_capture.load_balancer.enabled)
        if self.capture is None:
            bucket, key = self._capture_props
            self.capture = DataCaptureStorage(
                self, "DataCapture", bucket_name=cap.bucket_name, bucket_account=cap.bucket_account,
                bucket_default_kms=cap.bucket_encryption == "SSE-KMS", prefix=cap.prefix,
                retention_days=cap.retention_days, kms=cap.kms, alb_logs=tier2, bucket=bucket, key=key,
                physical_name_prefix=naming.capture_name_base(self.name_scope, self.account, self.region))
            self.capture.grant_capture_write(self.execution_role)
            if self.s3_csi_role is not None:
                self.capture.grant_capture_write(self.s3_csi_role, multipart=True)
            settings = cap.analytics
            self.capture_analytics = CaptureAnalytics(
                self, "CaptureAnalytics", capture=self.capture,
                name_base=naming.capture_name_base(self.name_scope, self.account, self.region),
                bytes_scanned_cutoff_mb=settings.bytes_scanned_cutoff_mb,
                results_retention_days=settings.results_retention_days) if settings.enabled else None
            self._capture_outputs(self.capture)
        elif tier2:
            self.capture.enable_alb_logs()
        return self.capture

    def _domain_for(self, domain_name: str) -> CustomDomain:
        d = self.config.domain
        assert d is not None, "the config rules require the domain section for an endpoint with a domainName"
        if self.domain is None:
            zone, certificate = self._domain_props
            self.domain = CustomDomain(self, "Domain", zone_name=d.zone_name, domain_names=[domain_name],
                                       hosted_zone_id=d.hosted_zone_id, certificate_arn=d.certificate_arn,
                                       wildcard=d.wildcard, zone=zone, certificate=certificate)
            self.domain.grant_dns_management(self.execution_role)
            self.domain.grant_certificate_read(self.execution_role)
            self.tls_bucket.grant_operator_access(self.execution_role)
            if self.domain.created_zone and self.domain.name_servers is not None:
                cdk.CfnOutput(self, "DomainNameServers", value=cdk.Fn.join(",", self.domain.name_servers),
                              description=delegation_instructions(d.zone_name)[:1000])
        else:
            self.domain.add_domain_name(domain_name)
        return self.domain

    # ------------------------------------------------------------------------------------- checks and warnings
    def _verify(self, scope: Construct, ep: Endpoint, unit: ManifestUnit) -> EndpointVerification | None:
        if ep.verify is None or ep.sagemaker_endpoint_name is None:
            return None
        # The check runs again whenever the endpoint's custom resource changes (a new commit, replica count, ...):
        # its review form (deploy-time values as placeholders, never tokens) is hashed into the check's properties.
        # It then verifies at the SageMaker level (DescribeEndpoint InService, one invoke); it does not read the
        # operator's rollout status of the custom resource.
        review = json.dumps(with_placeholders(self.stack, unit.objects()), sort_keys=True, separators=(",", ":"))
        check = EndpointVerification(
            scope, f"Verify{pascal(unit.name)}", endpoint_name=ep.sagemaker_endpoint_name,
            payload=commands.default_payload(ep), content_type=ep.verify.content_type,
            fail_deployment=ep.verify.fail_deployment, show_response=ep.verify.show_response,
            timeout=self._minutes(ep.verify.timeout_minutes),
            nonce=hashlib.sha256(review.encode()).hexdigest()[:16])
        if unit.resource is not None:
            check.node.add_dependency(unit.resource)
        return check

    @functools.cached_property
    def _annotations(self) -> cdk.Annotations:
        return cdk.Annotations.of(self)

    def _minutes(self, minutes: int) -> cdk.Duration:
        """One Duration object per value (the verification construct reads each once)."""
        known = self._durations.get(minutes)
        if known is None:
            known = self._durations[minutes] = cdk.Duration.minutes(minutes)
        return known

    def _warn(self, endpoint: Endpoint, name: str) -> None:
        where = f"endpoints {endpoint.namespace}/{endpoint.name}"
        for warning in endpoint_warnings(endpoint, self.config):
            self._report(warning, f"{warning.annotation_id}:{name}", f"{where}: {warning.path}",
                         acknowledgment(self.config, warning.id, endpoint))

    def _report(self, warning: ConfigWarning, annotation_id: str, where: str, reason: str | None) -> None:
        """A config warning as a CDK warning, or, acknowledged in ``acknowledgeWarnings``, as info with its reason."""
        if reason is None:
            self._annotations.add_warning_v2(annotation_id, f"{where}: {warning.message}")
        else:
            self._annotations.add_info(f"{annotation_id} acknowledged ({reason}): {where}: {warning.message}")

    # -------------------------------------------------------------------------------------------------- outputs
    def _outputs_for(self, scope: Construct, ep: Endpoint, added: InferenceEndpoint,
                     ) -> tuple[str, list[cdk.CfnOutput]]:
        key = f"{pascal(ep.namespace)}{pascal(ep.name)}"
        outs: list[cdk.CfnOutput] = []
        outs.append(cdk.CfnOutput(scope, f"{key}Status", value=commands.status_command(ep), description=(
            f"{ep.namespace}/{ep.name}: status and events (and DNS/TLS)")))
        invoke = commands.invoke_output(ep, region=self.region)
        if invoke:
            outs.append(cdk.CfnOutput(scope, f"{key}Invoke", value=invoke,
                                      description=f"{ep.namespace}/{ep.name}: URL and invoke command"))
        if added.verification is not None:
            outs.append(cdk.CfnOutput(scope, f"{key}Verification", value=added.verification.summary,
                                      description=f"{ep.namespace}/{ep.name}: post-deploy check"))
        return key, outs

    def _capture_outputs(self, capture: DataCaptureStorage) -> None:
        prefixes = capture.tier_prefixes()
        cdk.CfnOutput(self, "CaptureBucket", value=capture.bucket_name,
                      description="Data capture bucket (retained on delete)")
        cdk.CfnOutput(self, "CapturePrefixes", description=(
            "Where each tier writes; <hash> is computed by the operator per deployment (cluster ARN, namespace, "
            "kind, name)"), value=" ; ".join(f"{tier}: {uri}" for tier, uri in prefixes.items())
            + f" ; list: {commands.capture_list_command(capture.s3_uri)}")
        owner_bucket = capture.owner_bucket_policy_statements()
        if owner_bucket:
            cdk.CfnOutput(self, "CaptureBucketPolicyToAdd", value=self.stack.to_json_string(owner_bucket),
                          description="Imported bucket: statements its owner must add to the bucket policy")
        if capture.imported_key:
            principals = [self.execution_role.role_arn] + ([self.s3_csi_role.role_arn] if self.s3_csi_role else [])
            cdk.CfnOutput(self, "CaptureKeyPolicyToAdd",
                          value=self.stack.to_json_string(capture.owner_key_policy_statements(principals)),
                          description="Imported key: statements its owner must add to the key policy")
        analytics = self.capture_analytics
        if analytics is not None:
            cdk.CfnOutput(self, "CaptureQueryWorkGroup", value=analytics.work_group_name, description=(
                f"Athena workgroup over the captured data: database {analytics.database_name}, tables "
                f"{', '.join(analytics.table_names.values())}; named queries and prepared statements per table"))
            cdk.CfnOutput(self, "CaptureFindHash", description=(
                "Finding an endpoint's <hash>: list the hash folders; tier 1: <hash>/sme/ holds folders named after "
                "SageMaker endpoints; tier 2: the load balancer (named after the Ingress) that logged under a hash"),
                value=commands.capture_find_hash_command(
                    s3_uri=capture.s3_uri, work_group=analytics.work_group_name, region=self.region,
                    load_balancers_sql=analytics.load_balancers_query_string))
            cdk.CfnOutput(self, "CaptureLatencyQuery", description=(
                "Target latency p50/p90/p99 per hour from the ALB access logs: give the hash and a day range, then "
                "read the results with the printed QueryExecutionId"),
                value=commands.capture_latency_command(
                    work_group=analytics.work_group_name, region=self.region,
                    latency_sql=analytics.latency_query_string))
            if analytics.results_lifecycle_to_add:
                cdk.CfnOutput(self, "CaptureQueryResultsLifecycleToAdd", value=analytics.results_lifecycle_to_add)

    def _global_outputs(self) -> None:
        cdk.CfnOutput(self, "OperatorExecutionRoleArn", value=self.execution_role.role_arn)
        cdk.CfnOutput(self, "TlsBucketName", value=self.tls_bucket.bucket_name)

    def _finalize(self) -> None:
        """At synth, once every endpoint is added: the shared warm DaemonSets, KEDA's trigger grants, then the
        output fold."""
        self._seal()
        if self.keda_triggers is None:
            roles = self.operator.dependency_roles
            self.keda_triggers = KedaTriggerAccess(self, "KedaTriggers", endpoints=self._added, account=self.account,
                                                   keda_role=roles.keda_role if roles is not None else None)
        obs = self.config.observability
        if self.observability is None and (obs.creates_anything or self._alarm_topic is not None):
            self.observability = InferenceObservability(
                self, "Observability", scope_name=self.name_scope, region=self.region, settings=obs,
                endpoints=observed_endpoints(self._added, obs), alarm_topic=self._alarm_topic,
                alarm_scopes=self._alarm_scopes,
                capture_bucket=self.capture.bucket_name if self.capture else None,
                work_group=self.capture_analytics.work_group_name if self.capture_analytics else None)
        self.fold_outputs()

    def fold_outputs(self) -> None:
        """Over CloudFormation's 200 outputs (2-3 per endpoint) in a template: one output per endpoint of that
        template instead, the same values joined. Runs at synth (an aspect), after every endpoint is added; each
        stack (the enclosing one, every nested stack) is folded on its own."""
        self._nested_stack_outputs()
        counts = template_counts(self.stack)
        for stack in [self.stack, *self.nested_stacks.values()]:
            if counts.get(stack, (0, 0))[1] <= MAX_OUTPUTS:
                continue
            rest = []
            for ep, key, outs in self._endpoint_outputs:
                if len(outs) < 2 or cdk.Stack.of(outs[0]) is not stack:
                    rest.append((ep, key, outs))
                    continue
                scope = outs[0].node.scope
                for out in outs:
                    scope.node.try_remove_child(out.node.id)
                cdk.CfnOutput(scope, f"{key}Outputs", value=" ; ".join(out.value for out in outs), description=(
                    f"{ep.namespace}/{ep.name}: status and events commands, URL and invoke command, post-deploy "
                    "check"))
            self._endpoint_outputs = rest

    def _nested_stack_outputs(self) -> None:
        """The enclosing stack's one output per nested stack: the command that lists that stack's outputs (the
        per-endpoint commands live there, so the parent stays far below 200 outputs)."""
        for (ns, group), nested in self.nested_stacks.items():
            construct_id = f"Namespace{pascal(ns)}" + (f"Group{pascal(group)}" if group else "") + "StackOutputs"
            if self.node.try_find_child(construct_id) is not None:
                continue
            stack_id = nested.nested_stack_resource.ref if nested.nested_stack_resource is not None else ""
            cdk.CfnOutput(self, construct_id, value=commands.join_commands([[
                "aws", "cloudformation", "describe-stacks", "--stack-name", stack_id, "--region", self.region,
                "--query", "Stacks[0].Outputs", "--output", "table"]]),
                description=f"namespace {ns}" + (f", stackGroup {group}" if group else "")
                + ": the nested stack's outputs (status, invoke and check commands of its endpoints)")

    # ------------------------------------------------------------------------------------------------ manifests
    @property
    def units(self) -> list[ManifestUnit]:
        self._seal()
        return list(self.delivery.units.values())

    @property
    def custom_resources(self) -> dict[str, dict[str, Any]]:
        return {name: e.custom_resource for name, e in self.endpoints.items()}

    @property
    def manifest_resources(self) -> dict[str, eks.KubernetesManifest]:
        self._seal()
        return {u.name: u.resource for u in self.delivery.units.values() if u.resource is not None}

    def manifest_documents(self) -> dict[str, list[dict[str, Any]]]:
        """Every chart's objects, deploy-time values shown as placeholders (``<LogicalId.Attr>``)."""
        self._seal()
        return self.delivery.documents(self.stack)

    def write_manifests(self, outdir: str) -> list[str]:
        """Write ``<outdir>/manifests/<chart>.yaml`` (one file per chart)."""
        self._seal()
        return self.delivery.write(self.stack, outdir)

    def write_dashboards(self, outdir: str) -> str | None:
        """Write ``<outdir>/dashboards/<stack>.json``, the Grafana dashboard (after synth; None when it is off)."""
        return self.observability.write_grafana(outdir, self.stack.stack_name) if self.observability else None


@dataclass
class _WarmGroup:
    """Endpoints warmed by one DaemonSet: the scope it is delivered into, their plans, the units it waits for."""

    scope: Construct
    plans: list[NvmeCachePlan]
    depends_on: list[str]


@jsii.implements(cdk.IAspect)
class _Finalize:
    def __init__(self, owner: HyperPodInference) -> None:
        self.owner = owner

    def visit(self, node: IConstruct) -> None:
        if node is self.owner._synth_hook:
            self.owner._finalize()


@jsii.implements(IValidation)
class _SizeLimits:
    """Synth-time limits: a manifest the kubectl provider cannot carry, or a stack CloudFormation refuses, fails here
    with the part that is too big named."""

    def __init__(self, owner: HyperPodInference) -> None:
        self.owner = owner

    def validate(self) -> list[str]:
        owner = self.owner
        counts = template_counts(owner.stack)
        problems = owner.delivery.size_problems() + stack_limit_problems(owner.stack, counts=counts)
        problems += shared_object_problems(owner)
        for (ns, group), nested in owner.nested_stacks.items():
            problems += stack_limit_problems(nested, where=owner.stack_label(nested), way_out=_way_out(ns, group),
                                             counts=counts)
        if owner._files:
            # GitOps applies these files as they are: a deploy-time value would reach the cluster as a placeholder.
            for name, objs in owner.manifest_documents().items():
                left = sorted(set(re.findall(r"<[A-Za-z0-9]+(?:\.[A-Za-z0-9.]+)?>", json.dumps(objs))))
                if left:
                    problems.append(f"manifest '{name}' holds deploy-time value(s) {', '.join(left)}; with "
                                    "manifests.delivery: files every value must be known at synth")
        return problems


def _way_out(namespace: str, group: str | None) -> str:
    what = f"namespace {namespace}" + (f", stackGroup {group}" if group else "")
    return (f"give some endpoints of {what} another stackGroup (endpoints[].stackGroup): each namespace and group is "
            "a nested stack of its own")
