"""The learning experiment's curve: the run's self-play network at checkpoints against GNU Go.

A checkpoint every ``every`` minutes of the run (up to its last minute) and one at its end; at each,
the network the run was playing then (the generation accepted last before it, from its ACCEPTED
event, minutes counted from the run's creation) plays GNU Go at each level and each number of
visits per move. The games are played after the run, ``jobs`` matches at once, through ``python -m
client twogtp`` (the ablation's rating, ``server.platform.ablation_rating.play``): Chinese rules,
colours alternating, each pair of games from its own random opening moves, the dead stones of a
game ended by two passes judged by GNU Go as referee (``server.ratings.matches.gnugo_referee``).
A network that is the checkpoint's of several plays each level and visits once, with the most games
any of them asks for, and each of those checkpoints reports that result.

The games at the run's match visits are stored as the run's games against GNU Go's anchors
(``server.ratings.anchors``), so that a refit places GNU Go's levels on the run's Elo scale and the
dashboard's Elo chart draws them.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common.elo import wilson_interval

LAST_MINUTE = 1.0  # a checkpoint in the run's last minute is the end's


@dataclass(frozen=True)
class Checkpoint:
    minutes: float  # since the run began
    network: str  # the generation the run was playing then
    end: bool = False  # the end of the run


@dataclass(frozen=True)
class Setting:
    """What one checkpoint's network plays: GNU Go at a level, at so many visits per move."""

    level: int
    visits: int


@dataclass(frozen=True)
class Played:
    games: int
    wins: int
    draws: int  # drawn or without result


def checkpoints(generations: list, every: float, end: float) -> list[Checkpoint]:
    """The checkpoints of a run that lasted ``end`` minutes, given its generations (each with a
    ``name`` and ``minutes``, when it was accepted; None for the random network, the start): one at
    every ``every`` minutes up to the run's last minute, each with the generation accepted last
    before it, and the end of the run with the generation accepted last of all."""
    if not every > 0:
        raise ValueError(f"checkpoints every {every} minutes: must be positive")
    if not generations:
        raise ValueError("the run has no generation, not even its random network")

    def by(t: float) -> str:
        best = None
        for g in generations:
            when = -math.inf if g.minutes is None else g.minutes
            if when <= t and (best is None or when >= best[0]):
                best = (when, g.name)
        return best[1] if best else generations[0].name

    result = []
    k = 1
    while k * every <= end - LAST_MINUTE:
        result.append(Checkpoint(k * every, by(k * every)))
        k += 1
    result.append(Checkpoint(end, by(math.inf), end=True))
    return result


def plan(
    points: list[Checkpoint], settings: list[Setting], games: int, end_games: int
) -> dict[tuple[str, Setting], int]:
    """The matches to play: each (network, setting) once, with the most games any checkpoint of
    that network asks for (``games``; ``end_games`` at the end of the run)."""
    todo: dict[tuple[str, Setting], int] = {}
    for point in points:
        wanted = end_games if point.end else games
        for setting in settings:
            key = (point.network, setting)
            todo[key] = max(todo.get(key, 0), wanted)
    return todo


def rows(points: list[Checkpoint], settings: list[Setting], results: dict[tuple[str, Setting], Played]) -> list[dict]:
    """The curve, as the report keeps it: one row per checkpoint and setting, with the win rate's
    95% Wilson interval."""
    curve = []
    for point in points:
        for setting in settings:
            played = results[(point.network, setting)]
            low, high = wilson_interval(played.wins, played.games)
            curve.append(
                {
                    "minutes": round(point.minutes, 2),
                    "network": point.network,
                    "opponent": f"GNU Go level {setting.level}",
                    "level": setting.level,
                    "visits": setting.visits,
                    "games": played.games,
                    "wins": played.wins,
                    "draws": played.draws,
                    "win_rate": played.wins / played.games if played.games else 0.0,
                    "low": low,
                    "high": high,
                    "end": point.end,
                }
            )
    return curve


def reached_half(curve: list[dict], level: int, visits: int) -> float | None:
    """The minutes of the first checkpoint whose network won at least half its games against GNU
    Go at ``level`` at ``visits`` (None: none did)."""
    for row in curve:
        if row["level"] == level and row["visits"] == visits and row["games"] and row["win_rate"] >= 0.5:
            return row["minutes"]
    return None


def play(
    run,
    todo: dict[tuple[str, Setting], int],
    known: dict[tuple[str, Setting], Played],
    board: int,
    komi: float,
    folder: Path,
    jobs: int,
    progress: Callable[[str], None],
) -> dict[tuple[str, Setting], Played]:
    """Play the matches of ``todo`` that ``known`` does not hold with as many games, ``jobs`` at a
    time (each one's games and engine output in ``folder/logs``); every result."""
    from server.platform import ablation_rating as rating
    from server.ratings.matches import copy_network_file, gtp_command

    results = {key: known[key] for key in todo if key in known and known[key].games >= todo[key]}
    missing = {key: games for key, games in todo.items() if key not in results}
    if not missing:
        return results
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "games.json"
    record.unlink(missing_ok=True)  # the results of this run's networks only
    games = rating.Games(record)
    networks = {n.name: n for n in run.networks.filter(name__in={name for name, _ in missing})}
    with tempfile.TemporaryDirectory() as tmp:
        models = {
            name: Path("random") if network.is_random else copy_network_file(network, Path(tmp))
            for name, network in networks.items()
        }
        for visits in sorted({setting.visits for _, setting in missing}):
            pairings = []
            for (name, setting), count in missing.items():
                if setting.visits != visits:
                    continue
                gnugo = rating.gnugo(setting.level)
                if gnugo is None:
                    raise RuntimeError("GNU Go is not installed (Debian package gnugo)")
                pairings.append(
                    rating.Pairing(
                        rating.Player(f"{name}@{visits}", name, gtp_command(models[name], visits)), gnugo, count
                    )
                )
            rating.play(
                pairings,
                games,
                board,
                komi,
                visits,
                folder / "logs",
                jobs,
                progress,
                lambda: False,
                what=f"curve at {visits} visits",
            )
            for pairing, result in zip(pairings, games.of(pairings), strict=True):
                name = pairing.first.label
                level = int(pairing.second.key.removeprefix("gnugo-"))
                results[(name, Setting(level, visits))] = Played(result.games, result.first_wins, result.draws)
    return results


def record_anchors(run, results: dict[tuple[str, Setting], Played], visits: int, board: int, komi: float) -> int:
    """Store the games at ``visits`` as the run's games against GNU Go's anchors; how many."""
    from server.ratings.anchors import gnugo_anchor
    from server.ratings.models import AnchorMatch

    networks = {n.name: n for n in run.networks.filter(name__in={name for name, _ in results})}
    stored = 0
    for (name, setting), played in sorted(results.items(), key=lambda item: (item[0][0], item[0][1].level)):
        if setting.visits != visits or not played.games:
            continue
        AnchorMatch.objects.create(
            run=run,
            network=networks[name],
            anchor=gnugo_anchor(setting.level),
            games=played.games,
            wins=played.wins,
            draws=played.draws,
            board_size=board,
            komi=komi,
            visits=visits,
        )
        stored += played.games
    return stored
