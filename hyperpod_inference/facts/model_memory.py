"""Whether a model's weights fit the accelerators an endpoint asks for, estimated from the parameter counts per dtype
that the safetensors headers give (huggingface_hub's ``get_safetensors_metadata(...).parameter_count``, or the Hub's
``safetensors.parameters``), without downloading a weight.

weights = Σ parameters × the dtype's size; the endpoint needs weights × (1 + :data:`KV_CACHE_MARGIN`) of accelerator
memory, and has ``gpus`` × the memory of one accelerator (``facts/instances.py``). The margin is a floor for the KV
cache and activations, not a sizing: a runtime that gets less than the margin starts, if at all, with a context too
short to be useful, so less is a warning; weights larger than the memory never load, so that is a failure.

Pure functions, stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

#: Bits per element of each safetensors dtype (huggingface/safetensors, safetensors/src/tensor.rs ``Dtype::bitsize``).
#: A packed quantized tensor (GPTQ / AWQ int4 in I32) counts its stored elements, so its bytes are right too.
DTYPE_BITS: Mapping[str, int] = MappingProxyType({
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "C64": 64, "F64": 64, "I64": 64, "U64": 64,
})

#: Accelerator memory the endpoint needs beyond its weights, as a share of the weights: a floor for the KV cache and
#: activations (20 %).
KV_CACHE_MARGIN = 0.2

GIB = 2**30
Verdict = Literal["fits", "tight", "too-large", "unknown"]


@dataclass(frozen=True)
class Weights:
    """The size of a model's weights from its parameter counts per dtype."""

    parameters: int  # all parameters counted
    bytes: int  # of the dtypes whose size is known
    unknown_dtypes: tuple[str, ...]  # dtypes not in DTYPE_BITS (their parameters are not in ``bytes``)


def weights(parameters: Mapping[str, int]) -> Weights:
    """Σ count × bits / 8 over the dtypes (rounded up per dtype)."""
    total_bits = {dtype: count * DTYPE_BITS[dtype] for dtype, count in parameters.items() if dtype in DTYPE_BITS}
    return Weights(parameters=sum(parameters.values()),
                   bytes=sum(-(-bits // 8) for bits in total_bits.values()),
                   unknown_dtypes=tuple(sorted(d for d in parameters if d not in DTYPE_BITS)))


@dataclass(frozen=True)
class MemoryFit:
    verdict: Verdict
    weight_bytes: int
    needed_bytes: int  # weights plus the KV-cache margin
    available_bytes: int  # gpus × memory of one accelerator
    message: str


def memory_fit(parameters: Mapping[str, int], gpus: int, accelerator_memory_mib: int,
               accelerator: str = "accelerator") -> MemoryFit:
    """Whether weights with these parameter counts fit ``gpus`` accelerators of ``accelerator_memory_mib`` each:
    ``fits``, ``tight`` (the weights fit, the margin does not: warn), ``too-large`` (the weights alone do not: fail)
    or ``unknown`` (no accelerator memory, no GPUs, or a dtype of unknown size)."""
    w = weights(parameters)
    needed = int(w.bytes * (1 + KV_CACHE_MARGIN))
    available = max(gpus, 0) * accelerator_memory_mib * 2**20
    what = f"the weights ({_gib(w.bytes)}: {w.parameters / 1e9:.2f} B parameters in {_dtypes(parameters)})"
    if w.unknown_dtypes:
        return MemoryFit("unknown", w.bytes, needed, available,
                         f"{what} include dtypes of unknown size ({', '.join(w.unknown_dtypes)}): not estimated")
    if gpus < 1 or accelerator_memory_mib <= 0:
        return MemoryFit("unknown", w.bytes, needed, available,
                         f"{what}: the accelerator memory is not known, so the fit is not estimated")
    have = f"{gpus} × {accelerator} ({_gib(accelerator_memory_mib * 2**20)} each) = {_gib(available)}"
    if w.bytes > available:
        return MemoryFit("too-large", w.bytes, needed, available,
                         f"{what} do not fit {have}: use more or larger accelerators, or a smaller or quantized model")
    if needed > available:
        return MemoryFit("tight", w.bytes, needed, available,
                         f"{what} fit {have}, but leave less than the {KV_CACHE_MARGIN:.0%} margin for the KV cache "
                         f"({_gib(needed)} needed): expect a short context or a failed start")
    return MemoryFit("fits", w.bytes, needed, available,
                     f"{what} and the {KV_CACHE_MARGIN:.0%} KV-cache margin ({_gib(needed)}) fit {have}")


def volume_problem(weight_bytes: int, capacity_bytes: int, what: str) -> str | None:
    """Why weights of ``weight_bytes`` do not fit a volume or cache of ``capacity_bytes`` (``what`` names it)."""
    if capacity_bytes >= weight_bytes:
        return None
    return f"the weights ({_gib(weight_bytes)}) do not fit {what} ({_gib(capacity_bytes)})"


def _gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


def _dtypes(parameters: Mapping[str, int]) -> str:
    return ", ".join(sorted(parameters, key=lambda d: -parameters[d])) or "no dtype"
