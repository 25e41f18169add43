"""Benson's pass-alive analysis, area scoring (Tromp-Taylor and KataGo's), seki and group tax."""

import itertools

import numpy as np
import pytest

from common.go import area
from common.go import board as bk
from common.go.game import Game
from common.go.geometry import ARR, BLACK, EMPTY, MAX_SIZE, MIN_SIZE, PASS, STRIDE, WHITE, loc_of
from common.go.playout import new_rng, random_move
from common.go.rules import Rules
from tests.common.go.helpers import play_all, v

B, W, E = BLACK, WHITE, EMPTY


def owners(game: Game, method: str) -> list[str]:
    return ["".join(".XO"[c] for c in row) for row in game.ownership(method)]


def test_two_eyed_group_is_pass_alive_with_its_eyes():
    g = Game.from_diagram(
        """
        .X.X.
        XXXXX
        .....
        .....
        .....
        """
    )
    assert owners(g, "pass-alive") == ["XXXXX", "XXXXX", ".....", ".....", "....."]
    # The open area is black's only as a large territory bordered by pass-alive stones.
    assert owners(g, "katago")[2:] == ["XXXXX"] * 3


def test_one_real_eye_and_a_false_eye_is_not_pass_alive():
    g = Game.from_diagram(
        """
        .X.XO.
        XXXOO.
        OOO...
        ......
        """,
        rules=Rules(suicide=False),
    )
    # The black stone D4 shares the false eye C4 and has no other vital region: it falls, and
    # with it the false eye, so the big black chain keeps only one eye.
    assert owners(g, "pass-alive") == ["......", "......", "......", "......"]


def test_seki_is_not_pass_alive():
    g = Game.from_diagram(
        """
        .X.O.
        XX.OO
        """
    )
    assert owners(g, "pass-alive") == [".....", "....."]
    # The shared liberties are neutral in both scorings; the eyes count.
    assert owners(g, "katago") == ["XX.OO", "XX.OO"]
    assert owners(g, "tromp-taylor") == ["XX.OO", "XX.OO"]
    assert g.seki_stones() == sorted([v(g, "B2"), v(g, "A1"), v(g, "B1"), v(g, "D2"), v(g, "D1"), v(g, "E1")])


def test_pass_alive_territory_counts_with_dead_stones_inside():
    g = Game.from_diagram(
        """
        .XO.X
        XXXXX
        .....
        .....
        .....
        """,
        komi=0,
    )
    # KataGo's self-play scoring: the white stone sits in black's pass-alive territory.
    assert owners(g, "katago") == ["XXXXX"] * 5
    assert g.score() == -25
    assert g.dead_stones() == [v(g, "C5")]
    # Tromp-Taylor counts the white stone for white and D5 (reaching both colours) for nobody.
    assert owners(g, "tromp-taylor")[0] == "XXO.X"
    assert g.tromp_taylor_score() == 1 - 23


def test_suicide_rule_changes_which_regions_are_vital():
    diagram = """
        O.X.X
        .XXXX
        XX...
        .....
        """
    # The region A4 B4 A3 holds a white stone (A4) that touches no black stone. With suicide
    # illegal only the region's empty points must be liberties of the chain, so it is a vital
    # region and the chain (with its eye D4) is pass-alive, the white stone dead in its
    # territory. With suicide legal every point must be, so the chain has one vital region.
    strict = Game.from_diagram(diagram, rules=Rules(suicide=False))
    assert owners(strict, "pass-alive")[:2] == ["XXXXX", "XXXXX"]
    assert owners(strict, "pass-alive")[2] == "XX..."
    loose = Game.from_diagram(diagram, rules=Rules(suicide=True))
    assert owners(loose, "pass-alive") == ["....."] * 4


