"""Read-only access to the cluster's Kubernetes API through a kubeconfig, for the checks that look inside the
cluster (CRDs, namespaces, the aws-auth ConfigMap, the objects the stack would create). Only ``GET``, each with a
timeout; ``metadata_only`` asks for the object's metadata alone (``PartialObjectMetadata``), so a Secret's data never
comes back.

The context used is the one ``aws eks update-kubeconfig`` writes (named by the EKS cluster's ARN), else the context
whose cluster's server is the EKS cluster's endpoint. Credentials: a ``token``, a ``tokenFile``, or an ``exec``
plugin (``aws eks get-token``), run once with a timeout.

A kubeconfig that is there but cannot be used (not YAML, not a mapping, entries of the wrong shape, a context naming
a cluster or user it does not have, a ``tokenFile`` that cannot be read, an exec ``env`` entry without ``name`` or
``value``) is :class:`KubeUnavailable` with ``broken`` set, naming the file and the entry; a missing one, or one
without this cluster's context, is not broken (the checks inside the cluster skip). A redirect is never followed: the
token would go with it."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config.loader import ConfigError, load_yaml_text
from .text import one_line

TIMEOUT_SECONDS = 10
#: The ``Accept`` of a metadata-only read: the API server answers with the object's ``metadata`` and nothing else.
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
EXEC_TIMEOUT_SECONDS = 30


class KubeUnavailable(Exception):  # noqa: N818 - the reason the cluster-side checks skip
    """Why the cluster's API cannot be used; ``broken``: the kubeconfig itself is wrong (a failed check, not a
    skip)."""

    def __init__(self, reason: str, *, broken: bool = False) -> None:
        super().__init__(one_line(reason, 600))
        self.broken = broken


def default_kubeconfig() -> str:
    return os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or str(Path.home() / ".kube" / "config")


def _entries(config: dict, key: str, path: str) -> list[dict]:
    """The named entries under ``key`` (clusters, contexts, users): a list of mappings, each with a ``name``."""
    items = config.get(key)
    if items is None:
        return []
    if not isinstance(items, list):
        raise KubeUnavailable(f"the kubeconfig {path}: {key} must be a list, not {type(items).__name__}", broken=True)
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise KubeUnavailable(f"the kubeconfig {path}: {key}[{i}] must be a mapping with a name", broken=True)
    return items


def _section(entry: dict | None, key: str, what: str, path: str) -> dict:
    """``entry[key]`` (a context's ``context``, a cluster's ``cluster``, a user's ``user``): a mapping."""
    value = (entry or {}).get(key) or {}
    if not isinstance(value, dict):
        raise KubeUnavailable(f"the kubeconfig {path}: {what}.{key} must be a mapping", broken=True)
    return value


def _named(items: list[dict], name: str) -> dict | None:
    return next((i for i in items if i.get("name") == name), None)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follows a redirect: urllib would send the request's headers, the bearer token included, to wherever
    the answer points. The 3xx comes back as an HTTPError instead."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class Kube:
    server: str
    token: str | None
    context: ssl.SSLContext | None
    context_name: str

    @classmethod
    def from_kubeconfig(cls, path: str, *, cluster_arn: str, endpoint: str | None) -> Kube:
        """The API of ``cluster_arn``; :class:`KubeUnavailable` saying why not."""
        fix = f"run aws eks update-kubeconfig --name {cluster_arn.rsplit('/', 1)[-1]}"
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise KubeUnavailable(f"no kubeconfig at {path}: {fix}") from None
        except (OSError, UnicodeDecodeError) as err:
            raise KubeUnavailable(f"the kubeconfig {path} cannot be read ({err})", broken=True) from None
        try:
            config = load_yaml_text(text, path)
        except ConfigError as err:
            raise KubeUnavailable(f"the kubeconfig {path} is not valid YAML: {err}", broken=True) from None
        if not isinstance(config, dict):
            raise KubeUnavailable(f"the kubeconfig {path} is not a mapping (apiVersion, clusters, contexts, users): "
                                  f"{fix}", broken=True)
        contexts = _entries(config, "contexts", path)
        clusters = _entries(config, "clusters", path)
        users = _entries(config, "users", path)
        if not contexts:
            raise KubeUnavailable(f"the kubeconfig {path} has no contexts: {fix}", broken=True)
        chosen = _named(contexts, cluster_arn)
        if chosen is None and endpoint:
            by_server = {c["name"]: _section(c, "cluster", f"cluster {c['name']}", path).get("server")
                         for c in clusters}
            chosen = next((c for c in contexts if by_server.get(
                _section(c, "context", f"context {c['name']}", path).get("cluster")) == endpoint), None)
        if chosen is None:
            raise KubeUnavailable(f"the kubeconfig {path} has no context for {cluster_arn}: {fix}")
        name = chosen["name"]
        ctx = _section(chosen, "context", f"context {name}", path)
        cluster_entry = _named(clusters, str(ctx.get("cluster", "")))
        if cluster_entry is None:
            raise KubeUnavailable(f"the kubeconfig {path}: context {name} names cluster {ctx.get('cluster')}, which "
                                  "is not in its clusters", broken=True)
        cluster = _section(cluster_entry, "cluster", f"cluster {cluster_entry['name']}", path)
        user_name = ctx.get("user")
        user_entry = _named(users, str(user_name)) if user_name else None
        if user_name and user_entry is None:
            raise KubeUnavailable(f"the kubeconfig {path}: context {name} names user {user_name}, which is not in "
                                  "its users", broken=True)
        user = _section(user_entry, "user", f"user {user_name}", path)
        server = str(cluster.get("server", "")).rstrip("/")
        if not server.startswith(("https://", "http://")):
            raise KubeUnavailable(f"the kubeconfig {path}: cluster {cluster_entry['name']} of context {name} names no "
                                  "server (https://...)", broken=True)
        return cls(server, _token(user, f"user {user_name} of the kubeconfig {path}"), _tls(cluster, path),
                   str(name))

    def get(self, path: str, *, metadata_only: bool = False) -> tuple[int, dict[str, Any]]:
        """``GET path``: (HTTP status, body); ``metadata_only``: the object's metadata alone (an API server that
        cannot answer so says 406). :class:`KubeUnavailable` when the API cannot be reached, refuses the caller or
        answers with a redirect (never followed: the token would go with it)."""
        return self._send("GET", path, METADATA_ONLY if metadata_only else "application/json")

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``POST path`` with a JSON ``body`` (a review object: it changes nothing), as :meth:`get` answers."""
        return self._send("POST", path, "application/json", body)

    def _send(self, method: str, path: str, accept: str, body: dict[str, Any] | None = None,
              ) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(self.server + path, method=method, headers={"Accept": accept},
                                         data=None if body is None else json.dumps(body).encode())
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=self.context), _NoRedirect())
        try:
            with opener.open(request, timeout=TIMEOUT_SECONDS) as resp:
                return resp.status, _object(resp.read())
        except urllib.error.HTTPError as err:
            if err.code in (401, 403):
                raise KubeUnavailable(f"the Kubernetes API of context {self.context_name} answered {err.code} to "
                                      f"{method} {path}: the caller is not allowed in") from None
            if 300 <= err.code < 400:
                location = urllib.parse.urljoin(self.server + path, err.headers.get("Location") or "")
                host = urllib.parse.urlsplit(location).hostname or "an unnamed host"
                raise KubeUnavailable(f"the Kubernetes API of context {self.context_name} answered {err.code} to "
                                      f"{method} {path}, a redirect to {host}: not followed (the request carries the "
                                      "cluster's token); check the kubeconfig's server") from None
            return err.code, _object(err.read())
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise KubeUnavailable(f"the Kubernetes API at {self.server} cannot be reached ({err})") from None


def _object(body: bytes) -> dict[str, Any]:
    """A JSON object of the API's answer; {} for anything else (a proxy's HTML page, a list)."""
    try:
        value = json.loads(body or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _token(user: dict, where: str) -> str | None:
    if user.get("token"):
        return str(user["token"])
    if user.get("tokenFile"):
        try:
            return Path(str(user["tokenFile"])).read_text().strip()
        except (OSError, UnicodeDecodeError) as err:
            raise KubeUnavailable(f"the tokenFile {user['tokenFile']} of {where} cannot be read "
                                  f"({getattr(err, 'strerror', None) or err})", broken=True) from None
    plugin = user.get("exec")
    if plugin:
        if not isinstance(plugin, dict) or not isinstance(plugin.get("command"), str):
            raise KubeUnavailable(f"the exec plugin of {where} names no command", broken=True)
        args, entries = plugin.get("args") or [], plugin.get("env") or []
        if not isinstance(args, list) or not isinstance(entries, list):
            raise KubeUnavailable(f"the exec plugin of {where}: args and env must be lists", broken=True)
        for i, entry in enumerate(entries):
            if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)
                    and isinstance(entry.get("value"), str)):
                raise KubeUnavailable(f"the exec plugin of {where}: env[{i}] must have a name and a value (strings)",
                                      broken=True)
        env = {**os.environ, **{e["name"]: e["value"] for e in entries}}
        try:
            done = subprocess.run([plugin["command"], *(str(a) for a in args)], capture_output=True, text=True,
                                  timeout=EXEC_TIMEOUT_SECONDS, env=env, check=True)
            return str(json.loads(done.stdout)["status"]["token"])
        except subprocess.CalledProcessError as err:
            raise KubeUnavailable(f"the exec plugin {plugin['command']} of {where} gave no token (exit "
                                  f"{err.returncode}: {one_line(err.stderr or '')})") from None
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError) as err:
            raise KubeUnavailable(f"the exec plugin {plugin['command']} of {where} gave no token ({err})") from None
    return None


def _tls(cluster: dict, path: str) -> ssl.SSLContext | None:
    if not str(cluster.get("server", "")).startswith("https://"):
        return None
    if cluster.get("insecure-skip-tls-verify"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        if cluster.get("certificate-authority-data"):
            return ssl.create_default_context(
                cadata=base64.b64decode(str(cluster["certificate-authority-data"])).decode())
        if cluster.get("certificate-authority"):
            return ssl.create_default_context(cafile=str(cluster["certificate-authority"]))
    except (ValueError, OSError, ssl.SSLError) as err:
        raise KubeUnavailable(f"the kubeconfig {path}: the cluster's certificate authority cannot be read ({err})",
                              broken=True) from None
    return ssl.create_default_context()


__all__ = ["Kube", "KubeUnavailable", "default_kubeconfig"]
