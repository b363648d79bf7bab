"""``HyperPodInference``: HyperPod inference on an existing HyperPod EKS cluster, as one construct for any stack.

Composition and order (deletion runs in reverse, so the operator outlives the resources it finalizes):
  dependency add-ons -> operator (add-on or chart) -> roles, service accounts, secrets -> custom resources.

The plan (``hyperpod_inference.plan``, plain values) decides; this construct realizes it. The stack's own plan
(operator, namespaces, capture, domain, delivery) is made at construction. Every endpoint goes through
:meth:`HyperPodInference.add_endpoint`, the config's endpoints included: its plan, then its AWS side, then its charts
from the plan plus the AWS values, then delivery. What depends on the whole set of endpoints (the shared plan: token
syncs' grants, agent code and warm DaemonSets, KEDA's grants, the add-on's ``enableCustomServiceAccounts``, the
gated-model role's trust; observability; the output fold, size checks) is realized at synth from the plan of every
endpoint added, so endpoints added after construction count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_route53 as route53
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct, IConstruct

from .assembly import outputs, props
from .assembly.aws_side import AwsSide
from .assembly.delivery import ManifestDelivery, ManifestUnit
from .assembly.homes import Homes
from .assembly.kubernetes_side import KubernetesSide, deliver_namespaces, legacy_namespaces
from .assembly.limits import SizeLimits
from .assembly.operator_install import OperatorInstall
from .assembly.ownership import claim_objects, claim_operator, cluster_identity, shared_object_problems
from .config.loader import ConfigError, parse_config
from .config.models import Endpoint, HyperPodConfig
from .constructs.analytics import CaptureAnalytics
from .constructs.autoscaling import KedaTriggerAccess
from .constructs.data_capture import DataCaptureStorage
from .constructs.domain import CustomDomain
from .constructs.endpoint_verification import EndpointVerification
from .constructs.lazy import literal_stack_name, top_level_stack
from .constructs.observability import InferenceObservability
from .facts import naming
from .plan import ConfigPlan, EndpointPlan, PlanContext, SharedPlan, StackPlan, plan_endpoint, plan_shared, plan_stack
from .plan.context import namespace_unit_pairs, plan_namespaces
from .plan.observability import plan_observability
from .plan.shared import KEDA_TRIGGERS_ID
from .plan.warnings import WarningPlan

#: Context key: ``true`` applies the manifests onto objects that exist (adopting them) instead of creating them; only
#: for the documented migrations that move a manifest with its objects retained (docs/fleets.md). Namespaces are
#: always created.
ADOPT_EXISTING_CONTEXT = "hyperpod-inference:adoptExisting"


@dataclass(frozen=True)
class InferenceEndpoint:
    """What :meth:`HyperPodInference.add_endpoint` built for one endpoint (frozen).

    ``plan`` is its plan (plain values); ``custom_resource`` the synthesized InferenceEndpointConfig /
    JumpStartModel (deploy-time values as tokens); ``manifest`` the ``KubernetesManifest`` applying it (None with
    ``manifests.delivery: files``); the roles and the check are None when the endpoint needs none.
    """

    endpoint: Endpoint
    chart_name: str
    custom_resource: dict[str, Any]
    manifest: eks.KubernetesManifest | None
    model_reader_role: iam.IRole | None = None
    token_reader_role: iam.IRole | None = None
    verification: EndpointVerification | None = None
    plan: EndpointPlan | None = None


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
    ``observability`` (InferenceObservability: dashboards, alarms, Prometheus rules; set at synth), ``context``
    (the plan's PlanContext), ``stack_plan`` (what the config decides for the whole stack), ``plan`` (the whole plan
    realized, once every endpoint is added).
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: HyperPodConfig,
                 cluster: eks.ICluster | None = None, capture_bucket: s3.IBucket | None = None,
                 capture_key: kms.IKey | None = None, tls_bucket: s3.IBucket | None = None,
                 hosted_zone: route53.IHostedZone | None = None, certificate: acm.ICertificate | None = None,
                 execution_role: iam.IRole | None = None, alarm_topic: sns.ITopic | None = None) -> None:
        super().__init__(scope, construct_id)
        # The synth-time work (_finalize) runs when the aspect visits this childless construct: first among this
        # construct's children, so what it adds is visited by every aspect too, and the aspect is called back once.
        self._synth_hook = Construct(self, "SynthHook")
        self.stack = stack = cdk.Stack.of(self)
        props.check_props(self, config, cluster, execution_role)
        props.check_resource_props(self, config, capture_bucket=capture_bucket, capture_key=capture_key,
                                   tls_bucket=tls_bucket, hosted_zone=hosted_zone, certificate=certificate,
                                   alarm_topic=alarm_topic)
        if config.env is None:
            # The enclosing stack's env: the config's rules that depend on it (ARNs in its account, region support)
            # apply as they do to a config that names it.
            data = config.model_dump(by_alias=True, exclude_none=True)
            data["env"] = {"account": stack.account, "region": stack.region}
            config = parse_config(data, f"{self.node.path} config")
        self.config, self.cluster, self._alarm_topic = config, cluster, alarm_topic
        self.region: str = stack.region
        self.account: str = stack.account
        self.oidc_provider_arn = props.oidc_provider_arn(config, cluster)
        # What the names the library chooses carry, so two stacks (or two of these in one stack) never collide.
        # Inside a nested stack, whose own name is known only at deploy, names carry the top-level stack's name and
        # the nested stacks' ids (literal_stack_name); the construct's path is then taken from the top-level stack.
        top = top_level_stack(self)
        self.name_scope = naming.name_scope(literal_stack_name(self), construct_id)
        self.kubernetes_scope = naming.kubernetes_scope(
            self.name_scope, top.stack_name, self.node.path[len(top.node.path):].lstrip("/"))
        # The plan of the stack: every decision below is read from it.
        legacy = legacy_namespaces(self)
        self.context = PlanContext(
            region=self.region, account=self.account, name_scope=self.name_scope,
            kubernetes_scope=self.kubernetes_scope, files=config.manifests.delivery == "files",
            stack_layout=config.stack_layout,
            namespace_units=namespace_unit_pairs(plan_namespaces(config.namespaces, legacy=legacy)),
            legacy_namespaces=legacy, alarm_topic=alarm_topic is not None)
        self.stack_plan: StackPlan = plan_stack(config, self.context)
        self._files = self.stack_plan.delivery.files
        self.delivery = ManifestDelivery(
            cluster if not self._files else None, owner_labels=dict(self.stack_plan.delivery.owner_labels),
            adopt_existing=str(self.node.try_get_context(ADOPT_EXISTING_CONTEXT)).lower() == "true",
            gitops=self.stack_plan.delivery.gitops)
        self.homes = Homes(self, self.name_scope)
        self.endpoints: dict[str, InferenceEndpoint] = {}
        self._plans: list[EndpointPlan] = []
        self._endpoint_outputs: list[outputs.EndpointOutputs] = []
        #: Where each endpoint's alarms go (its manifest's scope: a nested stack with perNamespace), by ns/name.
        self._alarm_scopes: dict[str, Construct] = {}
        self._plan: ConfigPlan | None = None

        claim_operator(self, self.stack_plan.operator, cluster)
        self.operator = OperatorInstall(self, plan=self.stack_plan.operator, shared=lambda: self.shared,
                                        oidc_provider_arn=self.oidc_provider_arn, delivery=self.delivery,
                                        cluster=cluster, name_scope=self.name_scope, tls_bucket=tls_bucket,
                                        execution_role=execution_role)
        self.execution_role = self.operator.execution_role
        self.tls_bucket = self.operator.tls_bucket
        self.s3_csi_role = self.operator.s3_csi_role
        deliver_namespaces(self, self.delivery, self.stack_plan.namespaces)
        self.aws = AwsSide(self, context=self.context, capture_plan=self.stack_plan.capture,
                           domain_plan=self.stack_plan.domain, oidc_provider_arn=self.oidc_provider_arn,
                           operator=self.operator, capture_bucket=capture_bucket, capture_key=capture_key,
                           hosted_zone=hosted_zone, certificate=certificate)
        self.kubernetes = KubernetesSide(self.delivery, self.context, lambda: list(self.operator.dependencies))
        self.gateways = self.kubernetes.realize_gateways(self, self.stack_plan.gateways)
        outputs.gateway_outputs(self, self.stack_plan.gateways)
        self._report(self.stack_plan.warnings)
        for endpoint in config.endpoints:
            self._add(endpoint)
        outputs.global_outputs(self, self.execution_role, self.tls_bucket.bucket_name)
        self.node.add_validation(SizeLimits(
            stack, self.homes, files=self._files, manifest_problems=self.delivery.size_problems,
            shared_problems=lambda: shared_object_problems(self), documents=self.manifest_documents, names=self))
        self.keda_triggers: KedaTriggerAccess | None = None
        self.observability: InferenceObservability | None = None
        cdk.Aspects.of(self._synth_hook).add(_Finalize(self))

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
        DaemonSet for alike agent pods); the shared pieces are built at synth, so add every endpoint before the app
        is synthesized or its manifests are read (an endpoint added after that is an error).
        """
        return self._add(self._check_against_config(endpoint), scope)

    def _check_against_config(self, endpoint: Endpoint | Mapping[str, Any]) -> Endpoint:
        data = self.config.model_dump(by_alias=True, exclude_none=True)
        given = endpoint.model_dump(by_alias=True, exclude_none=True) if isinstance(endpoint, Endpoint) else \
            dict(endpoint) if isinstance(endpoint, Mapping) else endpoint
        data["endpoints"] = [*(p.endpoint.model_dump(by_alias=True, exclude_none=True) for p in self._plans), given]
        try:
            parsed = parse_config(data, "add_endpoint").endpoints[-1]
        except ConfigError as err:
            prefix = f"endpoints[{len(self._plans)}]"
            problems = [(p[len(prefix):].lstrip(".") or "<endpoint>", m) if p.startswith(prefix) else (p, m)
                        for p, m in err.problems]
            label = f"{given.get('namespace')}/{given.get('name')}" if isinstance(given, dict) else "<endpoint>"
            raise ConfigError(f"add_endpoint({label})", problems) from None
        return endpoint if isinstance(endpoint, Endpoint) else parsed

    def _add(self, endpoint: Endpoint, scope: Construct | None = None) -> InferenceEndpoint:
        if self._plan is not None:
            raise ValueError(f"add_endpoint({endpoint.namespace}/{endpoint.name}): the app was already synthesized "
                             "(or its manifests read); add every endpoint before that")
        # 1. the plan: plain values, no jsii
        plan = plan_endpoint(self.config, endpoint, self.context,
                             scope_key=self.homes.scope_key(scope) if scope is not None else None)
        if scope is None:
            scope = self.homes.nested_stack(*plan.nested_stack) if plan.nested_stack is not None else self
        home = self.homes.home(plan.scope_key)
        self._plans.append(plan)
        self._alarm_scopes[plan.label] = scope
        # 2. the AWS side: roles, grants, capture, domain
        aws = self.aws.realize(plan, scope, home)
        # 3. the charts from the plan plus the AWS values, delivered after the units the plan names
        chart, unit = self.kubernetes.realize(plan, aws.values, aws.new_token_sync, scope, home)
        # 4. the post-deploy check, warnings and outputs
        verification = self.aws.verify(scope, plan, unit)
        self._report(plan.warnings)
        self._endpoint_outputs.append(outputs.endpoint_outputs(scope, plan, verification))
        added = self.endpoints[plan.unit] = InferenceEndpoint(
            endpoint, plan.unit, chart.resource, unit.resource, aws.model_reader_role, aws.token_reader_role,
            verification, plan)
        return added

    def _report(self, warnings: tuple[WarningPlan, ...]) -> None:
        """Config warnings as CDK warnings, or, acknowledged in ``acknowledgeWarnings``, as info with the reason."""
        if not warnings:
            return
        annotations = cdk.Annotations.of(self)
        for w in warnings:
            if w.reason is None:
                annotations.add_warning_v2(w.annotation_id, f"{w.where}: {w.message}")
            else:
                annotations.add_info(f"{w.annotation_id} acknowledged ({w.reason}): {w.where}: {w.message}")

    # ------------------------------------------------------------------------------------------------ at synth
    def _seal(self) -> ConfigPlan:
        """Once every endpoint is added (at synth, or when the manifests are first read): the plan of what every
        endpoint's plan shares and of the observability over them, then the shared pieces (token syncs' grants,
        agent code, warm DaemonSets) and the ownership claim. No endpoint can be added after this. Returns the whole
        plan realized."""
        if self._plan is not None:
            return self._plan
        endpoints = tuple(self._plans)
        shared = plan_shared(endpoints)
        self._plan = ConfigPlan(self.context, self.stack_plan, endpoints, shared, plan_observability(
            self.config.observability, (p.endpoint for p in endpoints), alarm_topic=self.context.alarm_topic))
        self.aws.grant_shared(shared)
        homes = {code.unit: self.homes.namespace_home(code.namespace, code.home) for code, _ in shared.agent_code}
        homes.update({g.unit: self.homes.home(g.scope_key) for g in shared.warm_groups})
        self.kubernetes.realize_shared(shared, homes)
        claim_objects(self, cluster_identity(self.stack_plan.operator.eks_cluster_name, self.cluster, self.account,
                                             self.region), (u.delivered for u in self.delivery.units.values()))
        return self._plan

    def _finalize(self) -> None:
        """At synth, once every endpoint is added: the shared pieces, KEDA's trigger grants, observability, then
        the output fold."""
        plan = self._seal()
        if self.keda_triggers is None:
            roles = self.operator.dependency_roles
            self.keda_triggers = KedaTriggerAccess(self, KEDA_TRIGGERS_ID, needs=plan.shared.keda, account=self.account,
                                                   keda_role=roles.keda_role if roles is not None else None)
        obs = plan.observability
        if self.observability is None and obs is not None:
            self.observability = InferenceObservability(
                self, obs.construct_id, scope_name=self.name_scope, region=self.region, settings=obs.settings,
                endpoints=list(obs.endpoints), alarm_topic=self._alarm_topic,
                alarm_scopes=self._alarm_scopes,
                capture_bucket=self.capture.bucket_name if self.capture else None,
                work_group=self.capture_analytics.work_group_name if self.capture_analytics else None)
            outputs.observability_outputs(self, self.observability, self.region)
        outputs.nested_stack_outputs(self, self.nested_stacks, self.region)
        self._endpoint_outputs = outputs.fold_outputs(self.stack, list(self.nested_stacks.values()),
                                                      self._endpoint_outputs)

    # ------------------------------------------------------------------------------------------------ reading
    capture: DataCaptureStorage | None = property(lambda self: self.aws.capture)  # type: ignore[assignment]
    capture_analytics: CaptureAnalytics | None = property(  # type: ignore[assignment]
        lambda self: self.aws.capture_analytics)
    domain: CustomDomain | None = property(lambda self: self.aws.domain)  # type: ignore[assignment]
    nested_stacks = property(lambda self: self.homes.nested_stacks)

    def stack_label(self, stack: cdk.Stack) -> str:
        return self.homes.stack_label(stack)

    def template_labels(self) -> dict[str, tuple[str, str]]:
        return self.homes.template_labels()

    @property
    def plans(self) -> tuple[EndpointPlan, ...]:
        """Every endpoint's plan, in the order they were added."""
        return tuple(self._plans)

    @property
    def shared(self) -> SharedPlan:
        """What the endpoints share (reading it seals this construct, as synth does: no endpoint can be added)."""
        return self._seal().shared

    @property
    def plan(self) -> ConfigPlan:
        """The whole plan this construct realizes (reading it seals this construct, as synth does)."""
        return self._seal()

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


@jsii.implements(cdk.IAspect)
class _Finalize:
    def __init__(self, owner: HyperPodInference) -> None:
        self.owner = owner

    def visit(self, node: IConstruct) -> None:
        if node is self.owner._synth_hook:
            self.owner._finalize()
