"""Which filtered exports of games may start now. An export streams from one worker thread for as long
as its reader takes to read it, so the exports that run at once are capped, each with a send deadline
(``server.operations.sending``), by three counts (``SENTE_EXPORTS`` in the settings):

- across the site (``at_once``) and per client address (``per_address``; the address as
  :func:`server.api.addresses.client_key` counts it, an IPv6 address as its /64): leased slots in the
  default cache (Redis in production, shared by every process and machine). A slot is a cache key
  ``exports:<pool>:<n>``, n below the pool's size, added with ``cache.add`` (atomic: at most one
  export holds a key) with a timeout, the lease: the export's deadline and a margin. The export gives
  its slots back when it ends; a process that died holding one loses it when the lease runs out;
- per process (``per_process``, by default one fewer than gunicorn's threads): a gunicorn worker
  hands the connections it accepts to its own threads only, so a process whose every thread streamed
  an export would keep a task request waiting behind them; with one thread left it never does.

Without Redis (``CACHE_URL``) the local memory cache counts each process apart: the site's and the
address's counts then hold per process, as the throttles' do.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache

RETRY_AFTER_SECONDS = 30  # what a refused export is told to wait
LEASE_MARGIN_SECONDS = 60  # a slot's lease: the export's deadline and this
_BUSY = f"{{what}}: try again in {RETRY_AFTER_SECONDS} s, or download the daily archives (/api/v1/exports/)"

_process_lock = threading.Lock()
_process_slots: dict[int, threading.BoundedSemaphore] = {}  # pool size -> the process's slots


@dataclass(frozen=True)
class Refusal:
    status: int  # 429: this address has its exports running; 503: the site or the process is full
    message: str
    retry_after: int = RETRY_AFTER_SECONDS


@dataclass
class Admission:
    """The slots an admitted export holds until :meth:`release` (called once its answer ends)."""

    keys: list[str]
    token: str
    process: threading.BoundedSemaphore | None
    released: bool = field(default=False)

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        try:
            _give_back(self.keys, self.token)
        finally:  # the process's own slot goes back even if the cache fails (the others' leases end)
            if self.process is not None:
                self.process.release()


def _process_pool(size: int) -> threading.BoundedSemaphore:
    with _process_lock:
        pool = _process_slots.get(size)
        if pool is None:
            pool = _process_slots[size] = threading.BoundedSemaphore(size)
        return pool


def _take(pool: str, size: int, token: str, lease: int) -> str | None:
    """A free slot's key of the pool, now held by ``token`` for ``lease`` seconds; None when all
    ``size`` are held."""
    for n in range(size):
        key = f"exports:{pool}:{n}"
        if cache.add(key, token, timeout=lease):
            return key
    return None


def _give_back(keys: list[str], token: str) -> None:
    for key in keys:
        if cache.get(key) == token:  # not a slot another export took after this one's lease ran out
            cache.delete(key)


def admit(address: str) -> Admission | Refusal:
    """Admit an export from the client ``address`` (its key, :func:`server.api.addresses.client_key`)
    if every count allows one more, holding a slot of each; else the refusal saying which count is full."""
    limits = settings.SENTE_EXPORTS
    lease = int(limits["seconds"]) + LEASE_MARGIN_SECONDS
    process = _process_pool(int(limits["per_process"]))
    if not process.acquire(blocking=False):
        return Refusal(503, _BUSY.format(what="this server streams as many exports as it may at once"))
    token = secrets.token_hex(8)
    held: list[str] = []
    pools = (
        ("address", f"address:{address}", int(limits["per_address"])),
        ("site", "site", int(limits["at_once"])),
    )
    for kind, pool, size in pools:
        try:
            key = _take(pool, size, token, lease)
        except BaseException:  # the cache failed: the process's slot goes back (the others' leases end)
            process.release()
            raise
        if key is None:
            _give_back(held, token)
            process.release()
            if kind == "address":
                return Refusal(
                    429,
                    f"your address ({address}) has {size} export{'s' if size != 1 else ''} under way, the most "
                    "one address may run at once: try again when it has finished",
                )
            return Refusal(
                503, _BUSY.format(what=f"{size} exports are under way, the most this server streams at once")
            )
        held.append(key)
    return Admission(held, token, process)
