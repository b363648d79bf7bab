"""The weight-size estimate: parameters per dtype × the dtype's size, plus the stated KV-cache margin, against
gpus × the memory of one accelerator."""

from __future__ import annotations

import pytest

from hyperpod_inference.facts import model_memory as mm
from hyperpod_inference.facts.instances import INSTANCES

# parameter counts per dtype as the safetensors headers give them (the Hub's safetensors.parameters)
QWEN25_7B = {"BF16": 7_615_616_512}
LLAMA31_8B = {"BF16": 8_030_261_248}
LLAMA31_70B = {"BF16": 70_553_706_496}
AWQ_INT4 = {"I32": 1_000_000_000, "F16": 500_000_000}  # int4 packed eight to an I32: stored elements counted


def test_weights_are_the_parameters_times_the_dtype_size():
    assert mm.weights(LLAMA31_8B).bytes == 16_060_522_496
    assert mm.weights(AWQ_INT4).bytes == 4_000_000_000 + 1_000_000_000
    # sub-byte dtypes round up per dtype: 3 F4 parameters are 12 bits, 2 bytes
    assert mm.weights({"F4": 3, "F6_E2M3": 4}).bytes == 2 + 3


def test_a_dtype_of_unknown_size_is_named_and_the_fit_is_unknown():
    fit = mm.memory_fit({"BF16": 10, "U3": 5}, 1, 22888, "A10G")
    assert fit.verdict == "unknown" and "U3" in fit.message
    assert mm.weights({"BF16": 10, "U3": 5}).unknown_dtypes == ("U3",)


def test_qwen_7b_fits_one_a10g_with_the_margin():
    # GIVEN Qwen2.5-7B in BF16 on ml.g5.xlarge (1 A10G, 22888 MiB)
    g5 = INSTANCES["ml.g5.xlarge"]
    fit = mm.memory_fit(QWEN25_7B, 1, g5.accelerator_memory_mib, g5.accelerator_model)
    # THEN it fits, and the message states the weights, the margin and what the GPUs hold
    assert fit.verdict == "fits"
    assert fit.weight_bytes == 15_231_233_024 and fit.needed_bytes == int(15_231_233_024 * 1.2)
    assert "14.2 GiB" in fit.message and "20%" in fit.message and "1 × A10G (22.4 GiB each)" in fit.message


def test_llama_70b_does_not_fit_four_a10g_and_fits_eight_a100():
    g5 = INSTANCES["ml.g5.12xlarge"]
    too_large = mm.memory_fit(LLAMA31_70B, g5.count, g5.accelerator_memory_mib, g5.accelerator_model)
    assert too_large.verdict == "too-large" and "do not fit 4 × A10G" in too_large.message
    p4d = INSTANCES["ml.p4d.24xlarge"]
    assert mm.memory_fit(LLAMA31_70B, p4d.count, p4d.accelerator_memory_mib, "A100").verdict == "fits"


def test_weights_that_fit_without_the_margin_are_tight():
    # GIVEN weights of 20 GiB on one accelerator of 22 GiB (20 × 1.2 = 24 > 22)
    fit = mm.memory_fit({"BF16": 10 * 2**30}, 1, 22 * 1024, "GPU")
    assert fit.verdict == "tight" and "less than the 20% margin" in fit.message


@pytest.mark.parametrize(("gpus", "memory"), [(0, 22888), (1, 0)])
def test_without_gpus_or_a_known_accelerator_memory_the_fit_is_unknown(gpus, memory):
    assert mm.memory_fit(QWEN25_7B, gpus, memory).verdict == "unknown"


def test_unknown_accelerator_memory_is_unknown_for_gb200_rather_than_guessed():
    gb200 = INSTANCES["ml.p6e-gb200.36xlarge"]
    assert gb200.accelerator_memory_mib == 0
    assert mm.memory_fit(LLAMA31_70B, 4, gb200.accelerator_memory_mib).verdict == "unknown"


def test_weights_against_a_volume():
    assert mm.volume_problem(16 * mm.GIB, 100 * mm.GIB, "the weight cache") is None
    assert mm.volume_problem(140 * mm.GIB, 100 * mm.GIB, "the weight cache") == \
        "the weights (140.0 GiB) do not fit the weight cache (100.0 GiB)"
