"""The contributing client's proxy (--proxy): every request to the server, and the network
downloads, go through it, ahead of the environment's HTTP(S)_PROXY."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from client.contribute.server import ProxiedSession, ServerClient
from tests.proxy import ForwardProxy


class Origin(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b'{"username": "alice"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(handler) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    return httpd


@pytest.fixture
def servers():
    origin, proxy = _serve(Origin), ForwardProxy()
    yield origin, proxy
    origin.shutdown()
    origin.server_close()
    proxy.close()


def test_requests_go_through_the_proxy_ahead_of_the_environments(servers, monkeypatch):
    origin, proxy = servers
    base = f"http://127.0.0.1:{origin.server_port}"
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "")
    client = ServerClient(base, "tok", proxy=proxy.url)
    assert client.me() == {"username": "alice"}
    assert proxy.seen == [("GET", f"{base}/api/v1/me/")]
    # Without --proxy the environment's proxy is requests' own choice (here: one that is down).
    with pytest.raises(requests.ConnectionError):
        ServerClient(base, "tok").me()
    monkeypatch.delenv("HTTP_PROXY")
    assert ServerClient(base, "tok").me() == {"username": "alice"} and len(proxy.seen) == 1
    assert isinstance(client.session, ProxiedSession)
