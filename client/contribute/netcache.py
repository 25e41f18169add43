"""The volunteer's network cache: the networks tasks name, downloaded once and checked.

A network lives in the cache directory as ``<name>.safetensors``, put there only after its size and
sha256 matched what the server said. A download goes to ``.<name>.part`` first; when it breaks off
(connection lost, client stopped) the next attempt asks for the rest with a plain HTTP ``Range``.
No ``If-Range``: the server's own ETag is the sha256, but nginx (which sends the file for it),
object storage and caches in between answer with validators of their own, and an ``If-Range``
that does not match makes them send the whole file again. A network's file never changes under
its name, and the sha256 of the finished file is what decides: a download that arrives whole but
wrong (a server that did change the file, say) is deleted and fetched again from the start, up to a
few times, then refused with an error naming the network and what was wrong. A download is read
no further than the size the task announced (the rest of it when resumed), nor than its
``Content-Length``: one that goes on is cut there, deleted, and counts as one of those attempts
(:mod:`client.contribute.bounded`); a network announced larger than the volunteer's limit of a
download is refused without one. A file already in the cache is checked once per cache object (a
disk can corrupt it too) and re-fetched if it no longer matches.

Every use touches the file's modification time; :meth:`NetworkCache.prune` deletes networks unused
for a number of days (30 by default), and leftover partial downloads as old. Several threads may
ask for networks at once (the loop's current network and the prefetch of the next): one download
per name at a time, across the processes sharing the directory too.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import requests
from filelock import FileLock

from client.contribute.bounded import DEFAULT_MAX_DOWNLOAD, BoundedSession, TooLarge, bound
from client.contribute.server import ServerError
from common.files import fsync_dir
from common.protocol import NETWORK_NAME_PATTERN

log = logging.getLogger(__name__)

SUFFIX = ".safetensors"
CHUNK = 1 << 20  # hashing
READ_CHUNK = 1 << 16  # downloading: a broken connection loses at most this much of what came
DEFAULT_ATTEMPTS = 3
DEFAULT_KEEP_DAYS = 30.0


class NetworkFileError(Exception):
    """A network could not be had whole and right (after the allowed attempts)."""


@dataclass(frozen=True)
class NetworkRef:
    """What a task says about a network (the server's ``network_ref``)."""

    name: str
    url: str | None
    sha256: str | None
    size: int
    is_random: bool = False
    public_url: str | None = None  # the file at the run's public download base (a CDN), tried first

    @classmethod
    def from_task(cls, ref: dict) -> NetworkRef:
        """From a task's JSON; a field that is missing or of the wrong kind is an error naming it."""
        try:
            name = ref["name"]
            is_random = bool(ref.get("is_random", False))
            url, sha256, size = ref.get("url"), ref.get("sha256"), int(ref.get("bytes") or 0)
            public_url = ref.get("public_url")
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"network reference {ref!r}: {e}") from None
        if not isinstance(name, str) or re.fullmatch(NETWORK_NAME_PATTERN, name) is None:
            raise ValueError(f"network reference: {name!r} is not a network name")
        if not is_random:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ValueError(f"network {name}: url {url!r} is not an http(s) address")
            if not isinstance(sha256, str) or re.fullmatch(r"[0-9a-f]{64}", sha256) is None:
                raise ValueError(f"network {name}: sha256 {sha256!r} is not 64 hex digits")
            if size <= 0:
                raise ValueError(f"network {name}: size {size} is not positive")
            if public_url is not None and (
                not isinstance(public_url, str) or not public_url.startswith(("http://", "https://"))
            ):
                raise ValueError(f"network {name}: public_url {public_url!r} is not an http(s) address")
        return cls(
            name=name,
            url=url,
            sha256=sha256,
            size=size,
            is_random=is_random,
            public_url=None if is_random else public_url,
        )


