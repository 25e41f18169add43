"""A streamed answer's send deadline: the whole answer must be handed to the client within it, or the
connection is closed, so that a reader who takes nothing (or a byte a second) cannot hold a worker
thread for longer.

Under gunicorn over HTTP/1 (its WSGI environ names the connection's socket, ``gunicorn.socket``,
which carries this one answer) the socket's timeout is set, before each piece of the answer is
handed out, to the time that is left: gunicorn's write of it (``sendall``) fails once the deadline
passes, however little the reader takes. Between pieces the deadline is checked too, which is all
that other servers get. An answer cut off ends
without its last chunk (the chunked encoding's end), so the client knows it is incomplete.

Behind nginx (``deploy/nginx``) the reader is nginx, which buffers the answer and sends it at the
visitor's pace on its own: the deadline then bounds only an export larger than nginx's buffer.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

MIN_TIMEOUT_SECONDS = 1.0  # what the end of the answer (written after the last piece) may take at least


class DeadlinePassed(Exception):
    """The answer was not sent within its deadline (raised where the socket is not known)."""


class WithinDeadline:
    """``pieces`` handed out as they come, the last of them within ``seconds`` of the first; closed
    (by the WSGI server, when the answer ends, is cut off or its reader went away, or was never
    started) it closes ``pieces`` and calls ``on_close`` once. ``what`` names the answer in the log."""

    def __init__(
        self, pieces: Iterator[bytes], seconds: float, environ: dict, what: str, on_close: Callable[[], None]
    ) -> None:
        self.pieces = pieces
        self.seconds = seconds
        # One answer per connection at a time (HTTP/1): its socket's timeout is this answer's alone.
        http1 = str(environ.get("SERVER_PROTOCOL", "")).startswith("HTTP/1")
        self.sock: socket.socket | None = environ.get("gunicorn.socket") if http1 else None
        self.what = what
        self.on_close: Callable[[], None] | None = on_close
        self.end: float | None = None

    def __iter__(self) -> WithinDeadline:
        return self

    def __next__(self) -> bytes:
        if self.end is None:
            self.end = time.monotonic() + self.seconds
        try:
            piece = next(self.pieces)
        except StopIteration:
            if self.sock is not None:  # the end of the answer, written after the last piece
                self.sock.settimeout(max(self.end - time.monotonic(), MIN_TIMEOUT_SECONDS))
            raise
        left = self.end - time.monotonic()
        if left <= 0:
            log.warning("%s cut off: not sent within its deadline of %g s", self.what, self.seconds)
            if self.sock is None:
                raise DeadlinePassed(f"{self.what} was not sent within {self.seconds:g} s")
            _shut(self.sock)
            raise StopIteration
        if self.sock is not None:
            self.sock.settimeout(left)
        return piece

    def close(self) -> None:
        on_close, self.on_close = self.on_close, None
        if on_close is None:
            return
        try:
            close = getattr(self.pieces, "close", None)
            if close is not None:
                close()  # the archive's generator: its database cursor and files now, not when collected
        finally:
            on_close()


def _shut(sock: socket.socket) -> None:
    """End the connection: gunicorn's next write fails (EPIPE, which it takes for a reader gone)."""
    with contextlib.suppress(OSError):  # gone already
        sock.shutdown(socket.SHUT_RDWR)
