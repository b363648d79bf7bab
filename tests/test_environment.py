"""The installed environment is the one the library is built for."""

from __future__ import annotations


def test_aws_cdk_libs_cloud_assembly_schema_module_is_aws_cdk_libs_own() -> None:
    # GIVEN aws-cdk-lib and its dependency aws-cdk.cloud-assembly-schema, which both ship
    # aws_cdk/cloud_assembly_schema/__init__.py (the installer that writes last decides which one is there)
    from aws_cdk import cloud_assembly_schema

    # THEN it is aws-cdk-lib's (the other makes jsii fail on the first annotation read back from a stack: "Unknown
    # interface: aws-cdk-lib.cloud_assembly_schema.MetadataEntry"); `make` installs aws-cdk-lib last to ensure it
    assert cloud_assembly_schema.ArtifactManifest.__jsii_type__ == "aws-cdk-lib.cloud_assembly_schema.ArtifactManifest"
