"""The volunteer's options, with the real client against the real server under gunicorn: a number
of games, self-play only, a proxy for every request, a copy of every SGF and the watch file, all
given as a volunteer may give them (the settings file, the environment and flags)."""

from __future__ import annotations

import json
import re

import pytest

from common.go.sgf import read_sgf
from tests.e2e.contributor import Contributor, rating_often, upload_network
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
    flags = ("--proxy", proxy.url, "--watch-file", str(watch))
    client = Contributor(home, server.url, True, *flags, environ={"SENTE_ONLY": "selfplay"})
    contributors.append(client)
    assert client.wait(timeout=300) == 0, client.output()  # it ends by itself after the games asked for
    assert f"the {GAMES} games asked for (--games) are played" in client.out.read_text()

    games = list(TrainingGame.objects.all())
    assert len(games) == GAMES and RatingGame.objects.count() == 0
    kept = sorted(copies.glob("*.sgf"))
    assert sorted(p.stem for p in kept) == sorted(g.client_game_id for g in games)
    for path in kept:
        assert read_sgf(path.read_bytes()).black_player == "test-net1"
    assert re.match(r"game \S+, network test-net1, move \d+\n", watch.read_text())
    # Every request went through the proxy: the login, the tasks, the network and the uploads.
    seen = {(method, url.split("?")[0].removeprefix(server.url)) for method, url in proxy.seen}
    assert ("POST", "/api/v1/auth/token/") in seen and ("POST", "/api/v1/tasks/") in seen
    assert ("GET", "/api/v1/networks/test-net1/file") in seen
    assert sum(method == "POST" and "/games/" in url for method, url in seen) >= 1
    assert all(url.startswith(server.url) for _, url in proxy.seen)
