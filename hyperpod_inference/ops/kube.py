"""Read-only access to the cluster's Kubernetes API through a kubeconfig, for the checks that look inside the
cluster (CRDs, namespaces, the aws-auth ConfigMap, the objects the stack would create). Only ``GET``, each with a
timeout; ``metadata_only`` asks for the object's metadata alone (``PartialObjectMetadata``), so a Secret's data never
comes back.

The context used is the one ``aws eks update-kubeconfig`` writes (named by the EKS cluster's ARN), else the context
whose cluster's server is the EKS cluster's endpoint. Credentials: a ``token``, a ``tokenFile``, or an ``exec``
plugin (``aws eks get-token``), run once with a timeout."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

TIMEOUT_SECONDS = 10
#: The ``Accept`` of a metadata-only read: the API server answers with the object's ``metadata`` and nothing else.
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
EXEC_TIMEOUT_SECONDS = 30


class KubeUnavailable(Exception):  # noqa: N818 - the reason the cluster-side checks skip
    pass


def default_kubeconfig() -> str:
    return os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or str(Path.home() / ".kube" / "config")


def _named(items: list[dict], name: str) -> dict | None:
    return next((i for i in items or [] if i.get("name") == name), None)


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
            config = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError:
            raise KubeUnavailable(f"no kubeconfig at {path}: {fix}") from None
        except (OSError, yaml.YAMLError) as err:
            raise KubeUnavailable(f"the kubeconfig {path} cannot be read ({err})") from None
        contexts = config.get("contexts") or []
        clusters = config.get("clusters") or []
        chosen = _named(contexts, cluster_arn)
        if chosen is None and endpoint:
            by_server = {c.get("name"): (c.get("cluster") or {}).get("server") for c in clusters}
            chosen = next((c for c in contexts if by_server.get((c.get("context") or {}).get("cluster")) == endpoint),
                          None)
        if chosen is None:
            raise KubeUnavailable(f"the kubeconfig {path} has no context for {cluster_arn}: {fix}")
        ctx = chosen.get("context") or {}
        cluster = (_named(clusters, ctx.get("cluster", "")) or {}).get("cluster") or {}
        user = (_named(config.get("users") or [], ctx.get("user", "")) or {}).get("user") or {}
        server = str(cluster.get("server", "")).rstrip("/")
        if not server.startswith(("https://", "http://")):
            raise KubeUnavailable(f"context {chosen.get('name')} of {path} names no server")
        return cls(server, _token(user), _tls(cluster), str(chosen.get("name")))

    def get(self, path: str, *, metadata_only: bool = False) -> tuple[int, dict[str, Any]]:
        """``GET path``: (HTTP status, body); ``metadata_only``: the object's metadata alone (an API server that
        cannot answer so says 406). :class:`KubeUnavailable` when the API cannot be reached."""
        accept = METADATA_ONLY if metadata_only else "application/json"
        request = urllib.request.Request(self.server + path, headers={"Accept": accept})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS, context=self.context) as resp:  # noqa: S310
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            if err.code in (401, 403):
                raise KubeUnavailable(f"the Kubernetes API of context {self.context_name} answered {err.code} to "
                                      f"GET {path}: the caller is not allowed in") from None
            body = err.read()
            try:
                return err.code, json.loads(body or b"{}")
            except ValueError:
                return err.code, {}
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise KubeUnavailable(f"the Kubernetes API at {self.server} cannot be reached ({err})") from None


def _token(user: dict) -> str | None:
    if user.get("token"):
        return str(user["token"])
    if user.get("tokenFile"):
        return Path(user["tokenFile"]).read_text().strip()
    plugin = user.get("exec")
    if plugin:
        env = {**os.environ, **{e["name"]: e["value"] for e in plugin.get("env") or []}}
        try:
            done = subprocess.run([plugin["command"], *(plugin.get("args") or [])], capture_output=True, text=True,
                                  timeout=EXEC_TIMEOUT_SECONDS, env=env, check=True)
            return json.loads(done.stdout)["status"]["token"]
        except (OSError, subprocess.SubprocessError, ValueError, KeyError) as err:
            raise KubeUnavailable(f"the kubeconfig's exec plugin {plugin.get('command')} gave no token ({err})") \
                from None
    return None


def _tls(cluster: dict) -> ssl.SSLContext | None:
    if not str(cluster.get("server", "")).startswith("https://"):
        return None
    if cluster.get("insecure-skip-tls-verify"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if cluster.get("certificate-authority-data"):
        return ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    if cluster.get("certificate-authority"):
        return ssl.create_default_context(cafile=cluster["certificate-authority"])
    return ssl.create_default_context()


__all__ = ["Kube", "KubeUnavailable", "default_kubeconfig"]
