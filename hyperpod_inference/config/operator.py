"""The ``operator`` and ``manifests`` sections: how the operator is installed and how the objects reach the cluster."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    StringConstraints,
    model_validator,
)

from ..facts import gitops as gitops_facts
from ..facts import operator as operator_facts
from ..facts import production as prod_facts
from ..facts import rules
from .base import (
    BucketName,
    CrdPaths,
    NoCrd,
    RoleArn,
    Strict,
    _err,
    _raise_all,
)


# ----------------------------------------------------------------------------------------------------------- operator
class Operator(Strict):
    """How the HyperPod inference operator is installed (add-on, cdk8s chart, or already there)."""

    crd_paths: ClassVar[CrdPaths] = {
        "install": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom resource "
                         "field"),
        "version": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom resource "
                         "field"),
        "dependencies": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                              "resource field"),
        "tls_bucket_name": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                                 "resource field"),
        "crd_source": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                            "resource field"),
        "addon_version": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                               "resource field"),
        "alb_controller_role_arn": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a "
                                         "custom resource field"),
        "keda_role_arn": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom "
                               "resource field"),
        "s3_csi_driver_role_arn": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a "
                                        "custom resource field"),
        "execution_role_arn": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a custom"
                                    " resource field"),
        "sagemaker_source_account": NoCrd("operator installation (add-on configurationValues, chart or IAM), not a "
                                          "custom resource field"),
        "addon_configuration_overrides": NoCrd("operator installation (add-on configurationValues, chart or IAM), "
                                               "not a custom resource field"),
    }
    install: Literal["addon", "chart", "existing"] = "addon"
    """addon (the EKS add-on), chart (the operator's Helm chart as a cdk8s chart), or existing (installs nothing; needs
    executionRoleArn)."""
    version: Literal[operator_facts.OPERATOR_VERSIONS] = operator_facts.DEFAULT_OPERATOR_VERSION  # type: ignore[valid-type]
    """The operator version whose CRD fields the config may use (fields the version lacks are refused). v3.2 and v3.3
    are validated against their CRDs; v3.4 to v3.7 are accepted with a warning (their CRD text is not public: their
    fields are sourced from AWS's documentation and the chart's pull requests)."""
    dependencies: Literal["create", "existing"] = "create"
    """create the S3 / FSx CSI drivers, metrics-server and cert-manager add-ons, or use existing ones."""
    tls_bucket_name: BucketName | None = None
    """Import this TLS certificate bucket; null creates hyperpod-tls-<stack>-<account>-<region> (retained). A name
    outside hyperpod-tls* gets this stack's folder, hyperpod-inference/<stack>/, and the operator's grant only there."""
    crd_source: str | None = None
    """install: chart only: a folder holding the operator's CRD YAML files."""
    addon_version: Annotated[str, StringConstraints(pattern=rules.EKS_ADDON_VERSION)] | None = None
    """install: addon only: pin the add-on version (vX.Y.Z-eksbuild.N); default from the version table."""
    alb_controller_role_arn: RoleArn | None = None
    """Use this IRSA role for the ALB controller instead of creating one."""
    keda_role_arn: RoleArn | None = None
    """Use this IRSA role for KEDA instead of creating one."""
    s3_csi_driver_role_arn: RoleArn | None = None
    """Use this IRSA role for the S3 CSI driver instead of creating one."""
    execution_role_arn: RoleArn | None = None  # install: existing: the operator's role (feature policies attach to it)
    """install: existing only: the operator's execution role (feature policies attach to it)."""
    # sagemaker.amazonaws.com trusts require aws:SourceAccount = env.account (false drops the condition)
    sagemaker_source_account: bool = True
    """The sagemaker.amazonaws.com trusts require aws:SourceAccount = env.account; false drops the condition."""
    addon_configuration_overrides: dict[str, Any] | None = Field(
        default=None, description="install: addon only: an RFC 7386 merge patch applied last to the add-on's "
                                  "configurationValues (refused on the keys the library sets).")

    @model_validator(mode="after")
    def _install_rules(self) -> Operator:
        errors = []
        if self.install == "existing" and not self.execution_role_arn:
            errors.append(_err(("executionRoleArn",), "required with install: existing (the features grant it access)"))
        if self.execution_role_arn and self.install != "existing":
            errors.append(_err(("executionRoleArn",), "only used with install: existing; the stack creates the role "
                               "for addon and chart", self.execution_role_arn))
        role_problem = self.execution_role_arn and rules.execution_role_name_problem(
            rules.role_name_from_arn(self.execution_role_arn), operator_facts.EXECUTION_ROLE_NAME_PREFIX)
        if role_problem:
            errors.append(_err(("executionRoleArn",), role_problem, self.execution_role_arn))
        if self.install == "chart" and not self.crd_source:
            errors.append(_err(("crdSource",), "required with install: chart (a folder holding the operator's CRD YAML files)"))
        if self.crd_source and self.install != "chart":
            errors.append(_err(("crdSource",), "only used with install: chart", self.crd_source))
        if self.install == "existing" and self.dependencies == "create":
            errors.append(_err(("dependencies",), "install: existing installs nothing; set dependencies: existing",
                               self.dependencies))
        release = operator_facts.release(self.version)
        if self.install == "addon" and not self.addon_version and release.addon_version is None:
            errors.append(_err(("addonVersion",), f"required with install: addon and version {self.version}: no "
                               f"add-on version is known to ship operator {self.version} (pin the one that does)"))
        if self.install == "chart" and not release.crd_public:
            validated = ", ".join(operator_facts.VALIDATED_OPERATOR_VERSIONS)
            errors.append(_err(("version",), f"install: chart renders the operator's Helm chart as the library "
                               f"validated it ({validated}); chart {release.chart_version} of {self.version} is "
                               "known from its pull-request text only (and the Inference Gateway is installed by the "
                               "add-on only): use install: addon or existing", self.version))
        if self.addon_version and self.install != "addon":
            errors.append(_err(("addonVersion",), "only used with install: addon", self.addon_version))
        if self.addon_configuration_overrides is not None:
            if self.install != "addon":
                errors.append(_err(("addonConfigurationOverrides",), "only used with install: addon"))
            for path, key in prod_facts.addon_override_conflicts(self.addon_configuration_overrides):
                errors.append(_err(("addonConfigurationOverrides", *path),
                                   f"set by the library; use {key}"))
        _raise_all(type(self), errors)
        return self


class Manifests(Strict):
    """kubectl: the stack applies the charts through the cluster's kubectl provider. files: written for GitOps only."""

    crd_paths: ClassVar[CrdPaths] = {
        "delivery": NoCrd("how the stack delivers the manifests"),
        "gitops": NoCrd("how the stack delivers the manifests"),
    }
    delivery: Literal["kubectl", "files"] = "kubectl"
    """kubectl: the stack applies the objects through the cluster's kubectl provider; files: written for GitOps only
    (every value must be known at synth)."""
    gitops: Literal[gitops_facts.TOOLS] = gitops_facts.NO_TOOL  # type: ignore[valid-type]
    """delivery: files only. The tool that applies the files: argocd adds sync waves
    (``argocd.argoproj.io/sync-wave``) in dependency order; flux and none write the folder as it is (Flux's
    kustomize-controller applies namespaces first on its own). Every folder gets a ``kustomization.yaml``."""

    @model_validator(mode="after")
    def _gitops_with_files(self) -> Manifests:
        if self.gitops != gitops_facts.NO_TOOL and self.delivery != "files":
            _raise_all(type(self), [_err(("gitops",), "only used with delivery: files (the stack applies the objects "
                                                      "itself with delivery: kubectl)", self.gitops)])
        return self


