"""Anchors: GNU Go at fixed levels rated with the networks in the run's fit, checked against known
synthetic results, and shown as lines on the Elo chart and as distances on the networks' pages."""

from __future__ import annotations

import math

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from tests.server import helpers
from tests.server.test_promotion import _games

pytestmark = pytest.mark.django_db


def _match(run, network, level: int, wins: int, games: int, draws: int = 0):
    from server.ratings.anchors import gnugo_anchor
    from server.ratings.models import AnchorMatch

    return AnchorMatch.objects.create(
        run=run,
        network=network,
        anchor=gnugo_anchor(level),
        games=games,
        wins=wins,
        draws=draws,
        board_size=9,
        komi=7.0,
        visits=200,
    )


def _network(run, name: str, parent):
    from server.networks.models import Network

    return Network.objects.create(
        name=name,
        run=run,
        parent=parent,
        state=Network.State.ACCEPTED,
        file=f"networks/{name.encode().hex():0<64}.safetensors",
        sha256=f"{name.encode().hex():0<64}",
    )


def test_anchors_are_fitted_from_known_results(run, alice):
    """3 wins in 4 put the anchor 400 log10(3) = 191 Elo below the network, 1 in 4 as far above;
    the network's own rating games count as they did."""
    from server.ratings.models import AnchorRating, Rating
    from server.ratings.services import refit

    user, _ = alice
    random_net = run.networks.get(is_random=True)
    net = _network(run, "net-1", random_net)
    _games(run, user, net, random_net, "BW" * 30 + "B" * 20)  # 50 of 80 against the random network
    _match(run, net, 1, wins=3000, games=4000)
    _match(run, net, 10, wins=1000, games=4000)
    _match(run, random_net, 0, wins=0, games=50)  # the random network loses every game
    refit(run)
    rated = Rating.objects.get(network=net)
    assert rated.games == 80  # its rating games only, not the anchors'
    anchors = {a.anchor.level: a for a in AnchorRating.objects.filter(run=run).select_related("anchor")}
    gap = 400 * math.log10(3)
    assert anchors[1].elo == pytest.approx(rated.elo - gap, abs=4)
    assert anchors[10].elo == pytest.approx(rated.elo + gap, abs=4)
    assert anchors[1].games == 4000 and anchors[0].games == 50
    # its error is mostly the network's (80 games against the random network at 0), little its own (4000)
    assert rated.elo_se < anchors[10].elo_se < rated.elo_se + 5
    assert math.isfinite(anchors[0].elo) and anchors[0].elo > 300  # won 50 of 50: far above, yet finite
    data = Client().get("/elo/data.json").json()
    assert [a["name"] for a in data["anchors"]] == ["GNU Go level 1", "GNU Go level 10", "GNU Go level 0"]
    assert data["anchors"][0]["elo"] == pytest.approx(round(anchors[1].elo, 1))
    page = Client().get("/networks/net-1/").content.decode()
    assert f"{gap:.0f} ± " in page and "Elo above GNU Go level 1" in page and "Elo below GNU Go level 10" in page


def test_a_release_says_how_far_it_is_from_the_anchors(run, alice):
    from server.networks.models import Network
    from server.ratings.services import refit

    user, _ = alice
    random_net = run.networks.get(is_random=True)
    net = _network(run, "net-1", random_net)
    Network.objects.filter(pk=net.pk).update(released=True)
    _games(run, user, net, random_net, "BW" * 10)
    _match(run, net, 5, wins=50, games=100)
    refit(run)
    page = Client().get("/releases/").content.decode()
    assert "Elo above GNU Go level 5" in page or "Elo below GNU Go level 5" in page


def test_which_networks_still_have_games_to_play(run):
    from server.networks.models import Network
    from server.ratings.anchors import gnugo_anchor, to_play

    random_net = run.networks.get(is_random=True)
    old = _network(run, "old", random_net)
    new = _network(run, "new", old)
    Network.objects.create(name="cand", run=run, parent=new)  # a candidate: not played
    anchor = gnugo_anchor(5)
    assert [n.name for n in to_play(run, anchor, games=10)] == ["new", "old"]
    assert [n.name for n in to_play(run, anchor, games=10, newest=1)] == ["new"]
    _match(run, old, 5, wins=4, games=10)
    _match(run, new, 5, wins=2, games=6)
    assert [n.name for n in to_play(run, anchor, games=10)] == ["new"]
    with pytest.raises(ValueError, match="expected 0 to 10"):
        gnugo_anchor(11)


def test_the_command_refuses_bad_levels(run, monkeypatch):
    from server.ratings import matches

    monkeypatch.setattr(matches, "gnugo_path", lambda: "/usr/games/gnugo")
    with pytest.raises(CommandError, match="--levels '1,x'"):
        call_command("anchor", "--levels", "1,x")
    with pytest.raises(CommandError, match="no run named 'nope'"):
        call_command("anchor", "--run", "nope")
    assert run.name == helpers.RUN
