"""One HTTP POST to a checked webhook target (``server.outbound.targets``).

Made with the standard library's ``socket``, ``ssl`` and ``http.client`` so that each step is ours:
the TCP connection goes to an address the check passed, never looked up again; TLS sends the URL's
host name (SNI) and verifies the certificate for it; the request's Host header names it; a redirect
is an answer like any other, never followed. One deadline covers connecting, the TLS handshake,
sending and reading the answer: a watchdog shuts the socket down when it passes, so a receiver
that dribbles a byte at a time cannot hold the attempt longer. No more than ``REPLY_BYTES`` of the
answer are read (status line, headers and an excerpt of the body of an answer other than 2xx), and
the words kept from it are a short, printable excerpt (:func:`printable`).

(requests and urllib3 connect to the name they resolve themselves, which would take their private
hooks to pin to a checked address, and their timeouts apply to each socket operation, not to the
whole exchange.)
"""

from __future__ import annotations

import contextlib
import http.client
import io
import socket
import ssl
import threading
import time
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from requests.utils import DEFAULT_CA_BUNDLE_PATH

from server.outbound.targets import Target

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

REPLY_BYTES = 16 * 1024  # the most read of an answer
EXCERPT_BYTES = 512  # of the body of an answer other than 2xx, read for the excerpt
EXCERPT_CHARS = 120  # kept of that excerpt
REASON_CHARS = 40  # kept of the status line's reason phrase


class PostFailed(Exception):
    """The post got no HTTP answer: why, in a short line fit to keep."""


@dataclass(frozen=True)
class Reply:
    status: int
    reason: str  # printable, at most REASON_CHARS
    excerpt: str  # of the body, printable, at most EXCERPT_CHARS; empty for 2xx (not read)
    received: int  # bytes read from the connection


def printable(text: str, limit: int) -> str:
    """``text`` with control and other invisible characters as spaces, runs of spaces as one, and cut
    to ``limit`` characters (an ellipsis says it was)."""
    cleaned = "".join(" " if unicodedata.category(c).startswith(("C", "Z")) else c for c in text)
    cleaned = " ".join(cleaned.split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


class Deadline:
    """The moment an attempt must be over by, and the watchdog that shuts the attempt's socket down
    then (a blocked read or write returns at once)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._at = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._timer: threading.Timer | None = None
        self.passed = False

    def remaining(self) -> float:
        """Seconds left; raises :class:`PostFailed` when none are."""
        left = self._at - time.monotonic()
        if left <= 0:
            self.passed = True
            raise PostFailed(self.message())
        return left

    def message(self) -> str:
        return f"no complete answer within {self.seconds:g} s"

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline passes (unless :meth:`release` came first)."""
        timer = threading.Timer(max(0.0, self._at - time.monotonic()), self._expire)
        timer.daemon = True
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._sock, self._timer = sock, timer
        timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._sock is None:
                return
            self.passed = True
            # the plain socket's shutdown, also for a TLS socket (whose own would drop its TLS state
            # under the thread reading it): the fd is shared, the blocked call returns
            with contextlib.suppress(OSError):
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)

    def release(self) -> None:
        """Stop watching and close the socket (under the lock: the watchdog never touches a closed one)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            sock, self._sock, self._timer = self._sock, None, None
            if sock is not None:
                sock.close()


class _Counted(io.RawIOBase):
    """The socket's bytes, counted, and refused past the cap."""

    def __init__(self, raw: io.RawIOBase, limit: int) -> None:
        self._raw = raw
        self.left = limit
        self.received = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        if self.left <= 0:
            raise PostFailed(f"the answer is longer than {REPLY_BYTES} bytes; the rest was not read")
        view = memoryview(buffer).cast("B")[: self.left]
        n = self._raw.readinto(view) or 0
        self.left -= n
        self.received += n
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


class _CappedResponse(http.client.HTTPResponse):
    """http.client's response, reading the socket through :class:`_Counted`."""

    def __init__(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None, url: str | None = None):
        super().__init__(sock, debuglevel, method, url)
        self.fp.close()
        self.counted = _Counted(sock.makefile("rb", buffering=0), REPLY_BYTES)
        self.fp = io.BufferedReader(self.counted, buffer_size=1024)


