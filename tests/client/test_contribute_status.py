"""The contributing client's status: rates over the last minute, the panel and the log line, and the
tasks it reads from the server (a task it cannot read is a plain error, not a crash)."""

from __future__ import annotations

import pytest

from client.contribute.outbox import OutboxCounts
from client.contribute.status import Status, duration
from client.contribute.tasks import PROTOCOL, Fatal, Task
from tests.server import helpers


def _report(moves: int, evals: int, offered: int, **extra) -> dict:
    return {
        "device": "cpu",
        "state": "playing",
        "network": "net-1",
        "playing": 4,
        "selfplay_games": moves // 50,
        "rating_games": 1,
        "rows": 10 * moves,
        "moves": moves,
        "evals": evals,
        "offered": offered,
        "reachable": True,
        **extra,
    }


def test_rates_come_from_the_last_minute_of_every_worker():
    status = Status(server="http://s", username="alice", outbox=OutboxCounts(delivered=7, pending=2))
    status.update(0, _report(0, 0, 0))
    status.update(1, _report(0, 0, 0))
    status.sample(now=1000.0)
    status.update(0, _report(100, 900, 1000))
    status.update(1, _report(200, 1000, 1000))
    status.sample(now=1010.0)
    moves, evals, fill = status.rates()
    assert (moves, evals, fill) == (30.0, 190.0, 0.95)
    # Only the last minute counts.
    status.update(0, _report(1300, 900, 1000))
    status.sample(now=1100.0)
    assert status.rates()[0] == pytest.approx(1200 / 90)
    line = status.line()
    assert "network net-1" in line and "7 sent, 2 pending" in line and "server reachable" in line


def test_a_restarted_worker_adds_to_what_it_had_counted():
    """A worker that crashed starts again counting from zero: the totals and the rates go on from
    where they were instead of going backwards."""
    status = Status(server="http://s", username="alice")
    status.update(0, _report(1000, 9000, 10000))
    status.update(1, _report(500, 5000, 5000))
    status.sample(now=1000.0)
    status.restarted(1)
    assert status.totals()["moves"] == 1500 and status.totals()["playing"] == 4  # its games left with it
    status.update(1, _report(100, 1000, 1000))
    status.update(0, _report(1200, 10000, 11000))
    status.sample(now=1010.0)
    assert status.totals()["moves"] == 1800 and status.totals()["selfplay_games"] == 24 + 10 + 2
    assert status.rates() == (30.0, 200.0, 1.0)


def test_the_server_is_unreachable_when_any_part_found_it_so():
    status = Status(server="http://s", username="alice")
    assert status.reachable is None and "not asked yet" in status.line()
    status.update(0, _report(0, 0, 0))
    assert status.reachable is True
    status.upload_reachable = False
    assert status.reachable is False and "NOT reachable" in status.line()


def test_the_panel_renders():
    from rich.console import Console

    status = Status(server="http://s", username="alice")
    status.update(0, _report(50, 100, 100, state="downloading network net-1", in_hand=2304, in_hand_seconds=4320.0))
    console = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(status.panel())
    text = console.export_text()
    assert "worker 0" in text and "downloading network net-1" in text and "alice" in text
    assert "2304 games in hand (1h12m)" in text


def test_the_servers_announcements_show_in_the_panel_and_the_log_once(caplog):
    from rich.console import Console

    from client.contribute.tasks import announcements

    given = announcements(
        [
            {
                "message": "Maintenance [bold]at 18:00[/bold] UTC\x1b[2J",
                "link": "https://example.org/news",
                "level": "info",
            },
            {"message": 7},  # not an announcement: skipped
            "nonsense",
        ]
    )
    assert given == ("Maintenance [bold]at 18:00[/bold] UTC[2J (https://example.org/news)",)
    assert announcements(None) == () and announcements({"message": "x"}) == ()  # an older server, nonsense
    status = Status(server="http://s", username="alice")
    with caplog.at_level("INFO", logger="client.contribute.status"):
        status.update(0, _report(0, 0, 0, announcements=given))
        status.update(1, _report(0, 0, 0, announcements=given))
    assert [r.getMessage() for r in caplog.records].count(f"announcement from the server: {given[0]}") == 1
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(status.panel())
    text = console.export_text()
    assert "news" in text and "Maintenance [bold]at 18:00[/bold] UTC" in text  # shown as written, not as markup


