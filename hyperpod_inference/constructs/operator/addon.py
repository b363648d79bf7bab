"""The ``amazon-sagemaker-hyperpod-inference`` EKS add-on and its ``configurationValues``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_eks as eks
from constructs import Construct

from ...facts import rules
from ...facts.operator import (
    EXECUTION_ROLE_NAME_PREFIX,
    OPERATOR_ADDON_NAME,
    OPERATOR_ADDON_VERSIONS,
    OPERATOR_VERSIONS,
    OperatorVersion,
)
from ...facts.production import merge_patch
from ..lazy import is_unresolved
from ._common import _check_cluster_name, _check_role_arn, _raise_if


class OperatorAddon(Construct):
    """The ``amazon-sagemaker-hyperpod-inference`` EKS add-on.

    ``configurationValues`` carries exactly: ``executionRoleArn``, ``tlsCertificateS3Bucket`` (a bucket name, as
    the add-on documents it; never the per-stack folder of a bucket outside ``hyperpod-tls*``, which every custom
    resource of the stack names in its own ``tlsCertificateOutputS3Uri``),
    ``hyperpodClusterArn`` (omitted when None), ``enableCustomServiceAccounts``,
    ``jumpstartGatedModelDownloadRoleArn``, ``alb`` (enabled, service account created with ``alb_role_arn``) and
    ``keda`` (enabled, IRSA with ``keda_role_arn``). Role ARNs may be deploy-time tokens; they resolve inside a JSON
    string (``Fn::Join``).

    Create the dependency add-ons first, and a TLS bucket created in the same stack (its name reaches the add-on as a
    literal, so there is no implicit dependency): ``addon.node.add_dependency(dependency_addons, tls_bucket)``.

    :param version: operator version; picks the add-on version from ``OPERATOR_ADDON_VERSIONS``
    :param addon_version: pin another add-on version (``vX.Y.Z-eksbuild.N``)
    :param preserve_on_delete: keep the operator on the cluster when the stack (or this add-on) is deleted
    :param gateway_role_arn: the Inference Gateway controller's IRSA role: the configuration gets
        ``inferenceGateway: {enabled: true, serviceAccount: {roleArn}}``
    :param configuration_overrides: an RFC 7386 merge patch applied last to ``configurationValues`` (for keys of
        newer add-on versions the library does not set)
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster_name: str,
                 version: OperatorVersion, execution_role_arn: str, tls_bucket_name: str,
                 hyperpod_cluster_arn: str | None, enable_custom_service_accounts: bool,
                 jumpstart_gated_model_download_role_arn: str, alb_role_arn: str, keda_role_arn: str,
                 addon_version: str | None = None, preserve_on_delete: bool = False,
                 gateway_role_arn: str | None = None,
                 configuration_overrides: Mapping[str, Any] | None = None) -> None:
        super().__init__(scope, construct_id)
        errors: list[str] = []
        if version not in OPERATOR_ADDON_VERSIONS and not (version in OPERATOR_VERSIONS and addon_version):
            errors.append(f"version: must be one of {', '.join(OPERATOR_ADDON_VERSIONS)}, or another of "
                          f"{', '.join(OPERATOR_VERSIONS)} with addon_version (no add-on is known to ship it) "
                          f"(got {version!r})")
        if addon_version is not None and (problem := rules.addon_version_problem(addon_version)):
            errors.append(f"addon_version: {problem} (got {addon_version!r})")
        _check_cluster_name(cluster_name, errors)
        _raise_if(errors, "OperatorAddon")
        configuration = self.configuration(
            execution_role_arn=execution_role_arn,
            tls_bucket_name=tls_bucket_name,
            hyperpod_cluster_arn=hyperpod_cluster_arn,
            enable_custom_service_accounts=enable_custom_service_accounts,
            jumpstart_gated_model_download_role_arn=jumpstart_gated_model_download_role_arn,
            alb_role_arn=alb_role_arn,
            keda_role_arn=keda_role_arn,
        )
        if gateway_role_arn is not None:
            # the Inference Gateway controller (add-on v2.0.0-eksbuild.2 and later), merged into the values above and
            # before the user's overrides, which stay last
            configuration["inferenceGateway"] = {"enabled": True, "serviceAccount": {"roleArn": gateway_role_arn}}
        if configuration_overrides:
            # operator.addonConfigurationOverrides: an RFC 7386 merge patch, applied last (the config refuses it on
            # the keys set above)
            configuration = merge_patch(configuration, dict(configuration_overrides))
        self.addon_version = addon_version or OPERATOR_ADDON_VERSIONS[version]
        self.addon = eks.CfnAddon(
            self,
            "Resource",
            addon_name=OPERATOR_ADDON_NAME,
            cluster_name=cluster_name,
            addon_version=self.addon_version,
            resolve_conflicts="OVERWRITE",
            preserve_on_delete=preserve_on_delete,
            configuration_values=Stack.of(self).to_json_string(configuration),
        )

    @staticmethod
    def configuration(*, execution_role_arn: str, tls_bucket_name: str, hyperpod_cluster_arn: str | None,
                      enable_custom_service_accounts: bool, jumpstart_gated_model_download_role_arn: str,
                      alb_role_arn: str, keda_role_arn: str) -> dict[str, Any]:
        """The add-on's ``configurationValues`` as a dict (keys as in the AWS setup guide)."""
        errors: list[str] = []
        _check_role_arn("execution_role_arn", execution_role_arn, errors)
        if (execution_role_arn and not is_unresolved(execution_role_arn)
                and rules.role_arn_problem(execution_role_arn) is None):
            name = rules.role_name_from_arn(execution_role_arn)
            if problem := rules.execution_role_name_problem(name, EXECUTION_ROLE_NAME_PREFIX):
                errors.append(f"execution_role_arn: {problem} (got {name!r})")
        _check_role_arn("jumpstart_gated_model_download_role_arn", jumpstart_gated_model_download_role_arn, errors)
        _check_role_arn("alb_role_arn", alb_role_arn, errors)
        _check_role_arn("keda_role_arn", keda_role_arn, errors)
        if not tls_bucket_name:
            errors.append("tls_bucket_name: required")
        elif not is_unresolved(tls_bucket_name) and (problem := rules.bucket_name_problem(tls_bucket_name)):
            errors.append(f"tls_bucket_name: a bucket name without s3://: {problem} (got {tls_bucket_name!r})")
        if (hyperpod_cluster_arn is not None and not is_unresolved(hyperpod_cluster_arn)
                and (problem := rules.hyperpod_cluster_arn_problem(hyperpod_cluster_arn))):
            errors.append(f"hyperpod_cluster_arn: {problem} (got {hyperpod_cluster_arn!r})")
        if not isinstance(enable_custom_service_accounts, bool) and not is_unresolved(
                enable_custom_service_accounts):
            errors.append("enable_custom_service_accounts: must be true or false")
        _raise_if(errors, "OperatorAddon configuration")

        values: dict[str, Any] = {
            "executionRoleArn": execution_role_arn,
            "tlsCertificateS3Bucket": tls_bucket_name,
        }
        if hyperpod_cluster_arn is not None:
            values["hyperpodClusterArn"] = hyperpod_cluster_arn
        values["enableCustomServiceAccounts"] = enable_custom_service_accounts
        values["jumpstartGatedModelDownloadRoleArn"] = jumpstart_gated_model_download_role_arn
        values["alb"] = {"enabled": True, "serviceAccount": {"create": True, "roleArn": alb_role_arn}}
        values["keda"] = {"enabled": True, "auth": {"aws": {"irsa": {"enabled": True, "roleArn": keda_role_arn}}}}
        return values
