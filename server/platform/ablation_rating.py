"""The ablation's ratings: the arms' generations against fixed anchors, in one Bradley-Terry fit.

The players: the uniform random player (held at 0 Elo), GNU Go at its levels (when installed), and
the networks rated: from each repetition of each arm, the generation accepted last before each of
``points`` evenly spaced shares of its CPU time, and its final network (its newest, even one its
gating had not decided when the time ran out). The final network of the full arm's first repetition
is the reference that every other rated network also plays; the other final networks may also play
each other (``round_robin``), so that the repetitions are tied to each other and not through the
reference alone. Every game goes through ``python -m client twogtp``, Chinese rules, the board's fair
komi, each pair of games (colours swapped) from its own random opening moves; a network plays with
its arm's rating search at the given visits. Both engines are seeded, so a pairing's games are
repeatable: a further round of a pairing (``narrowing``) plays other openings.

Each pairing's result is kept in ``games.json`` as it finishes, so that a stopped rating goes on
from the pairings it has. The fit is the ratings' (``server.ratings.fit``) with one virtual draw in
every pairing, a weak prior that keeps a clean sweep (a trained network against the uniform random
player) finite; the intervals come from the fit's full covariance, a difference between the means
of several networks (an arm's repetitions against the full arm's) as well as between two.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from common.elo import Z95
from common.files import atomic_write
from server.ratings.fit import fit_ratings
from server.ratings.matches import gnugo_command, gnugo_referee, gtp_command, twogtp

UNIFORM = "uniform"
VIRTUAL_DRAWS = 1.0
OPENINGS = 2
NARROWING_ROUNDS = 4  # further rounds at most for an arm whose interval is wider than asked


@dataclass(frozen=True)
class Player:
    key: str  # "uniform", "gnugo-L" or "ARM/NETWORK"
    label: str
    command: str | None  # GTP command line; None: the uniform random player
    # the GTP command line of the referee of its games (matches.gnugo_referee); None: the rules alone
    referee: str | None = None


def gnugo(level: int) -> Player | None:
    command = gnugo_command(level)
    if command is None:
        return None
    return Player(f"gnugo-{level}", f"GNU Go level {level}", command, gnugo_referee())


def network_player(arm: str, name: str, model: Path, visits: int, settings: Path) -> Player:
    return Player(f"{arm}/{name}", f"{arm}: {name}", gtp_command(model, visits, settings))


@dataclass(frozen=True)
class Pairing:
    first: Player
    second: Player
    games: int
    round: int = 1  # the seed of its openings: a further round of two players' games plays others

    @property
    def key(self) -> str:
        key = f"{self.first.key} vs {self.second.key}"
        return key if self.round == 1 else f"{key} (round {self.round})"

    @property
    def referee(self) -> str | None:
        return self.first.referee or self.second.referee


@dataclass(frozen=True)
class Result:
    first: str
    second: str
    games: int
    first_wins: int
    second_wins: int
    draws: int  # drawn or without result: half a point each


class Games:
    """The pairings' results, kept in a JSON file as each finishes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.results: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}

    def done(self, pairing: Pairing, visits: int) -> bool:
        r = self.results.get(pairing.key)
        return (
            r is not None
            and r["games"] == pairing.games
            and r.get("visits") == visits
            and r.get("referee") == pairing.referee  # a result counted otherwise is played again
        )

    def add(self, pairing: Pairing, visits: int, summary: dict) -> None:
        with self.lock:
            self.results[pairing.key] = {
                "first": pairing.first.key,
                "second": pairing.second.key,
                "games": pairing.games,
                "visits": visits,
                "referee": pairing.referee,
                "first_wins": summary["wins"][0],
                "second_wins": summary["wins"][1],
                "draws": summary["draws"] + summary["no_result"],
            }
            atomic_write(self.path, json.dumps(self.results, indent=1).encode())

    def of(self, pairings: list[Pairing]) -> list[Result]:
        """The results of ``pairings`` that were played."""
        return [
            Result(r["first"], r["second"], r["games"], r["first_wins"], r["second_wins"], r["draws"])
            for r in (self.results.get(p.key) for p in pairings)
            if r is not None
        ]


def round_robin(finals: list[Player], reference: Player | None, games: int) -> list[Pairing]:
    """``games`` games between every two of ``finals`` (the repetitions' final networks), but the
    reference's, which plays every rated network already; none when ``games`` is 0."""
    others = [p for p in finals if p != reference]
    if games < 1:
        return []
    return [Pairing(a, b, games) for k, a in enumerate(others) for b in others[k + 1 :]]


def narrow(
    fit: Fit,
    arms: dict[str, list[Player]],
    full: list[Player],
    interval: float,
    games: int,
    play_round: Callable[[list[Pairing], int], Fit | None],
) -> tuple[Fit | None, list[Pairing]]:
    """Further rounds for the arms (by name, each its final networks) whose 95% interval against the
    full arm's final networks ``full`` in ``fit`` is wider than ± ``interval``: ``games`` games
    between each of their finals and each of the full arm's, from openings no earlier round played.
    These games measure the difference asked about directly; the anchors' and the other arms' games
    reach it only through the fit. ``play_round(pairings, round)`` plays a round and returns the fit
    with its games, or None when stopped. The rounds stop once every arm is within ± ``interval`` or
    after ``NARROWING_ROUNDS``: on the intervals' widths, never on the differences themselves.
    Returns the last fit (None: stopped) and the pairings the rounds played."""
    played: list[Pairing] = []
    theirs = [p.key for p in full]
    for round_ in range(2, 2 + NARROWING_ROUNDS):
        wide = [
            finals
            for finals in arms.values()
            if finals and not fit.difference([p.key for p in finals], theirs)[1] <= interval
        ]
        if not wide or not full or games < 1:
            break
        more = [Pairing(a, f, games, round_) for finals in wide for a in finals for f in full if a != f]
        refit = play_round(more, round_)
        if refit is None:
            return None, played
        fit = refit
        played += more
    return fit, played


