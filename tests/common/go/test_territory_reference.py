"""Our rules engine against a slow, independent reference of KataGo's rules
(``tests/common/go/reference_rules.py``): first the reference against real KataGo's games, then
random games on small boards under random rules, turn by turn."""

import json
import os
import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.go.game import Game
from common.go.geometry import BLACK, EMPTY, PASS, WHITE, loc_of, xy_of
from common.go.rules import Rules
from tests.common.go.reference_rules import Geometry, RefGame, RefRules, chain, liberties, place

COLUMNS = "ABCDEFGHJKLMNOPQRST"


def _golden(shared, name: str) -> list[dict]:
    path = shared / "golden" / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _point(geo: Geometry, vertex: str) -> int | None:
    if vertex == "pass":
        return None
    return geo.point(COLUMNS.index(vertex[0]), geo.y_size - int(vertex[1:]))


def _vertex(geo: Geometry, p: int) -> str:
    x, y = geo.xy(p)
    return f"{COLUMNS[x]}{geo.y_size - y}"


def _ref_rules(r: dict) -> RefRules:
    return RefRules(
        ko=r["ko"],
        scoring=r["scoring"],
        tax=r["tax"],
        suicide=r["suicide"],
        button=r["hasButton"],
        white_handicap_bonus=r["whiteHandicapBonus"],
    )


def _replay_golden(r: dict) -> RefGame:
    """Replay a golden game in the reference, checking KataGo's legal sets (and phases) each turn."""
    size = r["size"]
    geo = Geometry(size, size)
    black = [_point(geo, v) for v in r.get("setup_black", [])]
    ref = RefGame(size, size, _ref_rules(r["rules"]), r.get("komi", 7.5), black=[p for p in black if p is not None])
    phases = r.get("encore_phase_before_each_move")
    for i, (color, vertex) in enumerate(r["moves"]):
        c = BLACK if color == "B" else WHITE
        where = (r["rules"], size, i, color, vertex)
        if phases is not None:
            assert ref.phase == phases[i], where
        assert sorted(_vertex(geo, p) for p in ref.legal_moves(c)) == sorted(r["legal_before_each_move"][i]), where
        ref.play(_point(geo, vertex), c)
    return ref


def test_the_reference_replays_katagos_territory_games(shared):
    for r in _golden(shared, "katago_territory_games_sample.jsonl"):
        ref = _replay_golden(r)
        assert ref.pass_for_ko_turns == r.get("pass_for_ko_turns", []), r["sgf_rules"]
        if r["end_reason"] == "all_pass_alive_adjudicated":
            # KataGo's self-play stopped here; its GTP play ends through the encore, same result.
            adjudicated = ref.all_pass_alive_result()
            assert not ref.over and adjudicated is not None
            assert adjudicated.score == r["white_minus_black"], r["sgf_rules"]
        for color, _ in r["score_extra_passes"]:
            ref.play(None, BLACK if color == "B" else WHITE)
        assert ref.over and ref.result is not None, r["sgf_rules"]
        assert ref.result.score == r["white_minus_black"], r["sgf_rules"]


def test_the_reference_replays_katagos_area_games(shared):
    for r in _golden(shared, "katago_rules_sample.jsonl"):
        _replay_golden(r)


# --- random games: our engine against the reference ----------------------------------------------
RULES = st.builds(
    RefRules,
    ko=st.sampled_from(["SIMPLE", "POSITIONAL", "SITUATIONAL"]),
    scoring=st.sampled_from(["TERRITORY", "TERRITORY", "TERRITORY", "AREA"]),
    tax=st.sampled_from(["NONE", "SEKI", "ALL"]),
    suicide=st.booleans(),
    button=st.sampled_from([False, False, False, True]),
    white_handicap_bonus=st.sampled_from(["0", "N", "N-1"]),
)
MAX_TURNS = 160  # then both sides pass until the game ends


def _our_rules(rules: RefRules) -> Rules:
    return Rules(
        ko=rules.ko,
        scoring=rules.scoring,
        tax=rules.tax,
        suicide=rules.suicide,
        has_button=rules.button,
        white_handicap_bonus=rules.white_handicap_bonus,
    )


