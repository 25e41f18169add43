"""Delivering the outbox while the client runs: a thread of its own sends every finished game as it
is due (what earlier runs left first); while the server cannot be reached it waits longer and
longer, from --retry-seconds doubling up to an hour; a Retry-After is waited out. Once the workers
have ended, one last pass sends everything still pending, now."""

from __future__ import annotations

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
            try:
                outbox.refresh()
                outcome = outbox.deliver_due(self.server.upload, stop=done.is_set)
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