def test_all_pass_alive_ends_the_game():
    g = Game.from_diagram(
        """
        .X.X.
        XXXXX
        OOOOO
        .O.O.
        """,
        komi=0.5,
    )
    assert g.is_all_pass_alive()
    assert g.end_if_all_pass_alive()
    assert g.is_over and g.result.reason == "every point pass-alive"
    assert g.result.score == 0.5 and g.result.winner == WHITE
    h = Game.from_diagram(
        """
        .X.X.
        XXXXX
        OOOO.
        .O.O.
        """
    )
    assert not h.is_all_pass_alive()
    assert not h.end_if_all_pass_alive() and not h.is_over


def test_eyes_next_to_other_chains_and_opponents():
    # One chain with four single-point eyes: pass-alive, the open area below is not territory.
    g = Game.from_diagram(
        """
        .X.X.X.
        XXXXXXX
        .......
        """
    )
    assert owners(g, "pass-alive")[:2] == ["XXXXXXX", "XXXXXXX"]
    h = Game.from_diagram(
        """
        .X.O.X.
        XXOOOXX
        XX...XX
        """
    )
    # Each black chain has one eye; the white group has none: nothing is pass-alive.
    assert owners(h, "pass-alive") == ["." * 7] * 3


def test_tromp_taylor_and_katago_agree_on_settled_boards():
    g = Game(9, komi=7.5)
    play_all(g, "B E5", "W pass", "B pass")
    assert g.result.score == -81 + 7.5
    assert g.tromp_taylor_score() == g.result.score


@pytest.mark.parametrize("tax,expected", [("NONE", -7), ("SEKI", -8), ("ALL", -6)])
def test_tax_rules_change_what_counts(tax, expected):
    g = Game.from_diagram(
        """
        .X.O..OX.X.
        XX.OOOOXXXX
        XXXOOOOXXXX
        """,
        rules=Rules(tax=tax),
        komi=0,
    )
    # Left: black (one eye) and white (a two-point eye) in seki, sharing C3 and C2. Right: a
    # black group with two eyes. Area: black 7 + 12, white 12.
    # SEKI: the eyes of the groups in seki do not count (black 18, white 10).
    # ALL: as SEKI, and each group of independent life pays 2 (the right black group).
    assert g.score() == expected


def test_independent_life_tax_matches_katago_on_golden_area_games(shared):
    from common.go.sgf import read_sgf

    checked = 0
    for line in (shared / "golden" / "katago_selfplay_9x9.sgfs").read_text().splitlines():
        rec = read_sgf(line)
        if rec.rules.scoring != "AREA":
            continue
        game = rec.to_game()
        assert game.is_over
        assert game.result.sgf() == rec.result, (rec.rules.to_compact(), rec.result)
        checked += 1
    assert checked == 4  # taxes NONE, SEKI and ALL, with and without the button


# --- the kernels against a plain reference, on random positions ------------------------------------
# A direct transcription of the definitions in common.go.area's module doc, on Python sets: slow
# and simple. The kernels must give exactly its owners on every position.


def _flood(start: int, inside, nbrs: dict[int, list[int]]) -> set[int]:
    seen = {start}
    todo = [start]
    while todo:
        p = todo.pop()
        for n in nbrs[p]:
            if n not in seen and inside(n):
                seen.add(n)
                todo.append(n)
    return seen


class RefPosition:
    """The points, colours and neighbours of a board."""

    def __init__(self, b: np.ndarray) -> None:
        x_size, y_size = int(b[bk.M_XSIZE]), int(b[bk.M_YSIZE])
        self.points = [loc_of(x, y) for y in range(y_size) for x in range(x_size)]
        self.color = {p: int(b[bk.COLOR + p]) for p in self.points}
        on = set(self.points)
        self.nbrs = {p: [n for n in (p - STRIDE, p - 1, p + 1, p + STRIDE) if n in on] for p in self.points}

    def chains(self, color: int) -> list[set[int]]:
        out, seen = [], set()
        for p in self.points:
            if self.color[p] == color and p not in seen:
                chain = _flood(p, lambda q: self.color[q] == color, self.nbrs)
                seen |= chain
                out.append(chain)
        return out

    def liberties(self, chain: set[int]) -> set[int]:
        return {n for p in chain for n in self.nbrs[p] if self.color[n] == EMPTY}


