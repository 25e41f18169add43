"""What the contributing client shows while it runs: the workers' reports gathered into one status,
drawn as a live panel on a terminal (rich) or written as a line now and then elsewhere (a log, a
service's journal)."""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from client.contribute.outbox import OutboxCounts

if TYPE_CHECKING:
    from rich.live import Live

log = logging.getLogger(__name__)

RATE_WINDOW = 60.0  # seconds over which moves/s and evaluations/s are measured
COUNTS = ("selfplay_games", "rating_games", "rows", "moves", "evals", "offered")  # a worker's, since it started
STATUS_LINE_SECONDS = 60.0  # without a terminal: how often the status line is written


@dataclass
class Status:
    """The whole client: the workers' last reports, the outbox, the server's reachability."""

    server: str
    username: str
    workers: dict[int, dict] = field(default_factory=dict)
    outbox: OutboxCounts = field(default_factory=OutboxCounts)
    upload_reachable: bool | None = None  # as the last upload found it
    mode: str = "running"  # running, paused, finishing, stopping
    upgrade: str | None = None  # a newer client release, as the server announced it at start
    gpus: dict[int, str] = field(default_factory=dict)  # by worker: its GPU's temperature and power (gpuwatch)
    started: float = field(default_factory=time.time)
    _history: deque = field(default_factory=lambda: deque(maxlen=600))
    _announced: set = field(default_factory=set)
    _earlier: dict[str, float] = field(default_factory=dict)  # the counts of workers' earlier lives

    def update(self, index: int, report: dict) -> None:
        self.workers[index] = report
        for text in report.get("announcements") or ():
            if text not in self._announced:  # logged once, whether or not a panel shows it
                self._announced.add(text)
                log.info("announcement from the server: %s", text)

    def restarted(self, index: int) -> None:
        """Worker ``index`` starts a new life, counting from zero: what it had counted stays in the
        totals (else they, and the rates over them, would go backwards)."""
        last = self.workers.pop(index, None) or {}
        for key in COUNTS:
            self._earlier[key] = self._earlier.get(key, 0) + last.get(key, 0)

    def announcements(self) -> list[str]:
        """The server's announcements, as the workers' last task answers gave them."""
        seen: dict[str, None] = {}
        for index in sorted(self.workers):
            for text in self.workers[index].get("announcements") or ():
                seen.setdefault(text, None)
        return list(seen)

    @property
    def reachable(self) -> bool | None:
        """Could the server be reached the last time each part asked (None: nobody asked yet)?"""
        seen = [w["reachable"] for w in self.workers.values() if w.get("reachable") is not None]
        if self.upload_reachable is not None:
            seen.append(self.upload_reachable)
        return all(seen) if seen else None

    def totals(self) -> dict[str, float]:
        keys = ("playing", *COUNTS)
        return {k: self._earlier.get(k, 0) + sum(w.get(k, 0) for w in self.workers.values()) for k in keys}

    def sample(self, now: float | None = None) -> None:
        """Remember the totals now, for the rates."""
        self._history.append((time.time() if now is None else now, self.totals()))

    def rates(self) -> tuple[float, float, float]:
        """Moves/s, evaluations/s and batch fill over the last minute."""
        if len(self._history) < 2:
            return 0.0, 0.0, 0.0
        t1, last = self._history[-1]
        # The oldest sample within the window, or else the one before the last.
        first = next(i for i, (t, _) in enumerate(self._history) if t1 - t <= RATE_WINDOW)
        t0, start = self._history[min(first, len(self._history) - 2)]
        dt = max(t1 - t0, 1e-9)
        offered = last["offered"] - start["offered"]
        evals = last["evals"] - start["evals"]
        return (last["moves"] - start["moves"]) / dt, evals / dt, (evals / offered if offered > 0 else 0.0)

    def networks(self) -> str:
        names = sorted({w["network"] for w in self.workers.values() if w.get("network")})
        return ", ".join(names) or "-"

    def server_text(self) -> str:
        return {None: "not asked yet", True: "reachable", False: "NOT reachable (retrying)"}[self.reachable]

    def line(self) -> str:
        """One line for logs."""
        t = self.totals()
        moves, evals, fill = self.rates()
        o = self.outbox
        return (
            f"{self.mode}: network {self.networks()}; games playing {t['playing']:.0f}, finished "
            f"{t['selfplay_games']:.0f} self-play + {t['rating_games']:.0f} rating; {moves:.1f} moves/s, "
            f"{evals:.0f} evals/s, batch fill {100 * fill:.0f}%; uploads: {o.delivered} sent, {o.pending} "
            f"pending, {o.rejected} rejected, {o.failed_attempts} failed tries; server {self.server_text()}"
            + "".join(
                f"; {self.workers.get(i, {}).get('device', f'worker {i}')} {self.gpus[i]}" for i in sorted(self.gpus)
            )
            + (f"; {self.upgrade}" if self.upgrade else "")
        )

    def panel(self):
        """A rich renderable."""
        from rich.markup import escape
        from rich.panel import Panel
        from rich.table import Table

        t = self.totals()
        moves, evals, fill = self.rates()
        o = self.outbox
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column()
        table.add_row(
            "server",
            f"{self.server} as {self.username}: "
            + ("[green]" if self.reachable else "[red]" if self.reachable is False else "")
            + self.server_text()
            + ("[/]" if self.reachable is not None else ""),
        )
        table.add_row("network", self.networks())
        table.add_row(
            "games",
            f"{t['playing']:.0f} playing; finished {t['selfplay_games']:.0f} self-play "
            f"({t['rows']:.0f} training rows), {t['rating_games']:.0f} rating",
        )
        table.add_row("speed", f"{moves:.1f} moves/s, {evals:.0f} evaluations/s, batch fill {100 * fill:.0f}%")
        table.add_row(
            "uploads",
            f"{o.delivered} sent, {o.pending} pending, {o.rejected} rejected, "
            f"{o.failed_attempts} failed tries"
            + (f" (last: {o.last_error[:80]})" if o.last_error and o.pending else ""),
        )
        for index in sorted(self.workers):
            w = self.workers[index]
            gpu = f"; {self.gpus[index]}" if index in self.gpus else ""
            table.add_row(f"worker {index}", f"{w.get('device')}: {w.get('state')}{in_hand(w)}{gpu}")
        for text in self.announcements():
            table.add_row("[yellow]news[/]", escape(text))
        if self.upgrade:
            table.add_row("[yellow]upgrade[/]", escape(self.upgrade))
        title = f"Sente contributor: {self.mode}, up {duration(time.time() - self.started)}"
        return Panel(table, title=title, subtitle="Ctrl-C: finish and stop; type pause / resume")


