"""The contributors' machines, from what their clients say when they ask for tasks: the owner's
account page lists their machines with the games of the last day and week and the evaluations per
second reported; the contributors page totals the devices by model. What one account makes up is
never a total: a device model no game stands behind is not listed, and names are shown as text."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from common import __version__
from server.distribution.machines import device_totals, installation, machines_of
from server.distribution.models import Task
from server.distribution.services import issue_task
from server.distribution.task_request import TaskRequestValues

pytestmark = pytest.mark.django_db


def ask(user, worker: str, name: str = "", device: str = "", rate: float | None = None, games=0, days_ago=0.0):
    """A task asked for ``days_ago`` days ago by a worker, ``games`` of which came back."""
    task = issue_task(
        user,
        TaskRequestValues(__version__, "", worker, ("selfplay",), 64, name, device, rate),
    )
    Task.objects.filter(pk=task.pk).update(
        games=max(task.games, games), games_received=games, created_at=timezone.now() - timedelta(days=days_ago)
    )
    return task


def test_an_accounts_machines_with_their_devices_games_and_speed(run, alice, bob):
    desk = "sente-00000000000000aa"
    ask(alice[0], f"{desk}-0", "alice-desktop", "NVIDIA GeForce RTX 3060", 5000.0, games=40, days_ago=3)
    ask(alice[0], f"{desk}-0", "alice-desktop", "NVIDIA GeForce RTX 3060", 5200.0, games=30)
    ask(alice[0], f"{desk}-1", "alice-desktop", "NVIDIA GeForce GTX 1080", 2100.0, games=20, days_ago=0.5)
    ask(alice[0], "sente-00000000000000bb-0", "laptop", "x86_64 CPU, 8 cores", None, games=5, days_ago=2)
    ask(alice[0], "sente-00000000000000cc-0", "old-box", "RTX 2070", 3000.0, games=99, days_ago=9)  # long gone
    ask(bob[0], "sente-00000000000000dd-0", "bobs-box", "RTX 4090", 20000.0, games=7)
    desktop, laptop = machines_of(alice[0])
    assert (desktop.installation, desktop.name) == (desk, "alice-desktop")
    assert desktop.devices == ["NVIDIA GeForce GTX 1080", "NVIDIA GeForce RTX 3060"]
    assert desktop.evals_per_second == 5200.0 + 2100.0  # each device's newest report
    assert (desktop.games_day, desktop.games_week) == (30 + 20, 40 + 30 + 20)
    assert (laptop.name, laptop.evals_per_second, laptop.games_day, laptop.games_week) == ("laptop", None, 0, 5)
    assert installation("sente-00000000000000aa-12") == "sente-00000000000000aa" and installation("m") == "m"

    web = Client()
    web.force_login(alice[0])
    page = web.get("/accounts/").content.decode()
    assert "alice-desktop" in page and "NVIDIA GeForce GTX 1080, NVIDIA GeForce RTX 3060" in page and "7300" in page
    assert "laptop" in page and "old-box" not in page and "bobs-box" not in page
    web.force_login(bob[0])
    assert "bobs-box" in web.get("/accounts/").content.decode()


def test_the_devices_by_model_count_only_games_that_came_back(run, alice, bob):
    from server.accounts.models import User

    ask(alice[0], "sente-a-0", "a", "RTX 3060", 5000.0, games=40)
    ask(bob[0], "sente-b-0", "b", "RTX 3060", 6000.0, games=10)
    ask(bob[0], "sente-b-1", "b", "RTX 4090", 20000.0, games=70)
    # One account makes up a hundred machines of a card no game stands behind: never listed.
    for k in range(100):
        ask(bob[0], f"sente-fake{k}-0", "fake", "RTX 9090 Ti", 1e8)
    ask(bob[0], "sente-b-2", "b", '<script>alert("x")</script>', 10.0, games=1)
    ask(bob[0], "sente-b-3", "b", "", 10.0, games=3)  # an older client: no model
    carol = User.objects.create_user("carol", "carol@example.org", "a long enough password", is_active=False)
    ask(carol, "sente-c-0", "c", "RTX 3060", 1.0, games=500)  # deactivated: not counted
    rows = {r["device_model"]: r for r in device_totals(run)}
    assert list(rows) == ["RTX 4090", "RTX 3060", '<script>alert("x")</script>']  # the most games first
    assert (rows["RTX 3060"]["devices"], rows["RTX 3060"]["games"], rows["RTX 3060"]["evals_per_second"]) == (
        2,
        50,
        5500.0,
    )
    page = Client().get("/contributors/").content.decode()
    assert "RTX 4090" in page and "RTX 9090" not in page
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