def ref_benson(pos: RefPosition, pla: int, suicide: bool):
    """Benson for pla: (pass-alive stones, regions), a region as (its points, borders a chain
    that is not pass-alive, its points not next to pla, holds opponent stones); None when pla
    has no stones."""
    opp = 3 - pla
    chains = pos.chains(pla)
    if not chains:
        return None
    chain_of = {p: i for i, chain in enumerate(chains) for p in chain}
    regions, seen = [], set()
    for p in pos.points:
        if pos.color[p] == EMPTY and p not in seen:
            region = _flood(p, lambda q: pos.color[q] != pla, pos.nbrs)
            seen |= region
            regions.append(region)
    adjacent, vital = [], []
    for region in regions:
        adj = {chain_of[n] for p in region for n in pos.nbrs[p] if pos.color[n] == pla}
        counted = [p for p in region if suicide or pos.color[p] == EMPTY]
        vital.append({c for c in adj if all(any(chain_of.get(n) == c for n in pos.nbrs[p]) for p in counted)})
        adjacent.append(adj)
    alive = set(range(len(chains)))
    while True:
        dead = [not adj <= alive for adj in adjacent]
        keep = {c for c in alive if sum(c in vital[r] and not dead[r] for r in range(len(regions))) >= 2}
        if keep == alive:
            break
        alive = keep
    stones = {p for c in alive for p in chains[c]}
    info = []
    for r, region in enumerate(regions):
        internal = sum(not any(pos.color[n] == pla for n in pos.nbrs[p]) for p in region)
        info.append((region, dead[r], internal, any(pos.color[p] == opp for p in region)))
    return stones, info


def ref_mark(pla: int, benson, safe_big: bool, unsafe_big: bool, owner: dict[int, int]) -> None:
    if benson is None:
        return
    stones, regions = benson
    for p in stones:
        owner[p] = pla
    for region, dead, internal, has_opp in regions:
        if not dead and (internal <= 1 or (safe_big and not has_opp)):
            for p in region:
                owner[p] = pla
        elif unsafe_big and not has_opp:
            for p in region:
                if owner[p] == EMPTY:
                    owner[p] = pla


def ref_area(pos: RefPosition, bensons, non_pass_alive_stones: bool, safe_big: bool, unsafe_big: bool):
    owner = dict.fromkeys(pos.points, EMPTY)
    for pla in (BLACK, WHITE):
        ref_mark(pla, bensons[pla], safe_big, unsafe_big, owner)
    if non_pass_alive_stones:
        for p in pos.points:
            if owner[p] == EMPTY and pos.color[p] != EMPTY:
                owner[p] = pos.color[p]
    return owner


def ref_tromp_taylor(pos: RefPosition) -> dict[int, int]:
    owner = {p: c for p, c in pos.color.items()}
    seen = set()
    for p in pos.points:
        if pos.color[p] == EMPTY and p not in seen:
            region = _flood(p, lambda q: pos.color[q] == EMPTY, pos.nbrs)
            seen |= region
            reached = {pos.color[n] for q in region for n in pos.nbrs[q]} - {EMPTY}
            if len(reached) == 1:
                for q in region:
                    owner[q] = next(iter(reached))
    return owner


