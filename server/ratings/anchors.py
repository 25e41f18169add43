"""Anchors: fixed players whose strength means something to people, GNU Go at chosen levels, played
by a run's accepted networks on the server's machine (``manage.py anchor``) and rated with the
networks in the run's fit (``server.ratings.services``), so that the Elo chart shows "GNU Go level
10" as a line and each network its distance to it.

The games: the network's search over GTP (``python -m client gtp``, on this machine's CPU or GPU)
against GNU Go through ``python -m client twogtp``, colours alternating, each pair of games from its
own few random opening moves (both engines play the same move in the same position every time),
Chinese rules. One board size for all (9x9 by default: fast, and GNU Go's strength there is known);
the networks' Elo mixes the run's board sizes, so a line is the anchor's strength on that board
measured against the networks' overall rating.
"""

from __future__ import annotations

import logging
from pathlib import Path

from server.networks.models import Network
from server.ratings.matches import play_gnugo
from server.ratings.models import Anchor, AnchorMatch

log = logging.getLogger(__name__)

GNUGO_LEVELS = range(0, 11)  # GNU Go's --level


def gnugo_anchor(level: int) -> Anchor:
    if level not in GNUGO_LEVELS:
        raise ValueError(f"GNU Go level {level}: expected 0 to 10")
    anchor, _ = Anchor.objects.get_or_create(program="gnugo", level=level, defaults={"name": f"GNU Go level {level}"})
    return anchor


def to_play(run, anchor: Anchor, games: int, newest: int | None = None) -> list[Network]:
    """The run's accepted networks (with a file) that have played fewer than ``games`` games against
    the anchor, newest first (``newest``: only the newest so many of them are considered)."""
    accepted = list(
        Network.objects.filter(run=run, state=Network.State.ACCEPTED, is_random=False)
        .exclude(file="")
        .order_by("-created_at", "-id")[: newest or None]
    )
    played: dict[int, int] = {}
    for m in AnchorMatch.objects.filter(run=run, anchor=anchor, network__in=accepted):
        played[m.network_id] = played.get(m.network_id, 0) + m.games
    return [n for n in accepted if played.get(n.pk, 0) < games]


def play(network: Network, anchor: Anchor, games: int, visits: int, size: int, komi: float, log_path: Path):
    """Play and record ``games`` games of the network against the anchor; None (nothing recorded)
    when GNU Go is not installed."""
    if anchor.program != "gnugo":
        raise ValueError(f"anchor {anchor.name}: only GNU Go anchors are played")
    result = play_gnugo(network, size, komi, games, visits, anchor.level, log_path)
    if "skipped" in result:
        return None
    match = AnchorMatch.objects.create(
        run=network.run,
        network=network,
        anchor=anchor,
        games=result["games"],
        wins=result["wins"],
        draws=result["draws"],
        board_size=size,
        komi=komi,
        visits=visits,
    )
    log.info(
        "%s against %s: %d wins, %d draws of %d games", network.name, anchor.name, match.wins, match.draws, match.games
    )
    return match
