"""Answers read within bounds, against a real HTTP server that sends more than it announces, or
announces nothing and sends forever: the API's answers, their redirects, compressed bodies, the
canary reference and a streamed download without a size."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from client.contribute.bounded import ANSWER_BYTES, BoundedSession, TooLarge
from client.contribute.server import ServerClient

FOREVER_CAP = 256 << 20  # what "forever" sends at most, so that a test fails rather than hangs
MIB = 1 << 20


class Answers:
    """A server answering each path with a function of the request handler; ``sent`` holds the body
    bytes of each answer made with :meth:`send`, once it has ended."""

    def __init__(self) -> None:
        self.routes: dict[str, Callable[[BaseHTTPRequestHandler], None]] = {}
        self.sent: list[int] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.routes[self.path](self)

            do_POST = do_GET

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def send(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        forever: bool = False,
    ) -> None:
        """Answer with body (and endless JSON-looking bytes after it when forever: no Content-Length
        then, the end of the body being the connection's)."""
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        if not forever and "Content-Length" not in (headers or {}):
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        sent = 0
        try:
            handler.wfile.write(body)
            sent += len(body)
            while forever and sent < FOREVER_CAP:
                handler.wfile.write(b"x" * (1 << 16))
                sent += 1 << 16
        except OSError:  # the client hung up
            pass
        finally:
            self.sent.append(sent)

    def ended(self, count: int) -> list[int]:
        deadline = time.monotonic() + 30
        while len(self.sent) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.sent) == count, self.sent
        return self.sent

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def answers():
    a = Answers()
    yield a
    a.close()


def test_an_api_answer_that_never_ends_is_cut_at_the_limit_of_an_answer(answers):
    answers.routes["/api/v1/tasks/"] = lambda h: answers.send(h, 201, b'{"id": "', forever=True)
    server = ServerClient(answers.url, "t" * 40)
    with pytest.raises(TooLarge) as cut:
        server.task(games=4)
    assert isinstance(cut.value, requests.RequestException)  # waited out as a server in trouble is
    message = str(cut.value)
    assert message.startswith(f"{answers.url}/api/v1/tasks/ sent more than {ANSWER_BYTES} bytes (the limit of an")
    assert ANSWER_BYTES < cut.value.received <= ANSWER_BYTES + (1 << 16)
    assert answers.ended(1)[0] < FOREVER_CAP // 2  # the client hung up


def test_the_volunteers_limit_bounds_every_answer(answers):
    answers.routes["/api/v1/me/"] = lambda h: answers.send(h, 200, b"{", forever=True)
    with pytest.raises(TooLarge, match=r"more than 1048576 bytes \(the limit of a download, --max-download-mb\)"):
        ServerClient(answers.url, "t" * 40, max_download=MIB).me()


def test_a_redirect_whose_body_never_ends_is_cut(answers):
    """requests reads a redirect's body to release its connection, before the caller sees anything."""
    answers.routes["/api/v1/me/"] = lambda h: answers.send(
        h, 302, b"moved", {"Location": f"{answers.url}/api/v1/me2/"}, forever=True
    )
    answers.routes["/api/v1/me2/"] = lambda h: answers.send(h, 200, b'{"username": "alice"}')
    with pytest.raises(TooLarge, match="/api/v1/me/ sent more than 1048576 bytes"):
        ServerClient(answers.url, "t" * 40, max_download=MIB).me()


def test_a_content_length_beyond_the_limit_is_refused_before_reading(answers):
    answers.routes["/api/v1/runs/current/"] = lambda h: answers.send(h, 200, b"{}", {"Content-Length": str(10 << 30)})
    with pytest.raises(TooLarge, match=f"announced {10 << 30} bytes \\(Content-Length\\), more than {ANSWER_BYTES}"):
        ServerClient(answers.url, "t" * 40).current_run()


def test_a_compressed_answer_is_bounded_as_it_inflates(answers):
    """A small gzip body may inflate to any size: the bound is on what it inflates to, and an honest
    compressed answer larger than its Content-Length is read whole."""
    honest = json.dumps({"run": "main", "padding": "x" * 500_000}).encode()
    bomb = gzip.compress(b" " * (ANSWER_BYTES + MIB), compresslevel=9)
    answers.routes["/api/v1/runs/current/"] = lambda h: answers.send(
        h, 200, gzip.compress(honest), {"Content-Encoding": "gzip"}
    )
    answers.routes["/api/v1/me/"] = lambda h: answers.send(h, 200, bomb, {"Content-Encoding": "gzip"})
    server = ServerClient(answers.url, "t" * 40)
    assert server.current_run()["run"] == "main"
    with pytest.raises(TooLarge, match=f"sent more than {ANSWER_BYTES} bytes"):
        server.me()
    assert len(bomb) < MIB  # what came over the wire was small


def test_a_canary_reference_longer_than_announced_is_cut(answers):
    from common import canary

    data = os.urandom(1000)
    info = {
        "fingerprint": canary.fingerprint(),
        "url": f"{answers.url}/canary",
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
    }
    answers.routes["/api/v1/networks/net-a/"] = lambda h: answers.send(h, 200, json.dumps({"canary": info}).encode())
    answers.routes["/canary"] = lambda h: answers.send(h, 200, data, forever=True)
    server = ServerClient(answers.url, "t" * 40)
    with pytest.raises(TooLarge, match=r"/canary sent more than 1000 bytes \(the canary reference's size\)"):
        server.network_canary("net-a")
    answers.routes["/canary"] = lambda h: answers.send(h, 200, data)
    assert server.network_canary("net-a") == data


def test_a_streamed_download_without_a_size_stops_at_the_limit_of_a_download(answers):
    answers.routes["/file"] = lambda h: answers.send(h, 200, b"", forever=True)
    got = 0
    with (
        BoundedSession(max_download=8 * MIB) as session,
        session.get(f"{answers.url}/file", stream=True, timeout=30) as response,
        pytest.raises(TooLarge, match=r"more than 8388608 bytes \(the limit of a download, --max-download-mb\)"),
    ):
        for chunk in response.iter_content(1 << 16):
            got += len(chunk)
    assert got <= 8 * MIB
    assert answers.ended(1)[0] < FOREVER_CAP // 2