def ref_independent_life(pos: RefPosition, basic: dict[int, int], keep_stones: bool):
    chain_libs = {}
    for color in (BLACK, WHITE):
        for chain in pos.chains(color):
            libs = len(pos.liberties(chain))
            chain_libs.update(dict.fromkeys(chain, libs))
    owner = dict.fromkeys(pos.points, EMPTY)
    regions, seen = 0, set()
    for p in pos.points:
        o = basic[p]
        if o == EMPTY or p in seen:
            continue
        group = _flood(p, lambda q, o=o: basic[q] == o, pos.nbrs)
        seen |= group
        seki = any(
            (pos.color[q] == o and chain_libs[q] == 1)
            or any(pos.color[n] == EMPTY and basic[n] == EMPTY for n in pos.nbrs[q])
            for q in group
        )
        if not seki:
            regions += 1 if o == WHITE else -1
            for q in group:
                owner[q] = o
    if keep_stones:
        for p in pos.points:
            if basic[p] != EMPTY and basic[p] == pos.color[p]:
                owner[p] = basic[p]
    return regions, owner


def _random_boards(count: int, seed: int) -> list[np.ndarray]:
    """Positions from random games of random sizes (2..19, square or not) and suicide rules:
    most by the playout policy, which keeps its eyes and so settles into pass-alive groups, some
    by uniformly random legal moves, which fill eyes and capture more."""
    rng = np.random.default_rng(seed)
    boards = []
    while len(boards) < count:
        x_size = int(rng.integers(MIN_SIZE, MAX_SIZE + 1))
        y_size = x_size if rng.random() < 0.5 else int(rng.integers(MIN_SIZE, MAX_SIZE + 1))
        game = Game(x_size, y_size, rules=Rules(suicide=bool(rng.integers(2))))
        playout = new_rng(int(rng.integers(1 << 62)))
        uniform = rng.random() < 0.3
        limit = 3 * x_size * y_size
        stops = set(rng.integers(0, limit, size=3).tolist())
        for turn in range(limit):
            if game.is_over:
                break
            if uniform:
                legal = game.legal_moves()
                loc = int(legal[rng.integers(len(legal))]) if legal and rng.random() > 0.01 else PASS
            else:
                loc = int(random_move(game.g, game.b, game.table, game.to_move, playout))
            game.play(loc)
            if turn in stops:
                boards.append(game.b.copy())
        boards.append(game.b.copy())
    return boards


def _owners(result: np.ndarray, pos: RefPosition) -> dict[int, int]:
    # Off the board the kernels leave nobody's.
    off = np.ones(ARR, dtype=bool)
    off[pos.points] = False
    assert not result[off].any()
    return {p: int(result[p]) for p in pos.points}


