"""The accelerator model and the memory of one accelerator of every instance type with accelerators, each with its
source; checked against botocore's SageMaker ``ClusterInstanceType`` enum like the rest of the instance table."""

from __future__ import annotations

import botocore.session

from hyperpod_inference.facts.instances import ACCELERATORS, INSTANCES, agreed_facts, smallest


def cluster_instance_types() -> set[str]:
    model = botocore.session.get_session().get_service_model("sagemaker")
    return set(model.shape_for("ClusterInstanceType").enum)


def family(instance_type: str) -> str:
    return instance_type.split(".")[1]


def test_every_accelerated_family_of_the_table_has_an_accelerator_with_a_source():
    # GIVEN the table's instance types (each in the SageMaker enum) THEN each family has its accelerator and source
    enum = cluster_instance_types()
    assert set(INSTANCES) <= enum
    assert {family(t) for t in INSTANCES} == set(ACCELERATORS)
    for name, acc in ACCELERATORS.items():
        assert acc.model and acc.source, name
        assert acc.memory_mib > 0 or acc.source.startswith("unknown"), name


def test_every_instance_carries_its_familys_accelerator():
    for instance_type, facts in INSTANCES.items():
        acc = ACCELERATORS[family(instance_type)]
        assert (facts.accelerator_model, facts.accelerator_memory_mib) == (acc.model, acc.memory_mib), instance_type


def test_known_accelerator_memory_as_ec2_reports_it():
    # GIVEN EC2's figures (MiB per GPU) THEN the A10G has 22888 MiB (22.35 GiB, sold as 24 GB), the H100 80 GiB
    assert INSTANCES["ml.g5.48xlarge"].accelerator_memory_mib == 22888
    assert round(INSTANCES["ml.g5.48xlarge"].accelerator_memory_gib, 2) == 22.35
    assert INSTANCES["ml.p5.48xlarge"].accelerator_memory_gib == 80
    assert INSTANCES["ml.p4d.24xlarge"].accelerator_memory_gib == 40
    assert INSTANCES["ml.p4de.24xlarge"].accelerator_memory_gib == 80
    assert INSTANCES["ml.trn2.48xlarge"].accelerator_memory_gib == 96
    assert (INSTANCES["ml.g6e.12xlarge"].accelerator_model, INSTANCES["ml.trn1.32xlarge"].accelerator_model) == \
        ("L40S", "Trainium")


def test_candidates_offer_the_least_memory_and_a_model_only_when_they_share_one():
    # GIVEN a g5 and a g6 (A10G and L4, both 22888 MiB) and a g5 with a p4d
    both = agreed_facts(["ml.g5.8xlarge", "ml.g6.8xlarge"])
    assert (both.accelerator_model, both.accelerator_memory_mib) == ("", 22888)
    assert smallest(["ml.g5.12xlarge", "ml.p4d.24xlarge"]).accelerator_memory_mib == 22888
    assert smallest(["ml.g5.12xlarge", "ml.g5.24xlarge"]).accelerator_model == "A10G"
    # AND one candidate of unknown memory makes the memory unknown
    assert smallest(["ml.p6e-gb200.36xlarge", "ml.p5.48xlarge"]).accelerator_memory_mib == 0