def play(
    pairings: list[Pairing],
    games: Games,
    board: int,
    komi: float,
    visits: int,
    logs: Path,
    jobs: int,
    progress: Callable[[str], None],
    stopping: Callable[[], bool],
    what: str = "rating",
) -> None:
    """Play the pairings ``games`` has not finished, ``jobs`` at a time (``what``: the progress lines'
    prefix)."""
    todo = [p for p in pairings if not games.done(p, visits)]
    if not todo:
        return
    progress(f"{what}: {len(todo)} pairings to play ({sum(p.games for p in todo):,} games), {jobs} at a time")
    logs.mkdir(parents=True, exist_ok=True)
    finished = [0]

    def one(pairing: Pairing) -> None:
        if stopping():
            return
        log = logs / (pairing.key.replace("/", "_").replace(" ", "_") + ".log")
        summary = twogtp(
            (pairing.first.command or "", pairing.first.label),
            (pairing.second.command, pairing.second.label),
            board,
            komi,
            pairing.games,
            OPENINGS,
            log,
            referee=pairing.referee,
            seed=pairing.round,
        )
        games.add(pairing, visits, summary)
        finished[0] += 1
        progress(
            f"{what}: {pairing.first.label} against {pairing.second.label}: {summary['wins'][0]}-"
            f"{summary['wins'][1]} ({finished[0]} of {len(todo)})"
        )

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(one, p) for p in todo]:
            future.result()


@dataclass(frozen=True)
class Fit:
    """Each player's Elo (the uniform random player 0) and its 95% interval; ``against`` the
    difference to the reference with its 95% interval; ``cov`` the Elo's full covariance, in the
    order of ``players``."""

    elo: dict[str, float]
    ci95: dict[str, float]
    against: dict[str, tuple[float, float]]
    games: dict[str, int]
    iterations: int
    players: tuple[str, ...] = ()
    cov: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def difference(self, these: list[str], those: list[str]) -> tuple[float, float]:
        """The mean Elo of the players ``these`` minus the mean Elo of ``those`` (none: the uniform
        random player's 0), and the half-width of its 95% interval: Z95 times the square root of
        w^T cov w, w the weights that make the difference (1/len(these) on each of these, minus
        1/len(those) on each of those), so that the covariances of the networks that played each
        other and the same anchors count. NaN and infinite when one of them could not be rated."""
        index = {key: i for i, key in enumerate(self.players)}
        w = np.zeros(len(self.players))
        for group, sign in ((these, 1.0), (those, -1.0)):
            for key in group:
                w[index[key]] += sign / len(group)
        used = [key for key in self.players if w[index[key]] != 0.0]
        if any(not math.isfinite(self.elo[key]) for key in used):
            return math.nan, math.inf
        value = sum(w[index[key]] * self.elo[key] for key in used)
        return float(value), float(Z95 * math.sqrt(max(float(w @ self.cov @ w), 0.0)))


def fit(players: list[str], results: list[Result], reference: str | None) -> Fit:
    """One Bradley-Terry fit of ``results`` among ``players`` (their keys; the first, the uniform
    random player, held at 0)."""
    index = {key: i for i, key in enumerate(players)}
    first = np.array([index[r.first] for r in results], dtype=np.int64)
    second = np.array([index[r.second] for r in results], dtype=np.int64)
    counts = np.array([r.games for r in results], dtype=np.float64)
    score = np.array([(r.first_wins + 0.5 * r.draws) / r.games if r.games else 0.5 for r in results], dtype=np.float64)
    ties = (first, second, np.full(first.size, VIRTUAL_DRAWS))
    ratings = fit_ratings(len(players), first, second, score, counts=counts, anchor=0, ties=ties)
    out = Fit(
        elo={key: float(ratings.elo[i]) for key, i in index.items()},
        ci95={key: float(Z95 * ratings.se[i]) for key, i in index.items()},
        against={},
        games={key: int(ratings.games[i]) for key, i in index.items()},
        iterations=ratings.iterations,
        players=tuple(players),
        cov=ratings.cov,
    )
    if reference is not None:
        out.against.update({key: out.difference([key], [reference]) for key in players})
    return out


def pick_points(generations: list[dict], points: int, end: float) -> list[dict]:
    """The generations rated of an arm (each with ``cpu_seconds``, in order): for each of ``points``
    evenly spaced shares of the arm's CPU time ``end``, the newest accepted by then (the last share
    takes the arm's final network)."""
    accepted = [g for g in generations if not g["random"]]
    if not accepted or points < 1:
        return []
    end = max(end, accepted[-1]["cpu_seconds"])
    chosen: list[dict] = []
    for k in range(1, points + 1):
        by_then = [g for g in accepted if g["cpu_seconds"] <= end * k / points + 1e-9]
        if by_then and by_then[-1] not in chosen:
            chosen.append(by_then[-1])
    return chosen
