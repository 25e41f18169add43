"""A forward HTTP proxy for the tests of the client's --proxy: it notes each request's method and
absolute URL, and passes it on (headers and body) to its origin."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"}


class ForwardProxy:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self) -> None:
                outer.seen.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                direct = requests.Session()
                direct.trust_env = False  # a test may set the environment's proxies for the client only
                answer = direct.request(
                    self.command, self.path, headers=headers, data=body, timeout=120, allow_redirects=False
                )
                content = answer.content
                self.send_response(answer.status_code)
                for k, v in answer.raw.headers.items():
                    if k.lower() not in HOP_BY_HOP and k.lower() not in ("content-length", "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
