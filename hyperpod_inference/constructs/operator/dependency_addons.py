"""The EKS add-ons the operator add-on needs installed first."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import aws_eks as eks
from constructs import Construct

from ...facts import rules
from ...facts.operator import DEPENDENCY_ADDON_VERSIONS
from ._common import _check_cluster_name, _check_role_arn, _raise_if


class DependencyAddons(Construct):
    """The EKS add-ons the operator add-on needs: Mountpoint for S3 CSI (with its IRSA role), FSx for Lustre CSI,
    metrics-server and cert-manager.

    Versions default to the minimums of the setup guide (``DEPENDENCY_ADDON_VERSIONS``); ``addon_versions`` pins any of
    them. The add-ons are kept on the cluster when the stack is deleted (``preserveOnDelete``): other workloads on a
    shared cluster may use them, and removing cert-manager or a CSI driver under running pods breaks those pods.

    The FSx CSI driver gets no role: static provisioning of existing file systems (the only FSx use here) needs no AWS
    API calls from the driver.

    Attributes: ``addons`` (list of CfnAddon, table order) and ``by_name`` (add-on name -> CfnAddon).
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster_name: str, s3_csi_role_arn: str,
                 addon_versions: Mapping[str, str] | None = None) -> None:
        super().__init__(scope, construct_id)
        errors: list[str] = []
        _check_cluster_name(cluster_name, errors)
        _check_role_arn("s3_csi_role_arn", s3_csi_role_arn, errors)
        for name, pinned in (addon_versions or {}).items():
            if name not in DEPENDENCY_ADDON_VERSIONS:
                errors.append(f"addon_versions.{name}: not one of {', '.join(DEPENDENCY_ADDON_VERSIONS)}")
            elif problem := rules.addon_version_problem(pinned):
                errors.append(f"addon_versions.{name}: {problem} (got {pinned!r})")
        _raise_if(errors, "DependencyAddons")
        versions = {**DEPENDENCY_ADDON_VERSIONS, **(addon_versions or {})}
        self.by_name: dict[str, eks.CfnAddon] = {}
        for name, version in versions.items():
            self.by_name[name] = eks.CfnAddon(
                self,
                "".join(part.capitalize() for part in name.split("-")),
                addon_name=name,
                cluster_name=cluster_name,
                addon_version=version,
                resolve_conflicts="OVERWRITE",
                preserve_on_delete=True,
                service_account_role_arn=s3_csi_role_arn if name == "aws-mountpoint-s3-csi-driver" else None,
            )
        self.addons: list[eks.CfnAddon] = list(self.by_name.values())
