"""Finishing (the first Ctrl-C or SIGTERM): once it is set no game starts, self-play (forks of finished
games included), played on or rating, and the games in play at that moment all end; the signal is
acted on at once, whatever the main thread is doing; a worker outlives no supervisor."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from client.contribute import worker as worker_module
from client.contribute.signals import SignalActions
from client.contribute.worker import Control, supervisor_alive
from client.search.engine import NullEvaluator
from client.selfplay.run import GameOrder, SelfPlayDriver
from tests.server.helpers import RATING, SELFPLAY

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel

PARALLEL = 8
SIGNAL_AFTER = 3 * PARALLEL  # games started before the signal
MOST_GAMES = SIGNAL_AFTER + 4 * PARALLEL  # the feed's own end, should games start after the signal


class Games:
    """Games started and ended through a Control, as the worker's feeds start them, and a signal
    from another thread once SIGNAL_AFTER have started: what was started and ended then."""

    def __init__(self) -> None:
        self.control = Control(multiprocessing.get_context("spawn"))
        self.started: list[str] = []
        self.ended: list[str] = []
        self.lock = threading.Lock()
        self.at_signal: tuple[int, int] | None = None  # (started, ended) once finish() returned
        self.signaller = threading.Thread(target=self._signal, daemon=True)
        self.signaller.start()

    def start(self) -> str | None:
        if len(self.started) >= MOST_GAMES:
            return None

        def take() -> str:
            with self.lock:
                self.started.append(f"g{len(self.started)}")
                return self.started[-1]

        return self.control.start_game(take)

    def end(self, name: str) -> None:
        with self.lock:
            self.ended.append(name)

    def _signal(self) -> None:
        while len(self.started) < SIGNAL_AFTER:
            time.sleep(0.001)
        self.control.finish()
        with self.lock:
            self.at_signal = (len(self.started), len(self.ended))

    def check(self) -> None:
        self.signaller.join(10)
        assert self.at_signal is not None
        started, ended = self.at_signal
        in_play = started - ended
        assert in_play > 0
        assert len(self.started) == started, "games started after the signal"
        assert len(self.ended) - ended == in_play, "the games in play at the signal did not all end after it"
        assert sorted(self.ended) == sorted(self.started)


def test_no_self_play_game_starts_after_finishing_not_even_a_fork():
    """Early forks and side positions on: finished games leave forks for the next games to start from
    (and side positions searched before they end); after the signal the forks left stay unplayed."""
    games = Games()
    settings = replace(SELFPLAY, early_fork_prob=0.5, early_fork_move_prop=0.1, side_position_prob=0.2)
    driver = SelfPlayDriver(NullEvaluator(), settings, PARALLEL, seed=3, groups=2)

    def next_game(group: int) -> GameOrder | None:
        name = games.start()
        return None if name is None else GameOrder(name, np.random.default_rng(int(name[1:])), name)

    def finished(game, order: GameOrder) -> None:
        games.end(order.game_id)

    summary = driver.run(next_game, finished)
    games.check()
    assert summary.games == len(games.started)
    assert summary.forked > 0 and summary.side_searches > 0  # forks were played before the signal
    assert sum(len(g.forks) for g in driver.groups) > 0  # and some were left unplayed after it


def test_no_rating_game_starts_after_finishing():
    from client.match.run import run_match

    games = Games()
    names: list[str] = []

    def more() -> bool:
        name = games.start()
        if name is not None:
            names.append(name)
        return name is not None

    def on_game(game_name: str, sgf: bytes) -> None:
        games.end(names[int(game_name.rsplit("-", 1)[1])])

    summary = run_match(
        [NullEvaluator(), NullEvaluator()],
        ("a", "b"),
        RATING,
        games=10_000,
        parallel=PARALLEL,
        out_dir=None,
        on_game=on_game,
        more=more,
    )
    games.check()
    assert summary.games == len(games.started)


def test_start_game_is_the_one_check_and_finish_waits_for_a_start_under_way():
    control = Control(multiprocessing.get_context("spawn"), games=5)
    assert control.start_game(lambda: "a") == "a"
    order: list[str] = []

    def slow_take() -> str:
        order.append("take begins")
        time.sleep(0.3)
        order.append("take ends")
        return "b"

    starter = threading.Thread(target=control.start_game, args=(slow_take,))
    starter.start()
    while not order:
        time.sleep(0.001)
    control.finish()
    order.append("finished")
    starter.join()
    assert order == ["take begins", "take ends", "finished"]
    assert control.start_game(lambda: pytest.fail("take called after finish")) is None
    assert control.done() and not control.budget_spent()
    # Stopping, and the games asked for all started, refuse as well.
    stopped = Control(multiprocessing.get_context("spawn"))
    stopped.stopping.set()
    assert stopped.start_game(lambda: pytest.fail("take called while stopping")) is None
    counted = Control(multiprocessing.get_context("spawn"), games=1)
    assert counted.start_game(lambda: 1) == 1 and counted.finishing.is_set() and counted.budget_spent()


def test_finish_does_not_hang_on_a_lock_never_given_back(monkeypatch):
    monkeypatch.setattr(worker_module, "FINISH_WAIT_SECONDS", 0.2)
    control = Control(multiprocessing.get_context("spawn"))
    control.games_left.get_lock().acquire()  # as a worker killed inside start_game leaves it
    control.finish()
    assert control.finishing.is_set()


def test_a_signal_is_acted_on_while_the_main_thread_is_blocked():
    """The action runs in its own thread as the signal arrives: here it frees the main thread, blocked
    in a wait no loop of its own could leave to look at a noted signal."""
    blocked = threading.Lock()
    blocked.acquire()
    before = signal.getsignal(signal.SIGUSR1)
    actions = SignalActions({signal.SIGUSR1: blocked.release})
    assert actions.start()
    try:
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        assert blocked.acquire(timeout=60)
    finally:
        actions.close()
    assert signal.getsignal(signal.SIGUSR1) is before
    assert signal.set_wakeup_fd(-1) == -1  # the wakeup descriptor of before (none) is back


def _grandchild(path: str) -> None:
    """Wait for the parent to end, then write whether this process still sees it alive."""
    deadline = time.monotonic() + 60
    while supervisor_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    with open(path, "w") as f:
        f.write("alive" if supervisor_alive() else "gone")


def _child(path: str) -> None:
    process = multiprocessing.get_context("spawn").Process(target=_grandchild, args=(path,))
    process.start()
    os._exit(0)  # gone at once, as a supervisor killed with -9 is


def test_a_worker_sees_its_supervisor_gone(tmp_path):
    assert supervisor_alive()  # the test's own process: nobody of ours started it
    path = tmp_path / "seen"
    child = multiprocessing.get_context("spawn").Process(target=_child, args=(str(path),))
    child.start()
    child.join(60)
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.read_text() == "gone"
