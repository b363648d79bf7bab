"""The kubeconfig reader: the context ``aws eks update-kubeconfig`` writes (named by the cluster ARN) or the one whose
server is the cluster's endpoint; without one, the reason names the command that writes it."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from hyperpod_inference.ops.kube import Kube, KubeUnavailable
from tests.nvme_agent.fake_kube import FakeKube

ARN = "arn:aws:eks:us-west-2:111122223333:cluster/my-hp-eks"


@pytest.fixture
def kube():
    fake = FakeKube(token="t")
    yield fake
    fake.close()


def _kubeconfig(tmp_path, context_name, server, token="t"):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "contexts": [{"name": context_name, "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": token}}]}))
    return str(path)


def test_the_context_named_by_the_cluster_arn_is_used(tmp_path, kube):
    kube.static["/api/v1/namespaces/inference"] = {"metadata": {"name": "inference"}}
    client = Kube.from_kubeconfig(_kubeconfig(tmp_path, ARN, kube.url), cluster_arn=ARN, endpoint=None)
    assert client.get("/api/v1/namespaces/inference")[0] == 200
    assert client.get("/api/v1/namespaces/other")[0] == 404
    assert kube.requests[-1][3] == "Bearer t"


def test_else_the_context_whose_server_is_the_clusters_endpoint(tmp_path, kube):
    path = _kubeconfig(tmp_path, "my-alias", kube.url)
    assert Kube.from_kubeconfig(path, cluster_arn=ARN, endpoint=kube.url).context_name == "my-alias"
    with pytest.raises(KubeUnavailable, match="no context for .*aws eks update-kubeconfig --name my-hp-eks"):
        Kube.from_kubeconfig(path, cluster_arn=ARN, endpoint="https://elsewhere.example")


def test_a_refused_token_is_a_reason_not_a_crash(tmp_path, kube):
    client = Kube.from_kubeconfig(_kubeconfig(tmp_path, ARN, kube.url, token="wrong"), cluster_arn=ARN,
                                  endpoint=None)
    with pytest.raises(KubeUnavailable, match="answered 401"):
        client.get("/api/v1/namespaces/inference")


def test_a_metadata_only_get_asks_for_the_metadata_alone(tmp_path):
    # GIVEN an API that records the Accept header of each GET (the fake above ignores it)
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 - http.server's name
            seen.append(self.headers.get("Accept", ""))
            body = json.dumps({"kind": "PartialObjectMetadata", "metadata": {"name": "s"}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = Kube.from_kubeconfig(_kubeconfig(tmp_path, ARN, f"http://127.0.0.1:{server.server_address[1]}"),
                                      cluster_arn=ARN, endpoint=None)
        # WHEN a Secret is read metadata-only, and a namespace as usual
        assert client.get("/api/v1/namespaces/inference/secrets/s", metadata_only=True)[1]["metadata"] == {"name": "s"}
        client.get("/api/v1/namespaces/inference")
    finally:
        server.shutdown()
        server.server_close()
    # THEN the first asked for PartialObjectMetadata only (a Secret's data never comes back), the second for JSON
    assert seen == ["application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "application/json"]


# ----------------------------------------------------------------------------------- a kubeconfig that is wrong
def _user_config(server: str, user: dict) -> dict:
    return {"clusters": [{"name": "c", "cluster": {"server": server}}],
            "contexts": [{"name": ARN, "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": user}]}


BROKEN = {
    # case: (the kubeconfig's text, or a function of the server and the folder giving it; what the reason says)
    "a YAML list": ("- a\n- b\n", "is not a mapping"),
    "not YAML": ("clusters: [\n", "is not valid YAML"),
    "a plain string": ("hello\n", "is not a mapping"),
    "no contexts": ("apiVersion: v1\nclusters: []\n", "has no contexts"),
    "contexts a mapping": ("contexts: {a: b}\n", "contexts must be a list"),
    "a context entry that is a string": ("contexts: [oops]\n", "contexts[0] must be a mapping with a name"),
    "a context naming a cluster it lacks": (lambda server, _: {
        "contexts": [{"name": ARN, "context": {"cluster": "gone", "user": "u"}}], "users": [{"name": "u", "user": {}}]},
        "names cluster gone, which is not in its clusters"),
    "a context naming a user it lacks": (lambda server, _: {
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "contexts": [{"name": ARN, "context": {"cluster": "c", "user": "nobody"}}]},
        "names user nobody, which is not in its users"),
    "a tokenFile that does not exist": (lambda server, folder: _user_config(server, {
        "tokenFile": str(folder / "no-such-token")}), "no-such-token"),
    "an exec env entry without value": (lambda server, _: _user_config(server, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": ["eks", "get-token"],
        "env": [{"name": "AWS_PROFILE"}]}}), "env[0] must have a name and a value"),
    "an exec without command": (lambda server, _: _user_config(server, {"exec": {"args": ["x"]}}),
                                "names no command"),
    "an impossible date in it": ("apiVersion: 2025-02-30\n", "is not valid YAML"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_kubeconfig_that_cannot_be_used_is_broken_naming_the_file_and_the_cause(tmp_path, kube, case):
    # GIVEN a kubeconfig that exists but is wrong in one way
    content, says = BROKEN[case]
    path = tmp_path / "kubeconfig"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content(kube.url, tmp_path)))
    # WHEN it is read for the cluster
    with pytest.raises(KubeUnavailable) as err:
        Kube.from_kubeconfig(str(path), cluster_arn=ARN, endpoint=None)
    # THEN the reason names the file and the cause on one line, and says the kubeconfig is broken (a failed check)
    assert err.value.broken
    assert str(path) in str(err.value) and says in str(err.value)
    assert "\n" not in str(err.value)


def test_a_missing_kubeconfig_or_one_without_the_cluster_is_not_broken(tmp_path, kube):
    # GIVEN no kubeconfig / one whose only context is another cluster's / THEN unavailable, but not broken (a skip)
    for path in (str(tmp_path / "none"), _kubeconfig(tmp_path, "another-cluster", kube.url)):
        with pytest.raises(KubeUnavailable) as err:
            Kube.from_kubeconfig(path, cluster_arn=ARN, endpoint=None)
        assert not err.value.broken


def test_a_redirect_is_never_followed_with_the_token(tmp_path):
    # GIVEN an API on one loopback server that redirects every GET to a second loopback server, which records the
    # Authorization header of each request it gets
    seen: list[str | None] = []

    class Elsewhere(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 - http.server's name
            seen.append(self.headers.get("Authorization"))
            body = b"{}"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    second = ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    target = f"http://localhost:{second.server_address[1]}"

    class Redirecting(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(307)
            self.send_header("Location", target + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

    first = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    for server in (first, second):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = Kube.from_kubeconfig(_kubeconfig(tmp_path, ARN, f"http://127.0.0.1:{first.server_address[1]}",
                                                  token="secret-token"), cluster_arn=ARN, endpoint=None)
        # WHEN doctor reads a namespace through it
        with pytest.raises(KubeUnavailable) as err:
            client.get("/api/v1/namespaces/inference")
    finally:
        for server in (first, second):
            server.shutdown()
            server.server_close()
    # THEN the call fails naming the redirect's host, and the second server never saw the token (nor any request)
    assert "answered 307" in str(err.value) and "a redirect to localhost" in str(err.value)
    assert "secret-token" not in str(err.value)
    assert seen == []


def test_one_line_reduces_any_text_to_one_bounded_line_of_printable_characters():
    from hyperpod_inference.ops.text import one_line

    # GIVEN an HTML error page / text with every kind of line break and control character / a long text
    page = "<!doctype html>\n<html><head><title>404 Not Found</title><style>p {x: y}</style></head>\n<body>" \
           "<h1>Not Found</h1><script>alert(1)</script></body></html>"
    assert one_line(page) == "404 Not Found Not Found"
    assert one_line("a\nb\r\nc\x85d\u2028e\u2029f\tg\x07h\x00i ünï 漢字") == "a b c d e f ghi ünï 漢字"
    assert one_line("x" * 500, 100) == "x" * 97 + "..."
    assert one_line("a < b, not HTML") == "a < b, not HTML"
