"""The learning experiment's measurements (``server.platform.experiment.measure``): on a run with an
accepted generation, the newest one plays the random network, the uniform random player and GNU Go
(real client processes and a real GNU Go), the learning curve plays GNU Go at its checkpoints, and
the report says what came of it."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.files.base import ContentFile

from common.settings import TrainingSettings
from server.platform.experiment import measure, write_report
from server.ratings.matches import gnugo_path
from tests.server import helpers

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def generation(db):
    from common.nn.model import named_config
    from server.networks.models import Network
    from server.networks.services import store_network
    from server.ratings.models import NetworkEvent
    from server.runs.models import create_run

    run = create_run(helpers.RUN, helpers.SETTINGS.replace(training=TrainingSettings(architecture="tiny")).to_dict())
    data = helpers.network_file("test-gen1")
    network = store_network(
        run=run,
        name="test-gen1",
        content=ContentFile(data),
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        config=named_config("tiny"),
        parent=run.selfplay_network(),
        train_step=2048,
        rows_seen=900,
    )
    Network.objects.filter(pk=network.pk).update(state=Network.State.ACCEPTED)
    NetworkEvent.objects.create(network=network, kind=NetworkEvent.Kind.ACCEPTED)
    return run


def test_the_newest_generation_plays_its_three_opponents_and_is_reported(generation, tmp_path):
    said = []
    report = measure(
        generation,
        tmp_path,
        minutes=12.3,
        machine="a test machine",
        random_games=2,
        uniform_games=2,
        gnugo_games=2,
        visits=4,
        curve_every=5,
        curve_levels=(1,),
        curve_factors=(1, 2),
        curve_games=2,
        jobs=2,
        progress=said.append,
    )
    assert [g.name for g in report.generations] == [helpers.RANDOM_NET, "test-gen1"]
    assert report.generations[1].train_step == 2048 and report.generations[1].rows_seen == 900
    if gnugo_path() is None:
        # No rating games: the prior ties the generation to its parent (the random network's 0 Elo).
        assert report.generations[1].elo == pytest.approx(0.0, abs=1e-6) and report.rises() == (0, 1)
    for match in (report.versus_random, report.versus_uniform):
        assert match["network"] == "test-gen1" and match["games"] == 2 and match["visits"] == 4
        assert 0 <= match["wins"] <= 2 and match["wins"] + match["draws"] <= 2
    assert report.versus_random["opponent"] == "the random network"
    assert report.versus_uniform["opponent"] == "the uniform random player"
    if gnugo_path() is None:
        assert report.versus_gnugo == {"skipped": "GNU Go is not installed (Debian package gnugo)"}
        assert report.curve == [] and report.curve_note == "GNU Go is not installed (Debian package gnugo)"
        assert said[0] == "rating the generations" and len(said) == 4
    else:
        assert report.versus_gnugo["opponent"] == "GNU Go level 1" and report.versus_gnugo["games"] == 2
        assert report.versus_gnugo["openings"] == 2 and report.versus_gnugo["distinct_games"] == 2
        _check_the_curve(generation, report, said)

    write_report(report, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "7x7, the tiny network, 12 minutes on a test machine" in text
    assert "| test-gen1 |" in text and "against the uniform random player: won" in text
    assert json.loads((tmp_path / "report.json").read_text())["versus_uniform"]["games"] == 2
    assert "twogtp" in (tmp_path / "matches.log").read_text()


def _check_the_curve(run, report, said) -> None:
    """Checkpoints at minutes 5 and 10 and the end (12.3), all the one generation: it played GNU Go
    once at each number of visits, the end's match at the match visits being the one against GNU Go
    above; those games rated GNU Go level 1 on the run's scale."""
    from server.ratings.models import AnchorMatch

    assert [(row["minutes"], row["visits"]) for row in report.curve] == [
        (5, 4),
        (5, 8),
        (10, 4),
        (10, 8),
        (12.3, 4),
        (12.3, 8),
    ]
    assert {row["network"] for row in report.curve} == {"test-gen1"} and report.curve[-1]["end"]
    at_match_visits = [row for row in report.curve if row["visits"] == 4]
    assert {(row["wins"], row["draws"], row["games"]) for row in at_match_visits} == {
        (report.versus_gnugo["wins"], report.versus_gnugo["draws"], 2)
    }
    for row in report.curve:
        assert row["opponent"] == "GNU Go level 1" and 0 <= row["low"] <= row["win_rate"] <= row["high"] <= 1
    assert report.reached_half is not None and report.reached_half["visits"] == 4
    assert said[4:6] == [
        "the learning curve: 3 checkpoints, 2 matches against GNU Go (levels 1; 4, 8 visits)",
        "curve at 8 visits: 1 pairings to play (2 games), 2 at a time",
    ]
    assert said[-1] == "rating GNU Go's levels with the generations" and len(said) == 8
    (match,) = AnchorMatch.objects.filter(run=run)
    assert (match.network.name, match.anchor.level, match.games, match.visits) == ("test-gen1", 1, 2, 4)
    assert [(a["name"], a["games"]) for a in report.anchors] == [("GNU Go level 1", 2)]


def test_without_an_accepted_generation_nothing_is_played(db, tmp_path):
    from server.runs.models import create_run

    run = create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    report = measure(run, tmp_path, minutes=1, machine="m", progress=lambda _: None)
    assert [g.name for g in report.generations] == [helpers.RANDOM_NET]
    assert (
        report.versus_random
        == report.versus_uniform
        == report.versus_gnugo
        == {"skipped": "no generation was accepted"}
    )
    assert report.curve == [] and report.curve_note == "no generation was accepted"
    assert "against the random network: not played (no generation was accepted)" in report.markdown()


def test_the_command_starts_only_on_a_fresh_data_folder(tmp_path):
    """``manage.py experiment`` measures a run from the random network: a data folder that holds a
    demo run already (an earlier platform's) is refused with what to do, as is a budget of no time."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SENTE_", "DJANGO_")) and k not in ("DATABASE_URL", "STORAGE_URL", "CACHE_URL")
    }
    env["SENTE_DATA_DIR"] = str(tmp_path / "data")

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=root, env=env, capture_output=True, text=True, timeout=120
        )

    done = manage("experiment", "--minutes", "0", "--out", str(tmp_path / "report"))
    assert done.returncode != 0 and "--minutes 0.0: must be positive" in done.stderr
    made = manage("migrate", "--no-input")
    assert made.returncode == 0, made.stderr
    made = manage(
        "shell",
        "-c",
        "from pathlib import Path; from server.platform.demo import ensure_demo; "
        f"ensure_demo(Path({str(tmp_path / 'data' / 'platform.json')!r}))",
    )
    assert made.returncode == 0, made.stderr
    done = manage("experiment", "--minutes", "1", "--out", str(tmp_path / "report"))
    assert done.returncode != 0 and "holds a demo run already" in done.stderr and "SENTE_DATA_DIR" in done.stderr
    assert not (tmp_path / "report").exists()
