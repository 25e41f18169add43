"""Games in play saved to disk and played on (client.contribute.inplay): a game saved mid-way and
played on in another driver finishes with the same turns up to the save and valid rows; the
files are claimed by one worker each; foreign or damaged files are set aside."""

from __future__ import annotations

import pickle
import threading
import uuid
import zlib

import numpy as np
import pytest

from client.contribute.inplay import RESUME, UNREADABLE, InPlay, gather
from client.search.engine import NullEvaluator
from client.selfplay.run import GameOrder, SelfPlayDriver
from common.data.rows import game_rows_npz
from common.data.validate import validate_rows
from common.settings import SelfPlaySettings

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

SETTINGS = SelfPlaySettings(board_sizes=(7,), board_size_weights=(1.0,), visits=6, cheap_visits=3, max_moves=60)
TASK_ID = str(uuid.UUID(int=7))


class FakeTask:
    """What a saved game keeps of its task (the worker's Task pickles the same way)."""

    id = TASK_ID
    key = ("net", 1)


def play(seed: int, stop_at: int | None = None, resume=None):
    """One game on a one-slot driver; stopped after move ``stop_at`` (the game saved then, as the
    worker saves it) or played to its end. (finished game, saved bytes)."""
    driver = SelfPlayDriver(NullEvaluator(), SETTINGS, parallel=1, seed=seed, groups=1)
    stop = threading.Event()
    saved: list[bytes] = []
    done: list = []
    orders = iter([resume or GameOrder(f"{uuid.UUID(TASK_ID).hex}-000", np.random.default_rng(seed))])

    def on_move(game, order, first):
        if stop_at is not None and game.game.num_moves == stop_at:
            saved.append(pickle.dumps(game, protocol=5))
            stop.set()

    driver.run(lambda g: next(orders, None), lambda game, order: done.append((game, order)), stop, on_move=on_move)
    return (done[0] if done else None), (saved[0] if saved else None)


def test_a_saved_game_is_played_on_to_the_end_with_its_turns_so_far(tmp_path):
    (whole, _), _ = play(seed=3)
    none, saved = play(seed=3, stop_at=12)
    assert none is None and saved is not None  # stopped mid-game: nothing finished
    game = pickle.loads(saved)
    assert game.encoder is None and game.game.num_moves == 12
    (resumed, order2), _ = play(seed=99, resume=GameOrder(game.game_id, game.rng, None, resume=game))
    assert resumed is game and resumed.game.is_over
    # The turns before the save are the uninterrupted game's (the same seed); the rest is new play.
    before = whole.turns[:12]  # a record per move
    assert len(before) == 12 and len(resumed.turns) > 12
    for a, b in zip(before, resumed.turns, strict=False):
        assert a.move == b.move and a.weight == b.weight and np.array_equal(a.spatial, b.spatial)
        assert (a.policy_target is None) == (b.policy_target is None)
        assert a.policy_target is None or np.array_equal(a.policy_target, b.policy_target)
    npz, rows = game_rows_npz(resumed.training_record(), order2.rng)
    path = tmp_path / "rows.npz"
    path.write_bytes(npz)
    assert rows > 0 and validate_rows(path).ok


def test_saved_games_are_gathered_and_claimed_once_each(tmp_path):
    _, saved = play(seed=5, stop_at=6)
    game = pickle.loads(saved)
    first, second = InPlay(tmp_path, 0), InPlay(tmp_path, 1)
    first.save(FakeTask(), game)
    assert first.kept_by_task() == {TASK_ID: 1}
    assert gather(tmp_path) == 1 and first.kept_by_task() == {}
    claimed = second.claim_all()
    assert [s.game.game_id for s in claimed] == [game.game_id] and claimed[0].task.id == TASK_ID
    assert first.claim_all() == [] and second.kept_by_task() == {TASK_ID: 1}
    second.drop(game.game_id)
    assert second.kept_by_task() == {}
    # One worker's files only, before it starts again.
    first.save(FakeTask(), game)
    second.save(FakeTask(), game)
    assert gather(tmp_path, 1) == 1 and first.kept_by_task() == {TASK_ID: 1}


def test_files_of_another_build_or_damaged_are_set_aside(tmp_path):
    store = InPlay(tmp_path, 0)
    waiting = tmp_path / "inplay" / RESUME
    waiting.mkdir(parents=True)
    (waiting / "a.ckpt").write_bytes(b"not a checkpoint")
    other = {"build": "0" * 16, "task": FakeTask(), "game": None}
    (waiting / "b.ckpt").write_bytes(zlib.compress(pickle.dumps(other)))
    assert store.claim_all() == []
    assert sorted(p.name for p in (tmp_path / "inplay" / UNREADABLE).iterdir()) == ["a.ckpt", "b.ckpt"]
