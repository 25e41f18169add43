"""Games, networks and requests for the server's tests, made with the client's own code."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from common.settings import GatingSettings, MatchSettings, RulesChoice, RunSettings, SearchSettings, SelfPlaySettings

RUN = "test"
RANDOM_NET = f"{RUN}-random"

SELFPLAY = SelfPlaySettings(
    board_sizes=(7,),
    board_size_weights=(1.0,),
    visits=12,
    cheap_visits=4,
    full_search_prob=0.5,
    max_moves=150,
    rules=RulesChoice(ko=("POSITIONAL", "SITUATIONAL"), suicide=(False, True)),
)
RATING = MatchSettings(
    visits=8,
    komi=7.5,
    board_sizes=(7,),
    board_size_weights=(1.0,),
    max_moves=150,
    search=SearchSettings(root_noise=False, forced_playouts=False),
)
# One account plays most tests' rating games: its games count whole (the cap's own tests set a share).
SETTINGS = RunSettings(selfplay=SELFPLAY, rating=RATING, gating=GatingSettings(account_share=1.0))


@dataclass
class PlayedGame:
    sgf: bytes
    npz: bytes | None
    metadata: dict


def selfplay_games(
    out: Path,
    network: str,
    count: int = 6,
    seed: int = 1,
    settings: SelfPlaySettings = SELFPLAY,
    parallel: int | None = None,
    evaluator=None,
) -> list[PlayedGame]:
    """Self-play games of the random network (or of `evaluator`) as the client plays them, with their
    metadata (all at once unless `parallel` says fewer: then early forks start some of the later
    games)."""
    from client.search.engine import NullEvaluator
    from client.selfplay.run import run_selfplay

    run_selfplay(
        evaluator or NullEvaluator(),
        settings,
        games=count,
        parallel=parallel or count,
        out_dir=out,
        seed=seed,
        progress=False,
        player_name=network,
    )
    games = []
    for sgf_path in sorted(out.glob("*.sgf")):
        npz_path = sgf_path.with_suffix(".npz")
        if not npz_path.exists():
            continue
        sgf = sgf_path.read_bytes()
        npz = npz_path.read_bytes()
        games.append(PlayedGame(sgf, npz, training_metadata(sgf, npz, network, sgf_path.stem)))
    return games


def training_metadata(sgf: bytes, npz: bytes, network: str, game_id: str, settings_version: int = 1) -> dict:
    from client.contribute.metadata import training_metadata

    return training_metadata(sgf, npz, network, game_id, settings_version).to_dict()


def rating_games(out: Path, black: str, white: str, count: int = 2, seed: int = 3) -> list[PlayedGame]:
    """Match games between two random-policy sides named black and white (game 0: black is black)."""
    from client.contribute.metadata import rating_metadata
    from client.match.run import run_match
    from client.search.engine import NullEvaluator

    run_match(
        [NullEvaluator(), NullEvaluator()], (black, white), RATING, games=count, parallel=count, out_dir=out, seed=seed
    )
    games = []
    for i, sgf_path in enumerate(sorted(out.glob("match-*.sgf"))):
        sgf = sgf_path.read_bytes()
        games.append(PlayedGame(sgf, None, rating_metadata(sgf, f"rating-{seed}-{i}", 1).to_dict()))
    return games


def upload_network(client, name: str, data: bytes):
    """Upload a network file to the run (the client must be a trainer's)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    fields = {
        "name": name,
        "run": RUN,
        "file": SimpleUploadedFile(f"{name}.safetensors", data, content_type="application/octet-stream"),
    }
    return client.post("/api/v1/networks/", fields, format="multipart")


def content(response) -> bytes:
    """The body; a streamed body is read to its end, which closes the file (the test client closes the
    response then: closing it again here would close the test's database connection)."""
    return b"".join(response.streaming_content) if response.streaming else response.content


def random_network_ref(run_name: str) -> dict:
    """What tasks and the current run say of a run's random network: it has no file to fetch."""
    return {
        "name": f"{run_name}-random",
        "is_random": True,
        "url": None,
        "public_url": None,
        "sha256": None,
        "bytes": 0,
    }


def network_file(name: str, seed: int = 0) -> bytes:
    """A tiny random-weight network file named name."""
    import torch

    from common.nn.model import Model, named_config
    from common.nn.modelfile import encode_model

    torch.manual_seed(seed)
    model = Model(named_config("tiny"))
    return encode_model(model.config, model.state_dict(), name)