class NetworkCache:
    """Networks by name in one directory; see the module docstring."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        session: requests.Session | None = None,
        attempts: int = DEFAULT_ATTEMPTS,
        keep_days: float = DEFAULT_KEEP_DAYS,
        timeout: float = 60.0,
        mirror: str | None = None,
        max_download: int = DEFAULT_MAX_DOWNLOAD,
    ) -> None:
        """``mirror``: a URL with ``{name}`` or ``{sha256}`` where the network goes, tried once before
        the server's own address (a file that is not right from it is fetched from the server).
        ``max_download``: the largest network taken, in bytes (a session's own limit beats it)."""
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.session = session or BoundedSession(max_download)
        self.max_download = getattr(self.session, "max_download", max_download)
        self.attempts = attempts
        self.keep_days = keep_days
        self.timeout = timeout
        self.mirror = mirror
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._checked: dict[str, str] = {}  # name -> the sha256 this object found its file to have
        self.downloaded_bytes = 0

    def path_of(self, name: str) -> Path:
        if re.fullmatch(NETWORK_NAME_PATTERN, name) is None:
            raise ValueError(f"{name!r} is not a network name")
        return self.directory / f"{name}{SUFFIX}"

    def _partial(self, name: str) -> Path:
        return self.directory / f".{name}.part"

    def _lock(self, name: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(name, threading.Lock())

    # --- getting a network ------------------------------------------------------------------------
    def get(self, ref: NetworkRef) -> Path:
        """The checked file of ref's network, downloading (or finishing the download of) it first if
        needed. Raises NetworkFileError when it cannot be had right (or the server refuses it with a
        4xx), requests' exceptions when the server cannot be reached or fails (5xx), and ServerError
        with its ``retry_after`` when it asks to be asked later (429, or 503 with Retry-After); the
        partial download is then kept for the next call."""
        if ref.is_random or ref.url is None or ref.sha256 is None:
            raise ValueError(f"network {ref.name} is the random network: it has no file")
        path = self.path_of(ref.name)
        with self._lock(ref.name), _file_lock(self.directory / f".{ref.name}.lock"):
            if path.exists():
                if self._checked.get(ref.name) == ref.sha256 or self._matches(path, ref):
                    self._checked[ref.name] = ref.sha256
                    _touch(path)
                    return path
                log.warning("network %s: the cached file no longer matches its sha256; fetching it again", ref.name)
                path.unlink(missing_ok=True)
            if ref.size > self.max_download:
                raise NetworkFileError(
                    f"network {ref.name} from {ref.url}: its {ref.size} bytes are more than the limit of a "
                    f"download ({self.max_download} bytes); raise --max-download-mb to take it"
                )
            copies: list[tuple[str, str]] = []  # tried in this order, each once, before the server
            if self.mirror is not None:
                copies.append((self.mirror.replace("{name}", ref.name).replace("{sha256}", ref.sha256), "the mirror"))
            if ref.public_url:
                copies.append((ref.public_url, "the run's public download"))
            for url, where in copies:
                if self._from_copy(ref, url, where):
                    os.replace(self._partial(ref.name), path)
                    fsync_dir(self.directory)
                    self._checked[ref.name] = ref.sha256
                    return path
            problems = []
            for _ in range(self.attempts):
                problem = self._download(ref, ref.url, ref.sha256)
                if problem is None:
                    os.replace(self._partial(ref.name), path)
                    fsync_dir(self.directory)
                    self._checked[ref.name] = ref.sha256
                    return path
                problems.append(problem)
                log.warning("network %s: %s; the download is deleted", ref.name, problem)
                self._partial(ref.name).unlink(missing_ok=True)
            raise NetworkFileError(
                f"network {ref.name} from {ref.url}: refused after {self.attempts} downloads: "
                + "; ".join(dict.fromkeys(problems))
            )

    def _from_copy(self, ref: NetworkRef, url: str, where: str) -> bool:
        """One download from a copy of the file outside the server (``where``: the volunteer's mirror
        or the run's public download); False (the partial file deleted) when it did not bring the
        right file, whatever went wrong: the next copy, and last the server's, is the fallback. The
        sha256 the server announced decides, so a copy can only fail, never change the network."""
        assert ref.sha256 is not None
        try:
            problem = self._download(ref, url, ref.sha256)
        except (requests.RequestException, ServerError, NetworkFileError) as e:
            problem = str(e)
        if problem is None:
            log.info("network %s: downloaded from %s, %s", ref.name, where, url)
            return True
        log.warning("network %s from %s, %s: %s; fetching it elsewhere", ref.name, where, url, problem)
        self._partial(ref.name).unlink(missing_ok=True)
        return False

    def _matches(self, path: Path, ref: NetworkRef) -> bool:
        return path.stat().st_size == ref.size and _sha256(path) == ref.sha256

    def _download(self, ref: NetworkRef, url: str, sha256: str) -> str | None:
        """Fetch (the rest of) ref's file from ``url`` (ref's) into its partial file; returns what is
        wrong with the result (``sha256``: ref's), or None when it is whole and right."""
        partial = self._partial(ref.name)
        have = partial.stat().st_size if partial.exists() else 0
        if have > ref.size:
            partial.unlink()
            have = 0
        headers = {"Accept-Encoding": "identity"}
        if 0 < have < ref.size:
            headers["Range"] = f"bytes={have}-"  # no If-Range: see the module docstring
        if have < ref.size:
            problem = self._fetch(ref, url, headers, have)
            if problem is not None:
                return problem
        size = partial.stat().st_size
        if size != ref.size:
            return f"{size} bytes, not the {ref.size} the server announced"
        digest = _sha256(partial)
        if digest != sha256:
            return f"its sha256 is {digest[:16]}..., not the announced {sha256[:16]}..."
        return None

    def _fetch(self, ref: NetworkRef, url: str, headers: dict[str, str], have: int) -> str | None:
        """One request for (the rest of) ref's file into its partial file, read no further than the
        bytes still wanted; what went wrong, if the answer was refused (None: it was read)."""
        partial = self._partial(ref.name)
        try:
            with self.session.get(url, headers=headers, stream=True, timeout=self.timeout) as response:
                status = response.status_code
                if status == 416:  # what we have is not a prefix of the file
                    return f"the server refused the range from byte {have} (416)"
                if status == 429 or (status == 503 and response.headers.get("Retry-After")):
                    raise ServerError.of(response)  # it asks to be asked later: the caller waits as long
                if status >= 500:
                    response.raise_for_status()  # the server's trouble: the caller waits and asks again
                if status not in (200, 206):
                    raise NetworkFileError(
                        f"network {ref.name} from {url}: the server answered {status} {response.reason}"
                    )
                resume = response.status_code == 206 and _range_start(response) == have
                if resume:
                    bound(
                        response,
                        ref.size - have,
                        f"the rest of the network, of its {ref.size} bytes",
                    )
                else:
                    bound(response, ref.size, "the network's size")
                with open(partial, "ab" if resume else "wb") as f:
                    for chunk in response.iter_content(READ_CHUNK):
                        f.write(chunk)
                        self.downloaded_bytes += len(chunk)
                    f.flush()
                    os.fsync(f.fileno())
        except TooLarge as e:
            partial.unlink(missing_ok=True)
            return str(e)
        return None

    # --- housekeeping -----------------------------------------------------------------------------
    def prune(self, keep: Iterable[str] = (), now: float | None = None) -> list[Path]:
        """Delete the networks (with their lock files) and partial downloads not used for keep_days,
        except those named in keep. Returns what was deleted."""
        now = time.time() if now is None else now
        limit = now - self.keep_days * 86400.0
        kept = {f"{name}{SUFFIX}" for name in keep} | {f".{name}.part" for name in keep}
        deleted = []
        for entry in self.directory.iterdir():
            if entry.name in kept or not entry.name.endswith((SUFFIX, ".part")):
                continue
            try:
                if entry.is_file() and entry.stat().st_mtime < limit:
                    entry.unlink()
                    if entry.name.endswith(SUFFIX):
                        name = entry.name.removesuffix(SUFFIX)
                        self._checked.pop(name, None)
                        (self.directory / f".{name}.lock").unlink(missing_ok=True)
                    deleted.append(entry)
            except FileNotFoundError:
                continue
        for path in deleted:
            log.info("deleted %s: unused for %g days", path.name, self.keep_days)
        return deleted


def _range_start(response: requests.Response) -> int:
    m = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
    return int(m.group(1)) if m else -1


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _file_lock(path: Path) -> FileLock:
    """An exclusive lock on path (created if needed) against other processes, on every platform:
    the workers of one client share the cache."""
    return FileLock(path)


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):  # a read-only cache still serves
        os.utime(path)
