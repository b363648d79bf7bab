"""A Hugging Face Hub on loopback, answering the calls huggingface_hub really makes (HF_ENDPOINT=its url,
HF_HUB_DISABLE_XET=1):

- ``GET /api/models/<repo>[/revision/<rev>]`` (``HfApi.model_info``; ``?blobs=true`` adds sizes and hashes,
  ``expand``/``expand[]`` keeps only the named properties): ``sha``, ``private``, ``gated`` (false | "auto" |
  "manual"), ``pipeline_tag``, ``library_name``, ``config`` (from config.json), ``siblings``, ``safetensors``
  (parameters per dtype, from the safetensors headers);
- ``GET /api/models/<repo>/auth-check`` (``HfApi.auth_check``);
- ``HEAD|GET /<repo>/resolve/<rev>/<path>`` (``hf_hub_download``, ``file_exists``, safetensors headers through
  ``Range``): ``X-Repo-Commit``, ``ETag`` (the git blob sha1, or for an LFS file the sha256 with ``X-Linked-Etag`` and
  ``X-Linked-Size``); with ``lfs_redirect`` an LFS file answers 302 to a CDN path on the same server, as the Hub does.

Errors are typed as the Hub types them, by the ``X-Error-Code`` header huggingface_hub reads: ``RepoNotFound`` (401
without a token, 404 with one: a private repository looks missing), ``RevisionNotFound`` (404), ``GatedRepo`` (401
without a token, 403 with one that was not granted), ``EntryNotFound`` (404); a token the Hub does not know is a 401
``Invalid credentials in Authorization header``.

Weights are virtual (:class:`VirtualFile`): a safetensors header followed by zeros up to the size a real shard has.
The fake serves their header ranges and refuses a whole weight file, so a test that downloads weights fails. It counts
requests, can throttle, corrupt or stall a file (the NVMe agent's tests), and never advertises Xet.

``token`` (the agent's tests): every request must carry that bearer token. ``tokens``: the tokens the Hub knows; a
gated or private repository is readable with one of its ``granted`` tokens.
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
from dataclasses import dataclass, field

GATED_401 = ("Access to model {repo} is restricted. You must have access to it and be authenticated to access it. "
             "Please log in.")
GATED_403 = ("Access to model {repo} is restricted and you are not in the authorized list. Visit "
             "https://huggingface.co/{repo} to ask for access.")
INVALID_TOKEN = "Invalid credentials in Authorization header"
#: The most of a virtual weight file the fake serves in one request (huggingface_hub reads 100,001 bytes first).
HEADER_READ_LIMIT = 1_000_000


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class VirtualFile:
    """A weight file that exists only as its leading bytes (the safetensors length and header) and its size."""

    head: bytes
    size: int

    @property
    def sha256(self) -> str:  # stands in for the content hash the Hub lists
        return hashlib.sha256(self.head + str(self.size).encode()).hexdigest()

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end] (inclusive), zeros past the header."""
        end = min(end, self.size - 1)
        head = self.head[start:end + 1]
        return head + bytes(max(0, end + 1 - max(start, len(self.head))))


class Repo:
    def __init__(self, repo_id: str, commit: str, files: dict[str, bytes | VirtualFile], lfs: set[str] = frozenset(),
                 *, gated: bool | str = False, private: bool = False, granted: set[str] = frozenset(),
                 pipeline_tag: str | None = None, library_name: str | None = None, tags: tuple[str, ...] = (),
                 older_commits: tuple[str, ...] = ()):
        self.repo_id, self.commit, self.files, self.lfs = repo_id, commit, files, set(lfs)
        self.lfs |= {name for name, data in files.items() if isinstance(data, VirtualFile)}
        self.gated, self.private, self.granted = gated, private, set(granted)
        self.pipeline_tag, self.library_name, self.tags = pipeline_tag, library_name, tags
        self.older_commits = older_commits

    def resolve(self, revision: str) -> str | None:
        """The commit a revision names (``main``, the head commit or an older one), or None."""
        if revision == "main" or revision == self.commit:
            return self.commit
        return revision if revision in self.older_commits else None

    def parameters(self) -> dict[str, int]:
        """Parameters per dtype over every safetensors file, from their headers (what the Hub lists; a file whose
        header does not parse counts nothing, as on the Hub)."""
        counts: collections.Counter = collections.Counter()
        for name, data in self.files.items():
            if name.endswith(".safetensors"):
                try:
                    header = safetensors_header(data)
                except ValueError:
                    continue
                for tensor in header.values():
                    if isinstance(tensor, dict) and "dtype" in tensor:
                        n = 1
                        for dim in tensor["shape"]:
                            n *= dim
                        counts[tensor["dtype"]] += n
        return dict(counts)

    def info(self, blobs: bool) -> dict:
        config = json.loads(self.files["config.json"]) if "config.json" in self.files else None
        siblings = []
        for name, data in sorted(self.files.items()):
            sib: dict = {"rfilename": name}
            if blobs:
                size = data.size if isinstance(data, VirtualFile) else len(data)
                sib.update(size=size, blobId=git_blob_sha1(data.head if isinstance(data, VirtualFile) else data))
                if name in self.lfs:
                    sib["lfs"] = {"size": size, "sha256": _sha256(data), "pointerSize": 134}
            siblings.append(sib)
        info = {
            "_id": hashlib.md5(self.repo_id.encode()).hexdigest()[:24], "id": self.repo_id, "modelId": self.repo_id,
            "author": self.repo_id.split("/")[0], "sha": self.commit, "lastModified": "2024-09-25T14:32:50.000Z",
            "createdAt": "2024-09-16T11:55:40.000Z", "private": self.private, "disabled": False, "gated": self.gated,
            "downloads": 0, "likes": 0, "tags": list(self.tags), "library_name": self.library_name,
            "siblings": siblings, "spaces": [],
        }
        if self.pipeline_tag:
            info["pipeline_tag"] = self.pipeline_tag
        if config is not None:
            info["config"] = {k: config[k] for k in ("architectures", "model_type") if k in config}
        parameters = self.parameters()
        if parameters:
            info["safetensors"] = {"parameters": parameters, "total": sum(parameters.values())}
        return info