def _loc(geo: Geometry, p: int) -> int:
    return loc_of(*geo.xy(p))


def _ref_point(geo: Geometry, loc: int) -> int:
    return geo.point(*xy_of(loc))


def _choose(rng: random.Random, ref: RefGame, legal: list[int], pass_chances: tuple[float, float]) -> int | None:
    """A move that makes the encore, kos and cycles likely: many passes; then passes for ko, ko
    captures, moves back to an earlier board and captures first."""
    if not legal or rng.random() < pass_chances[min(ref.phase, 1)]:
        return None
    unblocks = ref.passes_for_ko()
    if unblocks and rng.random() < 0.5:
        return rng.choice(unblocks)
    earlier = {state[0] for state in ref.history}
    placed = {p: place(ref.geo, ref.board, p, ref.to_move) for p in legal if ref.board[p] == EMPTY}
    kos = [p for p, pl in placed.items() if pl.ko_point is not None]
    if kos and rng.random() < 0.8:
        return rng.choice(kos)
    repeats = [p for p, pl in placed.items() if tuple(pl.board) in earlier]
    if repeats and rng.random() < 0.6:
        return rng.choice(repeats)
    captures = [p for p, pl in placed.items() if pl.captured]
    if captures and rng.random() < 0.7:
        return rng.choice(captures)
    return rng.choice(legal)


def _ko_captures(geo: Geometry, board: list[int]) -> int:
    """How many ko captures either side could make (each needs a point surrounded by the other's stones)."""
    count = 0
    for p in geo.points:
        around = {board[q] for q in geo.neighbors(p)}
        if board[p] == EMPTY and len(around) == 1 and EMPTY not in around:
            count += place(geo, board, p, 3 - around.pop()).ko_point is not None
    return count


