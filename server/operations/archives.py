"""Archives of stored game files, written one game at a time, so that the same code fills a file
(the daily exports) and a streamed answer (the filtered export): a zip or a gzipped tar of SGF
files, and a tar of npz files (KataGo's layout: its tools read a folder of ``<game id>.npz``).

An archive is written by a generator that yields after each member; :func:`stream` runs one into
memory a member at a time and hands out the bytes as they come, so a tar of any number of games
takes the memory of one game. A zip keeps its directory until its end (some 600 bytes a game in
Python), which is why a streamed export of SGF files is a gzipped tar."""

from __future__ import annotations

import io
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, Literal, NamedTuple

from server.files import read_file
from server.games.rows import Place, read_rows

STREAM_CHUNK = 1 << 20  # bytes gathered before they are handed out


class Member(NamedTuple):
    name: str  # in the archive
    stored: str  # the stored file's name
    modified: datetime
    rows: Place | None = None  # a game's training rows: read where they are (its shard once packed)

    def read(self) -> bytes:
        return read_rows(self.rows) if self.rows is not None else read_file(self.stored)


Writer = Callable[[Any, Iterable[Member]], Iterator[None]]  # (a file to write to, the members)


def sgf_zip(out, members: Iterable[Member]) -> Iterator[None]:
    """A zip (deflated) of the members' SGF files, yielding after each."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member in members:
            data = member.read()
            info = zipfile.ZipInfo(member.name, date_time=member.modified.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
            yield


def npz_tar(out, members: Iterable[Member]) -> Iterator[None]:
    """A tar of the members' npz files (compressed already), yielding after each."""
    return _tar(out, members, "w|")


def sgf_tar_gz(out, members: Iterable[Member]) -> Iterator[None]:
    """A gzipped tar of the members' SGF files, yielding after each: unlike a zip, it has no
    directory to keep until its end, so it streams any number of games in flat memory."""
    return _tar(out, members, "w|gz")


def _tar(out, members: Iterable[Member], mode: Literal["w|", "w|gz"]) -> Iterator[None]:
    with tarfile.open(fileobj=out, mode=mode) as archive:
        for member in members:
            data = member.read()
            info = tarfile.TarInfo(member.name)
            info.size = len(data)
            info.mtime = int(member.modified.timestamp())
            archive.addfile(info, fileobj=io.BytesIO(data))
            archive.getmembers().clear()  # the members written (the list itself): a stream needs none
            yield


class _Pipe(io.RawIOBase):
    """What the archive writes, kept until it is handed out; it cannot seek."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.held = 0
        self.written = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        chunk = bytes(data)
        self.parts.append(chunk)
        self.held += len(chunk)
        self.written += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.written

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts.clear()
        self.held = 0
        return data


def stream(writer: Writer, members: Iterable[Member]) -> Iterator[bytes]:
    """The archive's bytes, handed out about STREAM_CHUNK at a time as the members are written."""
    pipe = _Pipe()
    for _ in writer(pipe, members):
        if pipe.held >= STREAM_CHUNK:
            yield pipe.take()
    rest = pipe.take()  # the writer closed the archive: its end
    if rest:
        yield rest
