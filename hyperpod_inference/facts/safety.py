"""Rules that keep what the stack grants and where the agent writes literal: S3 prefixes, host paths, Secrets Manager
ARNs, token-shaped values. Standard library only; the config validators and the constructs both call these."""

from __future__ import annotations

import json
import re
from typing import Any

# --- S3 prefixes --------------------------------------------------------------------------------------------------
#: IAM reads these as wildcards in a resource ARN and in ``StringLike`` conditions.
IAM_WILDCARDS = ("*", "?")


def s3_prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot be granted literally, or None. An empty prefix is the whole bucket (allowed)."""
    found = [c for c in IAM_WILDCARDS if c in prefix]
    if found:
        return (f"must be a literal prefix: {' and '.join(repr(c) for c in found)} would be an IAM wildcard "
                "(the grant would reach other keys than the prefix names)")
    if prefix.startswith("/"):
        return "must not start with '/' (a prefix is relative to the bucket)"
    if "//" in prefix:
        return "must not contain '//' (an empty folder name)"
    return None


def s3_folder_prefix(prefix: str) -> str:
    """The prefix as a folder for IAM and listings: ``qwen`` -> ``qwen/``, ``a/b/`` unchanged, ``""`` (the whole
    bucket) unchanged. Never applied to ``modelLocation``: the operator gets the prefix as written."""
    problem = s3_prefix_problem(prefix)
    if problem:
        raise ValueError(f"S3 prefix {prefix!r} {problem}")
    return prefix if not prefix or prefix.endswith("/") else prefix + "/"


# --- host paths ---------------------------------------------------------------------------------------------------
#: Host directories a path written by the agent (as root) must not be, nor be under. ``/lib*`` is any top-level
#: directory whose name starts with ``lib`` (lib, lib32, lib64, libx32).
SYSTEM_HOST_PATHS = ("/proc", "/sys", "/dev", "/run", "/var/run", "/boot", "/etc", "/usr", "/bin", "/sbin", "/root",
                     "/var/lib/kubelet", "/var/lib/containerd", "/var/lib/docker")


def host_path_problem(path: str) -> str | None:
    """Why ``path`` is not a safe host directory for the agent or the operator's cache, or None."""
    if not path.startswith("/"):
        return "must be an absolute path"
    segments = path.split("/")[1:]
    if path != "/" and (path.endswith("/") or "" in segments or any(s in (".", "..") for s in segments)):
        return "must be a normalized absolute path (no '.', '..', '//' or trailing '/')"
    if path == "/":
        return "must not be '/' (the agent writes there as root)"
    for system in SYSTEM_HOST_PATHS:
        if path == system or path.startswith(system + "/"):
            return f"must not be {system} or under it (a system directory; the agent writes there as root)"
    if segments[0].startswith("lib"):
        return f"must not be /{segments[0]} or under it (a system directory; the agent writes there as root)"
    return None


# --- Secrets Manager ----------------------------------------------------------------------------------------------
#: Secrets Manager appends ``-`` and six random characters to a secret's name in its ARN.
_SECRET_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}$")


def secret_arn_is_complete(secret_arn: str) -> bool:
    """True when the ARN's name part ends in ``-`` plus six characters, the shape of Secrets Manager's suffix.
    Ambiguous: a secret named ``hf-token-abcdef`` given without its suffix looks the same."""
    return bool(_SECRET_SUFFIX.search(secret_arn.rsplit(":secret:", 1)[-1]))


def secret_resource_arn(secret_arn: str) -> str:
    """What an IAM policy names for a secret: a complete ARN as given; a partial ARN (no suffix) with ``-??????``,
    AWS's documented pattern for the six-character suffix."""
    return secret_arn if secret_arn_is_complete(secret_arn) else f"{secret_arn}-??????"


# --- token-shaped values ------------------------------------------------------------------------------------------
#: A Hugging Face user access token: ``hf_`` and (today) 34 letters and digits.
HF_TOKEN_SHAPE = re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])")


def looks_like_hf_token(value: str) -> bool:
    return HF_TOKEN_SHAPE.search(value) is not None


# --- content types ------------------------------------------------------------------------------------------------
def is_json_content_type(content_type: str) -> bool:
    """``application/json`` or any ``<type>/<subtype>+json`` (parameters after ``;`` ignored)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def json_body(payload: Any) -> str:
    """A request body as sent: a string as given, anything else (a mapping or list) as compact JSON."""
    return payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def payload_problem(payload: Any, content_type: str | None) -> str | None:
    """Why ``payload`` cannot be sent as a request body with ``content_type``, or None: a string goes as it is; a
    mapping or list is sent as compact JSON and needs a JSON content type (``content_type`` None: not known yet)."""
    if isinstance(payload, str):
        return None
    if isinstance(payload, (dict, list, tuple)) or hasattr(payload, "keys"):
        if content_type is not None and not is_json_content_type(content_type):
            return (f"a mapping or list is sent as JSON and needs a JSON content type (contentType is {content_type}); "
                    "give a string otherwise")
        return None
    return f"must be a string, a mapping or a list (got {type(payload).__name__})"


def verify_body(payload: Any, content_type: str | None, default: str) -> str:
    """The one place a verification request body is built: ``payload`` as sent (:func:`json_body`) after
    :func:`payload_problem` (ValueError naming it), or ``default`` when there is none (or it is empty)."""
    if payload is None:
        return default
    problem = payload_problem(payload, content_type)
    if problem:
        raise ValueError(problem)
    return json_body(payload) or default