class Display:
    """The status on a terminal (a live rich panel) or as a logged line every minute."""

    def __init__(self, status: Status) -> None:
        self.status = status
        self.live: Live | None = None
        self.last_line = 0.0

    def __enter__(self) -> Display:
        if sys.stdout.isatty():
            from rich.live import Live

            self.live = Live(self.status.panel(), refresh_per_second=2, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.update(self.status.panel())
            self.live.__exit__(*exc)

    def refresh(self) -> None:
        if self.live is not None:
            self.live.update(self.status.panel())
        elif time.monotonic() - self.last_line >= STATUS_LINE_SECONDS:
            self.last_line = time.monotonic()
            print(self.status.line(), flush=True)
            log.info("%s", self.status.line())


def in_hand(report: dict) -> str:
    """'; 2304 games in hand (1h12m)': the reserve a worker plays on through an outage with."""
    games = report.get("in_hand")
    if games is None:
        return ""
    seconds = report.get("in_hand_seconds")
    return f"; {games} games in hand" + (f" ({duration(seconds)})" if seconds is not None else "")


def duration(seconds: float) -> str:
    """45s, 12m05s, 2h41m, 3d04h."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s // 60 % 60:02d}m"
    return f"{s // 86400}d{s // 3600 % 24:02d}h"