@cache
def default_tls() -> ssl.SSLContext:
    """Certificates checked against the CA bundle requests uses (certifi's)."""
    return ssl.create_default_context(cafile=DEFAULT_CA_BUNDLE_PATH)


def post(
    target: Target, body: bytes, headers: dict[str, str], deadline: Deadline, tls: ssl.SSLContext | None = None
) -> Reply:
    """POST ``body`` to ``target`` (to its checked addresses only) before ``deadline``: the answer's
    status and, unless 2xx, an excerpt of its body; raises :class:`PostFailed` without an answer."""
    response: _CappedResponse | None = None
    try:
        sock = _connect(target, deadline)
        connection: http.client.HTTPConnection
        if target.scheme == "https":
            tls = tls or default_tls()
            sock = _handshake(sock, target.host, deadline, tls)
            connection = http.client.HTTPSConnection(target.host, target.port, context=tls)
        else:
            connection = http.client.HTTPConnection(target.host, target.port)
        sock.settimeout(deadline.remaining())  # each blocking call ends by then too
        connection.sock = sock  # never connect(): that would look the name up again
        connection.response_class = _CappedResponse
        connection.request("POST", target.path, body=body, headers={**headers, "Connection": "close"})
        response = connection.getresponse()  # type: ignore[assignment]
        assert response is not None
        if deadline.passed:  # the watchdog ended the head early: its end as http.client saw it is not the answer's
            raise PostFailed(deadline.message())
        excerpt = b""
        if not 200 <= response.status < 300:
            with contextlib.suppress(PostFailed, OSError, http.client.HTTPException):
                while len(excerpt) < EXCERPT_BYTES:
                    chunk = response.read1(EXCERPT_BYTES - len(excerpt))
                    if not chunk:
                        break
                    excerpt += chunk
        return Reply(
            status=response.status,
            reason=printable(response.reason or "", REASON_CHARS),
            excerpt=printable(excerpt.decode("utf-8", "replace"), EXCERPT_CHARS),
            received=response.counted.received,
        )
    except PostFailed:
        raise
    except Exception as e:
        raise PostFailed(deadline.message() if deadline.passed else describe(e)) from None
    finally:
        if response is not None:
            response.close()  # its reader holds the socket open
        deadline.release()


def _connect(target: Target, deadline: Deadline) -> socket.socket:
    """A TCP connection to the first of the target's checked addresses that takes one."""
    failures = []
    for endpoint in target.endpoints:
        sock = socket.socket(endpoint.family, socket.SOCK_STREAM)
        deadline.watch(sock)
        try:
            sock.settimeout(deadline.remaining())
            sock.connect(endpoint.sockaddr)
            return sock
        except OSError as e:
            deadline.release()
            if deadline.passed:
                raise PostFailed(deadline.message()) from None
            failures.append(f"{endpoint.address}: {describe(e)}")
    raise PostFailed(f"could not connect to {target.host} port {target.port} ({'; '.join(failures)})")


def _handshake(sock: socket.socket, host: str, deadline: Deadline, tls: ssl.SSLContext) -> ssl.SSLSocket:
    """TLS over ``sock`` for ``host``: its name in SNI, the certificate verified for it."""
    wrapped = tls.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
    deadline.watch(wrapped)  # the plain socket object gave its descriptor to the TLS one
    wrapped.settimeout(deadline.remaining())
    wrapped.do_handshake()
    return wrapped


def describe(error: BaseException) -> str:
    """A failure to connect, shake hands or read an answer, in a short line."""
    if isinstance(error, ssl.SSLCertVerificationError):
        text = f"TLS certificate: {error.verify_message}"
    elif isinstance(error, ssl.SSLError):
        text = f"TLS: {error.reason or error}"
    elif isinstance(error, ConnectionRefusedError):
        text = "connection refused"
    elif isinstance(error, http.client.RemoteDisconnected):
        text = "the server closed the connection without answering"
    elif isinstance(error, http.client.HTTPException):
        text = f"not an HTTP answer ({type(error).__name__})"
    elif isinstance(error, TimeoutError):
        text = "timed out"
    elif isinstance(error, OSError) and error.strerror:
        text = error.strerror
    else:
        text = f"{type(error).__name__}: {error}"
    return printable(text, 200)
