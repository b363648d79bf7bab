"""Safe-by-default rules of the config: refusals the models call (each a ``(path, message)`` pair, paths relative to
the model) and the warnings registered in :mod:`.warnings` (stable IDs)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..facts import safety
from .warnings import ConfigWarning, config_rule, endpoint_rule

if TYPE_CHECKING:
    from .models import Endpoint, HyperPodConfig

Problem = tuple[tuple[str | int, ...], str]

TOKEN_FIELD = "model.huggingface.token"


TOKEN_MESSAGE = (f"looks like a Hugging Face token (hf_...); a token here is written in clear text into the "
                 f"template and the manifests. Store it in a secret and reference it with {TOKEN_FIELD} "
                 "(secretsManagerArn or kubernetesSecret)")


def token_key_message(lines: list[int] | tuple[int, ...] = ()) -> str:
    """What a mapping with a token-shaped key is told; ``lines``: the keys' lines in the file, when known (the key
    itself is never repeated)."""
    where = f" (line {', '.join(str(n) for n in lines)})" if lines else ""
    return (f"has a key{where} that looks like a Hugging Face token (hf_...); a token here is written in clear text "
            f"into the template and the manifests. Store it in a secret and reference it with {TOKEN_FIELD} "
            "(secretsManagerArn or kubernetesSecret)")


TOKEN_KEY_MESSAGE = token_key_message()


def token_shaped(value: Any, path: tuple[str | int, ...] = ()) -> list[Problem]:
    """Every string in ``value`` (mappings, lists and tuples walked to any depth: keys too) that looks like a Hugging
    Face token, as ``(path, message)``; the message never repeats the value (a key is named by its mapping)."""
    problems: list[Problem] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [(path, value)]
    while stack:  # no recursion: the loader bounds the depth, this does not rely on it
        where, node = stack.pop()
        if isinstance(node, str):
            if safety.looks_like_hf_token(node):
                problems.append((where, TOKEN_MESSAGE))
        elif isinstance(node, dict):
            if any(isinstance(k, str) and safety.looks_like_hf_token(k) for k in node):
                problems.append((where, TOKEN_KEY_MESSAGE))
            stack += [((*where, k if isinstance(k, (str, int)) else str(k)), v) for k, v in reversed(node.items())]
        elif isinstance(node, (list, tuple)):
            stack += [((*where, i), v) for i, v in reversed(list(enumerate(node)))]
    return problems


def token_shaped_values(endpoint: Endpoint) -> list[Problem]:
    """A value anywhere in the endpoint (``env``, ``args``, ``command``, ``specOverrides``, ``tags``,
    ``verify.payload``, annotations, labels, ... every string it holds) that looks like a Hugging Face token would
    land in the template, the manifests, a stack output or a handler's logs in clear text: refused, pointing at
    ``model.huggingface.token``. (The loader checks the whole file, every section, the same way.)"""
    return token_shaped(endpoint.model_dump(by_alias=True, exclude_none=True))


def local_path_problems(endpoint: Endpoint) -> list[Problem]:
    """``model.fsx.path`` is the folder the NVMe agent copies from under ``nodePath`` (and the operator's
    ``modelLocation``): a ``.`` or ``..`` segment may spell the file system's root or a folder outside it (``/..``
    under ``/fsx`` is the node's root directory), so the path must be written without them. Repeated and trailing
    slashes are harmless and normalized where the path is used."""
    fsx = endpoint.model.fsx
    if fsx is None or not any(part in (".", "..") for part in fsx.path.split("/")):
        return []
    return [(("model", "fsx", "path"), "must not contain '.' or '..' segments (a folder of the file system, "
                                       "written as an absolute path from its root)")]


# --------------------------------------------------------------------------------------------------------- warnings
@endpoint_rule("wholeBucket")
def _whole_bucket(endpoint: Endpoint, config: HyperPodConfig | None) -> Iterator[ConfigWarning]:
    s3 = endpoint.model.s3
    if s3 is not None and not s3.prefix:
        yield ConfigWarning(
            "wholeBucket", "model.s3.prefix",
            f"no prefix: the model's roles may read every object of s3://{s3.bucket} (the whole bucket); give the "
            "model's folder as prefix to grant only it")


@endpoint_rule("secretArnPartial")
def _ambiguous_secret_arn(endpoint: Endpoint, config: HyperPodConfig | None) -> Iterator[ConfigWarning]:
    hf = endpoint.model.huggingface
    arn = hf.token.secrets_manager_arn if hf and hf.token else None
    if arn and not safety.secret_arn_is_complete(arn):
        name = arn.rsplit(":secret:", 1)[-1]
        yield ConfigWarning(
            "secretArnPartial", "model.huggingface.token.secretsManagerArn",
            f"a partial ARN: '{name}' has no Secrets Manager suffix (- and six characters), so the token reader is "
            f"granted {name}-?????? (any secret of that name and a suffix); give the full ARN from the console or "
            "`aws secretsmanager describe-secret` to grant exactly one secret")


@config_rule("apexDomain")
def _apex_domain(config: HyperPodConfig) -> Iterator[ConfigWarning]:
    if config.domain is None:
        return
    zone = config.domain.zone_name.rstrip(".")
    for i, ep in enumerate(config.endpoints):
        if ep.domain_name is not None and ep.domain_name == zone:
            yield ConfigWarning(
                "apexDomain", f"endpoints[{i}].domainName",
                f"the zone apex {zone}: the operator may change the apex's A and TXT records, and the apex TXT set is "
                "shared with SPF and domain verification records; prefer a name below the apex")


@endpoint_rule("shareAcrossNamespaces")
def _shared_cache_root(endpoint: Endpoint, config: HyperPodConfig | None) -> Iterator[ConfigWarning]:
    cache = endpoint.weight_cache
    if cache.mode == "daemonset" and cache.share_across_namespaces:
        yield ConfigWarning("shareAcrossNamespaces", "weightCache.shareAcrossNamespaces",
                            f"every namespace's models share one cache root ({cache.host_path}): this endpoint's pods "
                            "mount the models of other namespaces, and theirs mount this one's")
