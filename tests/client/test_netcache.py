"""The network cache against a real HTTP server (ranges, ETags, broken connections, bad files)."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from client.contribute.netcache import NetworkCache, NetworkFileError, NetworkRef
from client.contribute.server import ServerError

FOREVER_CAP = 64 << 20  # what a server sending "forever" sends at most, so that a test fails rather than hangs


class FileServer:
    """Serves named byte strings at /n/<name> with ETag and single ranges, like the server's
    network-file endpoint; can cut a response short, corrupt it, ignore ranges or fail, and send
    more than it should: ``extra`` bytes past the file (announced in its Content-Length, or not
    when ``length`` is "none" or "chunked"), or random bytes ``forever`` (up to FOREVER_CAP) until
    the client hangs up; those only for the names in ``overlong`` (every name when it is None)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.corrupt: set[str] = set()
        self.cut_after: int | None = None  # bytes sent before the connection is dropped (once)
        self.ignore_ranges = False
        self.status: int | None = None  # answer every request with this status
        self.retry_after: str | None = None  # ... and this Retry-After
        # The ETag of a name's bytes: their sha256 (the server's own), or a front server's (nginx's is
        # "<mtime>-<size>" in hex); an If-Range that does not match it gets the whole file.
        self.etag = lambda data: f'"{hashlib.sha256(data).hexdigest()}"'
        self.requests: list[tuple[str, str | None]] = []
        self.extra = 0
        self.length = "exact"  # "exact": a Content-Length of what is sent; "none"; "chunked"
        self.forever = False
        self.overlong: set[str] | None = None
        self.sent: list[int] = []  # the body bytes each answer of a file sent, once it has ended
        self.if_ranges: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                name = self.path.removeprefix("/n/")
                outer.requests.append((name, self.headers.get("Range")))
                outer.if_ranges.append(self.headers.get("If-Range"))
                if outer.status is not None and outer.retry_after is not None:
                    self.send_response(outer.status)
                    self.send_header("Retry-After", outer.retry_after)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if outer.status is not None:
                    self.send_error(outer.status)
                    return
                data = outer.files.get(name)
                if data is None:
                    self.send_error(404)
                    return
                etag = outer.etag(data)
                if name in outer.corrupt:
                    data = data[:10] + bytes([data[10] ^ 0xFF]) + data[11:]
                start, status = 0, 200
                m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
                if m and not outer.ignore_ranges and self.headers.get("If-Range", etag) == etag:
                    start, status = int(m.group(1)), 206
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                body = data[start:]
                misbehaving = outer.extra or outer.forever or outer.length != "exact"
                if misbehaving and (outer.overlong is None or name in outer.overlong):
                    self.overlong(body, status, start, len(data), etag)
                    return
                self.send_response(status)
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(body)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.end_headers()
                if outer.cut_after is not None:
                    cut, outer.cut_after = outer.cut_after, None
                    self.wfile.write(body[:cut])
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                self.wfile.write(body)

            def overlong(self, body: bytes, status: int, start: int, size: int, etag: str) -> None:
                body += os.urandom(outer.extra)
                if outer.length == "chunked":
                    self.protocol_version = "HTTP/1.1"
                    self.close_connection = True
                self.send_response(status)
                self.send_header("ETag", etag)
                if outer.length == "exact":
                    self.send_header("Content-Length", str(len(body)))
                elif outer.length == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
                self.end_headers()
                sent = 0

                def send(piece: bytes) -> None:
                    nonlocal sent
                    if outer.length == "chunked":
                        piece = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
                    self.wfile.write(piece)
                    sent += len(piece)

                try:
                    send(body)
                    while outer.forever and sent < FOREVER_CAP:
                        send(os.urandom(1 << 16))
                    if outer.length == "chunked":
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:  # the client hung up
                    pass
                finally:
                    outer.sent.append(sent)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def ref(self, name: str, data: bytes | None = None) -> NetworkRef:
        data = self.files[name] if data is None else data
        return NetworkRef.from_task(
            {
                "name": name,
                "is_random": False,
                "url": f"http://127.0.0.1:{self.httpd.server_port}/n/{name}",
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
            }
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FileServer()
    s.files["net-a"] = os.urandom(300_000)
    s.files["net-b"] = os.urandom(5_000)
    yield s
    s.close()


def test_a_network_is_downloaded_checked_and_then_served_from_the_cache(server, tmp_path):
    cache = NetworkCache(tmp_path)
    path = cache.get(server.ref("net-a"))
    assert path == tmp_path / "net-a.safetensors" and path.read_bytes() == server.files["net-a"]
    assert not list(tmp_path.glob(".*.part"))
    assert cache.get(server.ref("net-a")) == path
    # A new cache object (the client started again) checks the file once, without downloading it.
    assert NetworkCache(tmp_path).get(server.ref("net-a")) == path
    assert len(server.requests) == 1


def test_a_broken_download_resumes_with_a_range(server, tmp_path):
    cache = NetworkCache(tmp_path)
    server.cut_after = 120_000
    with pytest.raises(requests.RequestException):
        cache.get(server.ref("net-a"))
    kept = (tmp_path / ".net-a.part").stat().st_size  # kept for the next attempt (whole chunks)
    assert 0 < kept <= 120_000
    path = cache.get(server.ref("net-a"))
    assert path.read_bytes() == server.files["net-a"]
    assert server.requests[-1] == ("net-a", f"bytes={kept}-")
    assert cache.downloaded_bytes == len(server.files["net-a"])  # nothing fetched twice


def test_a_download_resumes_behind_a_front_server_with_etags_of_its_own(server, tmp_path):
    """nginx sends network files for the server (X-Accel-Redirect) and object storage for S3: their
    ETags are not the sha256, so the client must not make the range depend on one (If-Range)."""
    server.etag = lambda data: f'"{len(data):x}-6b052c92"'
    cache = NetworkCache(tmp_path)
    server.cut_after = 150_000
    with pytest.raises(requests.RequestException):
        cache.get(server.ref("net-a"))
    kept = (tmp_path / ".net-a.part").stat().st_size
    assert kept > 0
    path = cache.get(server.ref("net-a"))
    assert path.read_bytes() == server.files["net-a"]
    assert server.requests[-1] == ("net-a", f"bytes={kept}-") and server.if_ranges[-1] is None
    assert cache.downloaded_bytes == len(server.files["net-a"])  # only the rest came the second time


def test_a_server_ignoring_the_range_gives_the_whole_file_again(server, tmp_path):
    cache = NetworkCache(tmp_path)
    server.cut_after = 1000
    with pytest.raises(requests.RequestException):
        cache.get(server.ref("net-a"))
    server.ignore_ranges = True
    assert cache.get(server.ref("net-a")).read_bytes() == server.files["net-a"]


def test_a_changed_file_on_the_server_restarts_the_download(server, tmp_path):
    cache = NetworkCache(tmp_path)
    server.cut_after = 1000
    with pytest.raises(requests.RequestException):
        cache.get(server.ref("net-a"))
    # The file behind the name changed: the old start and the new rest fail the sha256 check, and
    # the download starts again from zero.
    server.files["net-a"] = os.urandom(200_000)
    assert cache.get(server.ref("net-a")).read_bytes() == server.files["net-a"]
    ranges = [r for _, r in server.requests]
    assert ranges[-1] is None and (ranges == [None, None] or ranges[1].startswith("bytes="))


def test_a_corrupted_network_is_refused_after_the_allowed_attempts(server, tmp_path):
    cache = NetworkCache(tmp_path, attempts=3)
    server.corrupt.add("net-b")
    with pytest.raises(NetworkFileError, match=r"net-b .*refused after 3 downloads: its sha256 is [0-9a-f]{16}"):
        cache.get(server.ref("net-b"))
    assert len(server.requests) == 3
    assert not (tmp_path / "net-b.safetensors").exists() and not list(tmp_path.glob(".*.part"))
    # A wrong size is named as such.
    wrong = server.ref("net-b", server.files["net-b"] + b"x")
    server.corrupt.clear()
    with pytest.raises(NetworkFileError, match="5000 bytes, not the 5001 the server announced"):
        cache.get(wrong)


def test_a_cached_file_corrupted_on_disk_is_fetched_again(server, tmp_path):
    path = NetworkCache(tmp_path).get(server.ref("net-b"))
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))
    assert NetworkCache(tmp_path).get(server.ref("net-b")).read_bytes() == server.files["net-b"]
    assert len(server.requests) == 2


