"""HyperPodInferenceStack: one CloudFormation stack for HyperPod inference on an existing HyperPod EKS cluster.

Composition and order (deletion runs in reverse, so the operator outlives the resources it finalizes):
  dependency add-ons -> operator (add-on or chart) -> roles, service accounts, secrets -> custom resources.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
import cdk8s
import jsii
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IValidation

from .charts.endpoint import EndpointChart, EndpointWiring, add_objects
from .charts.hf_token import external_secret_objects, token_names, token_secret_ref
from .charts.nvme_cache import NvmeAgentCode, NvmeCache, NvmeCachePlan, model_reader_service_account
from .charts.operator import OperatorChart, OperatorChartProps
from .charts.runtimes import PRESETS
from .config.models import Endpoint, HyperPodConfig
from .constructs.data_capture import DataCaptureStorage
from .constructs.domain import CustomDomain, delegation_instructions
from .constructs.endpoint_verification import EndpointVerification
from .constructs.irsa import ServiceAccountRef, ServiceAccountRole
from .constructs.model_access import grant_model_read, grant_secret_read
from .constructs.operator import (
    OPERATOR_NAMESPACE,
    DependencyAddons,
    OperatorAddon,
    OperatorDependencyRoles,
    OperatorExecutionRole,
    TlsBucket,
)
from .manifests import with_placeholders, write_manifest_files

# Size limits checked at synth (issue: a manifest that the kubectl provider cannot carry fails late and badly).
MAX_MANIFEST_BYTES = 256 * 1024
MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_RESOURCES = 500
MAX_OUTPUTS = 200  # CloudFormation's limit of Outputs per template

# cdk-nag findings inside aws-cdk-lib's own kubectl provider nested stack; exact IDs as cdk-nag prints them.
KUBECTL_PROVIDER_ACKS = {
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]":
        "aws-cdk-lib's kubectl provider Lambdas use the AWS basic execution role for their logs",
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly]":
        "aws-cdk-lib's kubectl handler needs ECR pull for Helm OCI charts",
    'AwsSolutions::AwsSolutions-IAM4[Policy::{"Fn::If":["HandlerHasEcrPublic195AF58A",{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},{"Ref":"AWS::NoValue"}]}]':
        "aws-cdk-lib's kubectl handler: conditional ECR Public read-only policy",
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]":
        "private API endpoint (cluster.kubectlSubnetIds): aws-cdk-lib's kubectl provider Lambdas run in the VPC",
    "AwsSolutions::AwsSolutions-L1": "aws-cdk-lib pins the kubectl handler's runtime; not under this library's control",
    "AwsSolutions::AwsSolutions-IAM5[Resource::<Handler886CB40B.Arn>:*]":
        "aws-cdk-lib's provider framework may invoke any version of its kubectl handler",
}


def _pascal(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", name) if p)


@dataclass
class ManifestUnit:
    """One chart: one review file and (kubectl delivery) one KubernetesManifest resource."""

    name: str
    chart: cdk8s.Chart
    depends_on: list[str] = field(default_factory=list)  # other units, by name
    after: list[Construct] = field(default_factory=list)  # AWS-side constructs that must exist first
    custom_resource: bool = False
    resource: Construct | None = None

    def objects(self) -> list[dict[str, Any]]:
        return list(self.chart.to_json())


class HyperPodInferenceStack(cdk.Stack):
    """Everything HyperPod inference needs on an existing cluster, from one validated config.

    :param config: the validated config (``hyperpod_inference.config.load_config``)
    :param kwargs: other ``cdk.StackProps``; ``env`` defaults to ``config.env``.

    Attributes a CDK user may build on: ``execution_role``, ``tls_bucket``, ``capture`` (DataCaptureStorage),
    ``domain`` (CustomDomain), ``custom_resources`` (chart name -> the synthesized custom resource) and
    ``manifest_resources`` (chart name -> the KubernetesManifest applying it, kubectl delivery only).
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: HyperPodConfig, **kwargs: Any) -> None:
        kwargs.setdefault("env", cdk.Environment(account=config.env.account, region=config.env.region))
        kwargs.setdefault("description", "SageMaker HyperPod inference (hyperpod-inference-cdk)")
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.k8s_app = cdk8s.App()
        self.units: list[ManifestUnit] = []
        self.custom_resources: dict[str, dict[str, Any]] = {}
        self.manifest_resources: dict[str, eks.KubernetesManifest] = {}
        self.operator_dependencies: list[Construct] = []  # what custom resources must wait for (and outlive them)
        self.verifications: dict[str, EndpointVerification] = {}
        self.operator_unit: ManifestUnit | None = None  # install: chart only
        self.cluster = self._import_cluster() if config.manifests.delivery == "kubectl" else None

        self._operator()
        self.capture = self._capture()
        self.domain = self._domain()
        self._add_namespaces()
        for endpoint in config.endpoints:
            self._add_endpoint(endpoint)
        self._apply()
        self._verify()
        self._outputs()
        self.node.add_validation(_SizeLimits(self))

    # ------------------------------------------------------------------------------------------------- cluster
    def _import_cluster(self) -> eks.ICluster:
        from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer

        c = self.config.cluster
        oidc = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(self, "OidcProvider", c.oidc_provider_arn)
        extra: dict[str, Any] = {}
        if c.kubectl_subnet_ids:
            from aws_cdk import aws_ec2 as ec2

            extra["vpc"] = ec2.Vpc.from_vpc_attributes(self, "ClusterVpc", vpc_id=c.vpc_id,
                                                        availability_zones=cdk.Fn.get_azs())
            extra["kubectl_private_subnet_ids"] = list(c.kubectl_subnet_ids)
            if c.kubectl_security_group_id:
                extra["kubectl_security_group_id"] = c.kubectl_security_group_id
        return eks.Cluster.from_cluster_attributes(
            self, "Cluster", cluster_name=c.eks_cluster_name, kubectl_role_arn=c.kubectl_role_arn,
            kubectl_layer=KubectlV33Layer(self, "KubectlLayer"), open_id_connect_provider=oidc, **extra)

    # ------------------------------------------------------------------------------------------------ operator
    def _operator(self) -> None:
        op, c = self.config.operator, self.config.cluster
        gated_namespaces = sorted({ep.namespace for ep in self.config.endpoints if ep.is_jumpstart}) or \
            sorted({ep.namespace for ep in self.config.endpoints}) or ["default"]
        self.tls_bucket = TlsBucket(self, "TlsBucket", bucket_name=op.tls_bucket_name)
        if op.install == "existing":
            self.execution_role: iam.IRole = iam.Role.from_role_arn(self, "ExecutionRole", op.execution_role_arn,
                                                                   mutable=True)
            self.dependency_roles = None
            self.s3_csi_role: iam.IRole | None = (iam.Role.from_role_arn(self, "S3CsiDriverRole", op.s3_csi_driver_role_arn)
                                                  if op.s3_csi_driver_role_arn else None)
            return
        self.execution_role = OperatorExecutionRole(self, "ExecutionRole", oidc_provider_arn=c.oidc_provider_arn,
                                                    install_mode=op.install)
        self.dependency_roles = OperatorDependencyRoles(
            self, "DependencyRoles", oidc_provider_arn=c.oidc_provider_arn, namespaces_for_gated=gated_namespaces,
            alb_role_arn=op.alb_controller_role_arn, keda_role_arn=op.keda_role_arn,
            s3_csi_role_arn=op.s3_csi_driver_role_arn)
        self.s3_csi_role = self.dependency_roles.s3_csi_role
        deps: list[Construct] = []
        if op.dependencies == "create":
            deps.append(DependencyAddons(self, "DependencyAddons", cluster_name=c.eks_cluster_name,
                                         s3_csi_role_arn=self.s3_csi_role.role_arn))
        files = self.config.manifests.delivery == "files"
        if op.install == "addon":
            addon = OperatorAddon(
                self, "OperatorAddon", cluster_name=c.eks_cluster_name, version=op.version,
                addon_version=op.addon_version, execution_role_arn=self.execution_role.role_arn,
                tls_bucket_name=self.tls_bucket.bucket_name, hyperpod_cluster_arn=c.hyperpod_cluster_arn,
                enable_custom_service_accounts=self.config.needs_custom_service_accounts,
                jumpstart_gated_model_download_role_arn=self.dependency_roles.jumpstart_gated_role.role_arn,
                alb_role_arn=self.dependency_roles.alb_role.role_arn,
                keda_role_arn=self.dependency_roles.keda_role.role_arn,
                preserve_on_delete=files)
            addon.node.add_dependency(self.tls_bucket, *deps)
            self.operator_dependencies.append(addon)
            return
        # install: chart -- the operator's objects as a cdk8s chart, applied after the dependency add-ons
        if self.cluster is not None and op.dependencies == "create":
            deps.extend(self._helm_dependencies())
        elif op.dependencies == "create":
            cdk.Annotations.of(self).add_warning_v2(
                "hyperpod-inference:chartFilesDependencies",
                "install: chart with manifests.delivery: files: the ALB controller and KEDA Helm charts are not "
                "applied by the stack; install them into hyperpod-inference-system yourself (their IRSA roles are "
                "created)")
        chart = OperatorChart(self.k8s_app, "operator", props=OperatorChartProps(
            version=op.version, region=self.region, execution_role_arn=self.execution_role.role_arn,
            tls_bucket_name=self.tls_bucket.bucket_name, eks_cluster_name=c.eks_cluster_name,
            hyperpod_cluster_arn=c.hyperpod_cluster_arn,
            jumpstart_gated_model_download_role_arn=self.dependency_roles.jumpstart_gated_role.role_arn,
            enable_custom_service_accounts=self.config.needs_custom_service_accounts, crd_source=op.crd_source))
        unit = ManifestUnit("operator", chart, after=[self.tls_bucket, *deps])
        self.units.append(unit)
        self.operator_unit = unit

    def _helm_dependencies(self) -> list[Construct]:
        """Chart mode: the ALB controller and KEDA from their public Helm charts, in the operator's namespace."""
        assert self.cluster is not None and self.dependency_roles is not None
        alb = self.cluster.add_helm_chart(
            "AlbController", chart="aws-load-balancer-controller", repository="https://aws.github.io/eks-charts",
            version="1.13.2", namespace=OPERATOR_NAMESPACE, create_namespace=True, release="aws-load-balancer-controller",
            values={"clusterName": self.config.cluster.eks_cluster_name, "region": self.region,
                    "vpcId": self.config.cluster.vpc_id,
                    "serviceAccount": {"create": True, "name": "aws-load-balancer-controller",
                                       "annotations": {"eks.amazonaws.com/role-arn": self.dependency_roles.alb_role.role_arn}}})
        keda = self.cluster.add_helm_chart(
            "Keda", chart="keda", repository="https://kedacore.github.io/charts", version="2.17.1",
            namespace=OPERATOR_NAMESPACE, create_namespace=True, release="keda",
            values={"podIdentity": {"aws": {"irsa": {"enabled": True,
                                                     "roleArn": self.dependency_roles.keda_role.role_arn}}}})
        return [alb, keda]

    # ------------------------------------------------------------------------------------------------- capture
    def _capture(self) -> DataCaptureStorage | None:
        cap = self.config.capture
        if cap is None or not self.config.capture_enabled:
            return None
        storage = DataCaptureStorage(
            self, "DataCapture", bucket_name=cap.bucket_name, bucket_account=cap.bucket_account,
            bucket_default_kms=cap.bucket_encryption == "SSE-KMS", prefix=cap.prefix,
            retention_days=cap.retention_days, kms=cap.kms, alb_logs=self.config.alb_logs_enabled)
        storage.grant_capture_write(self.execution_role)
        if self.s3_csi_role is not None:
            storage.grant_capture_write(self.s3_csi_role, multipart=True)
        return storage

    # -------------------------------------------------------------------------------------------------- domain
    def _domain(self) -> CustomDomain | None:
        d = self.config.domain
        names = [ep.domain_name for ep in self.config.endpoints if ep.domain_name]
        if d is None or not names:
            return None
        domain = CustomDomain(self, "Domain", zone_name=d.zone_name, domain_names=names,
                              hosted_zone_id=d.hosted_zone_id, certificate_arn=d.certificate_arn, wildcard=d.wildcard)
        domain.grant_dns_management(self.execution_role)
        domain.grant_certificate_read(self.execution_role)
        self.tls_bucket.grant_operator_access(self.execution_role)
        return domain

    # ----------------------------------------------------------------------------------------------- k8s objects
    def add_chart(self, name: str, *, depends_on: list[str] | None = None) -> cdk8s.Chart:
        """A new chart whose objects land in ``manifests/<name>.yaml`` and (kubectl) in one manifest resource."""
        chart = cdk8s.Chart(self.k8s_app, name, disable_resource_name_hashes=True)
        self.units.append(ManifestUnit(name, chart, list(depends_on or [])))
        return chart

    def _add_namespaces(self) -> None:
        if not self.config.namespaces:
            return
        chart = self.add_chart("namespaces")
        add_objects(chart, [{"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": ns, "labels": {"app.kubernetes.io/managed-by": "hyperpod-inference-cdk"}}}
                            for ns in self.config.namespaces])

    def _service_account_role(self, endpoint: Endpoint, sa_name: str, purpose: str) -> ServiceAccountRole:
        return ServiceAccountRole(
            self, f"{_pascal(endpoint.namespace)}{_pascal(endpoint.name)}{purpose}Role",
            oidc_provider_arn=self.config.cluster.oidc_provider_arn,
            service_account=ServiceAccountRef(endpoint.namespace, sa_name),
            description=f"{purpose} for {endpoint.namespace}/{endpoint.name} (hyperpod-inference-cdk)")

    def _add_endpoint(self, endpoint: Endpoint) -> None:
        name = f"{endpoint.namespace}-{endpoint.name}"
        base_deps = ["namespaces"] if endpoint.namespace in self.config.namespaces else []
        support_objs: list[dict[str, Any]] = []
        token = token_secret_ref(endpoint)
        hf = endpoint.model.huggingface
        if hf is not None and hf.token is not None and hf.token.secrets_manager_arn:
            role = self._service_account_role(endpoint, token_names(endpoint)["service_account"], "HfToken")
            grant_secret_read(role, secret_arn=hf.token.secrets_manager_arn, kms_key_arn=hf.token.kms_key_arn)
            support_objs += external_secret_objects(endpoint, region=self.region, role_arn=role.role_arn)
        s3 = endpoint.model.s3
        wiring: dict[str, Any] = {"region": self.region}
        plan = None
        if endpoint.weight_cache.mode == "daemonset":
            sa_name = None
            if s3 is not None:
                sa = model_reader_service_account(endpoint, None)
                sa_name = sa["metadata"]["name"]
                role = self._service_account_role(endpoint, sa_name, "ModelReader")
                grant_model_read(role, bucket=s3.bucket, prefix=s3.prefix, kms_key_arn=s3.kms_key_arn)
                support_objs.append(model_reader_service_account(endpoint, role.role_arn))
            plan = NvmeCachePlan(endpoint, self.region, token, sa_name)
            wiring.update(kubernetes_volumes=plan.volumes(), init_containers=plan.init_containers(),
                          model_volume_name=endpoint.weight_cache.volume_name, service_account_name=sa_name)
        else:
            wiring["token_secret"] = token
            if s3 is not None and self.s3_csi_role is not None:
                # The operator mounts the bucket through the S3 CSI driver: read on exactly this model's prefix.
                grant_model_read(self.s3_csi_role, bucket=s3.bucket, prefix=s3.prefix, kms_key_arn=s3.kms_key_arn)
        if self.capture is not None and endpoint.data_capture is not None and endpoint.data_capture.any_enabled:
            wiring.update(capture_s3_uri=self.capture.s3_uri, capture_kms_key_id=self.capture.kms_key_id)
        if endpoint.domain_name and self.domain is not None:
            wiring.update(certificate_arn=self.domain.certificate_arn, hosted_zone_id=self.domain.hosted_zone_id,
                          tls_output_s3_uri=self.tls_bucket.s3_uri)
        deps = list(base_deps)
        support_deps = list(base_deps)
        if plan is not None:
            support_deps.append(self._agent_code_unit(endpoint.namespace, base_deps))
        if support_objs or plan is not None:
            support = self.add_chart(f"{name}-support", depends_on=support_deps)
            add_objects(support, support_objs)
            if plan is not None:
                NvmeCache(support, "NvmeCache", plan=plan)
            deps.append(support.node.id)
        chart = EndpointChart(self.k8s_app, name, endpoint=endpoint, wiring=EndpointWiring(**wiring))
        self.units.append(ManifestUnit(name, chart, deps, after=list(self.operator_dependencies), custom_resource=True))
        self.custom_resources[name] = chart.resource
        if hf is not None and hf.commit_sha is None:
            cdk.Annotations.of(self).add_warning_v2(
                f"hyperpod-inference:unpinned:{name}",
                f"endpoints {endpoint.namespace}/{endpoint.name}: no commitSHA, so the deployment follows the Hub's "
                "main branch and is not reproducible; pin model.huggingface.commitSHA")
        if hf is not None and hf.token is not None and not hf.prefetch and endpoint.weight_cache.mode != "daemonset":
            cdk.Annotations.of(self).add_warning_v2(
                f"hyperpod-inference:tokenInRuntime:{name}",
                f"endpoints {endpoint.namespace}/{endpoint.name}: with prefetch: false the operator also gives the "
                "Hugging Face token to the model server container; set prefetch: true to keep it in the init container")
        pod = endpoint.data_capture.model_pod if endpoint.data_capture else None
        if pod is not None and pod.enabled and (pod.initial_sampling_percentage in (None, 100)) \
                and not pod.max_payload_size_kb:
            cdk.Annotations.of(self).add_warning_v2(
                f"hyperpod-inference:fullCapture:{name}",
                f"endpoints {endpoint.namespace}/{endpoint.name}: modelPod capture samples 100% of requests with no "
                "payload cap (maxPayloadSizeKB); every full request and response is stored")

    def _agent_code_unit(self, namespace: str, depends_on: list[str]) -> str:
        """The namespace's shared NVMe agent code chart (created once), by unit name."""
        name = f"{namespace}-nvme-agent-code"
        if not any(u.name == name for u in self.units):
            NvmeAgentCode(self.add_chart(name, depends_on=depends_on), "AgentCode", namespace=namespace)
        return name

    # ------------------------------------------------------------------------------------------------ apply
    def _apply(self) -> None:
        if self.cluster is None:
            return
        by_name: dict[str, ManifestUnit] = {}
        for unit in self.units:
            objs = unit.objects()
            if not objs:
                continue
            resource = eks.KubernetesManifest(self, f"Manifest{_pascal(unit.name)}", cluster=self.cluster,
                                              manifest=objs, overwrite=True)
            unit.resource = resource
            self.manifest_resources[unit.name] = resource
            for dep in unit.depends_on:
                if dep in by_name and by_name[dep].resource is not None:
                    resource.node.add_dependency(by_name[dep].resource)
            if unit.after:
                resource.node.add_dependency(*unit.after)
            if unit.custom_resource and self.operator_unit is not None and self.operator_unit.resource is not None:
                resource.node.add_dependency(self.operator_unit.resource)
            by_name[unit.name] = unit
        provider = self.node.try_find_child(f"{cdk.Names.node_unique_id(self.cluster.node)}-KubectlProvider")
        if provider is not None:
            cdk.Validations.of(provider).acknowledge(
                *[cdk.Acknowledgment(id=k, reason=v) for k, v in KUBECTL_PROVIDER_ACKS.items()])

    def _verify(self) -> None:
        for ep in self.config.endpoints:
            if ep.verify is None or ep.sagemaker_endpoint_name is None:
                continue
            name = f"{ep.namespace}-{ep.name}"
            preset = PRESETS.get(ep.effective_runtime or "")
            payload = ep.verify.payload or (preset.default_payload if preset else '{"inputs": "Hello"}')
            check = EndpointVerification(
                self, f"Verify{_pascal(name)}", endpoint_name=ep.sagemaker_endpoint_name, payload=payload,
                content_type=ep.verify.content_type, fail_deployment=ep.verify.fail_deployment,
                timeout=cdk.Duration.minutes(ep.verify.timeout_minutes))
            if name in self.manifest_resources:
                check.node.add_dependency(self.manifest_resources[name])
            self.verifications[name] = check

    # ------------------------------------------------------------------------------------------------ outputs
    def _outputs(self) -> None:
        region = self.region
        per_endpoint: list[tuple[Endpoint, str, list[cdk.CfnOutput]]] = []
        for ep in self.config.endpoints:
            key = f"{_pascal(ep.namespace)}{_pascal(ep.name)}"
            outs: list[cdk.CfnOutput] = []
            per_endpoint.append((ep, key, outs))
            kind = ep.kind.lower()
            status = (f"kubectl describe {kind} {ep.name} -n {ep.namespace} ; "
                      f"kubectl get events -n {ep.namespace} --field-selector involvedObject.name={ep.name}")
            if ep.domain_name:
                status += (f" ; kubectl get {kind} {ep.name} -n {ep.namespace} "
                           "-o jsonpath='{.status.dnsStatus}{\"\\n\"}{.status.tlsCertificate}'")
            outs.append(cdk.CfnOutput(self, f"{key}Status", value=status, description=(
                f"{ep.namespace}/{ep.name}: deployment status, events (and DNS/TLS status)")))
            calls = []
            if ep.domain_name:
                calls.append(f"https://{ep.domain_name}/")
            if ep.sagemaker_endpoint_name:
                preset = PRESETS.get(ep.effective_runtime or "")
                payload = (ep.verify.payload if ep.verify and ep.verify.payload else
                           preset.default_payload if preset else '{"inputs": "Hello"}')
                content_type = ep.verify.content_type if ep.verify else "application/json"
                calls.append(
                    f"aws sagemaker-runtime invoke-endpoint --endpoint-name {ep.sagemaker_endpoint_name} "
                    f"--content-type {content_type} --body '{payload}' --region {region} "
                    "--cli-binary-format raw-in-base64-out /dev/stdout")
            if calls:
                outs.append(cdk.CfnOutput(self, f"{key}Invoke", value=" ; ".join(calls),
                                          description=f"{ep.namespace}/{ep.name}: URL and invoke command"))
            name = f"{ep.namespace}-{ep.name}"
            if name in self.verifications:
                outs.append(cdk.CfnOutput(self, f"{key}Verification", value=self.verifications[name].summary,
                                          description=f"{ep.namespace}/{ep.name}: post-deploy check"))
        if self.capture is not None:
            prefixes = self.capture.tier_prefixes()
            cdk.CfnOutput(self, "CaptureBucket", value=self.capture.bucket_name,
                          description="Data capture bucket (retained on delete)")
            cdk.CfnOutput(self, "CapturePrefixes", description=(
                "Where each tier writes; <hash> is computed by the operator per deployment (cluster ARN, namespace, "
                "kind, name)"), value=" ; ".join(f"{tier}: {uri}" for tier, uri in prefixes.items())
                + f" ; list: aws s3 ls {self.capture.s3_uri}/ --recursive")
            owner_bucket = self.capture.owner_bucket_policy_statements()
            if owner_bucket:
                cdk.CfnOutput(self, "CaptureBucketPolicyToAdd", value=cdk.Stack.of(self).to_json_string(owner_bucket),
                              description="Imported bucket: statements its owner must add to the bucket policy")
            if self.capture.imported_key:
                principals = [self.execution_role.role_arn] + ([self.s3_csi_role.role_arn] if self.s3_csi_role else [])
                cdk.CfnOutput(self, "CaptureKeyPolicyToAdd",
                              value=cdk.Stack.of(self).to_json_string(self.capture.owner_key_policy_statements(principals)),
                              description="Imported key: statements its owner must add to the key policy")
        if self.domain is not None and self.domain.created_zone and self.domain.name_servers is not None:
            cdk.CfnOutput(self, "DomainNameServers", value=cdk.Fn.join(",", self.domain.name_servers),
                          description=delegation_instructions(self.config.domain.zone_name)[:1000])
        cdk.CfnOutput(self, "OperatorExecutionRoleArn", value=self.execution_role.role_arn)
        cdk.CfnOutput(self, "TlsBucketName", value=self.tls_bucket.bucket_name)
        # Over CloudFormation's 200 outputs (2-3 per endpoint): one output per endpoint instead, the same values joined.
        if len([c for c in self.node.children if isinstance(c, cdk.CfnOutput)]) > MAX_OUTPUTS:
            for ep, key, outs in per_endpoint:
                for out in outs:
                    self.node.try_remove_child(out.node.id)
                cdk.CfnOutput(self, f"{key}Outputs", value=" ; ".join(out.value for out in outs), description=(
                    f"{ep.namespace}/{ep.name}: status and events commands, URL and invoke command, post-deploy check"))

    # --------------------------------------------------------------------------------------------- manifests
    def manifest_documents(self) -> dict[str, list[dict[str, Any]]]:
        """Every chart's objects, deploy-time values shown as placeholders (``<LogicalId.Attr>``)."""
        objects = [(u.name, u.objects()) for u in self.units]  # each chart synthesized once
        return {name: with_placeholders(self, objs) for name, objs in objects if objs}

    def write_manifests(self, outdir: str) -> list[str]:
        """Write ``<outdir>/manifests/<chart>.yaml`` (one file per chart)."""
        import os

        return [str(p) for p in write_manifest_files(os.path.join(outdir, "manifests"), self.manifest_documents())]


