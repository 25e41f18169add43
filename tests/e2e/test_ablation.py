"""``manage.py ablation`` whole: an arm on 5x5 (settings that export networks within seconds) in two
repetitions, each running the real platform for a CPU-minute in its own folder (four games at a
time, so that its client soon finishes those in play when it stops), then rating games against the
real uniform random player, GNU Go (when installed) and the reference, one fit, the report with each
repetition and the arm's pooled figures, and its plot; a second start keeps what the first did, and
a changed budget is refused. (Two repetitions of one arm cost what two arms did:
the arms' documents and their differences are the unit tests'.)"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from server.ratings.matches import gnugo_path
from tests.server.live import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

FAST = {
    "selfplay": {"visits": 8, "cheap_visits": 2, "max_moves": 50},
    "rating": {"visits": 8, "max_moves": 50},
    "gating": {"rating_game_prob": 0.5},
    "training": {
        "window_c": 256,
        "batch_size": 64,
        "snapshot_every": 128,
        "export_every": 256,
        "validation_rows": 100,
        "shuffle_rows": 1000,
    },
}


def test_two_repetitions_are_run_rated_in_one_fit_and_reported(tmp_path):
    arms = tmp_path / "arms"
    arms.mkdir()
    full = arms / "full.json"
    full.write_text(json.dumps({"title": "the full method", "description": "quick settings", "settings": FAST}))
    data, out = tmp_path / "data", tmp_path / "report"
    command = [
        sys.executable,
        "manage.py",
        "ablation",
        "--data",
        str(data),
        "--cpu-minutes",
        "1",
        "--board",
        "5",
        "--arms",
        str(full),
        "--seeds",
        "2",
        "--port",
        str(free_port()),
        "--points",
        "1",
        "--visits",
        "8",
        "--parallel",
        "4",
        "--reference-games",
        "4",
        "--gnugo-levels",
        "3",
        "--gnugo-games",
        "2",
        "--uniform-games",
        "2",
        "--report-dir",
        str(out),
        "--date",
        "2026-01-02",
    ]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SENTE_", "DJANGO_")) and k not in ("DATABASE_URL", "STORAGE_URL", "CACHE_URL")
    }
    env.update(SENTE_DATA_DIR=str(tmp_path / "site"), PYTHONUNBUFFERED="1")

    def ablation(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*command, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)

    first = ablation()
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    report = json.loads((out / "ablation-2026-01-02.json").read_text())
    assert report["board"] == 5 and report["cpu_minutes"] == 1.0 and report["visits"] == 8 and report["seeds"] == 2
    [arm] = report["arms"]
    assert arm["name"] == "full"
    runs = arm["repetitions"]
    assert [(run["seed"], run["name"]) for run in runs] == [(1, "full"), (2, "full.seed2")]
    for run in runs:
        # Each stopped once its processes had used the minute (plus what stopping them took).
        assert 1.0 <= run["cpu_minutes"] < 2.0 and run["sittings"] == 1
        # Its self-play client's share of that, found among the platform's processes, is kept beside it.
        assert 0.0 < run["selfplay_minutes"] < run["cpu_minutes"]
        # How the minute divides between self-play and training is the scheduler's: on a busy
        # machine the trainer got no more than 256 samples, so one export's worth is all that is asked.
        assert run["selfplay_games"] > 0 and run["rows"] > 0 and run["training_samples"] >= 256
        assert run["candidates"] >= 1 and 1 <= len(run["points"]) <= 2  # one share and the final one
        assert run["points"][-1]["train_step"] == max(p["train_step"] for p in run["points"])
        assert [p["gating"] for p in run["points"][:-1]] == ["accepted"] * (len(run["points"]) - 1)
        assert run["points"][-1]["gating"] in ("accepted", "rejected", "waiting")
        assert all(math.isfinite(p["elo"]) and p["ci95"] > 0 for p in run["points"])
        folder = data / "arms" / run["name"]  # each its own database and files
        assert (folder / "data" / "sente.sqlite3").exists() and (folder / "data" / "files").is_dir()
    assert sorted(p.name for p in (data / "arms").iterdir()) == ["full", "full.seed2"]
    # Independent runs: each trained on its own games, so their final networks differ.
    finals = [
        json.loads((data / "arms" / run["name"] / "generations" / "generations.json").read_text()) for run in runs
    ]
    files = [
        data / "arms" / run["name"] / "generations" / f["final"]["file"] for run, f in zip(runs, finals, strict=True)
    ]
    assert files[0].read_bytes() != files[1].read_bytes()

    first_run, second_run = runs
    assert report["reference"] == f"full/{first_run['points'][-1]['network']}"
    assert first_run["vs_reference"] == 0.0 and second_run["vs_reference_ci95"] > 0
    # Pooled: the full arm against itself; its mean Elo is its repetitions'.
    assert arm["verdict"] == "the reference" and (arm["vs_reference"], arm["vs_reference_ci95"]) == (0.0, 0.0)
    mean = (first_run["points"][-1]["elo"] + second_run["points"][-1]["elo"]) / 2
    assert arm["mean_elo"] == pytest.approx(mean) and arm["mean_elo_ci95"] > 0

    anchors = {a["key"]: a for a in report["anchors"]}
    assert anchors["uniform"]["elo"] == 0.0 and anchors["uniform"]["games"] > 0
    rated = sum(len(run["points"]) for run in runs)
    levels = 1 if gnugo_path() else 0
    # Each rated network: the random player and GNU Go; the others also the reference.
    assert report["pairings"] == rated * (1 + levels) + rated - 1
    assert report["games"] == rated * (2 + 2 * levels) + 4 * (rated - 1)
    if levels:
        assert anchors["gnugo-3"]["games"] == 2 * rated and math.isfinite(anchors["gnugo-3"]["elo"])
        assert "gnugo-1" not in anchors and "gnugo-5" not in anchors  # only the levels asked for

    text = (out / "ablation-2026-01-02.md").read_text()
    assert "| the full method | 1 | " in text and "| the full method | 2 | " in text
    assert "| the full method | 2 of 2 | " in text and f"| full.seed2 | {second_run['points'][0]['network']}" in text
    assert "--cpu-minutes 1 --board 5" in text and "--seeds 2" in text and "--report-dir" in text
    assert (out / "ablation-2026-01-02.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Started again: the repetitions are done and every pairing played; only the report is made again.
    games = (data / "rating" / "games.json").read_text()
    second = ablation()
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-4000:]
    assert "CPU-minutes of platform used" not in second.stdout and "pairings to play" not in second.stdout
    assert (data / "rating" / "games.json").read_text() == games
    again = json.loads((out / "ablation-2026-01-02.json").read_text())
    assert again["games"] == report["games"] and again["arms"][0]["repetitions"] == runs

    changed = subprocess.run(
        [*command[:5], "--cpu-minutes", "2", *command[7:]], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert changed.returncode != 0
    assert f"{data} holds an ablation on 5x5 with 1.0 CPU-minutes of platform per arm" in changed.stderr
