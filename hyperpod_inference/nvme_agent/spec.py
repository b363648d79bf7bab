"""Model specs: validation and the deterministic cache layout (pure, stdlib only).

A spec is a JSON object, one of::

    {"source": "s3", "bucket": "my-bucket", "prefix": "qwen/", "region": "us-west-2"}
    {"source": "huggingface", "modelId": "org/model", "revision": "<40-hex commit sha or main>"}
    {"source": "local", "path": "/fsx/models/llama", "mount": "/fsx"}    (a directory on the node, e.g. an FSx
                                                    mount; links are followed only to targets inside ``mount``,
                                                    default ``path``)

The cache directory of a model under the cache root is ``<source-key>/<revision>``. Both parts are DNS-label and
file-name safe (``[a-z0-9-]``, at most 63 characters each). When turning the source into a slug loses information
(upper case, dots, slashes inside a prefix, ...), a short hash of the exact source identity is appended so two
different sources never share a directory.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re

S3 = "s3"
HUGGINGFACE = "huggingface"
LOCAL = "local"
SOURCES = (S3, HUGGINGFACE, LOCAL)

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_SLUG_RE = re.compile(r"[^a-z0-9]+")
_MAX_LABEL = 63


class SpecError(ValueError):
    """The model spec is malformed."""


def _slug(text: str) -> str:
    return _SLUG_RE.sub("-", text.lower()).strip("-")


def _label(prefix: str, parts: list[str], identity: str) -> str:
    """Join slugged parts with ``--``; add a hash when the slug is lossy or too long."""
    slugs = [_slug(p) for p in parts]
    lossless = all(s == p for s, p in zip(slugs, parts, strict=True)) and all(slugs)
    body = "--".join([prefix] + [s or "x" for s in slugs])
    if lossless and len(body) <= _MAX_LABEL:
        return body
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:8]
    return body[: _MAX_LABEL - 9].rstrip("-") + "-" + digest


def normalize_spec(spec: dict | str) -> dict:
    """Validate a spec (dict or JSON string) and return a normalized copy (no secrets are ever part of a spec)."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as exc:
            raise SpecError(f"model spec is not valid JSON: {exc}") from None
    if not isinstance(spec, dict):
        raise SpecError("model spec must be a JSON object")
    source = spec.get("source")
    if source == S3:
        bucket = spec.get("bucket")
        if not isinstance(bucket, str) or not bucket:
            raise SpecError("s3 model spec needs a non-empty 'bucket'")
        prefix = spec.get("prefix", "")
        if not isinstance(prefix, str):
            raise SpecError("s3 'prefix' must be a string")
        prefix = prefix.lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        out = {"source": S3, "bucket": bucket, "prefix": prefix}
        if spec.get("region"):
            out["region"] = str(spec["region"])
        return out
    if source in (HUGGINGFACE, "hf"):
        model_id = spec.get("modelId")
        if not isinstance(model_id, str) or not re.fullmatch(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+|[A-Za-z0-9][\w.\-]*", model_id):
            raise SpecError("huggingface model spec needs 'modelId' like 'org/model'")
        revision = spec.get("revision") or "main"
        if not isinstance(revision, str) or ".." in revision:
            raise SpecError("huggingface 'revision' must be a commit sha or a branch/tag name")
        return {"source": HUGGINGFACE, "modelId": model_id, "revision": revision}
    if source == LOCAL:
        path = spec.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise SpecError("local model spec needs an absolute 'path' (a directory on the node)")
        path = normal_path(path)
        if path == "/":
            raise SpecError(f"local model 'path' {spec['path']!r} is the root directory (the node's whole file system)")
        out = {"source": LOCAL, "path": path}
        mount = spec.get("mount")
        if mount is not None:
            if not isinstance(mount, str) or not mount.startswith("/"):
                raise SpecError("local model 'mount' must be an absolute path (the node-mounted file system)")
            mount = normal_path(mount)
            if mount == "/":
                raise SpecError(f"local model 'mount' {spec['mount']!r} is the root directory (the node's whole file "
                                "system)")
            if path != mount and not path.startswith(mount + "/"):
                raise SpecError(f"local model 'path' {path} must be inside its 'mount' {mount} (not the root)")
            out["mount"] = mount
        return out
    raise SpecError(f"model spec 'source' must be one of {list(SOURCES)}, got {source!r}")


def normal_path(path: str) -> str:
    """An absolute path in its one spelling: ``.``, ``..``, repeated and trailing slashes resolved lexically. Unlike
    ``posixpath.normpath``, a leading ``//`` becomes ``/`` too (POSIX leaves it implementation-defined; on Linux it is
    the root), so every spelling of the root directory is ``/``."""
    return "/" + posixpath.normpath(path).lstrip("/")


def is_commit_sha(revision: str) -> bool:
    return bool(_COMMIT_RE.match(revision))


def source_key(spec: dict | str) -> str:
    """The DNS/file-name safe slug naming the source of a model."""
    s = normalize_spec(spec)
    if s["source"] == S3:
        prefix = s["prefix"].rstrip("/")
        identity = f"s3://{s['bucket']}/{s['prefix']}"
        return _label("s3", [s["bucket"], prefix] if prefix else [s["bucket"]], identity)
    if s["source"] == LOCAL:
        return _label("local", s["path"].strip("/").split("/"), f"local://{s['path']}")
    org, _, name = s["modelId"].rpartition("/")
    identity = f"hf://{s['modelId']}"
    return _label("hf", [org, name] if org else [name], identity)


def revision_label(spec: dict | str) -> str:
    """``latest`` for S3 and local; the commit sha for a pinned Hub model, else the slugged branch/tag (``main``)."""
    s = normalize_spec(spec)
    if s["source"] in (S3, LOCAL):
        return "latest"
    rev = s["revision"]
    if is_commit_sha(rev):
        return rev
    return _label("rev", [rev], rev)[len("rev--"):] if _slug(rev) != rev else rev


def model_relative_dir(spec: dict | str) -> str:
    """Cache directory of a model relative to the cache root: ``<source-key>/<revision>`` (pure, deterministic)."""
    return f"{source_key(spec)}/{revision_label(spec)}"


def required_modules(spec: dict | str) -> list[str]:
    """Python modules the agent needs to download this spec (none for a local directory): ``botocore`` for S3,
    ``huggingface_hub`` for the Hub."""
    return {S3: ["botocore"], HUGGINGFACE: ["huggingface_hub"], LOCAL: []}[normalize_spec(spec)["source"]]
