"""A minimal S3 endpoint on loopback (ListObjectsV2, HeadObject, ranged GetObject) that can stall a download: after
``stall_after[key]`` bytes of a GET it stops sending until ``release`` is set (bounded wait), so a test can signal the
agent while a transfer hangs."""

from __future__ import annotations

import collections
import hashlib
import http.server
import re
import threading
import urllib.parse
from xml.sax.saxutils import escape


class StallS3:
    def __init__(self, bucket: str, objects: dict[str, bytes]):
        self.bucket, self.objects = bucket, objects
        self.stall_after: dict[str, int] = {}
        self.stalled = threading.Event()  # set when a GET has stopped sending
        self.release = threading.Event()
        self.gets = collections.Counter()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - http.server's naming
                server._get(self)

            def do_HEAD(self):  # noqa: N802
                server._head(self)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _key(self, h) -> str:
        path = urllib.parse.unquote(urllib.parse.urlsplit(h.path).path).lstrip("/")
        if h.headers.get("Host", "").startswith(self.bucket + "."):
            return path
        return path.split("/", 1)[1] if "/" in path else ""

    @staticmethod
    def _etag(data: bytes) -> str:
        return '"' + hashlib.md5(data).hexdigest() + '"'

    def _head(self, h):
        data = self.objects.get(self._key(h))
        if data is None:
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.send_header("ETag", self._etag(data))
        h.end_headers()

    def _get(self, h):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(h.path).query)
        key = self._key(h)
        if "list-type" in query:
            prefix = query.get("prefix", [""])[0]
            contents = "".join(
                f"<Contents><Key>{escape(k)}</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>"
                f"<ETag>{escape(self._etag(v))}</ETag><Size>{len(v)}</Size><StorageClass>STANDARD</StorageClass>"
                f"</Contents>" for k, v in sorted(self.objects.items()) if k.startswith(prefix))
            body = (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult '
                    f'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>{self.bucket}</Name>'
                    f"<Prefix>{escape(prefix)}</Prefix><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
                    f"{contents}</ListBucketResult>").encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/xml")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
            return
        data = self.objects[key]
        self.gets[key] += 1
        start, end = 0, len(data) - 1
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", h.headers.get("Range", ""))
        if match:
            start, end = int(match[1]), min(int(match[2]), len(data) - 1)
        body = data[start:end + 1]
        h.send_response(206 if match else 200)
        h.send_header("Content-Length", str(len(body)))
        h.send_header("ETag", self._etag(data))
        if match:
            h.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        h.end_headers()
        try:
            cut = self.stall_after.get(key)
            if cut is not None and not self.release.is_set():
                h.wfile.write(body[:cut])
                h.wfile.flush()
                self.stalled.set()
                self.release.wait(30)
                body = body[cut:]
            h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True
