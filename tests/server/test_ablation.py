"""The ablation's parts: the arms' documents (the built-in ones, and bad ones refused by name), the
repetitions' folders and how a finished one resumes, an arm's CPU accounting, the one Bradley-Terry
fit against the anchors and the pooled difference of two arms' repetitions, the choice of the
generations rated, the verdict against the paper's claim, and the report with its plot, with one
repetition per arm and with two."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from common.architecture import NAMED_SIZES
from common.settings import RunSettings
from server.platform.ablation import (
    BUILT_IN_ARMS,
    AblationError,
    ArmState,
    CpuMeter,
    built_in_arms,
    is_client,
    load_arm,
    merged,
    repetitions,
    run_arm,
    trainer_idle,
)
from server.platform.ablation_rating import NARROWING_ROUNDS, Fit, Pairing, Player, Result, fit, narrow, pick_points
from server.platform.ablation_report import (
    AblationReport,
    Anchor,
    ArmReport,
    Point,
    RepetitionReport,
    verdict,
    write,
)
from server.platform.demo import DRAWLESS_BOARDS, FAIR_KOMI


@pytest.mark.parametrize("board", [5, 7, 9])
def test_the_built_in_arms_are_the_full_method_with_one_thing_taken_out(board):
    # Every document in server/platform/arms: those run by default first, in their order.
    names = built_in_arms()
    assert names[: len(BUILT_IN_ARMS)] == BUILT_IN_ARMS and {"tiny", "b3c32", "b4c48"} <= set(names)
    arms = {name: load_arm(name, board) for name in names}
    full = RunSettings.from_dict(arms["full"].settings)
    assert full.selfplay.board_sizes == (board,) and full.selfplay.komi_mean == FAIR_KOMI[board]
    assert full.rating.komi == FAIR_KOMI[board] + (0.5 if board in DRAWLESS_BOARDS else 0.0)
    assert full.selfplay.search.subtree_value_bias_factor == 0.35
    assert full.selfplay.search.cpuct_utility_stdev_scale == 0.85
    assert full.rating.search.subtree_value_bias_factor == 0.35 and full.rating.search.lcb_for_selection

    def changed(name: str) -> set[str]:
        """The dotted keys in which an arm differs from the full one."""

        def walk(a, b, path=""):
            if isinstance(a, dict):
                return set().union(*(walk(a[k], b[k], f"{path}{k}.") for k in a))
            return set() if a == b else {path.rstrip(".")}

        return walk(arms[name].settings, arms["full"].settings)

    search = "selfplay.search."
    assert changed("no-pcr") == {"selfplay.full_search_prob", "selfplay.visits", "selfplay.cheap_visits"}
    no_pcr = RunSettings.from_dict(arms["no-pcr"].settings).selfplay
    # The same visits per move on average: a quarter at 48, the rest at 12.
    assert no_pcr.visits == no_pcr.cheap_visits == 0.25 * full.selfplay.visits + 0.75 * full.selfplay.cheap_visits
    assert changed("no-forced-playouts") == {search + "forced_playouts"}
    assert changed("no-aux-targets") == {
        "training.ownership_score_targets",
        search + "score_utility_factor",
        "rating.search.score_utility_factor",
    }
    assert changed("no-branching") == {"selfplay.side_position_prob", "selfplay.early_fork_prob"}
    assert changed("no-methods-search") == {
        search + "cpuct_utility_stdev_scale",
        search + "subtree_value_bias_factor",
        "rating.search.cpuct_utility_stdev_scale",
        "rating.search.subtree_value_bias_factor",
    }
    assert changed("mobilenet") == {"training.architecture"} and arms["mobilenet"].architecture == "tinymobile"
    for name in BUILT_IN_ARMS[1:]:
        assert arms[name].claim and arms[name].expect in ("worse", "better"), name
    # The arms run only when named: the network's size, with no claim to hold it against. The full
    # arm plays the demo's network: b3c32 on 9x9, tiny below.
    assert full.training.architecture == ("b3c32" if board == 9 else "tiny")
    for name in ("tiny", "b3c32", "b4c48"):
        same = name == full.training.architecture
        assert changed(name) == (set() if same else {"training.architecture"}) and arms[name].architecture == name
        assert name in NAMED_SIZES
        assert not arms[name].claim and not arms[name].expect and "9x9" in arms[name].description
    # Gating, which the one-machine run dropped: short gatings of 20 games, a quarter of the tasks.
    assert full.gating.rule == "none" and full.gating.rating_game_prob == 0.05
    assert changed("gated") == {"gating.rule", "gating.rating_game_prob"}
    gated = RunSettings.from_dict(arms["gated"].settings).gating
    assert (gated.rule, gated.fixed_games, gated.fixed_wins, gated.rating_game_prob) == ("fixed", 20, 10, 0.25)
    # KataGo's lowered early learning rate, over the first 100,000 samples of each network.
    assert changed("gumbel") == {search + "gumbel"} and arms["gumbel"].expect == "better"
    assert changed("early-lr") == {"training.early_lr_samples"}
    early = RunSettings.from_dict(arms["early-lr"].settings).training
    assert full.training.early_lr_samples == 0
    assert early.learning_rate_at(0, "tiny") == pytest.approx(full.training.learning_rate_at(0, "tiny") / 3)
    assert early.learning_rate_at(100_000, "tiny") == full.training.learning_rate_at(100_000, "tiny")
    # The trainer's samples per row received: the full method's 8 on 9x9 (4 below) against 4 and 16.
    assert full.training.samples_per_row == (8.0 if board == 9 else 4.0)
    assert changed("per-row-4") == (set() if board < 9 else {"training.samples_per_row"})
    assert changed("per-row-16") == {"training.samples_per_row"}
    assert RunSettings.from_dict(arms["per-row-16"].settings).training.samples_per_row == 16.0
    for name in ("per-row-4", "per-row-16"):
        assert not arms[name].claim and "9x9" in arms[name].description


def write_arm(folder, name: str, doc: dict):
    path = folder / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize(
    "doc, said",
    [
        ({"title": "t", "description": "d", "colour": 1}, "unknown keys colour"),
        ({"description": "d"}, "'title' must be a non-empty string"),
        ({"title": "t", "description": "d", "settings": {"selfplay": {"visitz": 3}}}, "selfplay.visitz"),
        ({"title": "t", "description": "d", "settings": {"training": {"window_c": -1}}}, "training.window_c"),
        ({"title": "t", "description": "d", "settings": []}, "'settings' must be an object"),
        ({"title": "t", "description": "d", "paper": {"expect": "faster"}}, "paper.expect must be one of"),
        ({"title": "t", "description": "d", "from": "bad"}, "'from' must name another arm"),
    ],
)
def test_a_bad_arm_document_is_refused_with_its_file_and_its_fault(tmp_path, doc, said):
    path = write_arm(tmp_path, "bad", doc)
    with pytest.raises(AblationError, match=said) as e:
        load_arm(path, 7)
    assert path in str(e.value)


def test_an_arm_starts_from_another_and_unknown_names_are_refused(tmp_path):
    base = write_arm(tmp_path, "base", {"title": "b", "description": "d", "settings": {"selfplay": {"visits": 30}}})
    child = write_arm(
        tmp_path,
        "child",
        {"title": "c", "description": "d", "from": base, "settings": {"selfplay": {"cheap_visits": 5}}},
    )
    arm = load_arm(child, 6)
    assert arm.name == "child" and arm.settings["selfplay"]["visits"] == 30
    assert arm.settings["selfplay"]["cheap_visits"] == 5 and arm.settings["selfplay"]["board_sizes"] == [6]
    loop = write_arm(tmp_path, "loop", {"title": "l", "description": "d", "from": str(tmp_path / "loop.json")})
    with pytest.raises(AblationError, match="'from' must name another arm"):
        load_arm(loop, 7)
    with pytest.raises(AblationError, match=r"arm no-such-arm: no such arm document.*built-in arms are full"):
        load_arm("no-such-arm", 7)
    assert merged({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 5}, "d": [1]}) == {"a": {"b": 5, "c": 2}, "d": [1]}


def test_each_repetition_has_its_folder_and_one_that_used_its_time_is_kept_as_it_is(tmp_path):
    full, other = load_arm("full", 7), load_arm("no-pcr", 7)
    runs = repetitions([full, other], 3)
    # Every arm's first, then every arm's second: a stopped ablation has whole rounds.
    assert [r.name for r in runs] == ["full", "no-pcr", "full.seed2", "no-pcr.seed2", "full.seed3", "no-pcr.seed3"]
    assert [r.seed for r in runs] == [1, 1, 2, 2, 3, 3] and runs[2].arm is full
    # The first in the folder an ablation without repetitions has, so that one goes on as it was.
    assert runs[0].folder(tmp_path) == tmp_path / "arms" / "full"
    assert runs[2].folder(tmp_path) == tmp_path / "arms" / "full.seed2"
    assert runs[2].folder(tmp_path).as_uri().endswith("/arms/full.seed2")  # as the file storage's URL keeps it
    said: list[str] = []
    for run, state in (
        (runs[0], ArmState(cpu_seconds=61.0, wall_seconds=40.0, finished=True, sittings=2)),
        (runs[2], ArmState(cpu_seconds=60.5, wall_seconds=35.0, finished=False, sittings=1)),  # stopped at the end
    ):
        folder = run.folder(tmp_path)
        folder.mkdir(parents=True)
        (folder / "settings.json").write_text(json.dumps(full.settings))
        state.save(folder / "state.json")
        kept = run_arm(run, tmp_path, 60.0, 1, 1, said.append, lambda: False)
        assert kept.finished and (kept.cpu_seconds, kept.sittings) == (state.cpu_seconds, state.sittings)
        assert sorted(p.name for p in folder.iterdir()) == ["settings.json", "state.json"]  # no platform started
    assert said == []
    # A repetition whose arm changed since it started is refused, naming its folder.
    (runs[2].folder(tmp_path) / "settings.json").write_text(json.dumps(other.settings))
    with pytest.raises(AblationError, match=r"arm full\.seed2: its settings changed since it started") as e:
        run_arm(runs[2], tmp_path, 60.0, 1, 1, said.append, lambda: False)
    assert f"delete {runs[2].folder(tmp_path)}" in str(e.value)


def test_an_arm_named_as_a_repetition_and_no_repetitions_are_refused(tmp_path):
    clash = write_arm(tmp_path, "full.seed2", {"title": "t", "description": "d", "from": "full"})
    data = tmp_path / "data"
    common = ["ablation", "--data", str(data), "--cpu-minutes", "1"]
    with pytest.raises(CommandError, match=r"with --seeds 2: full\.seed2 is both an arm and a repetition of another"):
        call_command(*common, "--arms", f"full,{clash}", "--seeds", "2")
    with pytest.raises(CommandError, match="--seeds 0: must be at least 1"):
        call_command(*common, "--seeds", "0")
    with pytest.raises(CommandError, match="--interval -80: must be 0 Elo or more"):
        call_command(*common, "--interval", "-80")
    with pytest.raises(CommandError, match="--interval needs --reference-games"):
        call_command(*common, "--interval", "80", "--reference-games", "0")
    assert not data.exists()


def test_an_arms_cpu_time_is_read_between_its_samples_and_kept_over_a_gap(tmp_path):
    state = ArmState(samples=[[100.0, 0.0, 1.0], [105.0, 10.0, 2.0], [110.0, 20.0, 1.5], [500.0, 30.0, 1.0]])
    assert state.cpu_at(50.0) == 0.0 and state.cpu_at(107.5) == pytest.approx(15.0)
    assert state.cpu_at(300.0) == 20.0  # stopped between sittings: nothing used
    assert state.cpu_at(900.0) == 30.0 and state.mean_load() == pytest.approx(1.375)
    assert state.cpu_at(107.5, "selfplay") == 0.0  # samples from before the self-play count
    counted = ArmState(
        cpu_seconds=20.0, selfplay_seconds=12.0, samples=[[100.0, 0.0, 1.0, 0.0], [110.0, 20.0, 1.0, 12.0]]
    )
    assert counted.cpu_at(105.0, "selfplay") == pytest.approx(6.0) and counted.cpu_at(105.0) == pytest.approx(10.0)
    assert (counted.used("selfplay"), counted.used("platform")) == (12.0, 20.0)
    state.save(tmp_path / "state.json")
    assert ArmState.load(tmp_path / "state.json") == state
    (tmp_path / "state.json").write_text("{}x")
    with pytest.raises(AblationError, match="not an arm's state"):
        ArmState.load(tmp_path / "state.json")


def test_the_meter_counts_the_cpu_time_of_a_process_and_its_children():
    spin = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n"
    parent = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {spin!r}])"]
    )
    meter = CpuMeter(parent.pid)
    seen = 0.0
    while parent.poll() is None:
        seen = meter.seconds()
        time.sleep(0.05)
    # The child's spin (0.6 s) is counted though it ended: its last figure is kept.
    assert seen >= 0.5 and meter.seconds() == seen
    assert meter.selfplay_seconds() == 0.0  # no client among them


def test_the_self_play_count_is_the_client_and_its_descendants_alone(tmp_path):
    """A platform with a trainer and a client, each spinning, and the client's worker under it: the
    self-play count has the client's and its worker's time, not the trainer's nor the platform's."""
    spin = "import time\nend = time.process_time() + {}\nwhile time.process_time() < end: pass\n"
    worker = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {spin.format(0.4)!r}])\n"
    # A stand-in ``client`` package in the processes' folder: ``-m client contribute`` runs it, and it
    # runs the worker, then spins itself.
    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "__main__.py").write_text(worker + spin.format(0.3))
    platform = (
        "import subprocess, sys\n"
        f"trainer = subprocess.Popen([sys.executable, '-c', {spin.format(0.8)!r}])\n"
        "client = subprocess.Popen([sys.executable, '-m', 'client', 'contribute'])\n"
        "trainer.wait(); client.wait()\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", platform], cwd=tmp_path)
    meter = CpuMeter(parent.pid)
    while parent.poll() is None:
        meter.seconds()
        time.sleep(0.02)
    total, selfplay = meter.seconds(), meter.selfplay_seconds()
    assert 0.6 <= selfplay <= 1.0, (total, selfplay)  # 0.7 s of spinning, and starting up
    assert total >= selfplay + 0.75, (total, selfplay)  # the trainer's 0.8 s besides
    assert is_client([sys.executable, "-m", "client", "contribute", "--server", "x"])
    assert not is_client([sys.executable, "manage.py", "train"]) and not is_client(["client", "contribute"])


def test_the_trainer_is_idle_once_every_line_of_its_run_has_trained_its_rows(tmp_path):
    import sqlite3

    database = tmp_path / "sente.sqlite3"
    assert not trainer_idle(database)  # no database yet
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE training_trainingline (architecture TEXT, role TEXT, status TEXT)")
        assert not trainer_idle(database)  # no line yet
        db.execute("INSERT INTO training_trainingline VALUES ('b3c32', 'current', 'training')")
        db.execute("INSERT INTO training_trainingline VALUES ('tiny', 'retired', 'stopped')")
    assert not trainer_idle(database)
    with sqlite3.connect(database) as db:
        db.execute("UPDATE training_trainingline SET status = 'idle' WHERE role = 'current'")
    assert trainer_idle(database)  # the retired line does not count
    state = ArmState(selfplay_seconds=61.0, cpu_seconds=90.0)
    assert state.done("platform", 60.0) and not state.done("selfplay", 60.0)
    state.caught_up = True
    assert state.done("selfplay", 60.0) and not state.done("selfplay", 62.0)


def results(*rows):
    return [Result(*row) for row in rows]


def test_one_fit_places_the_networks_between_the_anchors():
    players = ["uniform", "gnugo-1", "full/a", "full/b", "other/c"]
    played = results(
        ("full/a", "uniform", 10, 10, 0, 0),  # a clean sweep stays finite with the virtual draw
        ("full/a", "gnugo-1", 20, 5, 15, 0),
        ("full/b", "uniform", 10, 10, 0, 0),
        ("full/b", "gnugo-1", 20, 14, 6, 0),
        ("other/c", "gnugo-1", 20, 10, 9, 1),
        ("full/a", "full/b", 40, 10, 30, 0),
        ("other/c", "full/b", 40, 15, 25, 0),
    )
    f = fit(players, played, "full/b")
    assert f.elo["uniform"] == 0.0 and f.ci95["uniform"] == 0.0
    assert 0 < f.elo["full/a"] < f.elo["gnugo-1"] < f.elo["other/c"] < f.elo["full/b"] < 2000
    assert f.against["full/b"] == (0.0, 0.0)
    difference, ci = f.against["other/c"]
    assert difference == pytest.approx(f.elo["other/c"] - f.elo["full/b"]) and 0 < ci < f.ci95["other/c"] + 1e-9
    assert f.games == {"uniform": 20, "gnugo-1": 60, "full/a": 70, "full/b": 110, "other/c": 60}
    assert fit(players, played, None).against == {}


def test_the_pooled_difference_is_the_mean_of_an_arms_networks_minus_the_full_arms_with_its_covariance():
    players = ("uniform", "full/f", "full.seed2/f", "arm/a", "arm.seed2/a", "lost/x")
    cov = np.array(
        [
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 400.0, 100.0, 200.0, 0.0, 0.0],
            [0.0, 100.0, 900.0, 0.0, 0.0, 0.0],
            [0.0, 200.0, 0.0, 625.0, 50.0, 0.0],
            [0.0, 0.0, 0.0, 50.0, 100.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ]
    )
    elo = dict(zip(players, [0.0, 100.0, 140.0, 60.0, 90.0, math.nan], strict=True))
    f = Fit(elo, {}, {}, {}, 1, players, cov)
    difference, ci = f.difference(["arm/a", "arm.seed2/a"], ["full/f", "full.seed2/f"])
    # w = (0, -1/2, -1/2, 1/2, 1/2, 0): the arm's two networks (625 + 100 + 2 * 50) / 4 = 206.25, the full
    # arm's (400 + 900 + 2 * 100) / 4 = 375, between them 2 * (-1/4) * 200 = -100: 481.25.
    assert difference == pytest.approx(75.0 - 120.0) and ci == pytest.approx(1.96 * math.sqrt(481.25))
    # One network each: the difference of two ratings, (625 + 400 - 2 * 200).
    assert f.difference(["arm/a"], ["full/f"]) == pytest.approx((-40.0, 1.96 * math.sqrt(625.0)))
    assert f.difference(["arm/a", "arm.seed2/a"], []) == pytest.approx((75.0, 1.96 * math.sqrt(206.25)))
    assert f.difference(["full/f"], ["full/f"]) == (0.0, 0.0)
    difference, ci = f.difference(["arm/a", "lost/x"], ["full/f"])  # a network the games did not rate
    assert math.isnan(difference) and ci == math.inf

    # In a real fit, one network each is the fit's own difference to the reference.
    played = results(
        ("a/1", "uniform", 10, 9, 1, 0),
        ("a/2", "uniform", 10, 8, 2, 0),
        ("b/1", "uniform", 10, 6, 4, 0),
        ("b/2", "uniform", 10, 7, 3, 0),
        ("a/2", "a/1", 20, 9, 11, 0),
        ("b/1", "a/1", 20, 6, 14, 0),
        ("b/2", "a/1", 20, 8, 12, 0),
    )
    f = fit(["uniform", "a/1", "a/2", "b/1", "b/2"], played, "a/1")
    assert f.against["b/1"] == pytest.approx(f.difference(["b/1"], ["a/1"]))
    pooled, ci = f.difference(["b/1", "b/2"], ["a/1", "a/2"])
    assert pooled == pytest.approx((f.elo["b/1"] + f.elo["b/2"] - f.elo["a/1"] - f.elo["a/2"]) / 2)
    assert pooled < 0 and 0 < ci < max(f.against["b/1"][1], f.against["b/2"][1])


def test_the_generations_rated_are_spread_over_the_arms_compute():
    generations = [{"name": "random", "random": True, "cpu_seconds": 0.0}] + [
        {"name": f"g{k}", "random": False, "cpu_seconds": float(t)} for k, t in enumerate([5, 12, 20, 31, 44, 58])
    ]
    assert [g["name"] for g in pick_points(generations, 4, 60.0)] == ["g1", "g2", "g4", "g5"]  # by 15, 30, 45 and 60
    assert [g["name"] for g in pick_points(generations, 1, 60.0)] == ["g5"]
    assert [g["name"] for g in pick_points(generations, 10, 60.0)] == ["g0", "g1", "g2", "g3", "g4", "g5"]
    assert pick_points(generations[:1], 4, 60.0) == []


def repetition(name="no-pcr", seed=1, against=(-120.0, 50.0), points=True, elo=300.0) -> RepetitionReport:
    point = Point("net-2", 55.0, 900, 12000, 40000, gating="waiting", elo=elo, ci95=60.0, games=70)
    return RepetitionReport(
        seed=seed,
        name=name if seed == 1 else f"{name}.seed{seed}",
        cpu_minutes=60.2,
        wall_minutes=33.0,
        mean_load=1.8,
        sittings=1,
        selfplay_games=1000,
        rows=14000,
        rating_games=300,
        candidates=9,
        accepted=7,
        training_samples=52000,
        points=[Point("net-1", 20.0, 300, 4000, 10000, "accepted", 100.0, 70.0, 70), point] if points else [],
        vs_reference=against[0] if against else None,
        vs_reference_ci95=against[1] if against else None,
    )


def arm_report(name="no-pcr", expect="worse", against=(-120.0, 50.0), points=True, more=()) -> ArmReport:
    """An arm's report with one repetition (``against``: its difference to the full arm, pooled
    as well); ``more``: its other repetitions, and then ``against`` is the pooled difference alone."""
    return ArmReport(
        name=name,
        title=f"the {name} arm",
        description="what it changes",
        claim="it costs strength",
        expect=expect,
        architecture="tiny",
        evals_per_s=4500.0,
        repetitions=list(more) or [repetition(name, 1, against, points)],
        vs_reference=against[0] if against else None,
        vs_reference_ci95=against[1] if against else None,
    )


@pytest.mark.parametrize(
    "expect, against, said",
    [
        ("worse", (-120.0, 50.0), "agrees: -120 ± 50 against the full arm"),
        ("worse", (120.0, 50.0), "disagrees: +120 ± 50 against the full arm, a finding to investigate"),
        ("worse", (-20.0, 50.0), "cannot tell: -20 ± 50 against the full arm, the interval spans 0"),
        ("better", (120.0, 50.0), "agrees: +120 ± 50"),
        ("better", (-120.0, 50.0), "disagrees: -120 ± 50"),
        ("", (-120.0, 50.0), "(no claim to hold it against)"),
        ("worse", None, "not measured"),
    ],
)
def test_the_verdict_holds_the_interval_against_the_claim(expect, against, said):
    assert said in verdict(arm_report(expect=expect, against=against), is_reference=False)
    assert verdict(arm_report(expect=expect, against=against), is_reference=True) == "the reference"


def test_the_report_has_its_table_its_claims_and_its_plot(tmp_path):
    full = arm_report("full", expect="", against=(0.0, 0.0))
    other = arm_report()
    other.verdict = verdict(other, False)
    empty = arm_report("no-branching", against=None, points=False)
    empty.verdict = verdict(empty, False)
    report = AblationReport(
        date="2026-11-28",
        board=7,
        cpu_minutes=60.0,
        seeds=1,
        machine="2 CPU cores (x86_64)",
        command=".venv/bin/python manage.py ablation --data x --cpu-minutes 60 --board 7",
        visits=48,
        reference="full/net-2",
        anchors=[
            Anchor("uniform", "the uniform random player", 0.0, 0.0, 40),
            Anchor("gnugo-5", "GNU Go level 5", 0, 0, 0),
        ],
        arms=[full, other, empty],
        pairings=12,
        games=400,
        fit_iterations=7,
    )
    path = write(report, tmp_path)
    text = path.read_text()
    assert path.name == "ablation-2026-11-28.md"
    assert "60 CPU-minutes of its processes on 2 CPU cores (x86_64)" in text and "400 games in 12 pairings" in text
    # One repetition per arm: no seed column and no pooled table, the report of an ablation without them.
    assert "and the full arm's final network: 400 games" in text and "| arm | final network | Elo ± 95% |" in text
    assert "repetition" not in text
    row = "| the no-pcr arm | net-2 (not gated) | +300 ± 60 | -120 ± 50 | 60.2 | 33.0 (1.8) | 1,000 | 14,000 | "
    assert row + "52,000 | 7 / 9 | tiny, 4,500 |" in text
    assert "| the full arm | net-2 (not gated) | +300 ± 60 | 0 (the reference) |" in text
    assert "| the no-branching arm | (none exported) | - | - |" in text
    assert "| GNU Go level 5 | not rated | 0 |" in text
    assert "| the no-pcr arm | it costs strength | agrees: -120 ± 50 against the full arm |" in text
    assert "![Elo of each arm's generations against the CPU time it had used](ablation-2026-11-28.png)" in text
    assert "--cpu-minutes 60 --board 7\n```" in text
    assert "| no-pcr | net-2 (not gated) | 55.0 | 900 | 12,000 | 40,000 | +300 ± 60 | 70 |" in text
    saved = json.loads((tmp_path / "ablation-2026-11-28.json").read_text())
    assert saved["arms"][1]["repetitions"][0]["points"][1]["elo"] == 300.0 and saved["arms"][1]["vs_reference"] == -120
    assert (tmp_path / "ablation-2026-11-28.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Arms that claim nothing (the network's sizes, the full arm) leave the claims' table out.
    full.claim = other.claim = empty.claim = ""
    other.expect = empty.expect = ""
    assert "## What the papers claim" in text
    assert "## What the papers claim" not in write(report, tmp_path / "sizes").read_text()


def test_the_report_of_two_repetitions_gives_each_and_the_arms_pooled_difference(tmp_path):
    full = arm_report(
        "full",
        expect="",
        against=(0.0, 0.0),
        more=[repetition("full", 1, (0.0, 0.0)), repetition("full", 2, (-40.0, 45.0), elo=260.0)],
    )
    full.mean_elo, full.mean_elo_ci95 = 280.0, 40.0
    other = arm_report(
        against=(-70.0, 40.0),
        more=[repetition("no-pcr", 1, (-120.0, 50.0), elo=180.0), repetition("no-pcr", 2, (-60.0, 52.0), elo=240.0)],
    )
    other.mean_elo, other.mean_elo_ci95 = 210.0, 38.0
    other.verdict = verdict(other, False)
    # One repetition exported nothing: the arm's mean is its other one's.
    half = arm_report(
        "no-branching",
        against=(-30.0, 55.0),
        more=[repetition("no-branching", 1, None, points=False), repetition("no-branching", 2, (-20.0, 60.0))],
    )
    half.mean_elo, half.mean_elo_ci95 = 290.0, 60.0
    half.verdict = verdict(half, False)
    report = AblationReport(
        date="2026-12-05",
        board=9,
        cpu_minutes=30.0,
        seeds=2,
        machine="2 CPU cores (x86_64)",
        command=".venv/bin/python manage.py ablation --data x --cpu-minutes 30 --board 9 --seeds 2",
        visits=48,
        reference="full/net-2",
        anchors=[Anchor("uniform", "the uniform random player", 0.0, 0.0, 48)],
        arms=[full, other, half],
        pairings=30,
        games=900,
        fit_iterations=8,
    )
    text = write(report, tmp_path).read_text()
    assert "the whole platform (self-play client, trainer, gating) 2 times, each repetition from the random" in text
    assert "and the reference, the final network of the full arm's first repetition: 900 games" in text
    assert "| arm | seed | final network | Elo ± 95% | against the full arm ± 95% | CPU-min |" in text
    assert "| the full arm | 1 | net-2 (not gated) | +300 ± 60 | 0 (the reference) | 60.2 |" in text
    assert "| the full arm | 2 | net-2 (not gated) | +260 ± 60 | -40 ± 45 | 60.2 |" in text
    assert "| the no-pcr arm | 2 | net-2 (not gated) | +240 ± 60 | -60 ± 52 | 60.2 | 33.0 (1.8) |" in text
    assert "| the no-branching arm | 1 | (none exported) | - | - | 60.2 |" in text
    assert "## The arms over their 2 repetitions" in text
    assert "| the full arm | 2 of 2 | +280 ± 40 | 0 (the full arm) |" in text
    assert "| the no-pcr arm | 2 of 2 | +210 ± 38 | -70 ± 40 |" in text
    assert "| the no-branching arm | 1 of 2 | +290 ± 60 | -30 ± 55 |" in text
    # The verdict is on the pooled difference, not on either repetition's.
    assert "| the no-pcr arm | it costs strength | agrees: -70 ± 40 against the full arm |" in text
    assert "| the no-branching arm | it costs strength | cannot tell: -30 ± 55 against the full arm, the" in text
    assert "| no-pcr.seed2 | net-2 (not gated) | 55.0 |" in text and "| full | net-1 | 20.0 |" in text
    saved = json.loads((tmp_path / "ablation-2026-12-05.json").read_text())
    assert saved["seeds"] == 2
    arm = saved["arms"][1]
    assert (arm["vs_reference"], arm["vs_reference_ci95"], arm["mean_elo"]) == (-70.0, 40.0, 210.0)
    assert [(r["seed"], r["name"], r["vs_reference"]) for r in arm["repetitions"]] == [
        (1, "no-pcr", -120.0),
        (2, "no-pcr.seed2", -60.0),
    ]
    assert arm["repetitions"][1]["points"][1]["elo"] == 240.0
    assert (tmp_path / "ablation-2026-12-05.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "self-play CPU-min" not in text

    # Counted as self-play compute: the budget says so, and each repetition's client time is a column.
    report.budget = "selfplay"
    for arm in report.arms:
        for r in arm.repetitions:
            r.selfplay_minutes = 30.1
    text = write(report, tmp_path).read_text()
    assert "for 30 CPU-minutes of its self-play client (the trainer kept up with the rows, its CPU not" in text
    assert "| CPU-min | self-play CPU-min | minutes (load) |" in text
    assert "| the no-pcr arm | 2 | net-2 (not gated) | +240 ± 60 | -60 ± 52 | 60.2 | 30.1 | 33.0 (1.8) |" in text
    assert "| arm | network | self-play CPU-min | self-play games |" in text
    assert json.loads((tmp_path / "ablation-2026-12-05.json").read_text())["budget"] == "selfplay"
    assert "further rounds" not in text

    # Further rounds asked for an interval: the report says how many games they were, or that none were needed.
    report.interval, report.narrowing_games = 80.0, 96
    text = write(report, tmp_path).read_text()
    assert "(8 Newton steps). 96 of the games were further rounds, each from openings of its own, between" in text
    assert "of every arm whose interval against the full arm was wider than ± 80 and the full arm's, until" in text
    assert json.loads((tmp_path / "ablation-2026-12-05.json").read_text())["narrowing_games"] == 96
    report.narrowing_games = 0
    text = write(report, tmp_path).read_text()
    assert "interval against the full arm was within ± 80 after these games, so no further rounds" in text


def test_the_final_networks_play_each_other_but_the_reference_and_none_without_games():
    from server.platform.ablation_rating import Player, round_robin

    players = [Player(f"arm{k}/net", f"arm{k}: net", f"engine {k}") for k in range(4)]
    pairings = round_robin(players, players[0], 6)
    assert [(p.first.key, p.second.key, p.games) for p in pairings] == [
        ("arm1/net", "arm2/net", 6),
        ("arm1/net", "arm3/net", 6),
        ("arm2/net", "arm3/net", 6),
    ]
    assert round_robin(players, players[0], 0) == [] and len(round_robin(players, None, 2)) == 6


def test_further_rounds_play_the_wide_arms_finals_against_the_full_arms_until_within_the_interval():
    net = {key: Player(key, key, f"engine {key}") for key in ("full/1", "full.seed2/1", "far/1", "far.seed2/1")}
    net |= {key: Player(key, key, f"engine {key}") for key in ("near/1", "near.seed2/1")}
    arms = {"far": [net["far/1"], net["far.seed2/1"]], "near": [net["near/1"], net["near.seed2/1"]]}
    full = [net["full/1"], net["full.seed2/1"]]
    players = ["uniform", *net]
    # "far" wins 11 of 12 against the full arm, "near" half of many games: far's interval is the wide one.
    played = results(
        *((key, "uniform", 4, 4, 0, 0) for key in net),
        ("far/1", "full/1", 12, 11, 1, 0),
        ("far.seed2/1", "full/1", 12, 11, 1, 0),
        ("near/1", "full/1", 200, 100, 100, 0),
        ("near.seed2/1", "full/1", 200, 100, 100, 0),
        ("full.seed2/1", "full/1", 200, 100, 100, 0),
    )
    rounds: list[list[Pairing]] = []
    widths: list[float] = []

    def play_round(more, round_):
        rounds.append(more)
        # the far arm keeps winning 9 games of 10 against the full arm's finals
        played.extend(Result(p.first.key, p.second.key, p.games, 9 * p.games // 10, p.games // 10, 0) for p in more)
        refit = fit(players, played, "full/1")
        widths.append(refit.difference(["far/1", "far.seed2/1"], ["full/1", "full.seed2/1"])[1])
        return refit

    start = fit(players, played, "full/1")
    first_width = start.difference(["far/1", "far.seed2/1"], ["full/1", "full.seed2/1"])[1]
    assert start.difference(["near/1", "near.seed2/1"], ["full/1", "full.seed2/1"])[1] < 60 < first_width
    last, more = narrow(start, arms, full, 60.0, 40, play_round)
    assert last is not None and 1 <= len(rounds) <= NARROWING_ROUNDS and more == [p for r in rounds for p in r]
    assert [(p.first.key, p.second.key, p.games, p.round) for p in rounds[0]] == [
        ("far/1", "full/1", 40, 2),
        ("far/1", "full.seed2/1", 40, 2),
        ("far.seed2/1", "full/1", 40, 2),
        ("far.seed2/1", "full.seed2/1", 40, 2),
    ]
    assert [r[0].round for r in rounds] == list(range(2, 2 + len(rounds)))
    assert (
        rounds[0][0].key == "far/1 vs full/1 (round 2)" and Pairing(net["far/1"], full[0], 10).key == "far/1 vs full/1"
    )
    # It stopped on the width: the last round brought it within ± 60, the ones before had not.
    assert len(rounds) > 1 and widths == sorted(widths, reverse=True)
    assert widths[-1] <= 60 < min([first_width, *widths[:-1]])
    assert last.difference(["far/1", "far.seed2/1"], ["full/1", "full.seed2/1"])[1] == widths[-1]

    # Never more than NARROWING_ROUNDS rounds, however wide; none when every arm is within the interval.
    rounds.clear()
    narrow(start, arms, full, 1.0, 10, play_round)
    assert len(rounds) == NARROWING_ROUNDS
    rounds.clear()
    assert narrow(start, arms, full, 400.0, 10, play_round) == (start, []) and rounds == []
    # Stopped during a round: no fit, and the rounds finished before it.
    assert narrow(start, arms, full, 60.0, 10, lambda more, round_: None) == (None, [])


def test_a_further_round_of_a_pairing_is_kept_apart_and_plays_other_openings(tmp_path):
    from server.platform import ablation_rating
    from server.ratings.matches import twogtp

    net = ablation_rating.Player("full/net-1", "full: net-1", "engine")
    other = ablation_rating.Player("far/net-1", "far: net-1", "engine")
    games = ablation_rating.Games(tmp_path / "games.json")
    games.add(ablation_rating.Pairing(other, net, 4), 48, {"wins": [3, 1], "draws": 0, "no_result": 0})
    again = ablation_rating.Pairing(other, net, 4, round=2)
    assert not games.done(again, 48) and games.done(ablation_rating.Pairing(other, net, 4), 48)
    games.add(again, 48, {"wins": [2, 2], "draws": 0, "no_result": 0})
    assert [(r.first_wins, r.second_wins) for r in games.of([ablation_rating.Pairing(other, net, 4), again])] == [
        (3, 1),
        (2, 2),
    ]
    # A round's seed gives the match other openings (the same seed, the same games: tests/e2e/test_twogtp.py).
    random_player = f"{sys.executable} -m client gtp --player random --seed 7"
    sgfs = []
    for seed in (1, 2):
        log = tmp_path / f"match-{len(sgfs)}.log"
        twogtp((random_player, "a"), (None, "b"), 5, 0.5, 2, 3, log, seed=seed)
        sgfs.append([line for line in log.read_text().splitlines() if line.startswith("(;")])
    assert len(sgfs[0]) == len(sgfs[1]) == 2 and sgfs[0] != sgfs[1]


def test_games_against_gnu_go_are_refereed_and_a_result_counted_otherwise_is_played_again(tmp_path, monkeypatch):
    from server.platform import ablation_rating
    from server.ratings import matches

    monkeypatch.setattr(matches, "gnugo_path", lambda: "/usr/games/gnugo")
    net = ablation_rating.Player("full/net-1", "full: net-1", "engine")
    gnugo = ablation_rating.gnugo(1)
    assert gnugo is not None and gnugo.referee == "/usr/games/gnugo --mode gtp --chinese-rules"
    refereed = ablation_rating.Pairing(net, gnugo, 10)
    assert refereed.referee == gnugo.referee and ablation_rating.Pairing(net, net, 4).referee is None
    games = ablation_rating.Games(tmp_path / "games.json")
    games.add(refereed, 48, {"wins": [3, 7], "draws": 0, "no_result": 0})
    assert games.done(refereed, 48) and not games.done(refereed, 96)
    stored = json.loads((tmp_path / "games.json").read_text())
    assert stored[refereed.key]["referee"] == gnugo.referee
    # A result from before games were refereed (no referee kept) is not reused.
    del stored[refereed.key]["referee"]
    (tmp_path / "games.json").write_text(json.dumps(stored))
    assert not ablation_rating.Games(tmp_path / "games.json").done(refereed, 48)


def test_the_reports_command_names_what_differs_from_the_defaults_as_typed():
    from server.platform.ablation import BUILT_IN_ARMS
    from server.platform.management.commands.ablation import DEFAULTS, reproduce

    options = DEFAULTS | {"data": "x", "cpu_minutes": 10.0, "board": 9, "arms": ",".join(BUILT_IN_ARMS)}
    options |= {"report_dir": None, "interval": 80.0, "final_games": 12}
    assert reproduce(options) == (
        ".venv/bin/python manage.py ablation --data x --cpu-minutes 10 --board 9 --final-games 12 --interval 80"
    )
