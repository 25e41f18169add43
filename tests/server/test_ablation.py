"""The ablation's parts: the arms' documents (the built-in ones, and bad ones refused by name), an
arm's CPU accounting, the one Bradley-Terry fit against the anchors, the choice of the generations
rated, the verdict against the paper's claim, and the report with its plot."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from common.settings import RunSettings
from server.platform.ablation import (
    BUILT_IN_ARMS,
    AblationError,
    ArmState,
    CpuMeter,
    load_arm,
    merged,
)
from server.platform.ablation_rating import Result, fit, pick_points
from server.platform.ablation_report import AblationReport, Anchor, ArmReport, Point, verdict, write
from server.platform.demo import DRAWLESS_BOARDS, FAIR_KOMI


@pytest.mark.parametrize("board", [5, 7, 9])
def test_the_built_in_arms_are_the_full_method_with_one_thing_taken_out(board):
    arms = {name: load_arm(name, board) for name in BUILT_IN_ARMS}
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


def test_an_arms_cpu_time_is_read_between_its_samples_and_kept_over_a_gap(tmp_path):
    state = ArmState(samples=[[100.0, 0.0, 1.0], [105.0, 10.0, 2.0], [110.0, 20.0, 1.5], [500.0, 30.0, 1.0]])
    assert state.cpu_at(50.0) == 0.0 and state.cpu_at(107.5) == pytest.approx(15.0)
    assert state.cpu_at(300.0) == 20.0  # stopped between sittings: nothing used
    assert state.cpu_at(900.0) == 30.0 and state.mean_load() == pytest.approx(1.375)
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


def test_the_generations_rated_are_spread_over_the_arms_compute():
    generations = [{"name": "random", "random": True, "cpu_seconds": 0.0}] + [
        {"name": f"g{k}", "random": False, "cpu_seconds": float(t)} for k, t in enumerate([5, 12, 20, 31, 44, 58])
    ]
    assert [g["name"] for g in pick_points(generations, 4, 60.0)] == ["g1", "g2", "g4", "g5"]  # by 15, 30, 45 and 60
    assert [g["name"] for g in pick_points(generations, 1, 60.0)] == ["g5"]
    assert [g["name"] for g in pick_points(generations, 10, 60.0)] == ["g0", "g1", "g2", "g3", "g4", "g5"]
    assert pick_points(generations[:1], 4, 60.0) == []


def arm_report(name="no-pcr", expect="worse", against=(-120.0, 50.0), points=True) -> ArmReport:
    point = Point("net-2", 55.0, 900, 12000, 40000, gating="waiting", elo=300.0, ci95=60.0, games=70)
    return ArmReport(
        name=name,
        title=f"the {name} arm",
        description="what it changes",
        claim="it costs strength",
        expect=expect,
        architecture="tiny",
        evals_per_s=4500.0,
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
    row = "| the no-pcr arm | net-2 (not gated) | +300 ± 60 | -120 ± 50 | 60.2 | 33.0 (1.8) | 1,000 | 14,000 | "
    assert row + "52,000 | 7 / 9 | tiny, 4,500 |" in text
    assert "| the full arm | net-2 (not gated) | +300 ± 60 | 0 (the reference) |" in text
    assert "| the no-branching arm | (none exported) | - | - |" in text
    assert "| GNU Go level 5 | not rated | 0 |" in text
    assert "| the no-pcr arm | it costs strength | agrees: -120 ± 50 against the full arm |" in text
    assert "![Elo of each arm's generations against the CPU time it had used](ablation-2026-11-28.png)" in text
    assert "--cpu-minutes 60 --board 7\n```" in text
    assert json.loads((tmp_path / "ablation-2026-11-28.json").read_text())["arms"][1]["points"][1]["elo"] == 300.0
    assert (tmp_path / "ablation-2026-11-28.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
