"""``gc``: delete this stack's old agent code ConfigMaps of a namespace once nothing references them.

Runs in a Job next to the current code ConfigMap, with its own service account, against the Kubernetes API (stdlib
only: ``urllib.request`` with an ``ssl`` context from the service account's CA). A ConfigMap is this stack's code
when it carries the labels of ``--selector`` (the stack's prefix among them) AND its name is the current one's stem
and another code hash (``<prefix>-<10 hex>``): a ConfigMap someone else labels alike is never touched. One other than
``--current`` is deleted when nothing could still start a pod that mounts it (a ``configMap`` volume or a projected
source): no pod that is not Succeeded/Failed, no DaemonSet, Deployment, StatefulSet, ReplicaSet or CronJob at all
(scaled to zero, suspended or kept as a Deployment's rollout history: scaling up or rolling back would start pods
that need it) and no unfinished Job. Only ConfigMaps older than the current one are touched: when a newer one exists,
a later deploy's Job owns the collection and this one stops. Loops every ``--interval`` until none is left (exit 0)
or ``--timeout`` passes (exit 1, naming what still references each).
"""

from __future__ import annotations

import json
import logging
import os
import re
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

from .config import SERVICE_ACCOUNT_DIR

log = logging.getLogger("nvme_agent")

REQUEST_TIMEOUT = 10.0
#: (kind, API path prefix, resource) of the objects whose pod templates count as references
WORKLOADS = (("DaemonSet", "/apis/apps/v1", "daemonsets"), ("Deployment", "/apis/apps/v1", "deployments"),
             ("StatefulSet", "/apis/apps/v1", "statefulsets"), ("ReplicaSet", "/apis/apps/v1", "replicasets"),
             ("Job", "/apis/batch/v1", "jobs"), ("CronJob", "/apis/batch/v1", "cronjobs"))
#: A code ConfigMap's name after its stack's prefix: ``-`` and the first 10 hex digits of the code hash.
CODE_SUFFIX = r"-[0-9a-f]{10}"


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Api:
    def __init__(self, url: str, namespace: str, token_file: str, ca_file: str):
        self.url, self.namespace, self.token_file = url.rstrip("/"), namespace, token_file
        self.context = ssl.create_default_context(cafile=ca_file) if url.startswith("https:") else None

    def request(self, method: str, path: str, body: dict | None = None) -> dict:
        headers = {"Accept": "application/json"}
        if os.path.exists(self.token_file):  # re-read each time: the kubelet rotates the token
            with open(self.token_file) as fh:
                headers["Authorization"] = "Bearer " + fh.read().strip()
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT, context=self.context) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, f"{method} {path}: HTTP {exc.code} {exc.read()[:300]!r}") from None
        except (OSError, ValueError) as exc:
            raise ApiError(0, f"{method} {path}: {type(exc).__name__}: {exc}") from None

    def list(self, prefix: str, resource: str, selector: str = "") -> list[dict]:
        items, token = [], ""
        while True:
            query = {"limit": "500", **({"labelSelector": selector} if selector else {}),
                     **({"continue": token} if token else {})}
            page = self.request("GET", f"{prefix}/namespaces/{self.namespace}/{resource}?"
                                + urllib.parse.urlencode(query))
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items


def _selected(labels: dict, selector: str) -> bool:
    return all(labels.get(k) == v for k, v in (term.split("=", 1) for term in selector.split(",") if term))


def mounted(pod_spec: dict) -> set:
    """The ConfigMaps a pod spec mounts: ``configMap`` volumes and projected ``configMap`` sources."""
    names = set()
    for volume in pod_spec.get("volumes") or []:
        sources = [volume] + list((volume.get("projected") or {}).get("sources") or [])
        names.update(s["configMap"]["name"] for s in sources if (s.get("configMap") or {}).get("name"))
    return names


def _may_start_pods(kind: str, obj: dict) -> bool:
    """Whether ``obj`` may still start a pod from its template: every workload may (one scaled to zero, suspended or
    in a Deployment's rollout history is scaled up or rolled back), except a finished Job."""
    if kind != "Job":
        return True
    return not any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                   for c in (obj.get("status") or {}).get("conditions") or [])


def _pod_template_spec(kind: str, obj: dict) -> dict:
    spec = obj.get("spec") or {}
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return (spec.get("template") or {}).get("spec") or {}


