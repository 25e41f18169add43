"""Every answer the client downloads, read within bounds.

A server, a mirror or anything in between (a proxy, a man in the middle) chooses how many bytes it
sends, and what it announces of them. The client reads no more than was announced: the answer's
``Content-Length`` (of the bytes as sent, when they are not compressed), the size its record gave
(a network's ``bytes``, a canary reference's), and :data:`ANSWER_BYTES` for an answer read into
memory (the API's JSON); and never more than the volunteer's limit of any download
(``--max-download-mb``, :data:`DEFAULT_MAX_DOWNLOAD` by default), which also bounds an answer that
announces nothing at all. A body that goes past its bound is cut there: the connection is closed,
nothing beyond the bound reaches the caller, and :class:`TooLarge` names the address, the bound and
what it came from, and the bytes received. A ``Content-Length`` beyond the bound is refused before
anything is read.

:class:`BoundedSession` applies the bounds to every answer of its requests (the ones that redirect
too, whose bodies requests reads to release their connection); :func:`bound` lowers an answer's
bound to the size its record announced. No library does this: requests, urllib3 and httpx read what
comes, and http.client stops at ``Content-Length`` only when there is one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import requests

DEFAULT_MAX_DOWNLOAD = 2 << 30  # bytes: no network of the paper's sizes comes near it
ANSWER_BYTES = 64 << 20  # an answer read into memory (JSON, a canary reference, an error's text)
READ_PIECE = 1 << 16


class TooLarge(requests.RequestException):
    """An answer longer than its bound: it was cut, or refused for the length it announced."""

    def __init__(self, url: str, limit: int, source: str, received: int, announced: int | None = None) -> None:
        if announced is not None:
            text = (
                f"{url} announced {announced} bytes (Content-Length), more than {limit} ({source}): "
                "refused before reading it"
            )
        else:
            text = (
                f"{url} sent more than {limit} bytes ({source}): the download was cut at {received} bytes and refused"
            )
        super().__init__(text)
        self.url = url
        self.limit = limit
        self.received = received


class _Capped:
    """A urllib3 response whose body can be read (or streamed) up to ``limit`` bytes, as decoded;
    the first read past it closes the connection and raises :class:`TooLarge`."""

    def __init__(self, raw: Any, limit: int, source: str, url: str) -> None:
        self._raw = raw
        self.limit = limit
        self.source = source
        self.url = url
        self.received = 0

    def lower(self, limit: int, source: str) -> None:
        if limit < self.limit:
            self.limit, self.source = limit, source
            self._count(0)

    def _count(self, n: int) -> None:
        self.received += n
        if self.received > self.limit:
            self._raw.close()  # the rest is never read, and the connection never reused
            raise TooLarge(self.url, self.limit, self.source, self.received)

    def stream(self, amt: int | None = READ_PIECE, decode_content: bool | None = None) -> Iterator[bytes]:
        for chunk in self._raw.stream(amt, decode_content=decode_content):
            self._count(len(chunk))
            yield chunk

    def read(self, amt: int | None = None, decode_content: bool | None = None, **kwargs: Any) -> bytes:
        if amt is not None:
            data = self._raw.read(amt, decode_content=decode_content, **kwargs)
            self._count(len(data))
            return data
        pieces = []
        while piece := self._raw.read(READ_PIECE, decode_content=decode_content, **kwargs):
            self._count(len(piece))
            pieces.append(piece)
        return b"".join(pieces)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def content_length(response: requests.Response) -> int | None:
    """The length the answer announced for its body as read (None: none, or compressed bytes)."""
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    text = response.headers.get("Content-Length", "").strip()
    if encoding not in ("", "identity") or not text.isdigit():
        return None
    return int(text)


def bound(response: requests.Response, limit: int, source: str) -> None:
    """Read no more of the answer's body than ``limit`` bytes (``source``: where that bound comes
    from, in words for the error), nor than its Content-Length; a Content-Length beyond ``limit`` is refused at once
    (:class:`TooLarge`, the answer closed). A bound already set is only lowered."""
    announced = content_length(response)
    if announced is not None and announced > limit:
        response.close()
        raise TooLarge(response.url, limit, source, 0, announced=announced)
    if announced is not None and announced < limit:
        limit, source = announced, "its Content-Length"
    raw = response.raw
    if isinstance(raw, _Capped):
        raw.lower(limit, source)
    else:
        response.raw = _Capped(raw, limit, source, response.url)


class BoundedSession(requests.Session):
    """A session whose every answer is read within bounds (the module docstring): ``max_download``
    bytes at most, :data:`ANSWER_BYTES` for one read into memory (not streamed), an error or a
    redirect."""

    def __init__(self, max_download: int = DEFAULT_MAX_DOWNLOAD) -> None:
        super().__init__()
        if max_download < 1:
            raise ValueError(f"max_download {max_download} must be at least one byte")
        self.max_download = max_download
        self.hooks["response"].append(self._bound)

    def _bound(self, response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
        limit, source = self.max_download, "the limit of a download, --max-download-mb"
        in_memory = not kwargs.get("stream") or response.status_code >= 300
        if in_memory and limit > ANSWER_BYTES:
            limit, source = ANSWER_BYTES, "the limit of an answer read into memory"
        bound(response, limit, source)
        return response