@jsii.implements(IValidation)
class _SizeLimits:
    """Synth-time limits: a manifest the kubectl provider cannot carry, or a stack CloudFormation refuses, fails here
    with the part that is too big named."""

    def __init__(self, stack: HyperPodInferenceStack) -> None:
        self.stack = stack

    def validate(self) -> list[str]:
        return size_problems(self.stack)


def size_problems(stack: HyperPodInferenceStack) -> list[str]:
    problems = []
    for unit in stack.units:
        size = len(json.dumps(unit.objects(), separators=(",", ":")))
        if size > MAX_MANIFEST_BYTES:
            problems.append(f"manifest '{unit.name}' is {size} bytes; the kubectl provider takes at most "
                            f"{MAX_MANIFEST_BYTES} bytes per manifest")
    resources = [c for c in stack.node.find_all() if isinstance(c, cdk.CfnResource)
                 and cdk.Stack.of(c) is stack]
    if len(resources) > MAX_RESOURCES:
        problems.append(f"stack has {len(resources)} resources; CloudFormation allows {MAX_RESOURCES} "
                        "(split the endpoints across stacks)")
    outputs = [c for c in stack.node.children if isinstance(c, cdk.CfnOutput)]
    if len(outputs) > MAX_OUTPUTS:
        problems.append(f"stack has {len(outputs)} outputs; CloudFormation allows {MAX_OUTPUTS} "
                        "(split the endpoints across stacks)")
    return problems


def template_size_problems(assembly_dir: str) -> list[str]:
    """After synth: every template of the assembly must stay under CloudFormation's 1 MB limit (when deployed from
    S3, as the CLI does for large templates)."""
    import pathlib

    problems = []
    for path in sorted(pathlib.Path(assembly_dir).glob("*.template.json")):
        size = path.stat().st_size
        if size > MAX_TEMPLATE_BYTES:
            problems.append(f"template {path.name} is {size} bytes; CloudFormation allows {MAX_TEMPLATE_BYTES} "
                            "(split the endpoints across stacks)")
    return problems