@pytest.mark.parametrize("seed", range(6))
def test_kernels_match_the_reference_on_random_positions(seed):
    """Every kernel, plain and with one workspace shared by all calls (boards of every size in
    turn), gives exactly the reference's owners, regions and scores."""
    ws = area.new_area_workspace()
    out = np.empty(ARR, dtype=np.int8)
    out_ws = np.empty(ARR, dtype=np.int8)
    with_pass_alive = suicide_matters = 0
    for b in _random_boards(60, seed):
        pos = RefPosition(b)
        tt = ref_tromp_taylor(pos)
        area.tromp_taylor_area(b, out)
        assert _owners(out, pos) == tt
        area.tromp_taylor_area_ws(b, out_ws, ws)
        assert _owners(out_ws, pos) == tt
        pass_alive = []
        for suicide in (False, True):
            bensons = {pla: ref_benson(pos, pla, suicide) for pla in (BLACK, WHITE)}
            pass_alive.append(ref_area(pos, bensons, False, False, False))
            for nps, safe_big, unsafe_big in itertools.product((False, True), repeat=3):
                expected = ref_area(pos, bensons, nps, safe_big, unsafe_big)
                area.area(b, nps, safe_big, unsafe_big, suicide, out)
                assert _owners(out, pos) == expected, (nps, safe_big, unsafe_big, suicide)
                area.area_ws(b, nps, safe_big, unsafe_big, suicide, out_ws, ws)
                assert _owners(out_ws, pos) == expected
            for pla, safe_big, unsafe_big in itertools.product((BLACK, WHITE), (False, True), (False, True)):
                expected = dict.fromkeys(pos.points, EMPTY)
                ref_mark(pla, bensons[pla], safe_big, unsafe_big, expected)
                out[:] = EMPTY
                area.area_for_player(b, pla, safe_big, unsafe_big, suicide, out)
                assert _owners(out, pos) == expected
                out_ws[:] = EMPTY
                area.area_for_player_ws(b, pla, safe_big, unsafe_big, suicide, out_ws, ws)
                assert _owners(out_ws, pos) == expected
            basic = ref_area(pos, bensons, True, True, True)
            for keep_stones in (False, True):
                regions, expected = ref_independent_life(pos, basic, keep_stones)
                assert area.independent_life_area(b, keep_stones, suicide, out) == regions
                assert _owners(out, pos) == expected
                assert area.independent_life_area_ws(b, keep_stones, suicide, out_ws, ws) == regions
                assert _owners(out_ws, pos) == expected
            regions, life = ref_independent_life(pos, basic, True)
            for tax in (area.TAX_NONE, area.TAX_SEKI, area.TAX_ALL):
                owner = basic if tax == area.TAX_NONE else life
                score = sum((o == WHITE) - (o == BLACK) for o in owner.values())
                if tax == area.TAX_ALL:
                    score -= 2 * regions
                assert area.area_score(b, tax, suicide, out) == score
                assert area.area_score_ws(b, tax, suicide, out_ws, ws) == score
            every = all(o != EMPTY for o in pass_alive[-1].values())
            assert area.all_pass_alive(b, suicide) == every
            assert area.all_pass_alive_ws(b, suicide, ws) == every
        with_pass_alive += any(o != EMPTY for o in pass_alive[0].values())
        suicide_matters += pass_alive[0] != pass_alive[1]
    # The positions exercise Benson's analysis, and the suicide rule's part in it.
    assert with_pass_alive >= 20 and suicide_matters >= 1


def test_workspace_visit_marks_survive_their_counter_wrapping():
    game = Game.from_diagram(
        """
        .X.XO.
        XXXOO.
        OOO.O.
        ......
        """
    )
    expected_tt = game.ownership("tromp-taylor")
    expected = np.empty(ARR, dtype=np.int8)
    regions = area.independent_life_area(game.b, True, False, expected)
    ws = area.new_area_workspace()
    ws[area.W_MARK_GEN] = area._GEN_LIMIT - 2
    out = np.empty(ARR, dtype=np.int8)
    for _ in range(4):
        area.tromp_taylor_area_ws(game.b, out, ws)
        assert (game._grid(out) == expected_tt).all()
        assert area.independent_life_area_ws(game.b, True, False, out, ws) == regions
        assert (out == expected).all()


@pytest.mark.parametrize("junk", [BLACK, WHITE, 3])
def test_results_off_a_small_board_ignore_what_the_workspace_held(junk):
    """A fresh workspace is uninitialised memory and a shared one holds a larger board's analysis;
    past a small board's last row, neither may leak into the result."""
    game = Game.from_diagram(
        """
        .X.XO.
        XXXOO.
        OOO.O.
        ......
        """
    )
    expected = np.empty(ARR, dtype=np.int8)
    regions = area.independent_life_area(game.b, True, False, expected)
    for keep_stones in (False, True):
        area.independent_life_area(game.b, keep_stones, False, expected)
        ws = area.new_area_workspace()
        ws[area.W_MARK_GEN + 1 :] = junk
        ws[area.W_MARK : area.W_MARK + ARR] = 0
        out = np.full(ARR, junk, dtype=np.int8)
        assert area.independent_life_area_ws(game.b, keep_stones, False, out, ws) == regions
        assert (out == expected).all()
        out[:] = junk
        area.area_ws(game.b, True, True, True, False, out, ws)
        area.area(game.b, True, True, True, False, expected)
        assert (out == expected).all()
