"""The ``ml.*`` GPU and Neuron instance types HyperPod clusters run, with their accelerators and instance store.

Source: the Amazon EC2 instance type specifications for accelerated computing
(https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html: accelerators, vCPUs, memory, instance store); the
``ml.`` types are the EC2 types of the same name. Hand-maintained. The accelerator model and memory per accelerator
are EC2's own figures (:data:`ACCELERATORS`, each with its source). A test checks the table against botocore's
SageMaker ``ClusterInstanceType`` enum: every GPU / Neuron type there is here or in ``EXCLUDED`` (with the reason),
every other type is in ``OTHER_TYPES``, and every key here is in the enum.

What a pod can request is less than the instance: the kubelet keeps a share for the node (:func:`allocatable`).
Stdlib only.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from .production import NEURON, NVIDIA_GPU

Accelerator = Literal["nvidia", "neuron"]


@dataclass(frozen=True)
class InstanceFacts:
    accelerator: Accelerator
    count: int  # GPUs (nvidia.com/gpu) or Neuron devices (aws.amazon.com/neuron)
    nvme: bool  # has instance-store NVMe (mounted at /opt/dlami/nvme by the HyperPod AMI)
    vcpus: int = 0  # vCPUs of the instance (0 = not known, e.g. for agreed facts of differing candidates)
    memory_gib: int = 0  # memory of the instance, GiB (0 = not known)
    accelerator_model: str = ""  # e.g. "A10G", "Trainium2" ("" = not known, or candidates that differ)
    accelerator_memory_mib: int = 0  # memory of one accelerator, MiB, as EC2 reports it (0 = not known)

    @property
    def resource(self) -> str:
        """The extended resource the device plugin advertises for these accelerators."""
        return NVIDIA_GPU if self.accelerator == "nvidia" else NEURON

    @property
    def accelerator_memory_gib(self) -> float:
        """Memory of one accelerator, GiB (0 = not known)."""
        return self.accelerator_memory_mib / 1024


@dataclass(frozen=True)
class AcceleratorFacts:
    """The accelerator of an instance family: its model and the memory of one accelerator, with the source."""

    model: str
    memory_mib: int  # 0 = not known (no source found: never guessed)
    source: str


# EC2's DescribeInstanceTypes reports each GPU's memory (GpuInfo.Gpus[].MemoryInfo.SizeInMiB: what the GPU makes
# available, e.g. 22888 MiB for the A10G sold as "24 GB"); Karpenter publishes it for every instance type as the
# label karpenter.k8s.aws/instance-gpu-memory in its generated reference.
_EC2_GPU = ("EC2 DescribeInstanceTypes GpuInfo.Gpus[].MemoryInfo.SizeInMiB, as published by aws/karpenter-provider-aws "
            "website/content/en/preview/reference/instance-types.md (label karpenter.k8s.aws/instance-gpu-memory, "
            "commit 1d927085, 2026-08-21)")
_TRAINIUM = ("AWS Neuron documentation, Trainium Architecture: 32 GiB of device memory per Trainium chip "
             "(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trainium.html); "
             "EC2 DescribeInstanceTypes NeuronInfo.NeuronDevices[].MemoryInfo.SizeInMiB = 32768 for trn1.2xlarge "
             "(aws/karpenter-provider-aws pkg/fake/zz_generated.describe_instance_types.go)")
_TRAINIUM2 = ("AWS Neuron documentation, Trainium2 Architecture Guide: a total device memory capacity of 96 GiB per "
              "Trainium2 device (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/arch/trainium2_arch.html)")

#: Instance family -> its accelerator. Memory per accelerator in MiB, as the source states it.
ACCELERATORS: dict[str, AcceleratorFacts] = {
    "g4dn": AcceleratorFacts("T4", 16384, _EC2_GPU),
    "g5": AcceleratorFacts("A10G", 22888, _EC2_GPU),
    "g6": AcceleratorFacts("L4", 22888, _EC2_GPU),
    "g6e": AcceleratorFacts("L40S", 45776, _EC2_GPU),
    "gr6": AcceleratorFacts("L4", 22888, _EC2_GPU),
    "p4d": AcceleratorFacts("A100", 40960, _EC2_GPU),
    "p4de": AcceleratorFacts("A100", 81920, _EC2_GPU),
    "p5": AcceleratorFacts("H100", 81920, _EC2_GPU),
    "p5e": AcceleratorFacts("H200", 144384, _EC2_GPU),
    "p5en": AcceleratorFacts("H200", 144384, _EC2_GPU),
    "p6-b200": AcceleratorFacts("B200", 183359, _EC2_GPU),
    "p6-b300": AcceleratorFacts("B300", 275040, _EC2_GPU),
    # UltraServer nodes: not in the DescribeInstanceTypes data above, and no AWS page found states the memory of one
    # GPU of this type; unknown rather than guessed from NVIDIA's figures.
    "p6e-gb200": AcceleratorFacts("B200", 0, "unknown: no AWS source found for the memory per GPU"),
    "trn1": AcceleratorFacts("Trainium", 32768, _TRAINIUM),
    "trn1n": AcceleratorFacts("Trainium", 32768, _TRAINIUM),
    "trn2": AcceleratorFacts("Trainium2", 98304, _TRAINIUM2),
}


def _family(accelerator: Accelerator, sizes: dict[str, tuple[int, int, int]], family: str,
            nvme: bool = True) -> dict[str, InstanceFacts]:
    """``sizes``: size -> (accelerators, vCPUs, memory GiB); the accelerator model and memory from
    :data:`ACCELERATORS`."""
    acc = ACCELERATORS[family]
    return {f"ml.{family}.{size}": InstanceFacts(accelerator, count, nvme, vcpus, memory, acc.model, acc.memory_mib)
            for size, (count, vcpus, memory) in sizes.items()}


# (accelerators, vCPUs, memory GiB) per size, from the EC2 accelerated-computing specifications.
_G5_SIZES = {"xlarge": (1, 4, 16), "2xlarge": (1, 8, 32), "4xlarge": (1, 16, 64), "8xlarge": (1, 32, 128),
             "16xlarge": (1, 64, 256), "12xlarge": (4, 48, 192), "24xlarge": (4, 96, 384), "48xlarge": (8, 192, 768)}
_G6E_SIZES = {"xlarge": (1, 4, 32), "2xlarge": (1, 8, 64), "4xlarge": (1, 16, 128), "8xlarge": (1, 32, 256),
              "16xlarge": (1, 64, 512), "12xlarge": (4, 48, 384), "24xlarge": (4, 96, 768),
              "48xlarge": (8, 192, 1536)}

INSTANCES: dict[str, InstanceFacts] = {
    **_family("nvidia", _G5_SIZES, "g5"),
    **_family("nvidia", _G5_SIZES, "g6"),  # same vCPU and memory per size as g5
    **_family("nvidia", _G6E_SIZES, "g6e"),
    **_family("nvidia", {"xlarge": (1, 4, 16), "2xlarge": (1, 8, 32), "4xlarge": (1, 16, 64), "8xlarge": (1, 32, 128),
                         "16xlarge": (1, 64, 256), "12xlarge": (4, 48, 192)}, "g4dn"),
    **_family("nvidia", {"4xlarge": (1, 16, 128), "8xlarge": (1, 32, 256)}, "gr6"),  # more memory per vCPU
    **_family("nvidia", {"24xlarge": (8, 96, 1152)}, "p4d"),
    **_family("nvidia", {"24xlarge": (8, 96, 1152)}, "p4de"),
    **_family("nvidia", {"4xlarge": (1, 16, 256), "48xlarge": (8, 192, 2048)}, "p5"),
    **_family("nvidia", {"48xlarge": (8, 192, 2048)}, "p5e"),
    **_family("nvidia", {"48xlarge": (8, 192, 2048)}, "p5en"),
    **_family("nvidia", {"48xlarge": (8, 192, 2048)}, "p6-b200"),
    **_family("nvidia", {"48xlarge": (8, 192, 4096)}, "p6-b300"),
    **_family("nvidia", {"36xlarge": (4, 144, 960)}, "p6e-gb200"),  # GB200: 4 B200 GPUs per node
    **_family("neuron", {"32xlarge": (16, 128, 512)}, "trn1"),
    **_family("neuron", {"32xlarge": (16, 128, 512)}, "trn1n"),
    **_family("neuron", {"3xlarge": (1, 12, 128), "48xlarge": (16, 192, 2048)}, "trn2"),
}

#: The smallest one-GPU type of the common NVIDIA families: what a message names when an endpoint needs a GPU.
SMALL_GPU_TYPES: tuple[str, ...] = ("ml.g5.xlarge", "ml.g6.xlarge", "ml.g6e.xlarge")

# GPU / Neuron types in the SageMaker enum that the table leaves out, with the reason. Their endpoints must give
# resources.gpus.
EXCLUDED: dict[str, str] = {
    **{f"ml.g7.{s}": "accelerator counts not yet in the EC2 specifications this table is maintained from"
       for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")},
    **{f"ml.g7e.{s}": "accelerator counts not yet in the EC2 specifications this table is maintained from"
       for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")},
}


# The cluster instance types without GPUs or Neuron devices (the rest of the SageMaker enum), by family: an endpoint
# on one of them gives resources.gpus (0).
_OTHER_FAMILIES = {
    "c5": "large xlarge 2xlarge 4xlarge 9xlarge 12xlarge 18xlarge 24xlarge",
    "c5n": "large 2xlarge 4xlarge 9xlarge 18xlarge",
    "c6a": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge 48xlarge",
    "c6g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "c6i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge",
    "c7g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "c8a": "16xlarge",
    "c8g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "i3en": "large xlarge 2xlarge 3xlarge 6xlarge 12xlarge 24xlarge",
    "m5": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge",
    "m6a": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge 48xlarge",
    "m6g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "m6i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge",
    "m7g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge",
    "m7i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "m8a": "16xlarge",
    "m8g": "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "r5d": "16xlarge",
    "r6i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge",
    "r7i": "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge",
    "t3": "medium large xlarge 2xlarge",
}
OTHER_TYPES: frozenset[str] = frozenset(f"ml.{family}.{size}" for family, sizes in _OTHER_FAMILIES.items()
                                        for size in sizes.split())

#: Every cluster instance type the library knows (HyperPod nodes carry these names as their
#: node.kubernetes.io/instance-type label).
KNOWN_TYPES: frozenset[str] = frozenset(INSTANCES) | frozenset(EXCLUDED) | OTHER_TYPES


def nearest_known(instance_type: str) -> str | None:
    """The known instance type closest to a mistyped one (``ml.g5.12xlarg`` -> ``ml.g5.12xlarge``; ``g5.8xlarge``
    -> ``ml.g5.8xlarge``), or None."""
    if f"ml.{instance_type}" in KNOWN_TYPES:
        return f"ml.{instance_type}"
    match = difflib.get_close_matches(instance_type, sorted(KNOWN_TYPES), n=1, cutoff=0.8)
    return match[0] if match else None


# --- what a pod can request: the node's allocatable share ----------------------------------------------------------
# The kubelet reserves a share of every node for the system (kube-reserved) and keeps an eviction threshold; pods
# are scheduled against the rest. The reserve here is the EKS-optimized AMI's (awslabs/amazon-eks-ami, the
# kube-reserved computation of its bootstrap / nodeadm, which HyperPod's EKS AMI uses):
# - CPU: 6% of the first core, 1% of the second, 0.5% of the third and fourth, 0.25% of every further core;
# - memory: 255 MiB + 11 MiB per pod the node may run (max pods: 110 below 30 vCPUs, 250 from 30 vCPUs, the AMI's
#   cap), plus the 100 MiB hard-eviction threshold (memory.available).
#: Requests above this share of what is allocatable are warned: DaemonSets (device plugins, monitoring agents) also
#: request from the same node.
NEAR_LIMIT_SHARE = 0.9


def max_pods(vcpus: int) -> int:
    return 110 if vcpus < 30 else 250


def reserved_cpu_millicores(vcpus: int) -> float:
    steps = ((1, 60.0), (1, 10.0), (2, 5.0))
    left, reserved = vcpus, 0.0
    for cores, per_core in steps:
        used = min(left, cores)
        reserved += used * per_core
        left -= used
    return reserved + max(left, 0) * 2.5


def reserved_memory_mib(vcpus: int) -> int:
    return 255 + 11 * max_pods(vcpus) + 100


def allocatable(facts: InstanceFacts) -> tuple[float, float] | None:
    """(CPU cores, memory bytes) a node of this type can give its pods, or None when vCPU / memory are unknown."""
    if not facts.vcpus or not facts.memory_gib:
        return None
    cpu = facts.vcpus - reserved_cpu_millicores(facts.vcpus) / 1000
    memory = facts.memory_gib * 2**30 - reserved_memory_mib(facts.vcpus) * 2**20
    return cpu, memory


def smallest(instance_types: list[str] | tuple[str, ...]) -> InstanceFacts | None:
    """The least any known candidate offers (accelerators, vCPUs and memory each at its minimum): with several
    candidate types, a pod must fit the smallest. None when no candidate is in the table."""
    facts = [INSTANCES[t] for t in instance_types if t in INSTANCES]
    if not facts:
        return None
    return InstanceFacts(facts[0].accelerator, min(f.count for f in facts), all(f.nvme for f in facts),
                         min(f.vcpus for f in facts), min(f.memory_gib for f in facts), *_accelerator_of(facts))


def instance_facts(instance_type: str) -> InstanceFacts | None:
    return INSTANCES.get(instance_type)


def agreed_facts(instance_types: list[str] | tuple[str, ...]) -> InstanceFacts | None:
    """The facts every candidate shares (accelerator kind and count), or None when one is unknown or they differ.
    ``nvme`` is True only when every candidate has instance store."""
    facts = [INSTANCES.get(t) for t in instance_types]
    if not facts or any(f is None for f in facts):
        return None
    kinds = {(f.accelerator, f.count) for f in facts if f is not None}
    if len(kinds) != 1:
        return None
    accelerator, count = next(iter(kinds))
    known = [f for f in facts if f is not None]
    return InstanceFacts(accelerator, count, all(f.nvme for f in known), min(f.vcpus for f in known),
                         min(f.memory_gib for f in known), *_accelerator_of(known))


def _accelerator_of(facts: list[InstanceFacts]) -> tuple[str, int]:
    """(model, memory per accelerator MiB) every candidate offers: the model when they share one, the least memory
    (0 when one is unknown)."""
    models = {f.accelerator_model for f in facts}
    return (models.pop() if len(models) == 1 else ""), min(f.accelerator_memory_mib for f in facts)
