"""SIGTERM, as a service manager sends it to every process of the client, against the real server under
gunicorn: no game starts after it; the games in play then finish, are sent, and the client ends."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest

from tests.e2e.contributor import Contributor, until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PARALLEL = 8


def test_no_game_starts_after_sigterm_and_the_games_in_play_finish_and_go_out(
    server, volunteer, contributors, tmp_path
):
    """The random network's 7x7 games end several times a second: a client that acted on the signal
    only when its loop next looked (up to half a second later) started new games meanwhile. Every
    finished game's SGF is copied as it ends: those that end after the signal are at most the games
    in play then, at most --parallel; each of them was sent, and none was left in play."""
    from server.games.models import TrainingGame

    copies = tmp_path / "copies"
    client = Contributor(
        tmp_path / "alice",
        server.url,
        True,
        "--only",
        "selfplay",
        "--parallel",
        str(PARALLEL),
        "--sgf-dir",
        str(copies),
        "--checkpoint-seconds",
        "0.2",
    )
    contributors.append(client)

    def finished() -> set[str]:
        return {p.stem for p in copies.glob("*.sgf")} if copies.exists() else set()

    until(lambda: len(finished()) >= 5 * PARALLEL, 300, "games in steady play", client)
    workers = client.workers()
    assert workers, client.output()
    client.process.send_signal(signal.SIGTERM)
    at_signal = finished()  # read just after the signal: it may count a game that ended since, never miss one
    for pid in workers:  # as systemd's stop signals every process of the service (KillMode=control-group)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    assert client.wait(300) == 0, client.output()
    after = finished() - at_signal
    assert len(after) <= PARALLEL, (len(after), client.output())
    assert "finishing the games in play" in client.err.read_text(), client.output()
    # The workers ended as asked, not killed by the signal: no game in play was left saved to be played
    # on, and the games ended after the signal were sent like the others.
    assert not list((client.data / "inplay").rglob("*.ckpt")), client.output()
    assert client.pending() == 0, client.output()
    stored = set(TrainingGame.objects.values_list("client_game_id", flat=True))
    log = (client.data / "contribute.log").read_text()
    not_sent = {name for name in after if f"game {name} has no training rows" in log}
    assert after - not_sent <= stored, (after - not_sent - stored, client.output())