def _setup(rng: random.Random, geo: Geometry) -> tuple[list[int], list[int], int]:
    """Setup stones: none; a handicap (Black to move as KataGo's self-play starts, or White as after
    GTP's set_free_handicap); a few stones of both colours; or a crowded board with at least two ko
    captures on it, where cycles are likely. Every chain has a liberty."""
    kind = rng.choice(["none", "none", "handicap", "mixed", "kos", "kos"])
    if kind == "none":
        return [], [], BLACK
    points = list(geo.points)
    rng.shuffle(points)
    if kind == "handicap":
        return sorted(points[: rng.randint(2, 3)]), [], rng.choice([BLACK, WHITE])
    while True:
        if kind == "mixed":
            black, white = sorted(points[:2]), sorted(points[2:4])
        else:
            crowd = points[: len(points) * 3 // 5]
            black = sorted(p for p in crowd if rng.random() < 0.5)
            white = sorted(p for p in crowd if p not in black)
        board = [BLACK if p in black else WHITE if p in white else EMPTY for p in geo.points]
        valid = all(liberties(geo, board, chain(geo, board, p)) for p in black + white)
        if valid and (kind == "mixed" or _ko_captures(geo, board) >= 2):
            return black, white, rng.choice([BLACK, WHITE])
        rng.shuffle(points)


def play_both(
    x_size: int,
    y_size: int,
    rules: RefRules,
    komi: float,
    setup: tuple[list[int], list[int], int],
    choose: Callable[[RefGame, list[int]], int | None],
) -> RefGame:
    """Play a game in our engine and in the reference at once, the moves chosen by choose(reference,
    legal moves) (None passes; only passes after MAX_TURNS), checking at every turn the side to
    move, the phase, the legal moves, the passes for ko, who each point would count for and the
    score if the game were scored now, whether every point is pass-alive (and if so the score
    KataGo's self-play would end the game with), and at the end the result; returns the
    reference's finished game."""
    geo = Geometry(x_size, y_size)
    black, white, to_move = setup
    ref = RefGame(x_size, y_size, rules, komi, black=black, white=white, to_move=to_move)
    game = Game(x_size, y_size, rules=_our_rules(rules), komi=komi, capacity=512)
    if black or white:
        game.setup(black=[_loc(geo, p) for p in black], white=[_loc(geo, p) for p in white], to_move=to_move)
    moves: list[str] = []

    def where() -> str:
        return (
            f"{x_size}x{y_size} {rules} komi {komi} setup B{black} W{white} to move {to_move}, moves {' '.join(moves)}"
        )

    while not ref.over:
        color = ref.to_move
        assert game.to_move == color and game.encore_phase == ref.phase, where()
        legal = ref.legal_moves()
        assert sorted(_ref_point(geo, loc) for loc in game.legal_moves(color)) == legal, where()
        unblocks = [p for p in geo.points if game.is_pass_for_ko(_loc(geo, p), color)]
        assert unblocks == ref.passes_for_ko(), where()
        owners, score = ref.scoring()
        ours = game.ownership("scoring")
        assert [int(ours[geo.xy(p)[1], geo.xy(p)[0]]) for p in geo.points] == owners, where()
        assert game.score() == score, where()
        adjudicated = ref.all_pass_alive_result()
        assert game.is_all_pass_alive() == (adjudicated is not None), where()
        if adjudicated is not None:
            # KataGo's self-play would stop here and score.
            stopped = game.copy()
            assert stopped.end_if_all_pass_alive() and stopped.result is not None, where()
            assert stopped.result.score == adjudicated.score, where()
        p = None if ref.turns >= MAX_TURNS else choose(ref, legal)
        moves.append(f"{'BW'[color - 1]}{'pass' if p is None else geo.xy(p)}")
        ref.play(p)
        game.play(PASS if p is None else _loc(geo, p), color)
        assert game.is_over == ref.over, where()
    result, expected = game.result, ref.result
    assert result is not None and expected is not None
    got = (result.no_result, result.score, result.winner)
    assert got == (expected.no_result, expected.score, expected.winner), where()
    return ref


def play_against_reference(x_size: int, y_size: int, rules: RefRules, komi: float, seed: int) -> RefGame:
    """A random game (setup and moves from seed) played in both, as play_both does."""
    rng = random.Random(seed)
    setup = _setup(rng, Geometry(x_size, y_size))
    # Main phase and encore: short or long.
    pass_chances = (rng.choice([0.05, 0.1, 0.25]), rng.choice([0.08, 0.15, 0.3]))
    return play_both(x_size, y_size, rules, komi, setup, lambda ref, legal: _choose(rng, ref, legal, pass_chances))


@settings(max_examples=int(os.environ.get("SENTE_REFERENCE_EXAMPLES", "40")), derandomize=True)
@given(
    x_size=st.integers(4, 6),
    y_size=st.integers(4, 6),
    rules=RULES,
    komi=st.integers(-6, 16).map(lambda k: k / 2),
    seed=st.integers(0, 2**32 - 1),
)
def test_our_engine_agrees_with_the_reference_turn_by_turn(x_size, y_size, rules, komi, seed):
    play_against_reference(x_size, y_size, rules, komi, seed)


def _diagram(text: str) -> tuple[int, int, list[int], list[int]]:
    """Width, height, black and white points of a diagram (X black, O white, . empty)."""
    rows = [row.replace(" ", "") for row in text.strip().splitlines()]
    geo = Geometry(len(rows[0]), len(rows))
    black = [geo.point(x, y) for y, row in enumerate(rows) for x, c in enumerate(row) if c == "X"]
    white = [geo.point(x, y) for y, row in enumerate(rows) for x, c in enumerate(row) if c == "O"]
    return geo.x_size, geo.y_size, black, white


def _script(
    geo: Geometry, moves: list[tuple[int, int] | None]
) -> tuple[Callable[[RefGame, list[int]], int | None], list[int]]:
    """A chooser playing moves ((x, y) or None for a pass) in order, then passes; it passes instead
    of an illegal move, and the list it returns gets the turns where it did."""
    remaining = list(moves)
    refused: list[int] = []

    def choose(ref: RefGame, legal: list[int]) -> int | None:
        if not remaining:
            return None
        move = remaining.pop(0)
        p = None if move is None else geo.point(*move)
        if p is not None and p not in legal:
            refused.append(ref.turns)
            return None
        return p

    return choose, refused


# Each side can take off two of its own stones (B at B5 then A5, W at D1 then E1: multi-stone
# suicide) and put them back, which brings the board back every four moves without a pass.
SUICIDE_CYCLE = """
    X . O . .
    O O . . .
    . . . . .
    . . . X X
    . . X . O
"""


@pytest.mark.parametrize("ko", ["SIMPLE", "POSITIONAL", "SITUATIONAL"])
@pytest.mark.parametrize("passes_first", [0, 2, 4])
def test_a_cycle_without_passes_ends_the_game_without_result_as_in_the_reference(ko, passes_first):
    x_size, y_size, black, white = _diagram(SUICIDE_CYCLE)
    geo = Geometry(x_size, y_size)
    cycle = [(1, 0), (3, 4), (0, 0), (4, 4)]
    script, refused = _script(geo, [None] * passes_first + cycle * 3)
    rules = RefRules(ko=ko, scoring="TERRITORY", tax="NONE", suicide=True)
    ref = play_both(x_size, y_size, rules, 0.5, (black, white, BLACK), script)
    # In the main phase only simple ko lets the board come back; in the encore it always can.
    assert ref.result is not None and ref.result.no_result == (ko == "SIMPLE" or passes_first > 0)
    assert ref.endings[-1] == ("cycle" if ref.result.no_result else "passes")
    assert bool(refused) == (not ref.result.no_result)  # superko forbade a move back


# The ko of tests/common/go/test_territory.py: Black captures at C4, White retakes at B4.
KO = """
    . X O . .
    X O . O .
    . X O . .
    . . . . .
    . . . . .
"""


@pytest.mark.parametrize("passes_first", [2, 4])
def test_encore_ko_blocks_passes_for_ko_and_the_capture_ban_as_in_the_reference(passes_first):
    x_size, y_size, black, white = _diagram(KO)
    geo = Geometry(x_size, y_size)
    c4, b4 = (2, 1), (1, 1)
    # Black captures; White's retake is a pass for ko; Black passes; White retakes; Black's
    # capture back is a pass for ko; White passes; Black's capture from the position of its first
    # is refused.
    moves = [c4, b4, None, b4, c4, None, c4]
    script, refused = _script(geo, [None] * passes_first + moves)
    rules = RefRules(ko="SIMPLE", scoring="TERRITORY", tax="SEKI")
    ref = play_both(x_size, y_size, rules, 0.5, (black, white, BLACK), script)
    start = passes_first
    assert ref.pass_for_ko_turns == [start + 1, start + 4]
    assert refused == [start + 6]


@pytest.mark.parametrize("ko", ["POSITIONAL", "SITUATIONAL"])
def test_taking_the_button_forgets_the_superko_history_as_in_the_reference(ko):
    x_size, y_size, black, white = _diagram(KO)
    geo = Geometry(x_size, y_size)
    # Black captures, White takes the button, Black passes, and White's retake brings back the
    # starting position, which superko would forbid had the button not been taken in between.
    script, refused = _script(geo, [(2, 1), None, None, (1, 1)])
    rules = RefRules(ko=ko, scoring="AREA", tax="NONE", button=True)
    ref = play_both(x_size, y_size, rules, 7.0, (black, white, BLACK), script)
    start = RefGame(x_size, y_size, rules, 7.0, black=black, white=white)
    assert refused == [] and ref.board == start.board and ref.turns == 6


@pytest.mark.parametrize("ko", ["SIMPLE", "POSITIONAL"])
@pytest.mark.parametrize("passes_first", [0, 2, 4])
def test_passing_again_from_the_same_state_ends_the_phase_as_in_the_reference(ko, passes_first):
    x_size, y_size, black, white = _diagram(SUICIDE_CYCLE)
    geo = Geometry(x_size, y_size)
    # Black passes; White takes off its two corner stones; Black passes; White puts them back;
    # Black passes again from the state of its first pass.
    script, refused = _script(geo, [None] * passes_first + [None, (3, 4), None, (4, 4), None])
    rules = RefRules(ko=ko, scoring="TERRITORY", tax="NONE", suicide=True)
    ref = play_both(x_size, y_size, rules, 0.5, (black, white, BLACK), script)
    # In the main phase only simple ko lets the board come back; in the encore it always can.
    repeated = ko == "SIMPLE" or passes_first > 0
    assert ref.endings[passes_first // 2] == ("repeated pass" if repeated else "passes")
    assert bool(refused) == (not repeated)
