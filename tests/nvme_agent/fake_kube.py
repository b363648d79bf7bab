"""A fake Kubernetes API on 127.0.0.1 for the agent's ``gc``: namespaced lists (paged by ``limit`` / ``continue``) of
the kinds ``gc`` reads and ``DELETE`` of ConfigMaps with a uid precondition, and ``GET`` of any other path set in
``static`` (cluster-scoped objects for the doctor's checks), and ``POST`` of a ``SubjectAccessReview`` answered from
``grants`` (RBAC as a set of namespaced permissions per user and group; nothing is stored, as on a real server). It
ignores ``labelSelector`` (the agent checks the labels itself) but records every request."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PATHS = {"configmaps": "/api/v1", "pods": "/api/v1", "daemonsets": "/apis/apps/v1", "deployments": "/apis/apps/v1",
         "statefulsets": "/apis/apps/v1", "replicasets": "/apis/apps/v1", "jobs": "/apis/batch/v1",
         "cronjobs": "/apis/batch/v1"}
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def loopback_tls(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A CA-less self-signed certificate for 127.0.0.1 (cryptography comes with moto), written to ``folder``:
    (the certificate's file, which a client trusts as its CA; the server's TLS context for ``FakeKube(tls=...)``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "ca.crt", folder / "tls.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return cert_file, context


def pod_spec(*configmaps: str, projected: bool = False) -> dict:
    if projected:
        return {"volumes": [{"name": "p", "projected": {"sources": [{"configMap": {"name": n}} for n in configmaps]}}]}
    return {"volumes": [{"name": f"v{i}", "configMap": {"name": n}} for i, n in enumerate(configmaps)]}


class FakeKube:
    def __init__(self, namespace: str = "inference", token: str = "gc-token", page_size: int = 2,
                 tls: ssl.SSLContext | None = None) -> None:
        self.namespace, self.token, self.page_size = namespace, token, page_size
        self.objects: dict[str, list[dict]] = {r: [] for r in PATHS}
        self.requests: list[tuple[str, str, dict, str | None]] = []  # method, path, query, Authorization
        self.vanish: set[str] = set()  # ConfigMaps another run deletes just before this one's DELETE (-> 404)
        self.on_list: Callable[[str, int], None] | None = None  # (resource, how many lists of it so far)
        self.fail_once: set[str] = set()  # resources whose next list answers 500
        self.static: dict[str, dict] = {}  # any other path -> the object a GET of it answers (e.g. cluster-scoped)
        #: "user:<name>" / "group:<name>" -> {(namespace, API group, resource, verb)}: what a review allows
        self.grants: dict[str, set[tuple[str, str, str, str]]] = {}
        self.review_status = 200  # another status: the caller may not create SubjectAccessReviews
        self.reviews: list[dict] = []  # the review specs asked
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self) -> tuple[str, str | None, dict] | None:
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                with fake.lock:
                    fake.requests.append((self.command, url.path, query, self.headers.get("Authorization")))
                for resource, prefix in PATHS.items():
                    base = f"{prefix}/namespaces/{fake.namespace}/{resource}"
                    if url.path == base:
                        return resource, None, query
                    if url.path.startswith(base + "/"):
                        return resource, url.path[len(base) + 1:], query
                return None

            def do_GET(self):
                route = self._route()
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    return self._send(401, {"kind": "Status", "code": 401})
                with fake.lock:
                    static = fake.static.get(urllib.parse.urlsplit(self.path).path)
                if static is not None:
                    return self._send(200, static)
                if route is None or route[1] is not None:
                    return self._send(404, {"kind": "Status", "code": 404})
                resource, _, query = route
                with fake.lock:
                    count = sum(1 for m, p, q, _ in fake.requests if m == "GET" and p.endswith("/" + resource)
                                and "continue" not in q)
                if "continue" not in query and fake.on_list is not None:
                    fake.on_list(resource, count)
                if resource in fake.fail_once:
                    fake.fail_once.discard(resource)
                    return self._send(500, {"kind": "Status", "code": 500})
                with fake.lock:
                    items = list(fake.objects[resource])
                start = int(query.get("continue") or 0)
                end = start + min(int(query.get("limit") or 10**9), fake.page_size)
                meta = {"continue": str(end)} if end < len(items) else {}
                return self._send(200, {"kind": "List", "items": items[start:end], "metadata": meta})

            def do_POST(self):
                self._route()
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    return self._send(401, {"kind": "Status", "code": 401})
                if urllib.parse.urlsplit(self.path).path != SUBJECT_ACCESS_REVIEWS:
                    return self._send(405, {"kind": "Status", "code": 405})
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if fake.review_status != 200:
                    return self._send(fake.review_status, {"kind": "Status", "code": fake.review_status})
                spec = body.get("spec") or {}
                attrs = spec.get("resourceAttributes") or {}
                wanted = (attrs.get("namespace", ""), attrs.get("group", ""), attrs.get("resource", ""),
                          attrs.get("verb", ""))
                subjects = [f"user:{spec.get('user')}", *(f"group:{g}" for g in spec.get("groups") or [])]
                with fake.lock:
                    fake.reviews.append(spec)
                    allowed = any(wanted in fake.grants.get(s, set()) for s in subjects)
                return self._send(201, {**body, "status": {"allowed": allowed}})

            def do_DELETE(self):
                route = self._route()
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    return self._send(401, {"kind": "Status", "code": 401})
                if route is None or route[0] != "configmaps" or not route[1]:
                    return self._send(405, {"kind": "Status", "code": 405})
                name = route[1]
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with fake.lock:
                    found = [o for o in fake.objects["configmaps"] if o["metadata"]["name"] == name]
                    if name in fake.vanish:
                        fake.objects["configmaps"] = [o for o in fake.objects["configmaps"] if o not in found]
                        found = []
                    if not found:
                        return self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
                    uid = (body.get("preconditions") or {}).get("uid")
                    if uid is not None and uid != found[0]["metadata"].get("uid"):
                        return self._send(409, {"kind": "Status", "code": 409, "reason": "Conflict"})
                    fake.objects["configmaps"].remove(found[0])
                return self._send(200, {"kind": "Status", "status": "Success"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.port = self.server.server_address[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"

    def add(self, resource: str, obj: dict) -> dict:
        with self.lock:
            self.objects[resource].append(obj)
        return obj

    def remove(self, resource: str, name: str) -> None:
        with self.lock:
            self.objects[resource] = [o for o in self.objects[resource] if o["metadata"]["name"] != name]

    def names(self, resource: str = "configmaps") -> set[str]:
        with self.lock:
            return {o["metadata"]["name"] for o in self.objects[resource]}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
