"""The learning experiment's curve against GNU Go: which network each checkpoint plays, a network
played once for the checkpoints it is the network of, the win rates' intervals, the report's JSON
and Markdown (with the machine's load), the games at the match visits stored as the run's anchor
games, and the command's refusal of bad options. (The games themselves:
tests/e2e/test_experiment.py.)"""

from __future__ import annotations

import json
import time

import pytest
from django.core.management import CommandError, call_command

from common.elo import wilson_interval
from server.platform import curve
from server.platform.demo import demo_settings
from server.platform.experiment import Generation, Report, settings_changed, write_report
from server.platform.processes import LoadMeter


def _gen(name: str, minutes: float | None) -> Generation:
    return Generation(name, elo=None, elo_se=None, games=0, train_step=0, rows_seen=0, minutes=minutes)


GENERATIONS = [_gen("random", None), _gen("g1", 2.1), _gen("g2", 25.0), _gen("g3", 30.0), _gen("g4", 58.4)]


def test_each_checkpoint_plays_the_network_accepted_last_before_it():
    points = curve.checkpoints(GENERATIONS, 30, 95.2)
    assert [(p.minutes, p.network, p.end) for p in points] == [
        (30, "g3", False),  # accepted at minute 30 exactly: the run played it from then on
        (60, "g4", False),
        (90, "g4", False),
        (95.2, "g4", True),
    ]
    early = curve.checkpoints(GENERATIONS, 2, 5)
    assert [(p.minutes, p.network) for p in early] == [(2, "random"), (4, "g1"), (5, "g4")]


def test_a_checkpoint_in_the_last_minute_is_the_end():
    assert [p.minutes for p in curve.checkpoints(GENERATIONS, 30, 60.4)] == [30, 60.4]
    assert [p.minutes for p in curve.checkpoints(GENERATIONS, 30, 61.0)] == [30, 60, 61.0]
    assert [p.minutes for p in curve.checkpoints(GENERATIONS, 30, 12)] == [12]


def test_the_order_of_acceptance_decides_not_the_order_of_creation():
    gens = [_gen("random", None), _gen("made-first", 40.0), _gen("made-second", 20.0)]
    assert [p.network for p in curve.checkpoints(gens, 30, 50)] == ["made-second", "made-first"]
    with pytest.raises(ValueError, match="every 0 minutes: must be positive"):
        curve.checkpoints(gens, 0, 50)


