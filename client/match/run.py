"""Match games between two networks, with the gating settings of the paper's Appendix D: komi fixed,
no handicap, a full search from the first move with the tree kept between moves, no noise and no
forced playouts, moves drawn from the visits at a temperature from 0.5 down to 0.2, and resignation
when both sides agree: the searching player's win rate for the losing side stayed below the
threshold on each of the last few turns (:mod:`common.resignation`). Each move's comment is its
search note (visits, win rate, score), from which the server checks a resignation.

Each network has its own :class:`BatchedSearch` over the same G games; a game searches in the engine
of the network to move, so every step makes one batch per network. Colours alternate: game k has
the first network as black when k is even. Every game is written as an SGF; the summary counts wins
per network and colour and estimates the Elo difference.
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from client.search.engine import BatchedSearch
from client.search.targets import choose_move, gumbel_move, play_values
from client.stop import Stop
from common.data.selfplay_sgf import SearchNote, read_note_winrate
from common.elo import score_elo
from common.files import atomic_write
from common.go.game import Game
from common.go.geometry import BLACK, WHITE
from common.go.sgf import GameRecord as SgfRecord
from common.resignation import resigning
from common.settings import MatchSettings, SearchSettings


@dataclass
class MatchSummary:
    names: tuple[str, str]
    games: int = 0
    wins: list[int] = field(default_factory=lambda: [0, 0])  # per network
    wins_as_black: list[int] = field(default_factory=lambda: [0, 0])
    draws: int = 0  # draws and games without result
    resignations: int = 0
    moves: int = 0
    seconds: float = 0.0
    indices: list[int] = field(default_factory=list)  # the games counted, by index, in finishing order

    @property
    def score(self) -> float:
        """The first network's points: wins plus half the draws, over games."""
        return (self.wins[0] + 0.5 * self.draws) / self.games if self.games else 0.5

    def elo(self) -> tuple[float, float]:
        """The first network's Elo difference and a 95% interval half-width (normal approximation of
        the score; infinite when one side won everything)."""
        return score_elo(self.score, self.games)

    def lines(self) -> list[str]:
        a, b = self.names
        elo, half = self.elo()
        return [
            f"{a} vs {b}: {self.wins[0]}-{self.wins[1]}"
            + (f" ({self.draws} drawn or void)" if self.draws else "")
            + f" in {self.games} games, score {100 * self.score:.1f}%",
            f"Elo difference {elo:+.0f} +- {half:.0f} (95%)",
            f"as black: {a} won {self.wins_as_black[0]}, {b} won {self.wins_as_black[1]}; "
            f"{self.resignations} resignations, {self.moves} moves in {self.seconds:.1f} s",
        ]

    @classmethod
    def from_dict(cls, data: dict) -> MatchSummary:
        """The summary :meth:`to_dict` gave (its derived figures are computed again)."""
        return cls(
            names=tuple(data["names"]),
            games=data["games"],
            wins=list(data["wins"]),
            wins_as_black=list(data["wins_as_black"]),
            draws=data["draws_or_void"],
            resignations=data["resignations"],
            moves=data["moves"],
            seconds=data["seconds"],
            indices=list(data["indices"]),
        )

    def to_dict(self) -> dict:
        elo, half = self.elo()
        return {
            "names": list(self.names),
            "games": self.games,
            "wins": self.wins,
            "wins_as_black": self.wins_as_black,
            "draws_or_void": self.draws,
            "resignations": self.resignations,
            "score": self.score,
            "elo": elo,
            "elo_95": half,
            "moves": self.moves,
            "seconds": self.seconds,
            "indices": self.indices,
        }


@dataclass
class _MatchGame:
    index: int
    game: Game
    black: int  # which network plays black (0 or 1)
    rng: np.random.Generator
    searched: list[list[tuple[int, int]] | None] = field(default_factory=lambda: [None, None])
    notes: list[SearchNote] = field(default_factory=list)  # each move's search, in order
    winrates: list[tuple[int, float]] = field(default_factory=list)  # (the player who moved, its noted win rate)
    resigned: int = 0  # the colour that resigned

    def network_to_move(self) -> int:
        return self.black if self.game.to_move == BLACK else 1 - self.black


