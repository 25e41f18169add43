"""The volunteer's options of ``sente contribute`` that the workers and the supervisor act on: a
number of games (--games), one kind of task (--only), the hours to play (--hours), the share of
the GPU (--gpu-share), the SGF copies (--sgf-dir), the watch file (--watch-file) and how often it looks
at the server's run (--look-seconds)."""

from __future__ import annotations

import datetime
import multiprocessing
import queue
import threading

import numpy as np
import pytest

from client.contribute.netcache import NetworkCache
from client.contribute.options import DEFAULT_PARALLEL_CPU, DEFAULT_PARALLEL_GPU, default_parallel
from client.contribute.server import ServerClient
from client.contribute.sizing import Sizing
from client.contribute.supervision import Pauses
from client.contribute.tasks import MAX_RATING_BACKLOG, TaskQueue
from client.contribute.worker import Control, watcher
from client.search.engine import NullEvaluator
from client.selfplay.run import GameOrder, SelfPlayDriver
from common.go.sgf import read_sgf
from common.settings import SelfPlaySettings

CONTEXT = multiprocessing.get_context("spawn")


def test_the_games_asked_for_start_once_each_and_the_last_one_finishes_the_workers():
    control = Control(CONTEXT, games=3)
    started = [control.start_game(lambda: "game") for _ in range(2)]
    assert started == ["game", "game"] and not control.finishing.is_set()
    assert control.start_game(lambda: None) is None  # nothing to start: nothing spent
    assert control.start_game(lambda: "game") == "game" and control.finishing.is_set() and control.budget_spent()
    taken = []
    assert control.start_game(lambda: taken.append(1)) is None and taken == []  # not even asked
    unlimited = Control(CONTEXT)
    assert all(unlimited.start_game(lambda: 1) for _ in range(1000)) and not unlimited.finishing.is_set()
    assert not unlimited.budget_spent()


def test_workers_in_threads_start_exactly_the_games_asked_for():
    control = Control(CONTEXT, games=50)
    counts = [0] * 4

    def play(k: int) -> None:
        while control.start_game(lambda: 1) is not None:
            counts[k] += 1

    threads = [threading.Thread(target=play, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(counts) == 50


def test_one_kind_of_task_is_asked_for_and_a_full_rating_backlog_stops_the_asking(tmp_path):
    server = ServerClient("http://127.0.0.1:9", "t")
    cache = NetworkCache(tmp_path)
    both = TaskQueue(server, cache, Sizing(4))
    assert both._kinds_wanted() == ("selfplay", "rating") and both._need()
    rating = TaskQueue(server, cache, Sizing(4), kinds=("rating",))
    assert rating._kinds_wanted() == ("rating",) and rating._need()
    rating._rating.extend([object()] * MAX_RATING_BACKLOG)
    assert rating._kinds_wanted() == () and not rating._need()
    selfplay = TaskQueue(server, cache, Sizing(4), kinds=("selfplay",))
    assert selfplay._kinds_wanted() == ("selfplay",)


def test_the_hours_to_play_pause_and_resume_the_workers_with_a_pause_by_hand_beside_them():
    paused, finishing = CONTEXT.Event(), CONTEXT.Event()
    pauses = Pauses(paused, finishing.is_set, "22-7")
    day = datetime.datetime(2026, 11, 27, 12, 0)
    pauses.clock(day)
    assert paused.is_set()
    pauses.clock(day.replace(hour=22))
    assert not paused.is_set()
    pauses.hand(True)  # typed pause within the hours
    assert paused.is_set()
    pauses.clock(day.replace(hour=23))
    assert paused.is_set()  # the hours do not undo a pause by hand
    pauses.hand(False)
    assert not paused.is_set()
    pauses.clock(day.replace(hour=7, minute=0))
    assert paused.is_set()
    finishing.set()  # Ctrl-C: the games in play end, outside the hours too
    pauses.apply()
    assert not paused.is_set()
    always = Pauses(CONTEXT.Event(), lambda: False)
    always.clock(day)
    assert not always.paused.is_set()


def test_the_share_of_the_gpu_scales_its_games_at_once():
    assert default_parallel("cuda:0", None) == DEFAULT_PARALLEL_GPU
    assert default_parallel("cuda:1", 0.5) == DEFAULT_PARALLEL_GPU // 2
    assert default_parallel("mps", 0.001) == 1
    assert default_parallel("cpu", 0.5) == DEFAULT_PARALLEL_CPU


@pytest.mark.kernels
def test_the_watch_file_follows_one_game_move_by_move(tmp_path):
    settings = SelfPlaySettings(board_sizes=(7,), board_size_weights=(1.0,), visits=4, cheap_visits=2, max_moves=40)
    driver = SelfPlayDriver(NullEvaluator(), settings, parallel=3, seed=1, groups=1)
    seen: list[tuple[str, int]] = []
    text_file, sgf_file = tmp_path / "watch.txt", tmp_path / "watch.sgf"
    as_text, as_sgf = watcher(text_file, "net-1"), watcher(sgf_file, "net-1")

    def on_move(game, order, first: bool) -> None:  # as the worker's: the first slot's game is watched
        if first:
            seen.append((game.game_id, game.game.num_moves))
            as_text(game)
            as_sgf(game)

    orders = iter(range(4))

    def next_game(group):
        k = next(orders, None)
        return None if k is None else GameOrder(f"g{k}", np.random.default_rng(k), None)

    driver.run(next_game, lambda game, order: None, on_move=on_move)
    watched = dict.fromkeys(g for g, _ in seen)
    assert len(watched) >= 2  # the first slot's games, one after another
    for game_id in watched:
        moves = [n for g, n in seen if g == game_id]
        assert moves == list(range(1, len(moves) + 1))  # every move once, in order
    last_id, last_moves = seen[-1]
    assert text_file.read_text().startswith(f"game {last_id}, network net-1, move {last_moves}\n")
    assert " A B C D E F G" in text_file.read_text()
    assert len(read_sgf(sgf_file.read_bytes()).moves) >= 1


@pytest.mark.parametrize("seconds", ["0", "-5", "nan"])
def test_a_look_interval_that_is_not_positive_is_refused_at_start(tmp_path, capsys, seconds):
    from client.__main__ import main

    config, data = tmp_path / "client.json", tmp_path / "data"
    status = main(["contribute", "--config", str(config), "--data-dir", str(data), "--look-seconds", seconds])
    assert status == 2
    assert f"--look-seconds: {float(seconds)} must be positive" in capsys.readouterr().err
    assert not config.exists()  # nothing written


def test_the_look_interval_reaches_each_workers_task_queue(tmp_path):
    from client.__main__ import build_parser
    from client.contribute.tasks import LOOK_SECONDS
    from client.contribute.worker import Worker, WorkerSpec

    assert build_parser().parse_args(["contribute"]).look_seconds == LOOK_SECONDS
    assert build_parser().parse_args(["contribute", "--look-seconds", "2"]).look_seconds == 2.0
    spec = WorkerSpec(0, "cpu", "http://127.0.0.1:9", "t", "i", 2, str(tmp_path), look_seconds=2.0)
    assert Worker(spec, Control(CONTEXT), queue.Queue()).queue.look_seconds == 2.0