def test_a_network_repeated_at_checkpoints_plays_once_with_the_most_games():
    points = curve.checkpoints(GENERATIONS, 30, 95.2)  # g3, g4, g4, g4 (the end)
    settings = [curve.Setting(1, 48), curve.Setting(5, 48), curve.Setting(1, 192)]
    todo = curve.plan(points, settings, games=20, end_games=40)
    assert todo == {
        ("g3", curve.Setting(1, 48)): 20,
        ("g3", curve.Setting(5, 48)): 20,
        ("g3", curve.Setting(1, 192)): 20,
        ("g4", curve.Setting(1, 48)): 40,
        ("g4", curve.Setting(5, 48)): 40,
        ("g4", curve.Setting(1, 192)): 40,
    }
    results = {key: curve.Played(games, wins=games // 2 - 3, draws=1) for key, games in todo.items()}
    rows = curve.rows(points, settings, results)
    assert len(rows) == 12
    g4 = [r for r in rows if r["network"] == "g4" and r["level"] == 1 and r["visits"] == 48]
    assert [r["minutes"] for r in g4] == [60, 90, 95.2] and [r["end"] for r in g4] == [False, False, True]
    assert all(r["games"] == 40 and r["wins"] == 17 and r["draws"] == 1 for r in g4)
    first = rows[0]
    assert first == {
        "minutes": 30,
        "network": "g3",
        "opponent": "GNU Go level 1",
        "level": 1,
        "visits": 48,
        "games": 20,
        "wins": 7,
        "draws": 1,
        "win_rate": 0.35,
        "low": pytest.approx(0.1812, abs=1e-4),
        "high": pytest.approx(0.5671, abs=1e-4),
        "end": False,
    }


def test_the_wilson_interval_on_known_values():
    assert wilson_interval(10, 20) == pytest.approx((0.2993, 0.7007), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(20, 20) == pytest.approx((0.8389, 1.0), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="wins 21 of 20 games"):
        wilson_interval(21, 20)


def _row(minutes, network, level, visits, wins, games=20, end=False):
    played = {(network, curve.Setting(level, visits)): curve.Played(games, wins, 0)}
    point = curve.Checkpoint(minutes, network, end)
    return curve.rows([point], [curve.Setting(level, visits)], played)[0]


def test_the_first_checkpoint_to_win_half_against_a_level():
    rows = [
        _row(30, "g3", 1, 48, wins=9),
        _row(30, "g3", 1, 192, wins=15),  # more visits: not the one asked about
        _row(30, "g3", 5, 48, wins=12),  # another level
        _row(60, "g4", 1, 48, wins=10),
        _row(90, "g5", 1, 48, wins=16),
    ]
    assert curve.reached_half(rows, 1, 48) == 60
    assert curve.reached_half(rows[:3], 1, 48) is None
    assert curve.reached_half(rows, 5, 48) == 30


VERSUS_GNUGO = {
    "network": "g4",
    "opponent": "GNU Go level 1",
    "games": 40,
    "wins": 22,
    "win_rate": 0.55,
    "wins_as_black": 10,
    "wins_as_white": 12,
    "visits": 48,
    "draws": 0,
    "openings": 2,
    "distinct_games": 40,
}


def _report() -> Report:
    report = Report(
        run="demo",
        board=9,
        architecture="tiny",
        minutes=61.5,
        machine="2 CPU cores (x86_64)",
        generations=GENERATIONS,
        versus_gnugo=dict(VERSUS_GNUGO),
    )
    report.curve = [
        _row(30, "g3", 1, 48, wins=4),
        _row(30, "g3", 1, 192, wins=7),
        _row(60, "g4", 1, 48, wins=9),
        _row(61.5, "g4", 1, 48, wins=22, games=40, end=True),
    ]
    report.reached_half = {"level": 1, "visits": 48, "minutes": curve.reached_half(report.curve, 1, 48)}
    report.anchors = [{"name": "GNU Go level 1", "level": 1, "elo": 812.4, "ci95": 96.0, "games": 100}]
    report.load = {
        "platform": {"mean": 3.04, "min": 2.61, "max": 3.3, "samples": 123},
        "matches": {"mean": 2.1, "min": 1.9, "max": 2.45, "samples": 40},
    }
    report.endings = {
        "move_limit": 243,
        "random": {"games": 434, "at_limit": 62, "no_result": 60, "drawn": 0},
        "trained": {"games": 18417, "at_limit": 6, "no_result": 6, "drawn": 307},
    }
    return report


def test_the_report_keeps_its_keys_and_adds_the_curve(tmp_path):
    write_report(_report(), tmp_path)
    data = json.loads((tmp_path / "report.json").read_text())
    assert {"board", "minutes", "generations", "versus_random", "versus_uniform", "versus_gnugo"} <= set(data)
    assert data["versus_gnugo"] == VERSUS_GNUGO
    assert data["board"] == 9 and data["generations"][3]["name"] == "g3"
    keys = {"minutes", "network", "opponent", "level", "visits", "games", "wins", "draws", "win_rate", "low", "high"}
    assert all(keys <= set(row) for row in data["curve"]) and len(data["curve"]) == 4
    end = data["curve"][-1]
    assert end["end"] and end["games"] == 40 and end["win_rate"] == 0.55
    assert end["low"] == pytest.approx(wilson_interval(22, 40)[0]) and end["high"] < 1
    assert data["reached_half"] == {"level": 1, "visits": 48, "minutes": 61.5}
    assert data["anchors"][0]["elo"] == 812.4 and data["curve_note"] is None
    assert data["load"]["platform"] == {"mean": 3.04, "min": 2.61, "max": 3.3, "samples": 123}

    text = (tmp_path / "report.md").read_text()
    assert (
        "- the machine's load (1-minute average; mean, range): while the platform ran 3.0 (2.6-3.3, 123 "
        "readings); during the matches 2.1 (1.9-2.5, 40 readings)" in text
    )
    assert (
        "- self-play games and the move limit (243 moves): of the random network's 434, 62 (14.29%) reached "
        "the limit, 60 (13.82%) ended without a result and 0 (0.00%) were drawn; of the trained networks' "
        "18,417, 6 (0.03%) reached the limit, 6 (0.03%) ended without a result and 307 (1.67%) were drawn" in text
    )
    assert data["endings"]["trained"]["drawn"] == 307
    assert "## The learning curve against GNU Go" in text
    assert "| minutes | network | opponent | visits | games | won | drawn | win rate (95%) |" in text
    assert "| 30 | g3 | GNU Go level 1 | 48 | 20 | 4 | 0 | 20% (8%-42%) |" in text
    assert "| 30 | g3 | GNU Go level 1 | 192 | 20 | 7 | 0 | 35% (18%-57%) |" in text
    assert "| 61.5 (end) | g4 | GNU Go level 1 | 48 | 40 | 22 | 0 | 55% (40%-69%) |" in text
    assert "First won half its games against GNU Go level 1 at 48 visits: 61.5 minutes." in text
    assert "- GNU Go level 1: +812 ± 96 (100 games)" in text


def test_the_report_says_when_half_was_not_reached_or_the_curve_not_played():
    report = _report()
    report.curve = report.curve[:3]
    report.reached_half = {"level": 1, "visits": 48, "minutes": curve.reached_half(report.curve, 1, 48)}
    assert "First won half its games against GNU Go level 1 at 48 visits: not reached." in report.markdown()
    report.curve, report.curve_note = [], "GNU Go is not installed (Debian package gnugo)"
    report.load = {"platform": None, "matches": None}  # a system without a load average
    report.endings = {}
    text = report.markdown()
    assert "move limit" not in text
    assert "Not played: GNU Go is not installed (Debian package gnugo)." in text and "| minutes |" not in text
    assert "the machine's load" not in text


def test_the_load_meter_reads_the_load_until_its_block_ends():
    with LoadMeter(every=0.01) as meter:
        time.sleep(0.1)
    summary = meter.summary()
    assert summary is not None and summary["samples"] == len(meter.samples) >= 3
    assert 0 <= summary["min"] <= summary["mean"] <= summary["max"]
    count = len(meter.samples)
    time.sleep(0.05)
    assert len(meter.samples) == count  # the thread stopped with the block
    assert LoadMeter().summary() is None


@pytest.mark.django_db
def test_the_games_at_the_match_visits_rate_gnu_go_on_the_runs_scale(run):
    from server.networks.models import Network
    from server.ratings.models import AnchorMatch, AnchorRating
    from server.ratings.services import refit

    random_net = run.networks.get(is_random=True)
    Network.objects.create(name="g1", run=run, parent=random_net, state=Network.State.ACCEPTED)
    results = {
        ("g1", curve.Setting(1, 48)): curve.Played(40, 30, 2),
        ("g1", curve.Setting(5, 48)): curve.Played(20, 5, 0),
        ("g1", curve.Setting(1, 192)): curve.Played(20, 19, 0),  # another player than the rated one
        (random_net.name, curve.Setting(1, 48)): curve.Played(20, 0, 0),
    }
    assert curve.record_anchors(run, results, visits=48, board=7, komi=9.0) == 80
    stored = {(m.network.name, m.anchor.level): m for m in AnchorMatch.objects.filter(run=run)}
    assert set(stored) == {("g1", 1), ("g1", 5), (random_net.name, 1)}
    assert (stored[("g1", 1)].wins, stored[("g1", 1)].draws, stored[("g1", 1)].games) == (30, 2, 40)
    assert stored[("g1", 1)].visits == 48 and stored[("g1", 1)].board_size == 7 and stored[("g1", 1)].komi == 9.0
    refit(run)
    rated = {r.anchor.level: r for r in AnchorRating.objects.filter(run=run).select_related("anchor")}
    assert rated[1].games == 60 and rated[5].games == 20 and rated[5].elo > rated[1].elo


@pytest.mark.django_db
def test_the_selfplay_endings_count_the_random_networks_games_apart(run, alice):
    from server.games.models import TrainingGame
    from server.networks.models import Network
    from server.platform.experiment import selfplay_endings
    from tests.server.helpers import PlayedGame, store_training_games

    user, _ = alice

    def games(n: int, tag: str) -> list[PlayedGame]:
        meta = {"board_x_size": 9, "board_y_size": 9, "komi": 7.0, "result": "B+1", "moves": 60, "rows": 60}
        return [PlayedGame(f"(;C[{tag}{k}])".encode(), f"{tag}{k}".encode(), meta) for k in range(n)]

    random_net = run.networks.get(is_random=True)
    trained = Network.objects.create(name="g1", run=run, parent=random_net, state=Network.State.ACCEPTED)
    at_random = store_training_games(run, user, games(4, "r"), network=random_net)
    at_trained = store_training_games(run, user, games(5, "t"), network=trained)  # stored without a result
    TrainingGame.objects.filter(id__in=[g.id for g in at_random[:2]]).update(moves=243, winner="-")
    TrainingGame.objects.filter(id=at_random[2].id).update(winner="B")
    TrainingGame.objects.filter(id=at_trained[0].id).update(moves=250, winner="W")
    TrainingGame.objects.filter(id__in=[g.id for g in at_trained[1:4]]).update(winner="0")
    TrainingGame.objects.filter(id=at_trained[4].id).update(winner="B")
    assert selfplay_endings(run, 243) == {
        "move_limit": 243,
        "random": {"games": 4, "at_limit": 2, "no_result": 3, "drawn": 0},
        "trained": {"games": 5, "at_limit": 1, "no_result": 0, "drawn": 3},
    }


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--curve-minutes", "0"], "--curve-minutes 0.0: must be positive"),
        (["--curve-levels", "1,x"], "--curve-levels '1,x': expected whole numbers separated by commas"),
        (["--curve-levels", "1,11"], "--curve-levels '1,11': 11 is not from 0 to 10"),
        (["--curve-levels", ","], "--curve-levels ',': expected at least one number"),
        (["--curve-visit-factors", "1,0"], "--curve-visit-factors '1,0': 0 is not from 1 to 1000"),
        (["--curve-games", "-1"], "--curve-games -1: must be 0 or more"),
        (["--jobs", "0"], "--jobs 0: must be at least 1"),
        (["--settings-file", "/nonexistent/run.json"], "settings file /nonexistent/run.json: [Errno 2]"),
    ],
)
def test_the_command_refuses_bad_curve_options(args, said, tmp_path):
    with pytest.raises(CommandError) as refused:
        call_command("experiment", "--minutes", "1", "--out", str(tmp_path), *args)
    assert said in str(refused.value)


def test_the_report_names_the_settings_a_run_changed_from_the_demos(tmp_path):
    demo = json.loads(json.dumps(demo_settings(9).to_dict()))
    assert settings_changed(demo, 9, "b3c32") == {}
    demo["training"]["samples_per_row"] = 6.0
    assert settings_changed(demo, 9, "b3c32") == {"training.samples_per_row": 6.0}
    # the demo's network is the board's: tiny on 9x9 differs from it
    assert settings_changed(json.loads(json.dumps(demo_settings(9, "tiny").to_dict())), 9, "b3c32") == {
        "training.architecture": "tiny"
    }
    report = Report(run="demo", board=9, architecture="b3c32", minutes=90, machine="m")
    assert "Settings changed" not in report.markdown()
    report.settings_changed = {"training.samples_per_row": 8.0}
    assert "Settings changed from the demo's: `training.samples_per_row` 8.0." in report.markdown()
    write_report(report, tmp_path)
    assert json.loads((tmp_path / "report.json").read_text())["settings_changed"] == {"training.samples_per_row": 8.0}


def test_the_command_refuses_a_bad_settings_document(tmp_path):
    bad = tmp_path / "run.json"
    bad.write_text(json.dumps({"training": {"samples_per_row": -1}}))
    with pytest.raises(CommandError) as refused:
        call_command("experiment", "--minutes", "1", "--out", str(tmp_path), "--settings-file", str(bad))
    assert f"settings file {bad}: settings training.samples_per_row: must be greater than 0.0" in str(refused.value)


def test_the_demo_trains_eight_samples_per_row_on_9x9_only():
    """The board's measured choices: b3c32 and 8 samples per row on 9x9; tiny and KataGo's 4 elsewhere."""
    nine, seven = demo_settings(9).training, demo_settings(7).training
    assert (nine.architecture, nine.samples_per_row) == ("b3c32", 8.0)
    assert (seven.architecture, seven.samples_per_row) == ("tiny", 4.0)