def _sha256(data: bytes | VirtualFile) -> str:
    return data.sha256 if isinstance(data, VirtualFile) else hashlib.sha256(data).hexdigest()


def safetensors_header(data: bytes | VirtualFile) -> dict:
    head = data.head if isinstance(data, VirtualFile) else data
    length = int.from_bytes(head[:8], "little")
    return json.loads(head[8:8 + length])


class FakeHub:
    def __init__(self, token: str | None = None, *, tokens: set[str] = frozenset(), lfs_redirect: bool = False):
        self.token = token
        self.tokens = set(tokens)
        self.lfs_redirect = lfs_redirect
        self.outage: int | None = None  # when set, every request is answered with this status (503, 429...)
        self.repos: dict[str, Repo] = {}
        self.requests = collections.Counter()  # (method, path) -> count
        self.bytes_served = collections.Counter()  # (repo, file) -> bytes of file content sent
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
                hub._answer(self, head=True)

            def do_GET(self):
                hub._answer(self, head=False)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def add(self, repo: Repo) -> Repo:
        self.repos[repo.repo_id] = repo
        return repo

    def count(self, method: str, repo_id: str, filename: str) -> int:
        return sum(n for (m, p), n in self.requests.items()
                   if m == method and p.startswith(f"/{repo_id}/resolve/") and p.endswith("/" + filename))

    def calls(self) -> set[tuple[str, str]]:
        """The requests made so far as (method, path with the repository id and revision as placeholders)."""
        out = set()
        for method, path in self.requests:
            for repo_id in self.repos:
                path = path.replace(f"/{repo_id}/", "/{repo}/").replace(f"/{repo_id}", "/{repo}")
            path = re.sub(r"/revision/[^/]+", "/revision/{rev}", path)
            path = re.sub(r"/resolve/[^/]+/", "/resolve/{rev}/", path)
            path = re.sub(r"/cdn-lfs/\{repo\}/[0-9a-f]{64}/", "/cdn-lfs/{repo}/{sha256}/", path)
            path = re.sub(r"model-\d{5}-of-\d{5}\.safetensors", "{shard}.safetensors", path)
            out.add((method, path))
        return out

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

    def _error(self, h, status, code, message, head):
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        return self._send(h, status, json.dumps({"error": message}).encode(), headers, head)

    def _token(self, h) -> tuple[bool, str | None]:
        """(whether the credentials are acceptable, the bearer token)."""
        header = h.headers.get("Authorization")
        token = header[len("Bearer "):] if header and header.startswith("Bearer ") else None
        if header is not None and token is None:
            return False, None
        if token is not None and token != self.token and token not in self.tokens:
            return False, token
        return True, token

    def _answer(self, h, head):
        try:
            self._handle(h, head)
        except (BrokenPipeError, ConnectionResetError):  # the client went away (a killed agent): nothing to answer
            pass

    def _handle(self, h, head):
        url = urllib.parse.urlsplit(h.path)
        path = urllib.parse.unquote(url.path)
        query = urllib.parse.parse_qs(url.query)
        with self.lock:
            self.requests[(h.command, path)] += 1
        if self.outage is not None:
            return self._error(h, self.outage, None, "Service Unavailable", head)
        if self.token is not None and h.headers.get("Authorization") != f"Bearer {self.token}":
            return self._error(h, 401, "RepoNotFound", INVALID_TOKEN, head)
        valid, token = self._token(h)
        if not valid:
            return self._error(h, 401, None, INVALID_TOKEN, head)
        m = re.fullmatch(r"/cdn-lfs/(.+?/[^/]+)/([^/]+)/(.+)", path)
        if m:
            repo = self.repos.get(m.group(1))
            if repo is None or m.group(3) not in repo.files:
                return self._send(h, 404, b"", {}, head)
            return self._serve(h, repo, m.group(3), head)
        m = re.fullmatch(r"/api/models/(.+?/[^/]+)/auth-check", path)
        if m:
            return self._auth_check(h, m.group(1), token, head)
        m = re.fullmatch(r"/api/models/(.+?/[^/]+?)(?:/revision/([^/]+))?", path)
        if m:
            return self._model_info(h, m.group(1), m.group(2), token, query, head)
        m = re.fullmatch(r"/(.+?/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m:
            return self._resolve(h, m.group(1), m.group(2), m.group(3), token, head)
        return self._send(h, 404, b"", {}, head)

    def _visible(self, h, repo_id, token, head) -> Repo | None:
        """The repository when the token may see it; else the Hub's answer for a missing one (sent) and None."""
        repo = self.repos.get(repo_id)
        if repo is not None and (not repo.private or (token is not None and token in repo.granted)):
            return repo
        self._error(h, 404 if token else 401, "RepoNotFound", "Repository not found", head)
        return None

    def _gate(self, h, repo, token, head) -> bool:
        """Whether the token may read the files of a gated repository (else the GatedRepo answer is sent)."""
        if not repo.gated or token in repo.granted:
            return True
        if token is None:
            self._error(h, 401, "GatedRepo", GATED_401.format(repo=repo.repo_id), head)
        else:
            self._error(h, 403, "GatedRepo", GATED_403.format(repo=repo.repo_id), head)
        return False

    def _auth_check(self, h, repo_id, token, head):
        repo = self._visible(h, repo_id, token, head)
        if repo is not None and self._gate(h, repo, token, head):
            self._send(h, 200, b"{}", {"Content-Type": "application/json"}, head)

    def _model_info(self, h, repo_id, revision, token, query, head):
        repo = self._visible(h, repo_id, token, head)
        if repo is None:
            return
        commit = repo.resolve(revision or "main")
        if commit is None:
            return self._error(h, 404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
        info = repo.info(blobs=query.get("blobs") == ["true"] or query.get("blobs") == ["True"])
        info["sha"] = commit
        expand = query.get("expand", []) + query.get("expand[]", [])
        if expand:
            info = {k: v for k, v in info.items() if k in expand or k in ("_id", "id")}
        self._send(h, 200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)

    def _resolve(self, h, repo_id, revision, name, token, head):
        repo = self._visible(h, repo_id, token, head)
        if repo is None:
            return None
        commit = repo.resolve(revision)
        if commit is None:
            return self._error(h, 404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
        if not self._gate(h, repo, token, head):
            return None
        if name not in repo.files:
            return self._error(h, 404, "EntryNotFound", "Entry not found", head)
        data = repo.files[name]
        headers = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes"}
        if name in repo.lfs:
            sha, size = _sha256(data), data.size if isinstance(data, VirtualFile) else len(data)
            headers.update({"ETag": f'"{sha}"', "X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(size)})
            if self.lfs_redirect:
                headers["Location"] = f"{self.url}/cdn-lfs/{repo_id}/{sha}/{name}"
                return self._send(h, 302, b"", headers, head)
        else:
            headers["ETag"] = f'"{git_blob_sha1(data)}"'
        return self._serve(h, repo, name, head, headers)

    def _serve(self, h, repo, name, head, headers=None):
        """The file's bytes, or the range asked for (206); never the whole of a virtual weight file."""
        data = repo.files[name]
        headers = dict(headers or {"Accept-Ranges": "bytes"})
        headers["Content-Type"] = "application/octet-stream"
        size = data.size if isinstance(data, VirtualFile) else len(data)
        if head:
            return self._head_sized(h, headers, size)
        if not isinstance(data, VirtualFile) and name in self.corrupt and data:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", h.headers.get("Range", "") or "")
        if ranged:
            start = int(ranged.group(1))
            end = min(int(ranged.group(2)) if ranged.group(2) else size - 1, size - 1)
            if start >= size or (isinstance(data, VirtualFile) and end - start + 1 > HEADER_READ_LIMIT):
                return self._send(h, 416, b"", {"Content-Range": f"bytes */{size}"})
            body = data.read(start, end) if isinstance(data, VirtualFile) else data[start:end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
            return self._stream(h, repo, name, body, headers, status=206)
        if isinstance(data, VirtualFile):
            return self._send(h, 500, b"the fake Hub does not serve weights")
        return self._stream(h, repo, name, data, headers)

    def _head_sized(self, h, headers, size):
        h.send_response(200)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(size))
        h.end_headers()

    def _count_bytes(self, repo, name, n):
        with self.lock:
            self.bytes_served[(repo.repo_id, name)] += n

    def _stream(self, h, repo, name, data, headers, status=200):
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        self._count_bytes(repo, name, len(data))
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


@dataclass
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]


BITS = {"BF16": 16, "F16": 16, "F32": 32, "I32": 32, "I8": 8, "U8": 8}


def shard_files(tensors: list[Tensor], shards: int, prefix: str = "model") -> dict[str, bytes | VirtualFile]:
    """Safetensors files holding ``tensors`` (virtual: header plus size), split over ``shards`` files with an index
    as ``save_pretrained`` writes them (``model-00001-of-00004.safetensors`` + ``model.safetensors.index.json``), or
    one ``model.safetensors`` when ``shards`` is 1."""
    sizes = [_numel(t) * BITS[t.dtype] // 8 for t in tensors]
    total = sum(sizes)
    groups: list[list[int]] = [[] for _ in range(shards)]
    running = 0
    for i, size in enumerate(sizes):
        groups[min(shards - 1, running * shards // max(total, 1))].append(i)
        running += size
    files: dict[str, bytes | VirtualFile] = {}
    weight_map: dict[str, str] = {}
    for n, group in enumerate(groups, 1):
        name = f"{prefix}.safetensors" if shards == 1 else f"{prefix}-{n:05d}-of-{shards:05d}.safetensors"
        header: dict = {"__metadata__": {"format": "pt"}}
        offset = 0
        for i in group:
            t = tensors[i]
            header[t.name] = {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": [offset, offset + sizes[i]]}
            offset += sizes[i]
            weight_map[t.name] = name
        raw = json.dumps(header, separators=(",", ":")).encode()
        raw += b" " * (-len(raw) % 8)  # the format pads the header to 8 bytes
        files[name] = VirtualFile(len(raw).to_bytes(8, "little") + raw, 8 + len(raw) + offset)
    if shards > 1:
        files[f"{prefix}.safetensors.index.json"] = json.dumps(
            {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2).encode()
    return files


def _numel(t: Tensor) -> int:
    n = 1
    for dim in t.shape:
        n *= dim
    return n


@dataclass
class Decoder:
    """The shapes of a Llama-family decoder (Llama, Qwen2): enough to write its safetensors headers."""

    hidden: int
    intermediate: int
    layers: int
    vocab: int
    heads: int
    kv_heads: int
    qkv_bias: bool = False
    dtype: str = "BF16"
    extra: dict = field(default_factory=dict)

    def tensors(self) -> list[Tensor]:
        h, kv = self.hidden, self.kv_heads * (self.hidden // self.heads)
        out = [Tensor("model.embed_tokens.weight", self.dtype, (self.vocab, h))]
        for i in range(self.layers):
            p = f"model.layers.{i}"
            for proj, rows in (("q_proj", h), ("k_proj", kv), ("v_proj", kv)):
                out.append(Tensor(f"{p}.self_attn.{proj}.weight", self.dtype, (rows, h)))
                if self.qkv_bias:
                    out.append(Tensor(f"{p}.self_attn.{proj}.bias", self.dtype, (rows,)))
            out += [Tensor(f"{p}.self_attn.o_proj.weight", self.dtype, (h, h)),
                    Tensor(f"{p}.mlp.gate_proj.weight", self.dtype, (self.intermediate, h)),
                    Tensor(f"{p}.mlp.up_proj.weight", self.dtype, (self.intermediate, h)),
                    Tensor(f"{p}.mlp.down_proj.weight", self.dtype, (h, self.intermediate)),
                    Tensor(f"{p}.input_layernorm.weight", self.dtype, (h,)),
                    Tensor(f"{p}.post_attention_layernorm.weight", self.dtype, (h,))]
        out += [Tensor("model.norm.weight", self.dtype, (h,)), Tensor("lm_head.weight", self.dtype, (self.vocab, h))]
        return out

    def config(self, architecture: str, model_type: str) -> dict:
        return {"architectures": [architecture], "model_type": model_type, "hidden_size": self.hidden,
                "intermediate_size": self.intermediate, "num_hidden_layers": self.layers,
                "num_attention_heads": self.heads, "num_key_value_heads": self.kv_heads, "vocab_size": self.vocab,
                "torch_dtype": "bfloat16", **self.extra}
