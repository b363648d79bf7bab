"""The ``model`` family of ``doctor`` (check IDs ``model.*``): what an endpoint's Hugging Face model needs before the
deploy, read from the Hub (:mod:`~hyperpod_inference.ops.hub`: model info, ``config.json``, safetensors headers; no
weight is downloaded) and judged with the runtime facts (``facts/model_support.py``, ``facts/model_memory.py``).

The model ID and the pinned commit exist (an unpinned model names the commit ``main`` points to today); a gated or
private model has a token in the config, and ``HF_TOKEN`` (local, never the cluster's secret, never printed) can read
it; the runtime serves the architecture, for the task of the preset; the tensor-parallel size divides the heads; the
weights fit the GPUs. A Hub that cannot be answered makes a check skip, saying so, never pass. The S3 checks of the
same family are in :mod:`.model_s3`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...facts import model_memory, model_support
from ...facts import production as prod_facts
from .. import hub
from ..aws import Skip
from . import model_s3
from .base import FAIL, PASS, SKIP, WARN, Context, Family, Result, each

FAMILY = Family("model", "what an endpoint's model needs before the deploy")


def endpoint_label(ep: Any) -> str:
    """How a result names an endpoint: ``endpoint <namespace>/<name>``."""
    return f"endpoint {ep.namespace}/{ep.name}"


def _hub_endpoints(ctx: Context) -> list[tuple[int, Any, Any]]:
    """(index, endpoint, its ``model.huggingface``) of every endpoint with a Hub model."""
    return [(i, ep, ep.model.huggingface) for i, ep in enumerate(ctx.config.endpoints)
            if not ep.is_jumpstart and ep.model.huggingface is not None]


def _field(i: int, *path: str) -> str:
    return ".".join((f"endpoints[{i}]", *path))


def _resource(ep: Any, hf: Any) -> str:
    at = f"@{hf.commit_sha[:12]}" if hf.commit_sha else ""
    return f"{endpoint_label(ep)}: {hf.model_id}{at}"


def _skip_if_unanswered(problem: hub.HubProblem) -> None:
    if problem.is_skip:
        raise Skip(f"not checked: {problem.message}")


def info(ctx: Context, hf: Any) -> hub.ModelInfo | hub.HubProblem:
    """The Hub's info of the model at its pinned commit (``main`` unpinned), with ``HF_TOKEN`` when set; a token the
    Hub rejects is left out here (``model.token`` reports it), since a public or gated repository's info needs none."""
    def read() -> hub.ModelInfo | hub.HubProblem:
        token = hub.local_token()
        found = hub.model_info(hf.model_id, hf.commit_sha, token)
        if isinstance(found, hub.HubProblem) and found.kind == "token-rejected" and token:
            found = hub.model_info(hf.model_id, hf.commit_sha, None)
        return found
    return ctx.shared(f"hub-info:{hf.model_id}@{hf.commit_sha}", read)


def info_or_skip(ctx: Context, hf: Any) -> hub.ModelInfo:
    """The model's info, or Skip naming why it could not be read (the Hub unanswered, or see model.repository)."""
    found = info(ctx, hf)
    if isinstance(found, hub.HubProblem):
        _skip_if_unanswered(found)
        raise Skip(f"the model could not be read on the Hub (see model.repository): {found.message}")
    return found


def _config_json(ctx: Context, hf: Any, found: hub.ModelInfo) -> dict:
    def read() -> dict | hub.HubProblem:
        return hub.config_json(hf.model_id, found.sha or hf.commit_sha, hub.local_token())
    data = ctx.shared(f"hub-config:{hf.model_id}@{found.sha}", read)
    if isinstance(data, hub.HubProblem):
        _skip_if_unanswered(data)
        if data.kind == "gated":
            raise Skip(f"not checked: config.json of the gated {hf.model_id} needs a token granted access: set "
                       "HF_TOKEN locally to check it")
        raise Skip(f"not checked: {data.message}")
    return data