def is_code_of(name: str, current: str) -> bool:
    """``name`` is a code ConfigMap of the stack that ``current`` is (the same prefix, another code hash)."""
    stem = current[:-11] if re.fullmatch(r".+" + CODE_SUFFIX, current) else current
    return re.fullmatch(re.escape(stem) + CODE_SUFFIX, name) is not None


def referrers(api: Api) -> dict:
    """ConfigMap name -> the objects that may still start a pod that mounts it (``Kind/name``)."""
    refs: dict = {}
    found = [(kind, o, _pod_template_spec(kind, o))
             for kind, prefix, resource in WORKLOADS for o in api.list(prefix, resource) if _may_start_pods(kind, o)]
    found += [("Pod", p, p.get("spec") or {}) for p in api.list("/api/v1", "pods")
              if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    for kind, obj, pod_spec in found:
        for name in mounted(pod_spec):
            refs.setdefault(name, []).append(f"{kind}/{obj['metadata']['name']}")
    return refs


def collect(api: Api, current: str, selector: str, said: dict) -> dict | None:
    """One pass: deletes the unreferenced old code ConfigMaps; returns those kept (name -> why), or None when a newer
    code ConfigMap than ``current`` exists (a later deploy's Job collects)."""
    # this stack's code: its labels AND its name (the current one's prefix); anything else labelled alike is left
    maps = {c["metadata"]["name"]: c["metadata"] for c in api.list("/api/v1", "configmaps", selector)
            if _selected(c["metadata"].get("labels") or {}, selector)
            and (c["metadata"]["name"] == current or is_code_of(c["metadata"]["name"], current))}
    if current not in maps:
        raise ApiError(-1, f"the current code ConfigMap {current} is not in namespace {api.namespace} (selector "
                           f"{selector}): deleting nothing")
    born = maps[current].get("creationTimestamp") or ""
    newer = sorted(n for n, m in maps.items() if n != current and (m.get("creationTimestamp") or "") >= born)
    if newer:
        log.info("gc: %s is newer than %s: its own Job collects; stopping", ", ".join(newer), current)
        return None
    refs, kept = referrers(api), {}
    for name in sorted(set(maps) - {current}):
        if refs.get(name):
            kept[name] = "referenced by " + ", ".join(sorted(refs[name]))
        else:
            try:  # exactly the object listed: one re-created since has another uid (409) and is looked at again
                api.request("DELETE", f"/api/v1/namespaces/{api.namespace}/configmaps/{name}",
                            {"preconditions": {"uid": maps[name].get("uid")}})
                log.info("gc: deleted %s (nothing references it)", name)
            except ApiError as exc:
                if exc.status == 404:
                    log.info("gc: %s is already gone", name)
                elif exc.status == 409:
                    kept[name] = "changed since it was listed"
                else:
                    raise
        if name in kept and said.get(name) != kept[name]:  # said once, not every pass
            log.info("gc: keeping %s: %s", name, kept[name])
            said[name] = kept[name]
    return kept


def run(args) -> int:
    namespace = args.namespace
    if not namespace:
        with open(os.path.join(SERVICE_ACCOUNT_DIR, "namespace")) as fh:
            namespace = fh.read().strip()
    url, host = args.api_url or os.environ.get("NVME_AGENT_KUBE_API"), os.environ.get("KUBERNETES_SERVICE_HOST", "")
    if not url:
        if not host:
            log.error("gc: no --api-url and no KUBERNETES_SERVICE_HOST (not in a pod?)")
            return 2
        host = f"[{host}]" if ":" in host else host  # an IPv6 cluster's service address
        url = f"https://{host}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"
    api = Api(url, namespace, args.token_file, args.ca_file)
    deadline, said, kept = time.monotonic() + args.timeout, {}, {}
    while True:
        try:
            kept = collect(api, args.current, args.selector, said)
            if kept is None:
                return 0
            if not kept:
                log.info("gc: no old code ConfigMap left in %s (current: %s)", namespace, args.current)
                return 0
        except ApiError as exc:
            if exc.status in (-1, 401, 403):  # no current ConfigMap, or the Role does not allow it: retrying won't
                log.error("gc: %s", exc)
                return 1
            log.warning("gc: %s (retrying)", exc)
        if time.monotonic() + args.interval > deadline:
            log.error("gc: timed out after %ss; still kept: %s", args.timeout,
                      "; ".join(f"{n} ({why})" for n, why in sorted(kept.items())) or "(the API did not answer)")
            return 1
        time.sleep(args.interval)
