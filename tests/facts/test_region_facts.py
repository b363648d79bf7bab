"""The regional snapshots of the facts layer agree with aws-cdk-lib's region_info wherever it has a value."""

from __future__ import annotations

import pytest
from aws_cdk import region_info

from hyperpod_inference.facts import rules
from hyperpod_inference.facts.runtimes import DLC_ACCOUNTS, PRESETS, dlc_registry_problem

REGIONS = [r.name for r in region_info.RegionInfo.regions]


def test_dlc_snapshot_matches_region_info_wherever_region_info_has_a_value():
    # GIVEN every region aws-cdk-lib knows
    known = {r: region_info.RegionInfo.get(r).dlc_repository_account for r in REGIONS}
    known = {r: account for r, account in known.items() if account}
    assert len(known) > 20  # region_info does carry the fact
    # THEN the snapshot has each region region_info knows, with the same account
    mismatched = {r: (DLC_ACCOUNTS.get(r), account) for r, account in known.items() if DLC_ACCOUNTS.get(r) != account}
    assert mismatched == {}


def test_partition_and_domain_suffix_match_region_info_for_every_region():
    for region in REGIONS:
        info = region_info.RegionInfo.get(region)
        assert rules.partition_of_region(region) == info.partition, region
        assert rules.domain_suffix(region) == info.domain_suffix, region


def _botocore_regions() -> list[str]:
    """Every region botocore's partition and endpoint data name (not the ``<partition>-global`` pseudo-regions of
    global endpoints, which botocore's ``get_partition_for_region`` refuses too)."""
    import botocore.session

    session = botocore.session.Session()
    regions = {r for p in session.get_data("partitions")["partitions"] for r in p.get("regions", {})}
    regions |= {r for p in session.get_data("endpoints")["partitions"] for r in p.get("regions", {})}
    return sorted(r for r in regions if not r.endswith("-global"))


def test_the_partition_of_every_region_botocore_knows_is_botocores():
    # GIVEN every region botocore's own data names, and regions not yet launched that its patterns place
    import botocore.session

    session = botocore.session.Session()
    regions = _botocore_regions()
    assert {"us-west-2", "cn-north-1", "us-gov-west-1", "us-isob-east-1", "eusc-de-east-1"} <= set(regions)
    future = ["cn-south-7", "us-gov-central-3", "ap-newzone-9", "eu-isoe-north-2", "us-isof-west-4", "eusc-de-west-2"]
    # THEN the facts' partition is botocore's for each
    mismatched = {r: (rules.partition_of_region(r), session.get_partition_for_region(r)) for r in regions + future
                  if rules.partition_of_region(r) != session.get_partition_for_region(r)}
    assert mismatched == {}


def test_the_domain_suffix_of_every_partition_is_botocores():
    import botocore.session

    for partition in botocore.session.Session().get_data("partitions")["partitions"]:
        region = next(r for r in partition["regions"] if not r.endswith("-global"))
        assert rules.domain_suffix(region) == partition["outputs"]["dnsSuffix"], partition["id"]


def test_arns_built_for_a_region_are_in_its_partition():
    assert rules.account_root_arn("cn-north-1", "111122223333") == "arn:aws-cn:iam::111122223333:root"
    assert rules.eks_cluster_admin_policy_arn("us-gov-west-1") == \
        "arn:aws-us-gov:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert rules.eks_cluster_admin_policy_arn("us-west-2") == \
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def test_a_region_with_no_known_dlc_account_is_an_error_not_a_default():
    # GIVEN a region with no DLC account in the snapshot
    region = "mars-north-1"
    # WHEN a preset's image is asked for / THEN it fails naming the region and the way out (an image)
    assert "image" in dlc_registry_problem(region)
    with pytest.raises(ValueError, match="mars-north-1"):
        PRESETS["vllm"].image(region)


def test_preset_images_use_the_regions_registry_and_domain():
    assert PRESETS["vllm"].image("us-west-2").startswith("763104351884.dkr.ecr.us-west-2.amazonaws.com/vllm:")
    assert PRESETS["tgi"].image("cn-north-1").startswith("727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/")


def _config_in(region: str, **endpoint: object) -> dict:
    account = "111122223333"
    return {
        "apiVersion": "hyperpod-inference/v1",
        "env": {"account": account, "region": region},
        "cluster": {"eksClusterName": "eks", "hyperpodClusterArn": f"arn:aws:sagemaker:{region}:{account}:cluster/abcd1234efgh",
                    "kubectlRoleArn": f"arn:aws:iam::{account}:role/admin",
                    "oidcProviderArn": f"arn:aws:iam::{account}:oidc-provider/oidc.eks.{region}.amazonaws.com/id/X",
                    "vpcId": "vpc-0abc1234"},
        "endpoints": [{"name": "chat", "namespace": "inference", "instanceType": "ml.g5.8xlarge", "runtime": "vllm",
                       "model": {"s3": {"bucket": "my-models"}}, **endpoint}],
    }


def test_the_config_refuses_a_preset_image_in_a_region_without_a_dlc_registry_naming_the_image():
    from hyperpod_inference.config import ConfigError, parse_config

    # GIVEN a region with no known DLC account (region_info has none either) and an endpoint on a preset image
    region = "mx-central-1"
    assert region not in DLC_ACCOUNTS and not region_info.RegionInfo.get(region).dlc_repository_account
    # WHEN validated / THEN the error names endpoints[0].image
    with pytest.raises(ConfigError) as err:
        parse_config(_config_in(region))
    assert [p for p, _ in err.value.problems] == ["endpoints[0].image"]
    # AND an explicit image is accepted there
    parse_config(_config_in(region, image="111122223333.dkr.ecr.mx-central-1.amazonaws.com/vllm:1"))