@FAMILY.check("model.repository", "the model ID exists on the Hub", lambda c: "the Hub's models")
def check_repository(ctx: Context) -> Iterator[Result]:
    for i, ep, hf in _hub_endpoints(ctx):
        yield from each("model.repository", _resource(ep, hf), lambda i=i, ep=ep, hf=hf: _repository(ctx, i, ep, hf))


def _repository(ctx: Context, i: int, ep: Any, hf: Any) -> Result:
    found, resource = info(ctx, hf), _resource(ep, hf)
    if isinstance(found, hub.ModelInfo) or found.kind == "revision-not-found":
        kind = "a public" if isinstance(found, hub.HubProblem) or not found.needs_token else (
            "a private" if found.private else f"a gated ({found.gated})")
        return Result("model.repository", PASS, resource, f"{kind} repository on the Hub")
    _skip_if_unanswered(found)
    if found.kind == "not-found" and hf.token is not None and not hub.local_token():
        return Result("model.repository", SKIP, resource, "not found without a token, and the endpoint has one (a "
                      "private repository?): set HF_TOKEN locally to the token's value to check it")
    if found.kind == "not-found":
        fix = f"set {_field(i, 'model.huggingface.modelId')} to the Hub's owner/name of the model"
        if hf.token is None:
            fix += f"; for a private repository give {_field(i, 'model.huggingface.token')}"
        return Result("model.repository", FAIL, resource, found.message, fix)
    return Result("model.repository", FAIL, resource, found.message)


@FAMILY.check("model.commit", "the pinned commit exists; an unpinned model names the commit main points to",
              lambda c: "the Hub's models")
def check_commit(ctx: Context) -> Iterator[Result]:
    for i, ep, hf in _hub_endpoints(ctx):
        yield from each("model.commit", _resource(ep, hf), lambda i=i, ep=ep, hf=hf: _commit(ctx, i, ep, hf))


def _commit(ctx: Context, i: int, ep: Any, hf: Any) -> Result:
    found, resource, key = info(ctx, hf), _resource(ep, hf), _field(i, "model.huggingface.commitSHA")
    if isinstance(found, hub.HubProblem) and found.kind == "revision-not-found":
        main = hub.model_info(hf.model_id, None, hub.local_token())
        head = f" (main is at {main.sha} today)" if isinstance(main, hub.ModelInfo) else ""
        return Result("model.commit", FAIL, resource, f"commit {hf.commit_sha} is not in {hf.model_id}: the "
                      "operator's download fails", f"set {key} to a commit of the repository{head}")
    found = info_or_skip(ctx, hf)
    if hf.commit_sha:
        return Result("model.commit", PASS, resource, f"commit {found.sha} exists")
    return Result("model.commit", WARN, resource, f"not pinned: main points to {found.sha} today, and each deploy "
                  "takes whatever main is then", f'pin it: {key}: "{found.sha}"')


@FAMILY.check("model.token", "a gated or private model has a token, and HF_TOKEN (local) can read it",
              lambda c: "the Hub's models")
def check_token(ctx: Context) -> Iterator[Result]:
    for i, ep, hf in _hub_endpoints(ctx):
        yield from each("model.token", _resource(ep, hf), lambda i=i, ep=ep, hf=hf: _token(ctx, i, ep, hf))


