"""The instance table against botocore's SageMaker ``ClusterInstanceType`` enum (offline, from the installed model)."""

from __future__ import annotations

import re

import botocore.session

from hyperpod_inference.facts.instances import EXCLUDED, INSTANCES, agreed_facts

ACCELERATED_FAMILY = re.compile(r"^ml\.(g|p|trn|inf)[0-9]")


def cluster_instance_types() -> set[str]:
    model = botocore.session.get_session().get_service_model("sagemaker")
    return set(model.shape_for("ClusterInstanceType").enum)


def test_every_gpu_and_neuron_type_of_the_enum_is_in_the_table_or_excluded_with_a_reason():
    # GIVEN the SageMaker enum WHEN its accelerated families are listed THEN each is in the table or excluded
    accelerated = {t for t in cluster_instance_types() if ACCELERATED_FAMILY.match(t)}
    assert len(accelerated) > 40  # the filter finds the GPU / Neuron families (a wrong filter would find none)
    missing = accelerated - set(INSTANCES) - set(EXCLUDED)
    assert not missing, sorted(missing)
    assert all(reason for reason in EXCLUDED.values())


def test_every_table_key_and_exclusion_is_a_real_cluster_instance_type():
    enum = cluster_instance_types()
    assert not set(INSTANCES) - enum, sorted(set(INSTANCES) - enum)
    assert not set(EXCLUDED) - enum, sorted(set(EXCLUDED) - enum)
    assert not set(INSTANCES) & set(EXCLUDED)


def test_known_counts_and_kinds():
    assert (INSTANCES["ml.g5.12xlarge"].count, INSTANCES["ml.p5.48xlarge"].count) == (4, 8)
    assert INSTANCES["ml.trn1.32xlarge"].accelerator == "neuron" and INSTANCES["ml.trn1.32xlarge"].resource == \
        "aws.amazon.com/neuron"
    assert INSTANCES["ml.g6e.48xlarge"].resource == "nvidia.com/gpu"


def test_candidates_agree_only_on_the_same_kind_and_count():
    assert agreed_facts(["ml.g5.8xlarge", "ml.g6.4xlarge"]).count == 1
    assert agreed_facts(["ml.p4d.24xlarge", "ml.g5.12xlarge"]) is None
    assert agreed_facts(["ml.g5.8xlarge", "ml.m5.xlarge"]) is None


def test_every_cluster_instance_type_is_known_and_nothing_else():
    # GIVEN the SageMaker enum WHEN compared with the library's known types THEN they are the same set: a type the
    # enum lacks is a typo, one the library lacks would be refused although a cluster can run it
    from hyperpod_inference.facts.instances import KNOWN_TYPES, OTHER_TYPES

    enum = cluster_instance_types()
    assert KNOWN_TYPES == enum, (sorted(enum - KNOWN_TYPES), sorted(KNOWN_TYPES - enum))
    assert not OTHER_TYPES & set(INSTANCES)


def test_the_smallest_candidate_has_the_least_of_each():
    from hyperpod_inference.facts.instances import smallest

    small = smallest(["ml.g5.24xlarge", "ml.g6e.12xlarge"])
    assert (small.count, small.vcpus, small.memory_gib) == (4, 48, 384)
