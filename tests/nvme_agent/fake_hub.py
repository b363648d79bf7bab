"""A minimal Hugging Face Hub on loopback, serving exactly what the agent's huggingface_hub calls use:

- ``GET /api/models/<repo>/revision/<rev>?blobs=true``  (HfApi.model_info(files_metadata=True))
- ``HEAD|GET /<repo>/resolve/<rev>/<path>``             (hf_hub_download: metadata HEAD, then the GET)

It requires ``Authorization: Bearer <token>`` when a token is set, counts requests, can throttle a file (to kill an
agent mid-download) and can serve corrupted bytes. It never advertises Xet, so plain HTTP downloads are used.
"""

from __future__ import annotations

import collections
import hashlib
import http.server
import json
import re
import threading
import time
import urllib.parse


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, repo_id: str, commit: str, files: dict[str, bytes], lfs: set[str] = frozenset()):
        self.repo_id, self.commit, self.files, self.lfs = repo_id, commit, files, set(lfs)


class FakeHub:
    def __init__(self, token: str | None = None):
        self.token = token
        self.repos: dict[str, Repo] = {}
        self.requests = collections.Counter()  # (method, path) -> count
        self.throttle: dict[str, float] = {}  # file path -> seconds to sleep per 64 KiB chunk
        self.corrupt: set[str] = set()  # file paths served with a flipped byte
        self.stall_after: dict[str, int] = {}  # file path -> bytes sent before the GET stops until `release`
        self.stalled = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                hub._handle(self, head=True)

            def do_GET(self):
                hub._handle(self, head=False)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, repo: Repo) -> Repo:
        self.repos[repo.repo_id] = repo
        return repo

    def count(self, method: str, repo_id: str, filename: str) -> int:
        return sum(n for (m, p), n in self.requests.items()
                   if m == method and p.startswith(f"/{repo_id}/resolve/") and p.endswith("/" + filename))

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    # --- request handling ---

    def _send(self, h, status, body=b"", headers=None, head=False):
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _handle(self, h, head):
        url = urllib.parse.urlsplit(h.path)
        path = urllib.parse.unquote(url.path)
        with self.lock:
            self.requests[(h.command, path)] += 1
        if self.token is not None and h.headers.get("Authorization") != f"Bearer {self.token}":
            body = json.dumps({"error": "Invalid credentials in Authorization header"}).encode()
            return self._send(h, 401, body, {"Content-Type": "application/json", "X-Error-Code": "RepoNotFound"},
                              head)
        m = re.fullmatch(r"/api/models/(.+)/revision/([^/]+)", path)
        if m:
            repo = self.repos.get(m.group(1))
            if repo is None or m.group(2) not in (repo.commit, "main"):
                return self._send(h, 404, b'{"error":"not found"}', {"X-Error-Code": "RepoNotFound"}, head)
            siblings = []
            for name, data in sorted(repo.files.items()):
                sib = {"rfilename": name, "size": len(data), "blobId": git_blob_sha1(data)}
                if name in repo.lfs:
                    sib["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
                siblings.append(sib)
            body = json.dumps({"id": repo.repo_id, "sha": repo.commit, "siblings": siblings}).encode()
            return self._send(h, 200, body, {"Content-Type": "application/json"}, head)
        m = re.fullmatch(r"/(.+?/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m:
            repo = self.repos.get(m.group(1))
            name = m.group(3)
            if repo is None or m.group(2) not in (repo.commit, "main") or name not in repo.files:
                return self._send(h, 404, b"", {"X-Error-Code": "EntryNotFound"}, head)
            data = repo.files[name]
            headers = {"X-Repo-Commit": repo.commit, "Accept-Ranges": "bytes",
                       "Content-Type": "application/octet-stream"}
            if name in repo.lfs:
                sha = hashlib.sha256(data).hexdigest()
                headers.update({"ETag": f'"{sha}"', "X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(data))})
            else:
                headers["ETag"] = f'"{git_blob_sha1(data)}"'
            if name in self.corrupt and data:
                data = bytes([data[0] ^ 0xFF]) + data[1:]
            if head:
                return self._send(h, 200, data, headers, head=True)
            h.send_response(200)
            for k, v in headers.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            delay = self.throttle.get(name, 0.0)
            step = 64 * 1024
            try:
                cut = self.stall_after.get(name)
                if cut is not None and not self.release.is_set():
                    h.wfile.write(data[:cut])
                    h.wfile.flush()
                    self.stalled.set()
                    self.release.wait(30)  # bounded: a test that forgets to release still ends
                    h.wfile.write(data[cut:])
                    return None
                for i in range(0, len(data), step):
                    h.wfile.write(data[i:i + step])
                    if delay:
                        time.sleep(delay)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return None
        return self._send(h, 404, b"", {}, head)