def _token(ctx: Context, i: int, ep: Any, hf: Any) -> Result:
    resource, key = _resource(ep, hf), _field(i, "model.huggingface.token")
    found = info_or_skip(ctx, hf)
    if not found.needs_token:
        return Result("model.token", PASS, resource, "public: no token needed")
    what = "private" if found.private else f"gated ({found.gated})"
    if hf.token is None:
        return Result("model.token", FAIL, resource, f"the repository is {what} and the endpoint has no token: the "
                      "download fails with 401 on the node", f"give {key} (secretsManagerArn or kubernetesSecret) "
                      "holding a token of an account granted access to the model")
    token = hub.local_token()
    if token is None:
        return Result("model.token", PASS, resource, f"{what}, and the endpoint has a token (not read: set HF_TOKEN "
                      "locally to the same token to check it can read the repository)")
    problem = hub.auth_check(hf.model_id, token)
    if problem is None:
        return Result("model.token", PASS, resource, f"{what}, the endpoint has a token, and HF_TOKEN can read it "
                      f"(make sure {key} holds the same token)")
    _skip_if_unanswered(problem)
    return Result("model.token", FAIL, resource, f"HF_TOKEN cannot read the repository: {problem.message}",
                  f"ask for access on the model's Hub page with the token's account, then store that token in {key}")


@FAMILY.check("model.architecture", "the runtime preset serves the model's architecture",
              lambda c: "the Hub's models")
def check_architecture(ctx: Context) -> Iterator[Result]:
    for i, ep, hf in _hub_endpoints(ctx):
        if ep.effective_runtime in model_support.RUNTIMES:
            yield from each("model.architecture", _resource(ep, hf),
                            lambda i=i, ep=ep, hf=hf: _architecture(ctx, i, ep, hf))


def _architectures(ctx: Context, hf: Any, found: hub.ModelInfo) -> tuple[tuple[str, ...], str | None]:
    if found.architectures or found.model_type:
        return found.architectures, found.model_type
    data = _config_json(ctx, hf, found)
    return tuple(data.get("architectures") or ()), data.get("model_type")


def _architecture(ctx: Context, i: int, ep: Any, hf: Any) -> Result:
    found, runtime = info_or_skip(ctx, hf), ep.effective_runtime
    archs, model_type = _architectures(ctx, hf, found)
    support = model_support.runtime_support(runtime, archs, model_type)
    resource = _resource(ep, hf)
    if support.status == "served":
        return Result("model.architecture", PASS, resource, support.reason)
    others = [r for r in model_support.RUNTIMES if r != runtime  # serve it, and for their preset's task
              and model_support.runtime_support(r, archs, model_type).status == "served"
              and model_support.preset_task_problem(r, archs, model_type, found.pipeline_tag) is None]
    fix = (f"set {_field(i, 'runtime')} to {' or '.join(others)} (which serve it), or runtime: custom with an image "
           "that serves it" if others else f"use runtime: custom ({_field(i, 'runtime')}) with an image that serves "
           "it, or another model")
    status = FAIL if support.status == "unsupported" else WARN
    return Result("model.architecture", status, resource, support.reason, fix)


@FAMILY.check("model.task", "the model's task is the runtime preset's (no embedding model on a generation preset)",
              lambda c: "the Hub's models")
def check_task(ctx: Context) -> Iterator[Result]:
    for i, ep, hf in _hub_endpoints(ctx):
        if ep.effective_runtime in model_support.PRESET_TASK:
            yield from each("model.task", _resource(ep, hf), lambda i=i, ep=ep, hf=hf: _task(ctx, i, ep, hf))


def _task(ctx: Context, i: int, ep: Any, hf: Any) -> Result:
    found, runtime = info_or_skip(ctx, hf), ep.effective_runtime
    archs, model_type = _architectures(ctx, hf, found)
    problem = model_support.preset_task_problem(runtime, archs, model_type, found.pipeline_tag)
    if problem:
        return Result("model.task", FAIL, _resource(ep, hf), problem,
                      f"change {_field(i, 'model.huggingface.modelId')} or {_field(i, 'runtime')}")
    task, why = model_support.model_task(runtime, archs, model_type, found.pipeline_tag)
    words = model_support.TASK_WORDS[task] if task else "not stated"
    return Result("model.task", PASS, _resource(ep, hf), f"task {words} ({why}), served by the {runtime} preset")


@FAMILY.check("model.tensor-parallel", "the tensor-parallel size (the endpoint's GPUs) divides the model's heads",
              lambda c: "the Hub's models")
