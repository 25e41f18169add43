"""The volunteer's options, with the real client against the real server under gunicorn: a number
of games, self-play only, a proxy for every request, a copy of every SGF and the watch file, all
given as a volunteer may give them (the settings file, the environment and flags), and a GPU's
limits that say once they cannot act on the CPU; and the games in play saved to disk, played on
after a kill."""

from __future__ import annotations

import json
import re

import pytest

from common.go.sgf import read_sgf
from tests.e2e.contributor import Contributor, rating_often, until, upload_network
from tests.proxy import ForwardProxy
from tests.server import helpers

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

GAMES = 5


@pytest.fixture
def proxy():
    p = ForwardProxy()
    yield p
    p.close()


def test_a_number_of_self_play_games_through_a_proxy_with_copies_and_a_watch_file(
    server, volunteer, contributors, proxy, tmp_path
):
    from server.games.models import RatingGame, TrainingGame

    upload_network(server.url, tmp_path, "test-net1", helpers.RANDOM_NET)
    rating_often()  # every task may be a rating one: --only selfplay must still get self-play alone
    home = tmp_path / "alice"
    home.mkdir()
    copies, watch = tmp_path / "copies", tmp_path / "watching" / "game.txt"
    (home / "client.json").write_text(json.dumps({"games": GAMES, "sgf_dir": str(copies)}))
    flags = ("--proxy", proxy.url, "--watch-file", str(watch), "--max-temperature", "80", "--pause-when-busy")
    client = Contributor(home, server.url, True, *flags, environ={"SENTE_ONLY": "selfplay"})
    contributors.append(client)
    assert client.wait(timeout=300) == 0, client.output()  # it ends by itself after the games asked for
    assert f"the {GAMES} games asked for (--games) are played" in client.out.read_text()

    # Every game played is kept; those with training rows (a game without a full search has none)
    # are on the server.
    log = (client.data / "contribute.log").read_text()
    # A GPU's limits cannot act on the CPU, and the client says so once.
    assert log.count("--max-temperature and --pause-when-busy cannot act: no NVIDIA GPU is played on") == 1
    without_rows = set(re.findall(r"game (\S+) has no training rows; it is not uploaded", log))
    sent = set(TrainingGame.objects.values_list("client_game_id", flat=True))
    assert len(sent) + len(without_rows) == GAMES and RatingGame.objects.count() == 0
    kept = sorted(copies.glob("*.sgf"))
    assert {p.stem for p in kept} == sent | without_rows
    for path in kept:
        assert read_sgf(path.read_bytes()).black_player == "test-net1"
    assert re.match(r"game \S+, network test-net1, move \d+\n", watch.read_text())
    # Every request went through the proxy: the login, the tasks, the network and the uploads.
    seen = {(method, url.split("?")[0].removeprefix(server.url)) for method, url in proxy.seen}
    assert ("POST", "/api/v1/auth/token/") in seen and ("POST", "/api/v1/tasks/") in seen
    assert ("GET", "/api/v1/networks/test-net1/file") in seen
    assert sum(method == "POST" and "/games/" in url for method, url in seen) >= 1
    assert all(url.startswith(server.url) for _, url in proxy.seen)


def test_games_in_play_outlive_a_kill_and_are_played_on_at_the_next_start(server, volunteer, contributors, tmp_path):
    """kill -9 of the client and its workers mid-game (as a power cut): the games in play were saved
    every half second; the next start plays them on, and the server takes them."""
    from server.games.models import TrainingGame

    upload_network(server.url, tmp_path, "test-net1", helpers.RANDOM_NET)
    home = tmp_path / "alice"
    client = Contributor(home, server.url, True, "--checkpoint-seconds", "0.5", "--only", "selfplay")
    contributors.append(client)
    inplay = client.data / "inplay"
    until(lambda: len(list(inplay.glob("0/*.ckpt"))) >= 2, 240, "games in play saved", client)
    client.kill()
    saved = {p.stem for p in inplay.glob("0/*.ckpt")}  # the games in play at the kill (others finished since)
    assert saved
    before = set(TrainingGame.objects.values_list("client_game_id", flat=True))
    assert not saved & before

    again = Contributor(home, None, False, "--only", "selfplay")
    contributors.append(again)
    until(
        lambda: saved <= set(TrainingGame.objects.values_list("client_game_id", flat=True)),
        300,
        "the saved games on the server",
        again,
    )
    assert again.stop() == 0, again.output()
    log = (again.data / "contribute.log").read_text()
    assert f"{len(saved)} games in play when the client last ended are played on" in log
    assert sum(f"game {game_id}: played on from move" in log for game_id in saved) == len(saved)
    assert not list(inplay.rglob("*.ckpt"))  # every saved game finished, and no other is in play
