"""A hand-made self-play game on a 4x3 board for the row tests: four turns (the last a cheap search),
white wins by 2.5, every optional map given."""

from __future__ import annotations

import numpy as np

from common.data.records import GameRecord, GameResult, NetValues, SearchValues, TurnRecord
from common.data.schema import GAME_MODE_FORK
from common.go.geometry import BLACK, WHITE
from common.go.rules import Rules

X, Y = 4, 3  # a 4-wide, 3-high board: rows must not mix up x and y
AREA = X * Y
KOMI = 1.5
GAME_HASH = 0x0BD82724123373F4E2BD46E14D47D8A6  # the first game of the golden 9x9 self-play file


def pos(x: int, y: int) -> int:
    return y * 19 + x


def spatial_for(stones: dict[int, int], player: int) -> np.ndarray:
    """Input planes 0 (on board), 1 (own stones), 2 (opponent stones) for a position."""
    s = np.zeros((22, 361), dtype=np.float32)
    for y in range(Y):
        for x in range(X):
            s[0, pos(x, y)] = 1
    for p, color in stones.items():
        s[1 if color == player else 2, p] = 1
    return s


def global_for(player: int) -> np.ndarray:
    g = np.zeros(19, dtype=np.float32)
    g[5] = (KOMI if player == WHITE else -KOMI) / 20.0
    g[18] = 0.25
    return g


def target(entries: dict[int, float]) -> np.ndarray:
    t = np.zeros(362)
    for p, v in entries.items():
        t[p] = v
    return t


# Moves: B (0,0), W (1,0), B (0,1), W pass (a cheap search). White wins by 2.5.
MOVES = [(BLACK, pos(0, 0)), (WHITE, pos(1, 0)), (BLACK, pos(0, 1)), (WHITE, 361)]
SEARCH = [
    SearchValues(win=0.45, loss=0.55, no_result=0.0, score=-1.0, lead=-0.8),
    SearchValues(win=0.6, loss=0.4, no_result=0.0, score=1.2),
    SearchValues(win=0.3, loss=0.69, no_result=0.01, score=-2.0, lead=-2.1),
    SearchValues(win=0.8, loss=0.2, no_result=0.0, score=2.4),
]
RAW = [
    NetValues(win=0.5, loss=0.5, score=0.0),
    NetValues(win=0.55, loss=0.45, score=0.7),
    NetValues(win=0.4, loss=0.6, score=-1.1),
    NetValues(win=0.7, loss=0.3, score=1.9),
]
TARGETS = [
    target({pos(0, 0): 60, pos(1, 0): 30, 361: 10}),
    target({pos(1, 0): 5, pos(2, 0): 2.5}),  # max below 10: scaled up to 10
    target({pos(0, 1): 40000, pos(2, 2): 20000}),  # max above 30000: scaled down
    target({361: 7}),
]
STORED_TARGETS = [
    target({pos(0, 0): 60, pos(1, 0): 30, 361: 10}),
    target({pos(1, 0): 10, pos(2, 0): 5}),
    target({pos(0, 1): 30000, pos(2, 2): 15000}),
    target({361: 10}),
]
WEIGHTS = [1.0, 1.0, 1.0, 0.0]
SURPRISE = [0.4, 0.1, 0.9, 2.0]
ENTROPY = [2.0, 1.5, 1.0, 0.5]
OWNERSHIP = np.array([[-1, 1, 1, 1], [-1, 0, 1, 1], [-1, -1, 1, 1]])  # white's view, [y, x]
FULL_AREA = np.array([[-1, 1, 1, 1], [-1, 1, 1, 1], [-1, -1, 1, 1]])  # (1,1) white only in full area
SCORING = OWNERSHIP * 0.5  # x 120 = +-60: no rounding
FINAL_STONES = np.zeros((Y, X), dtype=int)
FINAL_STONES[0, 0] = FINAL_STONES[1, 0] = -1
FINAL_STONES[0, 1] = 1
START_TURN = 5


def boards_before_each_turn() -> list[dict[int, int]]:
    stones: dict[int, int] = {}
    out = []
    for player, move in MOVES:
        out.append(dict(stones))
        if move != 361:
            stones[move] = player
    return out


def make_game(**overrides) -> GameRecord:
    turns = []
    for i, ((player, move), stones) in enumerate(zip(MOVES, boards_before_each_turn(), strict=True)):
        turns.append(
            TurnRecord(
                spatial=spatial_for(stones, player),
                global_inputs=global_for(player),
                player=player,
                move=move,
                policy_target=TARGETS[i],
                search=SEARCH[i],
                raw=RAW[i],
                policy_surprise=SURPRISE[i],
                policy_entropy=ENTROPY[i],
                search_entropy=None if i == 1 else 0.1 * (i + 1),
                raw_policy_entropy=ENTROPY[i] - 0.25,
                weight=WEIGHTS[i],
                visits=100 + i,
            )
        )
    fields = dict(
        x_size=X,
        y_size=Y,
        komi=KOMI,
        rules=Rules(),
        result=GameResult.from_score(2.5),
        turns=turns,
        final_ownership=OWNERSHIP,
        final_full_area=FULL_AREA,
        final_scoring=SCORING,
        final_stones=FINAL_STONES,
        game_id="hand-made-game",
        game_hash=GAME_HASH,
        mode=GAME_MODE_FORK,
        start_turn=START_TURN,
        initial_turn_number=2,
        extra_black=1,
        net_switch_turns=(START_TURN + 2,),
    )
    fields.update(overrides)
    return GameRecord(**fields)
