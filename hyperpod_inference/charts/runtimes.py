"""How each model-server runtime is pointed at the weights (args, environment) and how many GPUs an instance has.
The presets (images, ports, health paths, routes) are in :mod:`hyperpod_inference.facts.runtimes`."""

from __future__ import annotations

from ..facts.runtimes import DLC_ACCOUNTS, MODEL_MOUNT, PRESETS, RuntimePreset

__all__ = ["DLC_ACCOUNTS", "MODEL_MOUNT", "PRESETS", "RuntimePreset", "gpus_for_instance", "runtime_args", "runtime_env"]

# The preset data and the DLC registry table live in facts/runtimes.py.

# GPUs per instance size for the families HyperPod inference runs on (worker resources and tensor parallelism).
_GPUS_BY_SIZE = {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4,
                 "48xlarge": 8}
_EIGHT_GPU_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200")


def gpus_for_instance(instance_type: str) -> int:
    """``ml.g5.8xlarge`` -> 1, ``ml.g5.12xlarge`` -> 4, ``ml.p5.48xlarge`` -> 8; unknown -> 1."""
    parts = instance_type.split(".")
    if len(parts) != 3:
        return 1
    family, size = parts[1], parts[2]
    if family in _EIGHT_GPU_FAMILIES:
        return 8
    return _GPUS_BY_SIZE.get(size, 1)


def runtime_args(runtime: str, *, model_path: str | None, served_model_name: str | None, gpus: int, port: int) -> list[str]:
    """Args that point the runtime at the mounted weights (model_path) and serve under the Hub model ID.
    model_path None: the runtime downloads natively and the operator injects --model/--model-path itself."""
    args: list[str] = []
    if runtime == "vllm":
        if model_path:
            args += ["--model", model_path]
        if served_model_name:
            args += ["--served-model-name", served_model_name]
        args += ["--host", "0.0.0.0", "--port", str(port)]
        if gpus > 1:
            args += ["--tensor-parallel-size", str(gpus)]
    elif runtime == "sglang":
        if model_path:
            args += ["--model-path", model_path]
        if served_model_name:
            args += ["--served-model-name", served_model_name]
        args += ["--host", "0.0.0.0", "--port", str(port)]
        if gpus > 1:
            args += ["--tp", str(gpus)]
    return args


def runtime_env(runtime: str, *, model_path: str | None, gpus: int, port: int) -> dict[str, str]:
    """Environment for runtimes configured through env (TGI): MODEL_ID is the mounted path with prefetch."""
    if runtime != "tgi":
        return {}
    env = {"PORT": str(port), "NUM_SHARD": str(gpus)}
    if model_path:
        env["MODEL_ID"] = model_path
        env["HF_MODEL_ID"] = model_path
    return env
