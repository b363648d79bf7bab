"""Safe-by-default rules of the config: refusals the models call (each a ``(path, message)`` pair, paths relative to
the model) and the warnings registered in :mod:`.warnings` (stable IDs)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..facts import safety
from .warnings import ConfigWarning, config_rule, endpoint_rule

if TYPE_CHECKING:
    from .models import Endpoint, HyperPodConfig

is_json_content_type = safety.is_json_content_type

Problem = tuple[tuple[str | int, ...], str]

TOKEN_FIELD = "model.huggingface.token"


def token_shaped_values(endpoint: Endpoint) -> list[Problem]:
    """A value in ``env`` or ``args`` that looks like a Hugging Face token would land in the template and the
    manifests in clear text: refused, pointing at ``model.huggingface.token``."""
    message = (f"looks like a Hugging Face token (hf_...); a token here is written in clear text into the template "
               f"and the manifests. Store it in a secret and reference it with {TOKEN_FIELD} "
               "(secretsManagerArn or kubernetesSecret)")
    problems: list[Problem] = []
    for name, value in (endpoint.env or {}).items():
        # a {valueFrom: ...} reference carries no value of its own
        if isinstance(value, str) and safety.looks_like_hf_token(value):
            problems.append((("env", name), message))
    for i, arg in enumerate(endpoint.args or []):
        if safety.looks_like_hf_token(arg):
            problems.append((("args", i), message))
    return problems


def payload_text(payload: str | dict[str, Any] | list[Any]) -> str:
    """A verify payload as sent: a string as given, a mapping or list as compact JSON."""
    return safety.json_body(payload)


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