def upload_fields(task_id: str, game: PlayedGame, **metadata_changes) -> dict:
    """The multipart fields of a game upload (for the Django test client)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    metadata = dict(game.metadata, **metadata_changes)
    fields = {
        "task": task_id,
        "metadata": json.dumps(metadata),
        "sgf": SimpleUploadedFile("game.sgf", game.sgf, content_type="application/x-go-sgf"),
    }
    if game.npz is not None:
        fields["npz"] = SimpleUploadedFile("game.npz", game.npz, content_type="application/octet-stream")
    return fields


def store_training_games(run, user, games: list[PlayedGame], network=None, minutes_apart: float = 1.0) -> list:
    """Self-play games stored as an accepted upload stores them (row, SGF and npz by content hash),
    without the upload's checks, oldest first, ``minutes_apart`` apart, ending now."""
    from datetime import timedelta

    from django.utils import timezone

    from server.distribution.models import Task
    from server.files import StoredFiles, sha256_of
    from server.games.models import TrainingGame

    network = network or run.networks.get(is_random=True)
    now = timezone.now()
    task = Task.objects.create(
        kind=Task.Kind.SELFPLAY,
        run=run,
        user=user,
        network=network,
        settings_version=run.current_settings(),
        games=len(games),
        client_version="0.1.0",
        client_instance_id="test",
        expires_at=now + timedelta(hours=1),
    )
    files = StoredFiles()
    rows = []
    for k, game in enumerate(games):
        m = game.metadata
        rows.append(
            TrainingGame.objects.create(
                client_game_id=f"{task.id.hex[:16]}-{k}",
                task=task,
                user=user,
                run=run,
                settings_version=task.settings_version,
                board_x_size=m["board_x_size"],
                board_y_size=m["board_y_size"],
                komi=m["komi"],
                rules={},
                result=m["result"],
                winner="-",
                moves=m["moves"],
                network=network,
                rows=m["rows"],
                sgf=files.put("games", game.sgf, ".sgf"),
                sgf_sha256=sha256_of(game.sgf),
                npz=files.put("rows", game.npz, ".npz"),
                npz_sha256=sha256_of(game.npz),
                created_at=now - timedelta(minutes=minutes_apart * (len(games) - 1 - k)),
            )
        )
    return rows


def store_rating_games(run, user, black, white, sgf: bytes, count: int) -> list:
    """``count`` rating games of ``black`` against ``white`` with the record ``sgf``, stored as an
    accepted upload stores them (without its checks), a minute apart, the newest now."""
    from datetime import timedelta

    from django.utils import timezone

    from server.distribution.models import Task
    from server.files import StoredFiles, sha256_of
    from server.games.models import RatingGame

    now = timezone.now()
    task = Task.objects.create(
        kind=Task.Kind.RATING,
        run=run,
        user=user,
        network_a=black,
        network_b=white,
        settings_version=run.current_settings(),
        games=count,
        client_version="0.1.0",
        client_instance_id="test",
        expires_at=now + timedelta(hours=1),
    )
    name = StoredFiles().put("games", sgf, ".sgf")
    return RatingGame.objects.bulk_create(
        [
            RatingGame(
                client_game_id=f"{task.id.hex}-{k}",
                task=task,
                user=user,
                run=run,
                settings_version=task.settings_version,
                board_x_size=7,
                board_y_size=7,
                komi=7.5,
                rules={
                    "ko": "POSITIONAL",
                    "scoring": "AREA",
                    "tax": "NONE",
                    "suicide": True,
                    "hasButton": False,
                    "whiteHandicapBonus": "0",
                },
                result="W+R",
                winner="W",
                moves=20,
                sgf=name,
                sgf_sha256=sha256_of(sgf),
                black_network=black,
                white_network=white,
                created_at=now - timedelta(minutes=k),
            )
            for k in range(count)
        ]
    )


def settings_in_a_process(env: dict[str, str], *names: str):
    """The named Django settings as a fresh process reads them from ``env`` alone (none of this
    process's SENTE_ variables): its printed values, or its error on stderr."""
    import os
    import subprocess
    import sys

    code = (
        "import django; from django.conf import settings; django.setup(); "
        f"print(*(getattr(settings, n) for n in {names!r}))"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SENTE_", "DJANGO_", "SECRET_KEY"))}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        env={**base, "DJANGO_SETTINGS_MODULE": "server.settings", **env},
    )
