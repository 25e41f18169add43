"""The volunteer's outbox: every finished game waits on disk until the server has confirmed it.

A game is written to ``pending/`` as one directory (its SGF, its training rows when it has any, and
``entry.json``: the kind of game, the task, the metadata, the client build that played it) built
under ``tmp/`` and renamed into
place, so a crash, a kill or a power cut leaves either the whole entry or none of it (what a dead
writer left under ``tmp/`` is removed on start; several processes may share one outbox). An entry is
removed only once the server confirmed the game: any 2xx, a repeated upload included (the server
answers a game it already has with 200). A refusal for the game's own sake (any other 4xx) moves
it to ``rejected/`` with the server's message beside it, for the volunteer to look at. Connection
errors, timeouts, 5xx and 429 leave it pending and retry it later, after a delay that doubles from
``backoff_start`` seconds up to ``backoff_cap`` (an hour) with random jitter, or the server's
``Retry-After`` when it gave one and asked for longer; a ``Retry-After`` also ends the delivery
pass, so that no other game is sent before the wait is over. A refusal that is not the game's fault
(401/403: the token; 426: the run does not take this client) leaves it pending too and is reported
as fatal: the client stops and says why, and the game goes out once that is fixed. (A 426 for a
game an earlier build played is that game's own: see :meth:`ServerClient.upload`.)

Rating games go out first (a gating decision waits for them, and it holds up the whole run), then
the others, each kind oldest first; on start the pending ones from earlier runs are simply there.

A worker puts its games in ``held/`` instead, marked with its device and the networks that played
them, and moves them to ``pending/`` only once a canary check of each of those networks on that
device passed after the game ended (:mod:`client.contribute.canary`); when a check fails they go to
``unchecked/`` with the reason beside them, and are never sent.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from client.contribute.bounded import TooLarge
from client.contribute.retry import retry_after_seconds
from common.files import atomic_write, fsync_dir

log = logging.getLogger(__name__)

DELIVERED = "delivered"
RETRY = "retry"
REJECTED = "rejected"
FATAL = "fatal"

KINDS = ("training", "rating")
DEFAULT_BACKOFF_START = 5.0
DEFAULT_BACKOFF_CAP = 3600.0


@dataclass(frozen=True)
class Outcome:
    """How one upload attempt went: DELIVERED, RETRY (later), REJECTED (for good) or FATAL (not the
    game's fault; stop the client). ``retry_after``: the server's wish, in seconds."""

    kind: str
    message: str = ""
    retry_after: float | None = None
    unreachable: bool = False  # the server could not be reached at all
    status: int | None = None  # the server's HTTP status, when it answered


def outcome_of_status(status: int, message: str, retry_after: str | None = None) -> Outcome:
    """An HTTP answer to an upload, as an Outcome."""
    if 200 <= status < 300:
        return Outcome(DELIVERED, message, status=status)
    wait = retry_after_seconds(retry_after)
    if status in (401, 403):
        return Outcome(FATAL, f"the server refused the client's token ({status}): {message}", status=status)
    if status == 426:
        return Outcome(FATAL, f"the server's run does not take this client (426): {message}", status=status)
    if status in (408, 429) or status >= 500:
        return Outcome(RETRY, f"{status}: {message}", wait, status=status)
    return Outcome(REJECTED, f"{status}: {message}", status=status)


@dataclass
class Entry:
    """One pending game."""

    path: Path
    kind: str
    task: str
    game_id: str
    metadata: str  # the metadata JSON as uploaded
    created: float
    build: str = ""  # the client build that played it ("" in entries older than builds)
    device: str = ""  # the device that played it (held entries)
    networks: tuple[str, ...] = ()  # the networks that played it (held entries; the random one aside)
    attempts: int = 0
    due: float = 0.0
    last_error: str = ""

    @property
    def sgf(self) -> Path:
        return self.path / "game.sgf"

    @property
    def npz(self) -> Path | None:
        p = self.path / "game.npz"
        return p if p.exists() else None


@dataclass
class OutboxCounts:
    delivered: int = 0
    rejected: int = 0
    failed_attempts: int = 0
    pending: int = 0
    last_error: str = ""


class Outbox:
    """The spool directory of finished games; see the module docstring. Thread-safe: games are put
    by the players and delivered by one sender thread."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        backoff_start: float = DEFAULT_BACKOFF_START,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
        rng: random.Random | None = None,
        deliver: bool = True,
    ) -> None:
        """deliver=False: an outbox that only puts games (a worker's, beside the one sender): it
        neither loads nor tidies what is there."""
        if backoff_start <= 0 or backoff_cap < backoff_start:
            raise ValueError("backoff_start must be positive and backoff_cap at least backoff_start")
        self.directory = Path(directory)
        self.pending_dir = self.directory / "pending"
        self.rejected_dir = self.directory / "rejected"
        self.held_dir = self.directory / "held"
        self.unchecked_dir = self.directory / "unchecked"
        self.tmp_dir = self.directory / "tmp"
        for d in (self.pending_dir, self.rejected_dir, self.held_dir, self.unchecked_dir, self.tmp_dir):
            d.mkdir(parents=True, exist_ok=True)
        if deliver:
            for leftover in self.tmp_dir.iterdir():  # entries a crash left half written (or half removed)
                if not _writer_alive(leftover.name):
                    shutil.rmtree(leftover, ignore_errors=True)
        self.backoff_start = backoff_start
        self.backoff_cap = backoff_cap
        self.rng = rng or random.Random()
        self.counts = OutboxCounts()
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        if deliver:
            self.refresh()

    # --- putting games in -------------------------------------------------------------------------
    def put(
        self,
        kind: str,
        task: str,
        metadata: dict,
        sgf: bytes,
        npz: bytes | None = None,
        build: str = "",
        held_for: tuple[str, tuple[str, ...]] | None = None,
    ) -> Entry:
        """Spool a finished game (atomically) played by the client build `build`; it is delivered by
        :meth:`deliver_due`. ``held_for=(device, networks)``: put it in ``held/`` until
        :meth:`release` (see the module docstring)."""
        if kind not in KINDS:
            raise ValueError(f"game kind {kind!r}: expected one of {', '.join(KINDS)}")
        game_id = str(metadata.get("game_id", ""))
        created = time.time()
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        folder = self.tmp_dir / f"{os.getpid()}.{name}"  # the writer's pid: see _writer_alive
        folder.mkdir()
        atomic_write(folder / "game.sgf", sgf)
        if npz is not None:
            atomic_write(folder / "game.npz", npz)
        text = json.dumps(metadata, sort_keys=True)
        device, networks = held_for if held_for is not None else ("", ())
        atomic_write(
            folder / "entry.json",
            json.dumps(
                {
                    "kind": kind,
                    "task": str(task),
                    "metadata": text,
                    "game_id": game_id,
                    "created": created,
                    "build": build,
                    "device": device,
                    "networks": list(networks),
                }
            ).encode(),
        )
        target = self.held_dir if held_for is not None else self.pending_dir
        path = target / name
        os.replace(folder, path)
        fsync_dir(target)
        entry = Entry(
            path=path,
            kind=kind,
            task=str(task),
            game_id=game_id,
            metadata=text,
            created=created,
            build=build,
            device=device,
            networks=tuple(networks),
        )
        if held_for is not None:
            return entry
        with self._lock:
            self._entries[name] = entry
            self.counts.pending = len(self._entries)
        return entry

    def _load(self, path: Path) -> Entry | None:
        try:
            info = json.loads((path / "entry.json").read_text())
            return Entry(
                path=path,
                kind=info["kind"],
                task=info["task"],
                game_id=info.get("game_id", ""),
                metadata=info["metadata"],
                created=float(info.get("created", 0.0)),
                build=str(info.get("build", "")),
                device=str(info.get("device", "")),
                networks=tuple(str(n) for n in info.get("networks", [])),
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            if not path.exists():  # delivered and removed meanwhile
                return None
            # Not one of ours, or damaged: kept aside, not retried for ever.
            log.error("outbox entry %s cannot be read (%s); moved to %s", path.name, e, self.rejected_dir)
            self._move_to_rejected(path, f"the entry could not be read: {e}")
            return None

    def refresh(self) -> int:
        """Take in the entries other processes put since (the workers put, one sender delivers);
        returns how many came."""
        with self._lock:
            known = set(self._entries)
        new = [p for p in self.pending_dir.iterdir() if p.name not in known]
        added = 0
        for path in sorted(new):
            entry = self._load(path)
            if entry is not None:
                with self._lock:
                    if path.name not in self._entries:
                        self._entries[path.name] = entry
                        added += 1
        with self._lock:
            self.counts.pending = len(self._entries)
        return added

    # --- held games ------------------------------------------------------------------------------
    def held(self, device: str) -> list[Entry]:
        """The games of ``device`` waiting for a canary check, oldest first."""
        found = []
        for path in sorted(self.held_dir.iterdir()):
            entry = self._load(path)
            if entry is not None and entry.device == device:
                found.append(entry)
        return found

    def count_held(self) -> int:
        return sum(1 for _ in self.held_dir.iterdir())

    def release(self, entries: list[Entry]) -> int:
        """Move held games to ``pending/`` (for the sender); returns how many."""
        moved = 0
        for entry in entries:
            try:
                os.replace(entry.path, self.pending_dir / entry.path.name)
            except FileNotFoundError:
                continue
            moved += 1
        if moved:
            fsync_dir(self.pending_dir)
        return moved

    def set_aside(self, entries: list[Entry], reason: str) -> int:
        """Move held games to ``unchecked/`` with the reason beside them: they are never sent."""
        moved = 0
        for entry in entries:
            target = self.unchecked_dir / entry.path.name
            try:
                os.replace(entry.path, target)
            except FileNotFoundError:
                continue
            atomic_write(target / "reason.txt", (reason + "\n").encode())
            moved += 1
        return moved

    # --- delivering -------------------------------------------------------------------------------
    def pending(self) -> list[Entry]:
        """The entries in the order they go out (the module docstring)."""
        with self._lock:
            return sorted(self._entries.values(), key=lambda e: (e.kind != "rating", e.path.name))

    def deliver_due(
        self, send: Callable[[Entry], Outcome], now: float | None = None, stop: Callable[[], bool] | None = None
    ) -> Outcome | None:
        """Try every entry that is due, in the order they go out, with send(entry). Stops at the first
        FATAL outcome, the first time the server cannot be reached at all (send raised: the others
        wait for the next pass rather than each fail alike), or the first time it asks to be asked
        later (Retry-After: the others wait as long), and returns that outcome; otherwise returns
        None. A true ``stop()`` ends the pass before the next entry."""
        for entry in self.pending():
            if stop is not None and stop():
                return None
            t = time.time() if now is None else now
            if entry.due > t:
                continue
            try:
                outcome = send(entry)
            except Exception as e:  # the sender's own trouble (connection, timeout): try again later
                outcome = Outcome(RETRY, describe_error(e), unreachable=True)
            if outcome.kind == DELIVERED:
                self._remove(entry)
                log.info("game %s delivered", entry.game_id)
            elif outcome.kind == REJECTED:
                log.error(
                    "game %s refused by the server, moved to %s: %s", entry.game_id, self.rejected_dir, outcome.message
                )
                self._reject(entry, outcome.message)
            elif outcome.kind == RETRY:
                self._postpone(entry, outcome, t)
                if outcome.unreachable or outcome.retry_after is not None:
                    return outcome
            else:
                with self._lock:
                    self.counts.last_error = outcome.message
                return outcome
        return None

    def _postpone(self, entry: Entry, outcome: Outcome, now: float) -> None:
        with self._lock:
            entry.attempts += 1
            delay = min(self.backoff_cap, self.backoff_start * 2.0 ** (entry.attempts - 1))
            delay = delay * (0.5 + 0.5 * self.rng.random())  # jitter: clients do not come back together
            if outcome.retry_after is not None:
                delay = max(delay, outcome.retry_after)
            entry.due = now + delay
            entry.last_error = outcome.message
            self.counts.failed_attempts += 1
            self.counts.last_error = outcome.message
        log.log(
            logging.INFO if outcome.unreachable else logging.WARNING,
            "game %s not delivered (%s); next try in %.1f s",
            entry.game_id,
            outcome.message,
            delay,
        )

    def _remove(self, entry: Entry) -> None:
        # Out of pending/ in one rename, then deleted: a crash halfway leaves no half entry behind.
        gone = self.tmp_dir / f"{os.getpid()}.gone-{entry.path.name}"
        try:
            os.replace(entry.path, gone)
        except FileNotFoundError:
            pass
        else:
            shutil.rmtree(gone, ignore_errors=True)
        with self._lock:
            self._entries.pop(entry.path.name, None)
            self.counts.delivered += 1
            self.counts.pending = len(self._entries)

    def _reject(self, entry: Entry, message: str) -> None:
        self._move_to_rejected(entry.path, message)
        with self._lock:
            self._entries.pop(entry.path.name, None)
            self.counts.rejected += 1
            self.counts.pending = len(self._entries)

    def _move_to_rejected(self, path: Path, message: str) -> None:
        target = self.rejected_dir / path.name
        os.replace(path, target)
        atomic_write(target / "reason.txt", (message + "\n").encode())


def describe_error(e: BaseException) -> str:
    """A connection problem (requests' exceptions and the like) in a few plain words."""
    text = str(e)
    if isinstance(e, TooLarge):  # its own words name the address and the sizes
        return text
    for needle, words in (
        ("Connection refused", "connection refused"),
        ("timed out", "timed out"),
        ("Name or service not known", "unknown host name"),
        ("Temporary failure in name resolution", "host name lookup failed"),
        ("Connection reset", "connection reset"),
        ("Connection aborted", "connection dropped"),
        ("RemoteDisconnected", "connection dropped"),
        ("SSLError", "TLS error"),
        ("CERTIFICATE_VERIFY_FAILED", "the server's certificate is not trusted"),
    ):
        if needle in text or needle in type(e).__name__:
            return words
    return f"{type(e).__name__}: {text if len(text) < 160 else text[:157] + '...'}"


def _writer_alive(build_name: str) -> bool:
    """Is the process that is building this entry (several may share an outbox) still running?"""
    pid_text = build_name.split(".", 1)[0]
    if not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
