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
