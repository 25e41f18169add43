"""Delivering the outbox while the client runs: a thread of its own sends every finished game as it
is due (rating games first, then what earlier runs left); while the server cannot be reached it
waits longer and longer, from --retry-seconds doubling up to an hour; a Retry-After is waited out.
A pass over the outbox lasts at most PASS_SECONDS before it looks for new games again, so that a
rating game finished behind a backlog of self-play games goes out next. Once the workers have
ended, one last pass sends everything still pending, now."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable

from client.contribute.exits import exit_of_refusal
from client.contribute.outbox import DEFAULT_BACKOFF_CAP, FATAL, Outbox, Outcome
from client.contribute.server import ServerClient
from client.contribute.status import Status
from client.contribute.supervision import STOP_SECONDS

log = logging.getLogger("client.contribute")

FINAL_PATIENCE = 30.0  # the longest Retry-After the last delivery waits out before leaving the games for later
# A pass's longest run before the outbox is looked at again: a fast small-board client finishes dozens of
# self-play games a second, and a rating game behind them waited 7 s to go out (10 s for its gating).
PASS_SECONDS = 1.0


def _over(done: threading.Event, ends: float) -> bool:
    """Whether a delivery pass is to end: the sender stops, or the pass has had its time."""
    return done.is_set() or time.monotonic() > ends


class Delivery:
    """The outbox's sender. ``fail(status, message)`` is called when the server refuses the
    uploads for good (an old client, a refused token); ``status`` shows whether uploads get through."""

    def __init__(
        self,
        server: ServerClient,
        outbox: Outbox,
        status: Status,
        retry_seconds: float,
        fail: Callable[[int, str], None],
    ) -> None:
        self.server = server
        self.outbox = outbox
        self.status = status
        self.retry_seconds = retry_seconds
        self.fail = fail
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._send, name="sender", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop sending; an upload in flight ends within its timeout."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout=STOP_SECONDS)

    def _send(self) -> None:
        outbox, done = self.outbox, self._done
        pause = self.retry_seconds
        while not done.is_set():
            ends = time.monotonic() + PASS_SECONDS
            try:
                outbox.refresh()
                outcome = outbox.deliver_due(self.server.upload, stop=functools.partial(_over, done, ends))
            except Exception:  # the disk's trouble, say: logged, and tried again
                log.exception("delivering the outbox failed; trying again in %.0f s", pause)
                done.wait(pause)
                continue
            if outcome is not None and outcome.kind == FATAL:
                self.fail(exit_of_refusal(outcome), f"uploading games stopped: {outcome.message}")
                return
            if outcome is not None and outcome.retry_after is not None and not outcome.unreachable:
                log.info(
                    "the server asks to wait %.0f s before the next upload (%s)", outcome.retry_after, outcome.message
                )
                done.wait(outcome.retry_after)
                continue
            if outcome is not None and outcome.unreachable:
                if self.status.upload_reachable is not False:
                    log.warning(
                        "the server cannot be reached to upload games (%s); they wait in the outbox "
                        "(%d now) and go out when it is back",
                        outcome.message,
                        outbox.counts.pending,
                    )
                self.status.upload_reachable = False
                done.wait(pause)
                pause = min(DEFAULT_BACKOFF_CAP, pause * 2)
                continue
            if self.status.upload_reachable is False:
                log.warning("the server is reachable again; the games that waited are being sent")
            if outcome is None and (outbox.counts.delivered or outbox.counts.rejected):
                self.status.upload_reachable = True
            pause = self.retry_seconds
            if time.monotonic() <= ends:  # the pass sent all that was due: wait for more
                done.wait(0.5)

    def final(self, interrupted: Callable[[], bool]) -> None:
        """After the workers finished (and the sender stopped): one more try for every pending game,
        now, until ``interrupted()`` (Ctrl-C again)."""
        outbox = self.outbox

        def deliver_all() -> Outcome | None:
            outbox.refresh()
            for entry in outbox.pending():
                entry.due = 0.0
            return outbox.deliver_due(self.server.upload, stop=interrupted)

        outcome = deliver_all()
        while (
            outcome is not None
            and outcome.retry_after is not None
            and not outcome.unreachable
            and outcome.retry_after <= FINAL_PATIENCE
            and not interrupted()
        ):
            time.sleep(outcome.retry_after)  # the server asked for a short wait: the last games still go out
            outcome = deliver_all()
        if outcome is not None and outcome.kind == FATAL:
            self.fail(exit_of_refusal(outcome), f"uploading games stopped: {outcome.message}")