def run_match(
    evaluators,
    names: tuple[str, str],
    settings: MatchSettings,
    games: int,
    parallel: int,
    out_dir: str | Path | None,
    seed: int = 0,
    leaves_per_game: int = 1,
    name: str | None = None,
    on_game=None,
    stop: Stop | None = None,
    more=None,
    paused=None,
    searches: tuple[SearchSettings, SearchSettings] | None = None,
    played: MatchSummary | None = None,
) -> MatchSummary:
    """Play `games` games, `parallel` at a time. Game k is named ``<name>-<k>`` (name: ``match-<seed>``);
    each finished game's SGF goes to out_dir (when given) as ``<game name>.sgf``, with the summary as
    ``<name>-summary.json``, and to ``on_game(game_name, sgf_bytes)``. A set `stop` ends the match at
    once (unfinished games are dropped); while ``more()`` is false no new game starts; while
    ``paused()`` is true no step is taken. ``searches`` gives each network search settings of its
    own (default: both the settings' ``search``), to measure a search method against another.
    ``played`` continues a match that was stopped: the summary of the games it finished (as it stood
    at the last ``on_game``); the match plays the games not in its ``indices`` and counts on into it."""
    if games < 1 or parallel < 1:
        raise ValueError("games and parallel must be at least 1")
    if played is not None and (
        played.names != tuple(names)
        or len(set(played.indices)) != played.games
        or not set(played.indices) <= set(range(games))
    ):
        raise ValueError(f"played: a summary of {played.games} games of {played.names} cannot continue this match")
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    name = name or f"match-{seed}"
    stop = stop if stop is not None else threading.Event()
    summary = played if played is not None else MatchSummary(names=names)
    counted = set(summary.indices)
    todo = [k for k in range(games) if k not in counted]  # the games to play, in order
    started, spent = 0, summary.seconds
    if not todo:
        return summary
    parallel = min(parallel, len(todo))
    engines = [
        BatchedSearch(ev, parallel, settings.visits, leaves_per_game, seed=seed + k, history=settings.max_moves + 8)
        for k, ev in enumerate(evaluators)
    ]
    side_search = searches if searches is not None else (settings.search, settings.search)
    for k, search in enumerate(side_search):
        search.validate(f"searches[{k}]")
    slots: list[_MatchGame | None] = [None] * parallel
    t0 = time.perf_counter()

    def new_game() -> _MatchGame:
        nonlocal started
        index = todo[started]
        started += 1
        rng = np.random.default_rng([seed, index])
        weights = np.asarray(settings.board_size_weights, dtype=np.float64)
        size = int(settings.board_sizes[int(rng.choice(len(weights), p=weights / weights.sum()))])
        game = Game(size, rules=settings.rules.draw(rng), komi=settings.komi, capacity=settings.max_moves + 8)
        return _MatchGame(index, game, index % 2, rng)

    def launch(i: int) -> None:
        while True:
            m = slots[i]
            if m is None:
                return
            if m.game.is_over or m.resigned:
                finish(m)
                slots[i] = new_game() if started < len(todo) and (more is None or more()) else None
                continue
            k = m.network_to_move()
            engine = engines[k]
            reuse = engine.follow(i, m.game, m.searched[k])
            m.searched[k] = m.game.move_list
            engine.start(i, m.game, settings.visits, side_search[k], full=True, reuse=reuse)
            if engine.is_searching(i):
                return
            play(i, m, engine)

    def play(i: int, m: _MatchGame, engine: BatchedSearch) -> None:
        result = engine.result(i)
        game = m.game
        temperature = settings.move_temperature_at(game.num_moves, math.sqrt(game.x_size * game.y_size))
        search = side_search[m.network_to_move()]
        if search.gumbel:  # its draws, not a temperature, vary its moves
            move = int(result.moves[gumbel_move(result, search)])
        else:
            move = int(result.moves[choose_move(play_values(result, search), temperature, m.rng)])
        # The win rate as the record notes it: resignation is decided on what the server can check.
        note = SearchNote(True, result.root_visits, 0.5 * (1.0 + result.root_winloss), result.root_score)
        m.notes.append(note)
        m.winrates.append((game.to_move, read_note_winrate(note)))
        game.play(move)
        if not game.is_over and settings.end_when_all_pass_alive:
            game.end_if_all_pass_alive()
        if not game.is_over:
            m.resigned = resigning(m.winrates, settings.resign_threshold, settings.resign_consecutive_turns) or 0
        if not game.is_over and not m.resigned and game.num_moves >= settings.max_moves:
            game.end_without_result()

    def finish(m: _MatchGame) -> None:
        game = m.game
        if m.resigned:
            game.resign(m.resigned)
            summary.resignations += 1
        res = game.result
        summary.games += 1
        summary.indices.append(m.index)
        summary.moves += game.num_moves
        if res is None or res.no_result or res.winner not in (BLACK, WHITE):
            summary.draws += 1
        else:
            winner = m.black if res.winner == BLACK else 1 - m.black
            summary.wins[winner] += 1
            if res.winner == BLACK:
                summary.wins_as_black[winner] += 1
        black, white = (names[0], names[1]) if m.black == 0 else (names[1], names[0])
        game_name = f"{name}-{m.index:05d}"
        record = SgfRecord.from_game(game, black_player=black, white_player=white, game_name=game_name)
        record.nodes[0].comment = json.dumps({"settings": settings.to_dict()}, sort_keys=True)
        for node, note in zip(record.nodes[1:], m.notes, strict=True):
            node.comment = note.text()
        sgf = record.to_sgf().encode()
        summary.seconds = spent + time.perf_counter() - t0
        if out is not None:
            atomic_write(out / f"{game_name}.sgf", sgf)
        if on_game is not None:
            on_game(game_name, sgf)

    for i in range(parallel):
        if more is not None and not more():
            break
        slots[i] = new_game()
        launch(i)
    while any(e.n_searching for e in engines) and not stop.is_set():
        if paused is not None and paused():
            stop.wait(0.2)
            continue
        for engine in engines:
            if not engine.n_searching:
                continue
            for i in engine.step():
                m = slots[int(i)]
                if m is not None:  # a slot searching holds a game
                    play(int(i), m, engine)
                launch(int(i))
    summary.seconds = spent + time.perf_counter() - t0
    if out is not None:
        atomic_write(out / f"{name}-summary.json", json.dumps(summary.to_dict(), indent=1).encode())
    return summary
