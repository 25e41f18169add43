"""The targets territory games' rows take from the game, against KataGo's own rows of its territory
self-play: the area-scoring flag of each encore phase, the bonus points still to come, the final
score, ownership and seki."""

from __future__ import annotations

import re

import numpy as np
import pytest

from common.data.rows import area_scoring_flag, bonus_points_target, game_hash_chunks
from common.data.schema import (
    DATA_LEN,
    GT_AREA_SCORING,
    GT_BONUS_POINTS,
    GT_FINAL_SCORE,
    GT_GAME_FINISHED,
    GT_GAME_HASH,
    GT_OWNERSHIP_WEIGHT,
    GT_TURN_INDEX,
    VT_OWNERSHIP,
    VT_SEKI,
)
from common.go.game import Game
from common.go.geometry import BLACK, WHITE
from common.go.sgf import read_sgf

ROW_GAMES = 16  # the first games of the .sgfs are those of the .npz's rows


def white_view(owners: np.ndarray) -> np.ndarray:
    return (owners == WHITE).astype(np.int8) - (owners == BLACK).astype(np.int8)


def state_of(game: Game) -> tuple[int, int, float]:
    """What a row's targets take from the position before its move."""
    return game.to_move, game.encore_phase, game.white_bonus


@pytest.fixture(scope="module")
def golden(shared):
    base = shared / "golden" / "katago_territory_selfplay_sample"
    lines = [line for line in base.with_suffix(".sgfs").read_text().splitlines() if line.strip()]
    with np.load(base.with_suffix(".npz")) as npz:
        rows = {name: npz[name] for name in ("globalTargetsNC", "valueTargetsNCHW")}
    return lines[:ROW_GAMES], rows


def test_katagos_territory_rows_hold_what_our_replay_of_their_games_gives(golden):
    lines, rows = golden
    gt, vt = rows["globalTargetsNC"], rows["valueTargetsNCHW"]
    # KataGo also writes rows of side positions, one move off the game's line (sidePositionProb), with
    # game-finished 0 and no outcome targets; our self-play writes none.
    on_line = gt[:, GT_GAME_FINISHED] == 1
    assert on_line.sum() == 212
    checked = np.zeros(gt.shape[0], bool)
    phases_seen: set[int] = set()
    bonus_seen: set[float] = set()
    for line in lines:
        record = read_sgf(line)
        found = re.search(r"gameHash=([0-9A-F]{32})", record.comment or "")
        assert found, "the golden record names its game hash"
        mine = on_line & (gt[:, GT_GAME_HASH] == np.float32(game_hash_chunks(int(found.group(1), 16)))).all(axis=1)
        turns: dict[int, tuple[int, int, float]] = {}
        game = record.to_game(visit=lambda game, played, turns=turns: turns.update({played: state_of(game)}))
        if not game.is_over:
            assert game.end_if_all_pass_alive()  # KataGo's self-play stopped it there
        assert game.result.sgf() == record.result
        score = game.result.score
        # KataGo draws each game's draw value near 0.5; an integer result moves its score target by
        # that value less 0.5 (ScoreValue::whiteScoreDrawAdjust), ours by 0.
        draw_slack = 0.5 if float(game.komi).is_integer() else 0.0
        owners = white_view(game.ownership("scoring"))
        full = white_view(game.ownership("katago"))
        seki = np.where((full != 0) & (owners == 0), full, 0)
        for r in np.flatnonzero(mine):
            player, phase, bonus = turns[int(gt[r, GT_TURN_INDEX])]
            sign = 1 if player == WHITE else -1
            where = (record.rules.to_compact(), int(gt[r, GT_TURN_INDEX]))
            assert gt[r, GT_AREA_SCORING] == area_scoring_flag(record.rules.scoring, phase), where
            assert gt[r, GT_BONUS_POINTS] == np.float32(bonus_points_target(player, game.white_bonus, bonus)), where
            assert gt[r, GT_OWNERSHIP_WEIGHT] == 1.0
            assert abs(gt[r, GT_FINAL_SCORE] - sign * score) <= draw_slack, where
            ownership = np.zeros((DATA_LEN, DATA_LEN), np.int8)
            ownership[: game.y_size, : game.x_size] = sign * owners
            np.testing.assert_array_equal(vt[r, VT_OWNERSHIP], ownership, err_msg=str(where))
            ownership[: game.y_size, : game.x_size] = sign * seki
            np.testing.assert_array_equal(vt[r, VT_SEKI], ownership, err_msg=str(where))
            phases_seen.add(phase)
            bonus_seen.add(float(gt[r, GT_BONUS_POINTS]))
            checked[r] = True
    assert (checked == on_line).all()
    assert phases_seen == {0, 1, 2} and len(bonus_seen) > 2
