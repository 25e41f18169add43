"""How much work the contributing client asks for (sized in time by its game rate), and how it reads
and waits out the server's Retry-After."""

from __future__ import annotations

import email.utils

import pytest

from client.contribute.retry import patiently, retry_after_seconds
from client.contribute.sizing import FILL_SECONDS, MOST_GAMES, GameRate, Sizing


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_game_rate_is_measured_over_the_last_ten_minutes():
    clock = Clock()
    rate = GameRate(min_games=4, clock=clock)
    assert rate.per_second() is None
    rate.began()
    clock.now += 5
    rate.finished()
    assert rate.per_second() is None  # not measured long enough, nor games enough
    other = Clock()
    quick = GameRate(min_games=4, clock=other)  # fast games: as many finished as are played at once
    quick.began()
    other.now += 2
    for _ in range(4):
        quick.finished()
    assert quick.per_second() == 2.0
    clock.now += 15
    for _ in range(9):
        rate.finished()
    assert rate.per_second() == pytest.approx(10 / 20)  # since the first game began
    clock.now += 580
    for _ in range(290):
        rate.finished()
    assert rate.per_second() == pytest.approx(300 / 600)
    clock.now += 300  # only the last ten minutes count: the first 10 games are out of the window
    assert rate.per_second() == pytest.approx(290 / 600)


def test_tasks_are_ten_minutes_of_play_and_the_reserve_two_hours():
    """A GPU worker of 64 games at once finishing 0.2 games a second (19x19) asks for 120 games a task
    and keeps 1440 in hand; at 10 games a second (fast 9x9) tasks are capped at the server's limit,
    and 256-game tasks at 10 games/s are 2.3 requests a minute. Before the rate is known: tasks of four
    times the games played at once, asked for only when the games in hand run out."""
    gpu = Sizing(parallel=64)
    assert gpu.task_games(None) == 256 and gpu.reserve_games(None) == 64
    assert gpu.task_games(0.2) == 120 and gpu.reserve_games(0.2) == 1440
    assert gpu.task_games(10.0) == MOST_GAMES and gpu.reserve_games(10.0) == 72_000
    assert gpu.task_games(10.0, most=100) == 100
    assert 60 * 10.0 / gpu.task_games(10.0) < 2.4
    assert gpu.task_games(0.01) == 64  # at least the games played at once
    # The reserve is at most half a task's lifetime: its games are played well before they expire.
    assert gpu.reserve_games(1.0, lifetime=3600) == 1800
    assert gpu.urgent(63) and not gpu.urgent(64)
    # Filling the reserve: at most one request every FILL_SECONDS, 6 a minute per worker.
    assert 60 / FILL_SECONDS <= 6


def test_retry_after_is_read_as_seconds_or_a_date():
    assert retry_after_seconds("30") == 30.0
    assert retry_after_seconds(" 2.5 ") == 2.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None and retry_after_seconds("") is None
    when = email.utils.formatdate(1_000_090.0, usegmt=True)
    assert retry_after_seconds(when, now=1_000_000.0) == pytest.approx(90.0)


class Busy(Exception):
    def __init__(self, retry_after):
        super().__init__("busy")
        self.retry_after = retry_after


def test_a_call_waits_what_the_server_asks_within_its_patience():
    waits = []
    answers = iter([Busy(3.0), Busy(4.0), "ok"])

    def call():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert patiently(call, sleep=waits.append) == "ok" and waits == [3.0, 4.0]
    with pytest.raises(Busy):  # more than its patience: the server's answer stands
        patiently(lambda: (_ for _ in ()).throw(Busy(60.0)), patience=100, sleep=waits.append)
    assert waits == [3.0, 4.0, 60.0]
    with pytest.raises(ValueError):  # anything without a wait is raised at once
        patiently(lambda: int("x"), sleep=waits.append)
