"""Self-play games: what they write, that it is valid and reproducible, and how games start."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from client.search.engine import NullEvaluator
from client.selfplay.init import draw_start
from client.selfplay.run import run_selfplay
from common.data.schema import (
    GT_AREA_SCORING,
    GT_BONUS_POINTS,
    GT_SIDE_POSITION,
    GT_TURN_INDEX,
    GT_UNREDUCED_VISITS,
    unpack_spatial,
)
from common.data.validate import validate_rows
from common.draws import draw_board, draw_komi
from common.go.geometry import BLACK
from common.go.rules import round_komi
from common.go.sgf import read_sgf
from common.settings import RulesChoice, SelfPlaySettings, SettingsError
from tests.client.evaluators import KomiAwareEvaluator

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

FAST = SelfPlaySettings(
    board_sizes=(7,), board_size_weights=(1.0,), visits=24, cheap_visits=6, full_search_prob=0.5, max_moves=200
)


def play(tmp: Path, settings: SelfPlaySettings = FAST, games: int = 4, parallel: int = 2, seed: int = 5):
    summary = run_selfplay(
        NullEvaluator(), settings, games=games, parallel=parallel, out_dir=tmp, seed=seed, progress=False
    )
    return summary, sorted(tmp.glob("*.sgf")), sorted(tmp.glob("*.npz"))


def _validated_rows(sgf_path: Path) -> dict[str, np.ndarray] | None:
    """The training rows written beside a game, once the validator accepted them (None: none)."""
    npz = sgf_path.with_suffix(".npz")
    if not npz.exists():
        return None
    report = validate_rows(npz)
    assert report.ok, report.errors
    with np.load(npz) as z:
        return {key: z[key] for key in z.files}


def test_selfplay_writes_valid_rows_and_legal_games(tmp_path):
    summary, sgfs, npzs = play(tmp_path)
    assert summary.games == 4
    assert len(sgfs) == 4
    assert len(npzs) == 4 - summary.games_without_rows
    assert summary.rows > 0
    total_rows = 0
    kinds: set[str] = set()
    for sgf_path in sgfs:
        record = read_sgf(sgf_path.read_text())
        game = record.to_game()  # every move replays legally under the recorded rules
        if not game.is_over:  # the game ended when every point was pass-alive
            assert game.end_if_all_pass_alive()
        assert record.result == game.result.sgf() or (record.result == "Void" and game.result.no_result)
        info = json.loads(record.comment)
        assert SelfPlaySettings.from_dict(info["settings"]) == FAST
        # Which moves were full searches, from the move comments.
        notes = [node.comment or "" for node in record.nodes[1:]]
        full_turns = {i for i, note in enumerate(notes) if note.startswith("full")}
        cheap_turns = {i for i, note in enumerate(notes) if note.startswith("cheap")}
        kinds.update(("full",) * len(full_turns) + ("cheap",) * len(cheap_turns))
        rows = _validated_rows(sgf_path)
        if rows is None:
            continue
        gt = rows["globalTargetsNC"]
        total_rows += gt.shape[0]
        own = gt[gt[:, GT_SIDE_POSITION] == 0]
        turns = set(own[:, GT_TURN_INDEX].astype(int))
        assert turns <= full_turns  # cheap searches write no rows (side positions are rows of their own)
        assert set(gt[:, GT_UNREDUCED_VISITS].astype(int)) <= {FAST.visits, FAST.reduced_visits_min}
    assert total_rows == summary.rows
    assert kinds == {"full", "cheap"}


def test_seeded_selfplay_is_reproducible(tmp_path):
    _, sgfs_a, npzs_a = play(tmp_path / "a", seed=11)
    _, sgfs_b, npzs_b = play(tmp_path / "b", seed=11)
    _, sgfs_c, _ = play(tmp_path / "c", seed=12)
    assert [p.name for p in sgfs_a] == [p.name for p in sgfs_b]
    for a, b in zip(sgfs_a, sgfs_b):
        assert a.read_bytes() == b.read_bytes()
    for a, b in zip(npzs_a, npzs_b):
        with np.load(a) as za, np.load(b) as zb:
            assert sorted(za.files) == sorted(zb.files)
            for name in za.files:
                np.testing.assert_array_equal(za[name], zb[name])
    assert [p.read_bytes() for p in sgfs_a] != [p.read_bytes() for p in sgfs_c]


def test_move_limit_ends_games_without_result(tmp_path):
    settings = FAST.replace(max_moves=12, end_when_all_pass_alive=False)
    summary, sgfs, _ = play(tmp_path, settings, games=2, parallel=2)
    assert summary.draws_or_no_result == 2
    for p in sgfs:
        record = read_sgf(p.read_text())
        assert len(record.moves) == 12
        assert json.loads(record.comment)["move_limit_reached"] is True


def test_handicap_games_place_extra_black_stones_and_compensate(tmp_path):
    settings = FAST.replace(
        board_sizes=(13,),
        board_size_weights=(1.0,),
        handicap_prob=1.0,
        handicap_compensate_komi_prob=1.0,
        max_moves=6,
        end_when_all_pass_alive=False,
    )
    _, sgfs, _ = play(tmp_path, settings, games=2, parallel=2)
    for p in sgfs:
        record = read_sgf(p.read_text())
        info = json.loads(record.comment)
        assert info["start"]["extra_black"] == 1  # at most 1 extra black move on 11-14
        assert len(record.setup.black) == 2 and record.handicap == 2
        assert record.first_to_move() != BLACK
        # The null network predicts an even score, so compensation leaves komi where it was drawn.
        assert record.komi == info["start"]["komi_drawn"]


def test_game_starts_follow_the_settings():
    rng = np.random.default_rng(0)
    settings = SelfPlaySettings(rules=RulesChoice(ko=("SIMPLE", "POSITIONAL"), suicide=(True,)))
    starts = [draw_start(settings, rng) for _ in range(4000)]
    sizes = np.array([s.x_size for s in starts])
    weights = np.array(settings.board_size_weights) / sum(settings.board_size_weights)
    for size, w in zip(settings.board_sizes, weights):
        assert np.mean(sizes == size) == pytest.approx(w, abs=0.02)
    assert {s.rules.ko for s in starts} == {"SIMPLE", "POSITIONAL"}
    assert all(s.rules.suicide for s in starts)
    assert all(s.extra_black == 0 for s in starts if s.x_size <= 10)
    handicap = [s for s in starts if s.extra_black]
    assert len(handicap) / len(starts) == pytest.approx(0.05 * np.mean(sizes > 10), abs=0.015)
    assert all(1 <= s.extra_black <= settings.max_handicap(min(s.x_size, s.y_size)) for s in handicap)
    opening = np.array([s.opening_moves for s in starts if s.x_size == s.y_size == 19])
    assert opening.mean() == pytest.approx(0.04 * 361, rel=0.1)
    komi = np.array([draw_komi(settings, rng) for _ in range(20000)])
    assert np.all(komi * 2 == np.round(komi * 2))
    assert np.median(komi) == 7.0
    assert np.mean(np.abs(komi - 7.0) <= 3.0) == pytest.approx(0.95 + 0.05 * 0.23, abs=0.01)
    assert komi.max() <= 7.0 + 30.0 and komi.min() >= 7.0 - 30.0


def test_boards_are_rectangles_as_often_as_katagos_selfplay_makes_them():
    settings = SelfPlaySettings(board_sizes=(7, 9, 13), board_size_weights=(1.0, 3.0, 6.0), rectangle_prob=0.3)
    rng = np.random.default_rng(2)
    boards = [draw_board(settings, rng) for _ in range(40000)]
    w = {7: 0.1, 9: 0.3, 13: 0.6}
    count = Counter(boards)
    # KataGo's allowRectangleProb: (1 - r) w_x for squares (x = y), plus r w_x w_y for every pair.
    for (x, y), n in count.items():
        expected = 0.3 * w[x] * w[y] + (0.7 * w[x] if x == y else 0.0)
        assert n / len(boards) == pytest.approx(expected, abs=0.01), (x, y)
    assert len(count) == 9
    squares = SelfPlaySettings(rectangle_prob=0.0)
    assert all(x == y for x, y in (draw_board(squares, rng) for _ in range(2000)))


def test_a_rectangular_game_plays_end_to_end(tmp_path):
    settings = FAST.replace(board_sizes=(7, 9), board_size_weights=(1.0, 1.0), rectangle_prob=1.0)
    _, sgfs, _ = play(tmp_path, settings, games=6, parallel=3, seed=4)
    shapes = set()
    for sgf_path in sgfs:
        record = read_sgf(sgf_path.read_text())
        game = record.to_game()
        shapes.add((record.x_size, record.y_size))
        rows = _validated_rows(sgf_path)
        if rows is None:
            continue
        on_board = unpack_spatial(rows["binaryInputNCHWPacked"])[:, 0].reshape(-1, 19, 19)
        policy = rows["policyTargetsNCMove"][:, 0, :361].reshape(-1, 19, 19)
        expected = np.zeros((19, 19), np.uint8)
        expected[: game.y_size, : game.x_size] = 1  # y rows of x points, in the grid's top-left corner
        assert (on_board == expected).all()
        assert not policy[:, expected == 0].any()
    assert any(x != y for x, y in shapes)


def test_territory_games_play_through_the_encore_and_their_rows_validate(tmp_path):
    settings = FAST.replace(
        board_sizes=(5,),
        board_size_weights=(1.0,),
        full_search_prob=1.0,
        end_when_all_pass_alive=False,
        rules=RulesChoice(scoring=("TERRITORY",), button=(False,)),
    )
    _, sgfs, _ = play(tmp_path, settings, games=4, parallel=2, seed=6)
    phases_in_rows: set[float] = set()
    bonus_to_come: set[float] = set()
    through_encore = 0
    for sgf_path in sgfs:
        record = read_sgf(sgf_path.read_text())
        assert record.rules.scoring == "TERRITORY"
        game = record.to_game()
        through_encore += game.is_over and game.encore_phase == 2 and game.result.reason == "two passes"
        rows = _validated_rows(sgf_path)
        if rows is not None:
            gt = rows["globalTargetsNC"]
            phases_in_rows.update(gt[:, GT_AREA_SCORING].tolist())
            bonus_to_come.update(gt[:, GT_BONUS_POINTS].tolist())
    assert through_encore >= 1
    assert phases_in_rows == {0.0, 1.0}  # rows of the main phase and of the second encore phase
    assert len(bonus_to_come) > 2  # the stones still to be played give points


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"komi_big_stdev_prob": 0.0},
        {"komi_big_stdev_prob": 1.0, "komi_big_stdev": 0.5},
        {"komi_stdev": 0.0, "komi_big_stdev_prob": 0.0},
        {"komi_mean": 149.0},
    ],
)
def test_every_drawn_komi_lies_within_the_bounds_the_server_checks(changes):
    settings = SelfPlaySettings(**changes)
    low, high = settings.komi_bounds()
    rng = np.random.default_rng(1)
    komi = np.array([draw_komi(settings, rng) for _ in range(20000)])
    assert low <= komi.min() and komi.max() <= high
    assert komi.min() - low <= 0.6 * (high - low) / 2 + 0.5  # the bounds are not needlessly wide


def test_a_reduced_search_never_weighs_more_than_the_server_allows_for_its_visits():
    from common.data.weights import soft_resignation_weight

    settings = SelfPlaySettings(visits=600, reduced_visits_min=100)
    for x in np.linspace(-1.0, 1.0, 401):
        proportion, weight = soft_resignation_weight(
            [x] * 3,
            1.0,
            settings.reduce_visits_threshold,
            settings.reduce_visits_lookback,
            settings.reduced_visits_weight,
        )
        visits = max(
            1,
            round(settings.visits + proportion * (min(settings.reduced_visits_min, settings.visits) - settings.visits)),
        )
        low, high = settings.full_search_visits()
        assert low <= visits <= high
        assert weight <= settings.full_search_weight(visits) + 1e-12
        assert settings.full_search_weight(visits) - weight < 0.01  # and not much more


def test_groups_split_the_games_and_an_error_in_any_group_stops_the_run(tmp_path):
    summary, sgfs, _ = play(tmp_path / "two", games=6, parallel=4)
    assert summary.games == 6 and len(sgfs) == 6
    one = run_selfplay(
        NullEvaluator(), FAST, games=6, parallel=4, out_dir=tmp_path / "one", seed=5, progress=False, groups=1
    )
    assert one.games == 6
    # The same games (their numbers and starts), whichever group played them.
    assert sorted(p.name for p in (tmp_path / "one").glob("*.sgf")) == [p.name for p in sgfs]

    class Failing(NullEvaluator):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward_raw(self, spatial, glob, width):
            self.calls += 1
            if self.calls == 40:
                raise RuntimeError("the device went away")
            return super().forward_raw(spatial, glob, width)

    with pytest.raises(RuntimeError, match="the device went away"):
        run_selfplay(Failing(), FAST, games=50, parallel=4, out_dir=tmp_path / "fail", seed=5, progress=False)


def test_groups_share_the_cores_in_a_thread_safe_layer(monkeypatch):
    import numba

    from client.selfplay import run

    monkeypatch.setattr(run.os, "cpu_count", lambda: 8)
    assert run._pass_threads(1) == 8
    threads = run._pass_threads(2)
    # Four threads each, or one where the layer may not be entered from two threads at once.
    assert threads == (4 if numba.threading_layer() in ("omp", "tbb") else 1)


def test_a_driver_fed_game_by_game_waits_for_games_and_ends_when_its_feed_does():
    """A feed that has no game for a while (LATER) leaves its slots waiting, not ended; once it
    says None the run ends, with every game it handed out finished and given back."""
    import sys
    import threading

    from client.selfplay.run import LATER, GameOrder, SelfPlayDriver

    answers = {0: ["game", LATER, "game", LATER, None], 1: ["game", LATER, LATER, "game", None]}
    handed, finished = [], []
    lock = threading.Lock()

    def next_game(group: int):
        with lock:
            answer = answers[group].pop(0) if answers[group] else None
            if answer != "game":
                return answer
            handed.append(f"g{group}-{len(handed)}")
            return GameOrder(handed[-1], np.random.default_rng(len(handed)), group)

    def done(game, order):
        with lock:
            finished.append(order.game_id)
        return 1

    switch = sys.getswitchinterval()
    driver = SelfPlayDriver(NullEvaluator(), FAST, parallel=2, groups=2)
    stop = threading.Event()
    result = []
    runner = threading.Thread(target=lambda: result.append(driver.run(next_game, done, stop=stop)))
    runner.start()
    runner.join(30)
    ended = not runner.is_alive()
    stop.set()
    runner.join()
    assert ended, "the run did not end when its feed did"
    summary = result[0]
    assert sorted(finished) == sorted(handed) and len(handed) == 4
    assert summary.games == 4 and summary.rows == 4 and driver.live()["playing"] == 0
    assert sys.getswitchinterval() == switch


def _start(record) -> dict:
    return json.loads(record.comment)["start"]


def test_komi_auto_plays_the_networks_fair_komi_plus_the_draws_offset(tmp_path):
    settings = FAST.replace(komi_auto=True, komi_stdev=2.0, max_moves=8, end_when_all_pass_alive=False)
    run_selfplay(KomiAwareEvaluator(9.5), settings, games=6, parallel=3, out_dir=tmp_path, seed=3, progress=False)
    offsets = set()
    for p in sorted(tmp_path.glob("*.sgf")):
        record = read_sgf(p.read_text())
        start = _start(record)
        assert start["komi_fair"] == 9.5  # found from komi_mean 7 by the network's score
        assert record.komi == round_komi(9.5 + start["komi_drawn"] - 7.0)
        offsets.add(start["komi_drawn"] - 7.0)
    assert len(offsets) > 1  # the draw's spread is kept around the fair komi


def test_komi_auto_leaves_compensated_handicap_games_to_their_compensation(tmp_path):
    base = FAST.replace(
        board_sizes=(13,),
        board_size_weights=(1.0,),
        handicap_prob=1.0,
        komi_auto=True,
        max_moves=4,
        end_when_all_pass_alive=False,
    )
    for compensate, out in ((0.0, tmp_path / "uncompensated"), (1.0, tmp_path / "compensated")):
        settings = base.replace(handicap_compensate_komi_prob=compensate)
        run_selfplay(KomiAwareEvaluator(6.0), settings, games=2, parallel=2, out_dir=out, seed=4, progress=False)
        for p in sorted(out.glob("*.sgf")):
            record = read_sgf(p.read_text())
            start = _start(record)
            assert record.handicap == 2
            if compensate:
                assert start["komi_compensated"] and "komi_fair" not in start
            else:
                # fair for the empty board first (KataGo's komiAuto), then the stones are placed
                assert not start["komi_compensated"] and start["komi_fair"] == 6.0
                assert record.komi == round_komi(6.0 + start["komi_drawn"] - 7.0)


def test_without_komi_auto_a_game_plays_the_komi_it_drew_and_says_nothing_of_fairness(tmp_path):
    run_selfplay(
        KomiAwareEvaluator(9.5),
        FAST.replace(max_moves=6),
        games=2,
        parallel=2,
        out_dir=tmp_path,
        seed=3,
        progress=False,
    )
    for p in sorted(tmp_path.glob("*.sgf")):
        record = read_sgf(p.read_text())
        assert "komi_fair" not in _start(record) and record.komi == _start(record)["komi_drawn"]


def test_komi_auto_needs_rounds_to_find_the_fair_komi():
    with pytest.raises(SettingsError, match="komi_auto"):
        dataclasses.replace(FAST, komi_auto=True, handicap_compensation_rounds=0).validate()