def check_tensor_parallel(ctx: Context) -> Iterator[Result]:
    for i, ep, hf in _hub_endpoints(ctx):
        if ep.effective_runtime in model_support.TENSOR_PARALLEL:
            yield from each("model.tensor-parallel", _resource(ep, hf),
                            lambda i=i, ep=ep, hf=hf: _tensor_parallel(ctx, i, ep, hf))


def _tensor_parallel(ctx: Context, i: int, ep: Any, hf: Any) -> Result:
    found, runtime, resource = info_or_skip(ctx, hf), ep.effective_runtime, _resource(ep, hf)
    tp = max(ep.accelerators[1], 1)
    heads = model_support.attention_heads(_config_json(ctx, hf, found))
    if heads is None:
        return Result("model.tensor-parallel", SKIP, resource, "config.json names no attention-head count")
    problem = model_support.tensor_parallel_problem(runtime, tp, *heads)
    if problem is None:
        return Result("model.tensor-parallel", PASS, resource, f"{heads[0]} attention heads and {heads[1]} key-value "
                      f"heads split over tensor-parallel size {tp}")
    facts = ep.instance
    limit = facts.count if facts is not None else tp
    sizes = model_support.tensor_parallel_sizes(*heads, runtime, limit=max(limit, 1))
    return Result("model.tensor-parallel", FAIL, resource, f"tensor-parallel size {tp} (the endpoint's GPUs): "
                  f"{problem}", f"set {_field(i, 'resources.gpus')} to {' or '.join(map(str, sizes))}")


@FAMILY.check("model.memory", "the weights fit the endpoint's GPU memory and the storage limit set for them",
              lambda c: "the Hub's models")
def check_memory(ctx: Context) -> Iterator[Result]:
    for i, ep, hf in _hub_endpoints(ctx):
        yield from each("model.memory", _resource(ep, hf), lambda i=i, ep=ep, hf=hf: _memory(ctx, i, ep, hf))


def _parameters(ctx: Context, hf: Any, found: hub.ModelInfo) -> dict[str, int]:
    if found.parameters:
        return dict(found.parameters)
    counts = ctx.shared(f"hub-parameters:{hf.model_id}@{found.sha}",
                        lambda: hub.safetensors_parameters(hf.model_id, found.sha, hub.local_token()))
    if isinstance(counts, hub.HubProblem):
        raise Skip(f"not checked: {counts.message}")
    return counts


def _memory(ctx: Context, i: int, ep: Any, hf: Any) -> list[Result]:
    found, resource = info_or_skip(ctx, hf), _resource(ep, hf)
    parameters = _parameters(ctx, hf, found)
    facts = ep.instance
    gpus = ep.accelerators[1]
    fit = model_memory.memory_fit(parameters, gpus, facts.accelerator_memory_mib if facts else 0,
                                  facts.accelerator_model if facts and facts.accelerator_model else "accelerator")
    fix = (f"a larger instance type ({_field(i, 'instanceType')}), more GPUs ({_field(i, 'resources.gpus')}), or a "
           "smaller or quantized model")
    status = {"fits": PASS, "tight": WARN, "too-large": FAIL, "unknown": SKIP}[fit.verdict]
    out = [Result("model.memory", status, resource, fit.message, fix if status in (WARN, FAIL) else "")]
    res = ep.resources
    for part in ("limits", "requests"):
        value = (getattr(res, part) or {}).get("ephemeral-storage") if res is not None else None
        if value is not None:
            key = _field(i, "resources", part, "ephemeral-storage")
            problem = model_memory.volume_problem(fit.weight_bytes, int(prod_facts.quantity_value(value)),
                                                  f"{key} ({value})")
            if problem:
                out.append(Result("model.memory", FAIL, resource, problem, f"raise {key}, or use a weight cache "
                                  f"({_field(i, 'weightCache.mode')}: daemonset)"))
            break
    return out


for _check in model_s3.CHECKS:  # the S3 checks of this family, in their own module
    FAMILY.add(*_check)