def test_durations_read_naturally():
    assert [duration(s) for s in (5, 65, 3 * 3600 + 125, 2 * 86400 + 5 * 3600)] == ["5s", "1m05s", "3h02m", "2d05h"]


def _task(**changes) -> dict:
    body = {
        "id": "0b7e5a56-2f8a-4d1e-9a47-0f4c8c9e1a11",
        "kind": "selfplay",
        "run": "test",
        "settings": helpers.SETTINGS.to_dict(),
        "settings_version": 3,
        "games": 8,
        "network": {
            "name": "net-1",
            "is_random": False,
            "url": "http://s/api/v1/networks/net-1/file",
            "sha256": "ab" * 32,
            "bytes": 1234,
        },
    }
    body.update(changes)
    return body


def test_tasks_are_read_with_their_settings_and_networks():
    task = Task.parse(_task())
    assert task.key == ("net-1", 3) and task.games == 8 and task.settings.selfplay.visits == 12
    rating = Task.parse(
        _task(
            kind="rating",
            network=None,
            networks=[{"name": "net-1", "is_random": True}, {"name": "net-0", "is_random": True}],
        )
    )
    assert [n.name for n in rating.networks] == ["net-1", "net-0"]
    # Its lifetime is the server's expiry less its issue: this machine's clock does not matter.
    dated = Task.parse(_task(created_at="2030-01-01T00:00:00Z", expires_at="2030-01-01T06:00:00.5Z"))
    assert dated.lifetime == 6 * 3600 + 0.5 and task.lifetime is None
    assert not dated.expired(dated.received_at + 6 * 3600) and dated.expired(dated.received_at + 6 * 3600 + 1)


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"settings": {"selfplay": {"visits": "many"}}}, "selfplay.visits"),
        ({"kind": "training"}, "'training'"),
        ({"id": "not-a-uuid"}, "not-a-uuid"),
        ({"network": {"name": "bad name!"}}, "not a network name"),
        ({"kind": "rating"}, "networks"),
        ({"created_at": "2030-01-01T06:00:00Z", "expires_at": "2030-01-01T00:00:00Z"}, "not after"),
        ({"created_at": "2030-01-01T00:00:00Z", "expires_at": "soon"}, "'soon'"),
    ],
)
def test_a_task_this_client_cannot_read_is_a_plain_error(changes, words):
    with pytest.raises(Fatal) as e:
        Task.parse(_task(**changes))
    assert e.value.kind == PROTOCOL and words in e.value.message and "upgrade" in e.value.message


def test_without_a_terminal_the_status_is_a_line_once_a_minute(monkeypatch, capsys):
    import time
    import types

    from client.contribute import status as status_module

    clock = [1000.0]
    monkeypatch.setattr(status_module, "time", types.SimpleNamespace(monotonic=lambda: clock[0], time=time.time))
    status = Status(server="http://s", username="alice")
    with status_module.Display(status) as display:  # stdout is not a terminal here
        display.refresh()
        clock[0] += status_module.STATUS_LINE_SECONDS - 1
        display.refresh()
        clock[0] += 1
        status.mode = "finishing"
        display.refresh()
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["running", "finishing"]
    assert lines[1] == status.line()


def test_a_newer_release_announced_by_the_server_is_said_with_its_command_in_the_panel_and_the_line():
    from rich.console import Console

    from client.contribute.session import newer_release
    from common.protocol import CLIENT_VERSION, parse_version

    major, minor, patch = parse_version(CLIENT_VERSION)
    newer = f"{major}.{minor}.{patch + 1}"
    said = newer_release({"newest_client_version": newer, "client_upgrade": "pipx upgrade sente"})
    assert said == f"client {newer} is out (this is {CLIENT_VERSION}); upgrade: pipx upgrade sente"
    # This release or an older one, none named, or one that is no version: nothing to say.
    for newest in (CLIENT_VERSION, f"{major}.{minor}", None, "latest", 7):
        assert newer_release({"newest_client_version": newest, "client_upgrade": "x"}) is None
    assert newer_release({"newest_client_version": newer}).endswith("); upgrade")  # no command named
    status = Status(server="http://s", username="alice", upgrade=said)
    assert status.line().endswith(f"; {said}")
    console = Console(width=160, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(status.panel())
    assert f"upgrade  {said}" in console.export_text()
    plain = Status(server="http://s", username="alice")
    assert "upgrade" not in plain.line()
