"""How each model-server runtime is pointed at the weights (args, environment); accelerator counts come from the
instance table (:mod:`hyperpod_inference.facts.instances`). The presets (images, ports, health paths, routes) are in :mod:`hyperpod_inference.facts.runtimes`."""

from __future__ import annotations

from ..facts.runtimes import DLC_ACCOUNTS, MODEL_MOUNT, PRESETS, RuntimePreset

__all__ = ["DLC_ACCOUNTS", "MODEL_MOUNT", "PRESETS", "RuntimePreset", "runtime_args", "runtime_env"]


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
    env = {"PORT": str(port), "NUM_SHARD": str(max(gpus, 1))}
    if model_path:
        env["MODEL_ID"] = model_path
        env["HF_MODEL_ID"] = model_path
    return env