def test_server_errors_keep_the_partial_download_and_refusals_are_final(server, tmp_path):
    cache = NetworkCache(tmp_path)
    server.cut_after = 100_000
    with pytest.raises(requests.RequestException):
        cache.get(server.ref("net-a"))
    kept = (tmp_path / ".net-a.part").stat().st_size
    server.status = 503
    with pytest.raises(requests.HTTPError):
        cache.get(server.ref("net-a"))
    assert (tmp_path / ".net-a.part").stat().st_size == kept > 0
    # Asked to come back later (429, or 503 saying when): the wait comes with the error.
    for status in (429, 503):
        server.status, server.retry_after = status, "7"
        with pytest.raises(ServerError) as e:
            cache.get(server.ref("net-a"))
        assert (e.value.status, e.value.retry_after) == (status, 7.0)
    assert (tmp_path / ".net-a.part").stat().st_size == kept
    server.status, server.retry_after = 404, None
    with pytest.raises(NetworkFileError, match=r"net-a .*answered 404"):
        cache.get(server.ref("net-a"))
    server.status = None
    assert cache.get(server.ref("net-a")).read_bytes() == server.files["net-a"]


def test_two_threads_asking_for_one_network_download_it_once(server, tmp_path):
    cache = NetworkCache(tmp_path)
    ref = server.ref("net-a")
    paths = []
    threads = [threading.Thread(target=lambda: paths.append(cache.get(ref))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(paths) == 4 and len(set(paths)) == 1 and len(server.requests) == 1


def test_networks_unused_for_the_keep_time_are_pruned(server, tmp_path):
    cache = NetworkCache(tmp_path, keep_days=30)
    a = cache.get(server.ref("net-a"))
    b = cache.get(server.ref("net-b"))
    old = time.time() - 31 * 86400
    os.utime(a, (old, old))
    os.utime(b, (old, old))
    stale_part = tmp_path / ".net-c.part"
    stale_part.write_bytes(b"xx")
    os.utime(stale_part, (old, old))
    (tmp_path / "notes.txt").write_text("not ours")
    assert sorted(p.name for p in cache.prune(keep=["net-b"])) == [".net-c.part", "net-a.safetensors"]
    assert b.exists() and (tmp_path / "notes.txt").exists()
    cache.get(server.ref("net-b"))  # a use counts as recent
    assert cache.prune(now=time.time() + 29 * 86400) == []


def test_bad_references_are_refused_with_what_is_wrong():
    good = {"name": "net-a", "is_random": False, "url": "http://x/n/net-a", "sha256": "0" * 64, "bytes": 10}
    for change, message in (
        ({"name": "../etc"}, "not a network name"),
        ({"url": "file:///etc/passwd"}, "url"),
        ({"sha256": "abc"}, "sha256"),
        ({"bytes": 0}, "size 0"),
        ({"bytes": "many"}, "bytes"),
        ({"public_url": "file:///etc/passwd"}, "public_url"),
        ({"public_url": 7}, "public_url"),
    ):
        with pytest.raises(ValueError, match=message):
            NetworkRef.from_task({**good, **change})
    random = NetworkRef.from_task({"name": "run-random", "is_random": True, "url": None, "sha256": None, "bytes": 0})
    with pytest.raises(ValueError, match="random network"):
        NetworkCache(".").get(random)


def test_a_mirror_is_tried_first_and_the_servers_copy_is_the_fallback(server, tmp_path):
    mirror = FileServer()
    try:
        data = server.files["net-a"]
        sha = hashlib.sha256(data).hexdigest()
        mirror.files[sha] = data
        template = f"http://127.0.0.1:{mirror.httpd.server_port}/n/{{sha256}}"
        assert NetworkCache(tmp_path / "a", mirror=template).get(server.ref("net-a")).read_bytes() == data
        assert [name for name, _ in mirror.requests] == [sha] and server.requests == []
        # The mirror without the file, then with a damaged one: the server's copy, once each.
        template = f"http://127.0.0.1:{mirror.httpd.server_port}/n/{{name}}"
        cache = NetworkCache(tmp_path / "b", mirror=template)
        assert cache.get(server.ref("net-b")).read_bytes() == server.files["net-b"]
        mirror.files["net-a"] = data
        mirror.corrupt.add("net-a")
        assert cache.get(server.ref("net-a")).read_bytes() == data
        assert [name for name, _ in server.requests] == ["net-b", "net-a"]
        assert not list((tmp_path / "b").glob(".*.part"))
        # A mirror that cannot be reached at all is no worse.
        dead = "http://127.0.0.1:9/{name}"
        assert NetworkCache(tmp_path / "c", mirror=dead).get(server.ref("net-b")).read_bytes() == server.files["net-b"]
    finally:
        mirror.close()


def test_the_runs_public_download_comes_after_the_mirror_and_before_the_server(server, tmp_path):
    """A task may name the file at the run's public download base (a CDN): it is tried after the
    volunteer's own mirror and before the server, once; whatever it sends that is not the announced
    file (nothing, a damaged copy, another network) gives way to the server's copy."""
    cdn, mirror = FileServer(), FileServer()
    try:
        data = server.files["net-a"]
        sha = hashlib.sha256(data).hexdigest()
        cdn.files[f"networks/{sha}"] = data

        def ref(name: str) -> NetworkRef:
            sha = hashlib.sha256(server.files[name]).hexdigest()
            public = f"http://127.0.0.1:{cdn.httpd.server_port}/n/networks/{sha}"
            return replace(server.ref(name), public_url=public)

        assert NetworkCache(tmp_path / "a").get(ref("net-a")).read_bytes() == data
        assert [name for name, _ in cdn.requests] == [f"networks/{sha}"] and server.requests == []
        # The mirror comes first; without the file there, the public copy.
        template = f"http://127.0.0.1:{mirror.httpd.server_port}/n/{{name}}"
        assert NetworkCache(tmp_path / "b", mirror=template).get(ref("net-a")).read_bytes() == data
        assert [name for name, _ in mirror.requests] == ["net-a"] and len(cdn.requests) == 2
        assert server.requests == []
        # A public copy that is damaged, or missing: the server's, once each.
        cdn.corrupt.add(f"networks/{sha}")
        assert NetworkCache(tmp_path / "c").get(ref("net-a")).read_bytes() == data
        assert NetworkCache(tmp_path / "d").get(ref("net-b")).read_bytes() == server.files["net-b"]
        assert [name for name, _ in server.requests] == ["net-a", "net-b"]
        assert not list(tmp_path.glob("*/.*.part"))
        # Another network's bytes under the address: refused by the sha256, the server's taken.
        cdn.corrupt.clear()
        cdn.files[f"networks/{hashlib.sha256(server.files['net-b']).hexdigest()}"] = data
        assert NetworkCache(tmp_path / "e").get(ref("net-b")).read_bytes() == server.files["net-b"]
    finally:
        cdn.close()
        mirror.close()


def test_a_task_without_a_public_download_names_none():
    ref = NetworkRef.from_task(
        {"name": "net-a", "is_random": False, "url": "http://x/n/net-a", "sha256": "0" * 64, "bytes": 10}
    )
    assert ref.public_url is None
    random = NetworkRef.from_task(
        {"name": "run-random", "is_random": True, "url": None, "sha256": None, "bytes": 0, "public_url": None}
    )
    assert random.public_url is None


def _answers_ended(server: FileServer, count: int) -> list[int]:
    """The bytes sent by the server's answers of files, once `count` of them have ended (a server
    still sending after the client hung up ends at its next write)."""
    deadline = time.monotonic() + 30
    while len(server.sent) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(server.sent) == count, server.sent
    return server.sent


@pytest.mark.parametrize("length", ["none", "chunked"])
def test_a_download_longer_than_the_network_is_cut_there_and_refused(server, tmp_path, length):
    """A body that goes on past the network's size, with no Content-Length to say so: nothing past
    the size is written, the partial file is deleted, and after the allowed attempts the download is
    refused naming the address, the size announced and the bytes received."""
    server.extra, server.length = 1 << 20, length
    cache = NetworkCache(tmp_path, attempts=2)
    ref = server.ref("net-a")
    with pytest.raises(NetworkFileError) as refused:
        cache.get(ref)
    message = str(refused.value)
    assert f"{ref.url} sent more than 300000 bytes (the network's size)" in message, message
    received = int(re.search(r"cut at (\d+) bytes", message).group(1))
    assert 300_000 < received <= 300_000 + (1 << 16)
    assert cache.downloaded_bytes <= 2 * 300_000  # nothing past the size reached the disk
    assert len(server.requests) == 2
    assert not list(tmp_path.glob(".*.part")) and not (tmp_path / "net-a.safetensors").exists()


def test_a_content_length_beyond_the_network_is_refused_before_reading(server, tmp_path):
    server.extra = 1 << 20  # announced in the Content-Length
    cache = NetworkCache(tmp_path, attempts=1)
    ref = server.ref("net-a")
    with pytest.raises(NetworkFileError, match=re.escape(f"{ref.url} announced {300_000 + (1 << 20)} bytes")):
        cache.get(ref)
    assert cache.downloaded_bytes == 0 and not list(tmp_path.glob(".*.part"))


def test_a_download_that_never_ends_is_cut_and_the_connection_closed(server, tmp_path):
    server.forever, server.length = True, "chunked"
    cache = NetworkCache(tmp_path, attempts=1)
    with pytest.raises(NetworkFileError, match="cut at"):
        cache.get(server.ref("net-b"))
    # The client hung up: the server's writes failed long before it would have stopped by itself.
    assert _answers_ended(server, 1)[0] < FOREVER_CAP // 4
    assert cache.downloaded_bytes <= 5_000 and not list(tmp_path.glob(".*.part"))


def test_a_resumed_download_is_cut_at_the_rest_of_the_network(server, tmp_path):
    data = server.files["net-a"]
    cache = NetworkCache(tmp_path, attempts=1)
    server.extra = 1 << 20
    for length in ("none", "exact"):
        (tmp_path / ".net-a.part").write_bytes(data[:100_000])  # a download that broke off
        server.length = length
        with pytest.raises(NetworkFileError) as refused:
            cache.get(server.ref("net-a"))
        assert server.requests[-1] == ("net-a", "bytes=100000-")
        if length == "none":  # cut after the rest of the network
            assert "sent more than 200000 bytes (the rest of the network, of its 300000 bytes)" in str(refused.value)
        else:  # its Content-Length said so: refused before reading it
            assert f"announced {200_000 + (1 << 20)} bytes (Content-Length), more than 200000" in str(refused.value)
        assert cache.downloaded_bytes <= 200_000 and not list(tmp_path.glob(".*.part"))


def test_an_overlong_mirror_gives_way_to_the_servers_copy(server, tmp_path):
    data = server.files["net-a"]
    server.files["net-a.mirror"] = data
    server.overlong, server.extra, server.length, server.forever = {"net-a.mirror"}, 1, "none", True
    template = f"http://127.0.0.1:{server.httpd.server_port}/n/{{name}}.mirror"
    cache = NetworkCache(tmp_path, mirror=template)
    assert cache.get(server.ref("net-a")).read_bytes() == data
    assert [name for name, _ in server.requests] == ["net-a.mirror", "net-a"]
    assert cache.downloaded_bytes <= 2 * len(data)


def test_a_network_larger_than_the_limit_of_a_download_is_refused_without_asking(server, tmp_path):
    cache = NetworkCache(tmp_path, max_download=100_000)
    with pytest.raises(NetworkFileError, match="its 300000 bytes are more than the limit of a download"):
        cache.get(server.ref("net-a"))
    assert server.requests == []
    assert cache.get(server.ref("net-b")).read_bytes() == server.files["net-b"]
