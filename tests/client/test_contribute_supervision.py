"""The contributing client's hold on its workers: crashed workers are started again within a budget
of restarts over a window of time, stopping at once waits for them until a deadline, and the status
names the workers' state."""

from __future__ import annotations

import multiprocessing

from client.contribute.supervision import RESTART_WINDOW, RESTARTS_ALLOWED, RestartBudget, StopDeadline
from client.contribute.worker import Control


def test_restarts_are_allowed_up_to_the_budget_within_the_window():
    budget = RestartBudget(allowed=3, window=600.0)
    assert [budget.spend(t) for t in (0.0, 10.0, 20.0)] == [True, True, True]
    assert not budget.spend(30.0)  # a fourth within ten minutes: the client gives up
    assert (RESTARTS_ALLOWED, RESTART_WINDOW) == (3, 600.0)


def test_restarts_older_than_the_window_no_longer_count():
    budget = RestartBudget(allowed=2, window=100.0)
    assert budget.spend(0.0) and budget.spend(50.0)
    assert budget.spend(100.0)  # the first fell out of the window as this one came
    assert not budget.spend(120.0)  # 50, 100 and 120: three within it
    assert not budget.spend(199.0)  # a refused restart counts too: 100, 120 and 199
    assert budget.spend(300.0)


def test_stopping_waits_for_the_workers_until_its_deadline():
    deadline = StopDeadline(seconds=15.0)
    assert not deadline.passed(1e9)  # not stopping yet
    assert deadline.left(1000.0) == 15.0
    deadline.start(1000.0)
    deadline.start(1010.0)  # seen again later: the wait still began when stopping began
    assert deadline.at == 1015.0
    assert not deadline.passed(1015.0) and deadline.passed(1015.5)
    assert deadline.left(1005.0) == 10.0
    assert deadline.left(1020.0) == 0.0


def test_the_status_names_the_workers_state_stopping_first():
    control = Control(multiprocessing.get_context("spawn"))
    assert control.mode() == "running"
    control.paused.set()
    assert control.mode() == "paused"
    control.finishing.set()
    assert control.mode() == "finishing"
    control.stopping.set()
    assert control.mode() == "stopping"
