"""The ``ml.*`` GPU and Neuron instance types HyperPod clusters run, with their accelerators and instance store.

Hand-maintained from the Amazon EC2 accelerated-computing instance specifications (the ``ml.`` types are the EC2
types of the same name). A test checks the table against botocore's SageMaker ``ClusterInstanceType`` enum: every
GPU / Neuron type there is here or in ``EXCLUDED`` (with the reason), and every key here is in the enum.
Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .production import NEURON, NVIDIA_GPU

Accelerator = Literal["nvidia", "neuron"]


@dataclass(frozen=True)
class InstanceFacts:
    accelerator: Accelerator
    count: int  # GPUs (nvidia.com/gpu) or Neuron devices (aws.amazon.com/neuron)
    nvme: bool  # has instance-store NVMe (mounted at /opt/dlami/nvme by the HyperPod AMI)

    @property
    def resource(self) -> str:
        """The extended resource the device plugin advertises for these accelerators."""
        return NVIDIA_GPU if self.accelerator == "nvidia" else NEURON


def _family(accelerator: Accelerator, sizes: dict[str, int], family: str, nvme: bool = True) -> dict[str, InstanceFacts]:
    return {f"ml.{family}.{size}": InstanceFacts(accelerator, count, nvme) for size, count in sizes.items()}


_G_SIZES = {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4,
            "48xlarge": 8}

INSTANCES: dict[str, InstanceFacts] = {
    **_family("nvidia", _G_SIZES, "g5"),  # A10G
    **_family("nvidia", _G_SIZES, "g6"),  # L4
    **_family("nvidia", _G_SIZES, "g6e"),  # L40S
    **_family("nvidia", {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4}, "g4dn"),
    **_family("nvidia", {"4xlarge": 1, "8xlarge": 1}, "gr6"),  # L4, more memory per vCPU
    **_family("nvidia", {"24xlarge": 8}, "p4d"),  # A100 40 GB
    **_family("nvidia", {"24xlarge": 8}, "p4de"),  # A100 80 GB
    **_family("nvidia", {"4xlarge": 1, "48xlarge": 8}, "p5"),  # H100
    **_family("nvidia", {"48xlarge": 8}, "p5e"),  # H200
    **_family("nvidia", {"48xlarge": 8}, "p5en"),  # H200
    **_family("nvidia", {"48xlarge": 8}, "p6-b200"),  # B200
    **_family("nvidia", {"48xlarge": 8}, "p6-b300"),  # B300
    **_family("nvidia", {"36xlarge": 4}, "p6e-gb200"),  # GB200: 4 B200 GPUs per node
    **_family("neuron", {"32xlarge": 16}, "trn1"),
    **_family("neuron", {"32xlarge": 16}, "trn1n"),
    **_family("neuron", {"3xlarge": 1, "48xlarge": 16}, "trn2"),
}

# GPU / Neuron types in the SageMaker enum that the table leaves out, with the reason. Their endpoints must give
# resources.gpus.
EXCLUDED: dict[str, str] = {
    **{f"ml.g7.{s}": "accelerator counts not yet in the EC2 specifications this table is maintained from"
       for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")},
    **{f"ml.g7e.{s}": "accelerator counts not yet in the EC2 specifications this table is maintained from"
       for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")},
}


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
    return InstanceFacts(accelerator, count, all(f.nvme for f in facts if f is not None))
