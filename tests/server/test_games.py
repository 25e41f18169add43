"""Game uploads: a good game goes in with its files; every validation rule refuses its bad input with
a 400 naming the field, and leaves no row, no file and no count on the task; retries are idempotent;
another user's game id is a conflict; a failure while storing leaves nothing behind."""

from __future__ import annotations

import io
import json
import re
import uuid
import zipfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.utils import timezone

from common.go.sgf import read_sgf
from common.settings import SearchSettings, SelfPlaySettings
from tests.server import helpers
from tests.server.conftest import new_task, stored_files
from tests.server.helpers import PlayedGame, upload_fields

pytestmark = pytest.mark.kernels  # most tests upload games played by the client's search

TRAINING = "/api/v1/games/training/"
RATING = "/api/v1/games/rating/"


def post(client, url, fields):
    return client.post(url, fields, format="multipart")


def assert_refused(response, field: str, code: str | None = None, status: int = 400):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error.get("field") == field, error
    if code is not None:
        assert error["code"] == code, error
    assert error["message"]


def assert_nothing_stored(task_id: str | None = None):
    from server.distribution.models import Task
    from server.games.models import RatingGame, TrainingGame

    assert TrainingGame.objects.count() == 0
    assert RatingGame.objects.count() == 0
    assert stored_files() == []
    if task_id is not None:
        assert Task.objects.get(pk=task_id).games_received == 0


def with_sgf(game: PlayedGame, sgf: bytes, **metadata) -> PlayedGame:
    return PlayedGame(sgf, game.npz, dict(game.metadata, **metadata))


def sgf_prop(sgf: bytes, key: str, value: str) -> bytes:
    """The SGF with the root property key set to value."""
    text = sgf.decode()
    new, n = re.subn(rf"(?<=;){key}\[[^\]]*\]|(?<=\]){key}\[[^\]]*\]", f"{key}[{value}]", text, count=1)
    assert n == 1, f"no {key} in the SGF"
    return new.encode()


def moves_of(sgf: bytes) -> list[str]:
    return re.findall(r";([BW])\[([a-z]{0,2})\]", sgf.decode())


def truncated(sgf: bytes, keep: int, result: str) -> bytes:
    """The SGF with only its first `keep` moves, and result `result`."""
    text = sgf.decode()
    positions = [m.start() for m in re.finditer(r";[BW]\[", text)]
    cut = text[: positions[keep]] + ")\n" if keep < len(positions) else text
    return sgf_prop(cut.encode(), "RE", result)


@pytest.fixture
def task(run, alice):
    return new_task(alice[1], games=3)


@pytest.fixture
def game(selfplay_games) -> PlayedGame:
    return selfplay_games[0]


# --- the good path -------------------------------------------------------------------------------
def test_a_selfplay_game_is_stored_with_its_files(run, alice, task, game):
    from server.distribution.models import Task
    from server.games.models import TrainingGame

    user, client = alice
    response = post(client, TRAINING, upload_fields(task["id"], game))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["game_id"] == game.metadata["game_id"]
    row = TrainingGame.objects.get()
    assert (row.user, row.network.name, row.rows, row.moves) == (
        user,
        helpers.RANDOM_NET,
        game.metadata["rows"],
        game.metadata["moves"],
    )
    assert row.result == game.metadata["result"] and row.komi == game.metadata["komi"]
    assert row.settings_version.version == 1 and str(row.task_id) == task["id"]
    rec = read_sgf(game.sgf)
    assert row.winner == (rec.result[0] if rec.result[0] in "BW" else {"0": "0", "Void": "-"}[rec.result])
    files = stored_files()
    assert [f.read_bytes() for f in files if f.suffix == ".sgf"] == [game.sgf]
    assert [f.read_bytes() for f in files if f.suffix == ".npz"] == [game.npz]
    assert all(f.stem in (row.sgf_sha256, row.npz_sha256) for f in files)  # stored by content hash
    assert Task.objects.get(pk=task["id"]).games_received == 1


def test_a_retry_returns_the_stored_game(run, alice, task, game):
    from server.distribution.models import Task
    from server.games.models import TrainingGame

    client = alice[1]
    first = post(client, TRAINING, upload_fields(task["id"], game))
    again = post(client, TRAINING, upload_fields(task["id"], game))
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert TrainingGame.objects.count() == 1
    assert Task.objects.get(pk=task["id"]).games_received == 1
    assert len(stored_files()) == 2


def test_another_users_game_id_is_a_conflict(run, alice, bob, task, game):
    from server.games.models import TrainingGame

    assert post(alice[1], TRAINING, upload_fields(task["id"], game)).status_code == 201
    files = stored_files()
    bobs_task = new_task(bob[1])
    response = post(bob[1], TRAINING, upload_fields(bobs_task["id"], game))
    assert_refused(response, "metadata.game_id", "game_id_taken", status=409)
    assert TrainingGame.objects.count() == 1 and TrainingGame.objects.get().user == alice[0]
    assert stored_files() == files


def test_games_beyond_the_tasks_count_are_refused(run, alice, selfplay_games):
    client = alice[1]
    task = new_task(client, games=1)
    assert post(client, TRAINING, upload_fields(task["id"], selfplay_games[0])).status_code == 201
    files = stored_files()
    response = post(client, TRAINING, upload_fields(task["id"], selfplay_games[1]))
    assert_refused(response, "task", "task_complete")
    assert stored_files() == files


# --- the request ---------------------------------------------------------------------------------
@pytest.mark.parametrize("missing", ["task", "metadata", "sgf", "npz"])
def test_missing_fields_are_named(run, alice, task, game, missing):
    fields = upload_fields(task["id"], game)
    del fields[missing]
    assert_refused(post(alice[1], TRAINING, fields), missing, "required")
    assert_nothing_stored(task["id"])


def test_a_field_is_given_once_required():
    from server.games.ingest import _given

    assert _given(b"(;)") == b"(;)"
    assert _given("") == ""
    with pytest.raises(ValueError, match="before it was required"):
        _given(None)


@pytest.mark.parametrize(("field", "limit"), [("sgf", "sgf_bytes"), ("npz", "npz_bytes")])
def test_files_above_the_size_limits_are_refused(run, alice, task, game, settings, field, limit):
    settings.SENTE_LIMITS = dict(settings.SENTE_LIMITS, **{limit: 100})
    assert_refused(post(alice[1], TRAINING, upload_fields(task["id"], game)), field, "too_large")
    assert_nothing_stored(task["id"])


def test_an_npz_that_unpacks_too_large_is_refused_before_it_is_read(run, alice, task, game):
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("globalTargetsNC.npy", b"\0" * (25 * 1024 * 1024))
    assert len(bomb.getvalue()) < 100_000
    fields = upload_fields(task["id"], PlayedGame(game.sgf, bomb.getvalue(), game.metadata))
    assert_refused(post(alice[1], TRAINING, fields), "npz", "too_large")
    assert_nothing_stored(task["id"])


def test_metadata_that_is_not_json_is_refused(run, alice, task, game):
    fields = upload_fields(task["id"], game)
    fields["metadata"] = "{not json"
    assert_refused(post(alice[1], TRAINING, fields), "metadata")
    assert_nothing_stored(task["id"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"komi": 7.3}, "metadata.komi"),
        ({"game_id": "../../etc"}, "metadata.game_id"),
        ({"rules": "no such rules"}, "metadata.rules"),
        ({"rows": -1}, "metadata.rows"),
        ({"moves": "many"}, "metadata.moves"),
        ({"surprise": 1}, "metadata.surprise"),
    ],
)
def test_malformed_metadata_is_refused_naming_the_key(run, alice, task, game, change, field):
    assert_refused(post(alice[1], TRAINING, upload_fields(task["id"], game, **change)), field)
    assert_nothing_stored(task["id"])


def test_metadata_missing_a_key_is_refused(run, alice, task, game):
    fields = upload_fields(task["id"], game)
    metadata = dict(game.metadata)
    del metadata["network"]
    fields["metadata"] = json.dumps(metadata)
    assert_refused(post(alice[1], TRAINING, fields), "metadata.network")
    assert_nothing_stored(task["id"])


# --- the task ------------------------------------------------------------------------------------
def test_a_malformed_or_unknown_task_is_refused(run, alice, task, game):
    assert_refused(post(alice[1], TRAINING, upload_fields("nope", game)), "task")
    assert_refused(post(alice[1], TRAINING, upload_fields(str(uuid.uuid4()), game)), "task", "no_task")
    assert_nothing_stored(task["id"])


def test_another_users_task_is_refused(run, alice, bob, task, game):
    response = post(bob[1], TRAINING, upload_fields(task["id"], game))
    assert_refused(response, "task", "not_your_task")
    assert_nothing_stored(task["id"])


def test_an_expired_task_is_refused_after_its_grace(run, alice, task, game, settings):
    from server.distribution.models import Task

    Task.objects.filter(pk=task["id"]).update(expires_at=timezone.now() - timedelta(seconds=10))
    settings.SENTE_TASK_GRACE_SECONDS = 3600
    ok = post(alice[1], TRAINING, upload_fields(task["id"], game))
    assert ok.status_code == 201  # within the grace period
    settings.SENTE_TASK_GRACE_SECONDS = 5
    response = post(alice[1], TRAINING, upload_fields(task["id"], game, game_id="another-id"))
    assert_refused(response, "task", "expired")


def test_a_rating_task_does_not_take_training_games(run, alice, game):
    from server.networks.models import Network

    Network.objects.create(name="test-net1", run=run, state=Network.State.ACCEPTED)
    task = new_task(alice[1], kinds=("rating",))
    assert task["kind"] == "rating"
    assert_refused(post(alice[1], TRAINING, upload_fields(task["id"], game)), "task", "wrong_kind")
    assert_nothing_stored(task["id"])


def test_the_network_must_be_the_tasks(run, alice, task, game):
    response = post(alice[1], TRAINING, upload_fields(task["id"], game, network="test-other"))
    assert_refused(response, "metadata.network", "mismatch")
    assert_nothing_stored(task["id"])


def test_the_settings_version_must_be_the_tasks(run, alice, task, game):
    response = post(alice[1], TRAINING, upload_fields(task["id"], game, settings_version=2))
    assert_refused(response, "metadata.settings_version", "mismatch")
    assert_nothing_stored(task["id"])


# --- the training rows ---------------------------------------------------------------------------
def test_an_npz_that_is_not_an_archive_is_refused(run, alice, task, game):
    fields = upload_fields(task["id"], PlayedGame(game.sgf, b"this is not a zip file", game.metadata))
    assert_refused(post(alice[1], TRAINING, fields), "npz", "bad_npz")
    assert_nothing_stored(task["id"])


def test_an_npz_that_needs_a_newer_zip_reader_is_refused(run, alice, task, game):
    npz = bytearray(game.npz)
    central = npz.index(b"PK\x01\x02")
    npz[central + 6 : central + 8] = (99).to_bytes(2, "little")  # "version needed to extract": 9.9
    fields = upload_fields(task["id"], PlayedGame(game.sgf, bytes(npz), game.metadata))
    assert_refused(post(alice[1], TRAINING, fields), "npz", "bad_npz")
    assert_nothing_stored(task["id"])


def test_rows_the_validator_refuses_are_refused(run, alice, task, game):
    with np.load(io.BytesIO(game.npz)) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["globalTargetsNC"] = arrays["globalTargetsNC"].copy()
    arrays["globalTargetsNC"][0, 0] = np.nan
    bad = io.BytesIO()
    np.savez_compressed(bad, **arrays)
    fields = upload_fields(task["id"], PlayedGame(game.sgf, bad.getvalue(), game.metadata))
    response = post(alice[1], TRAINING, fields)
    assert_refused(response, "npz", "bad_rows")
    assert "globalTargetsNC" in response.json()["error"]["message"]
    assert_nothing_stored(task["id"])


def test_the_row_count_must_match_the_metadata(run, alice, task, game):
    response = post(alice[1], TRAINING, upload_fields(task["id"], game, rows=game.metadata["rows"] + 1))
    assert_refused(response, "metadata.rows", "mismatch")
    assert_nothing_stored(task["id"])


@pytest.fixture(scope="session")
def nine_by_nine(tmp_path_factory) -> PlayedGame:
    from client.search.engine import NullEvaluator
    from client.selfplay.run import run_selfplay

    out = Path(tmp_path_factory.mktemp("nine"))
    settings = SelfPlaySettings(
        board_sizes=(9,),
        board_size_weights=(1.0,),
        visits=8,
        cheap_visits=2,
        max_moves=150,
        rules=helpers.SELFPLAY.rules,
    )
    run_selfplay(
        NullEvaluator(),
        settings,
        games=2,
        parallel=2,
        out_dir=out,
        seed=4,
        progress=False,
        player_name=helpers.RANDOM_NET,
    )
    sgf = sorted(out.glob("*.sgf"))[0]
    return PlayedGame(
        sgf.read_bytes(),
        sgf.with_suffix(".npz").read_bytes(),
        helpers.training_metadata(sgf.read_bytes(), sgf.with_suffix(".npz").read_bytes(), helpers.RANDOM_NET, sgf.stem),
    )


def test_rows_of_another_board_size_are_refused(run, alice, task, game, nine_by_nine):
    fields = upload_fields(
        task["id"], PlayedGame(game.sgf, nine_by_nine.npz, game.metadata), rows=nine_by_nine.metadata["rows"]
    )
    assert_refused(post(alice[1], TRAINING, fields), "npz", "mismatch")
    assert_nothing_stored(task["id"])


# --- the SGF -------------------------------------------------------------------------------------
def test_an_sgf_that_does_not_parse_is_refused_with_where(run, alice, task, game):
    response = post(alice[1], TRAINING, upload_fields(task["id"], with_sgf(game, b"(;GM[1]SZ[7];B[aa")))
    assert_refused(response, "sgf", "bad_sgf")
    assert "line" in response.json()["error"]["message"]
    assert_nothing_stored(task["id"])


def test_an_sgf_with_two_games_is_refused(run, alice, task, game):
    response = post(alice[1], TRAINING, upload_fields(task["id"], with_sgf(game, game.sgf + game.sgf)))
    assert_refused(response, "sgf")
    assert_nothing_stored(task["id"])


def test_an_sgf_of_another_board_than_the_metadata_is_refused(run, alice, task, game, nine_by_nine):
    fields = upload_fields(task["id"], PlayedGame(nine_by_nine.sgf, game.npz, game.metadata))
    assert_refused(post(alice[1], TRAINING, fields), "sgf", "mismatch")
    assert_nothing_stored(task["id"])


def test_a_board_size_outside_the_settings_is_refused(run, alice, task, nine_by_nine):
    response = post(alice[1], TRAINING, upload_fields(task["id"], nine_by_nine))
    assert_refused(response, "sgf", "not_in_settings")
    assert_nothing_stored(task["id"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"board_x_size": 9, "board_y_size": 9}, "npz"),  # the rows are checked first: they are of a 7x7 board
        ({"komi": 0.5}, "sgf"),
        (
            {
                "rules": '{"ko":"SIMPLE","scoring":"AREA","tax":"NONE","suicide":true,"hasButton":false,'
                '"whiteHandicapBonus":"0"}'
            },
            "sgf",
        ),
        ({"result": "B+100"}, "sgf"),
        ({"moves": 1}, "sgf"),
    ],
)
def test_the_sgf_and_rows_must_agree_with_the_metadata(run, alice, task, game, change, field):
    response = post(alice[1], TRAINING, upload_fields(task["id"], game, **change))
    assert_refused(response, field, "mismatch")
    assert_nothing_stored(task["id"])


def test_rules_outside_the_settings_are_refused(run, alice, task, game):
    simple = "koSIMPLEscoreAREAtaxNONEsui1"
    sgf = sgf_prop(game.sgf, "RU", simple)
    response = post(alice[1], TRAINING, upload_fields(task["id"], with_sgf(game, sgf), rules=simple))
    assert_refused(response, "sgf", "not_in_settings")
    assert "ko" in response.json()["error"]["message"]
    assert_nothing_stored(task["id"])


def test_a_game_that_begins_in_an_encore_phase_is_refused(run, alice, task, game):
    sgf = game.sgf.replace(b"SZ[7]", b"SZ[7]ENCORE[1]", 1)
    assert read_sgf(sgf).encore_phase == 1
    response = post(alice[1], TRAINING, upload_fields(task["id"], with_sgf(game, sgf)))
    assert_refused(response, "sgf", "not_in_settings")
    assert "begins in encore phase 1" in response.json()["error"]["message"]
    assert_nothing_stored(task["id"])


def test_players_must_be_the_tasks_network(run, alice, task, game):
    response = post(alice[1], TRAINING, upload_fields(task["id"], with_sgf(game, sgf_prop(game.sgf, "PB", "me"))))
    assert_refused(response, "sgf", "mismatch")
    assert_nothing_stored(task["id"])


def test_the_handicap_must_match(run, alice, task, game):
    response = post(alice[1], TRAINING, upload_fields(task["id"], game, handicap=2))
    assert_refused(response, "sgf", "mismatch")
    assert_nothing_stored(task["id"])


def test_an_illegal_move_is_refused_naming_it(run, alice, task, game):
    moves = moves_of(game.sgf)
    first = next(i for i, (_, at) in enumerate(moves) if at)  # the first move that is not a pass
    text = game.sgf.decode()
    starts = [m.start() for m in re.finditer(r";[BW]\[", text)]
    later = first + 2  # the same player, two moves on: the point is taken
    end = text.index("]", starts[later])
    text = text[: starts[later]] + f";{moves[later][0]}[{moves[first][1]}" + text[end:]
    response = post(alice[1], TRAINING, upload_fields(task["id"], with_sgf(game, text.encode())))
    assert_refused(response, "sgf", "illegal_move")
    assert f"move {later + 1}" in response.json()["error"]["message"]
    assert_nothing_stored(task["id"])


def test_a_wrong_result_is_refused(run, alice, task, selfplay_games):
    game = next(g for g in selfplay_games if g.metadata["result"][:2] in ("B+", "W+"))
    wrong = ("W" if game.metadata["result"][0] == "B" else "B") + game.metadata["result"][1:]
    sgf = sgf_prop(game.sgf, "RE", wrong)
    response = post(alice[1], TRAINING, upload_fields(task["id"], with_sgf(game, sgf), result=wrong))
    assert_refused(response, "sgf", "wrong_result")
    assert_nothing_stored(task["id"])


@pytest.mark.parametrize("result", ["Void", "B+R"])
def test_an_unfinished_selfplay_game_needs_the_move_limit(run, alice, task, game, result):
    sgf = truncated(game.sgf, 6, result)
    response = post(alice[1], TRAINING, upload_fields(task["id"], with_sgf(game, sgf), result=result, moves=6))
    assert_refused(response, "sgf", "wrong_result")
    assert_nothing_stored(task["id"])


# --- storing -------------------------------------------------------------------------------------
def test_a_failure_while_storing_leaves_no_row_and_no_file(run, alice, task, game, monkeypatch):
    from rest_framework.test import APIClient

    from server.files import StoredFiles

    real_put = StoredFiles.put
    calls = []

    def failing_put(self, kind, data, suffix, sha256=None):
        calls.append(kind)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_put(self, kind, data, suffix, sha256)

    monkeypatch.setattr(StoredFiles, "put", failing_put)
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=alice[1]._credentials["HTTP_AUTHORIZATION"])
    response = post(client, TRAINING, upload_fields(task["id"], game))
    assert response.status_code == 500
    assert calls == ["sgf", "npz"]
    assert_nothing_stored(task["id"])
    monkeypatch.setattr(StoredFiles, "put", real_put)
    assert post(alice[1], TRAINING, upload_fields(task["id"], game)).status_code == 201  # and it can come again


# --- rating games --------------------------------------------------------------------------------
@pytest.fixture
def second_network(run):
    from server.networks.models import Network

    return Network.objects.create(name="test-net1", run=run, state=Network.State.ACCEPTED)


@pytest.fixture(scope="session")
def rating_games(tmp_path_factory) -> list[PlayedGame]:
    return helpers.rating_games(Path(tmp_path_factory.mktemp("rating")), "test-net1", helpers.RANDOM_NET)


def test_a_rating_game_is_stored(run, alice, second_network, rating_games):
    from server.games.models import RatingGame

    task = new_task(alice[1], kinds=("rating",))
    assert {n["name"] for n in task["networks"]} == {"test-net1", helpers.RANDOM_NET}
    game = rating_games[0]
    response = post(alice[1], RATING, upload_fields(task["id"], game))
    assert response.status_code == 201, response.content
    row = RatingGame.objects.get()
    assert (row.black_network.name, row.white_network.name) == (
        game.metadata["black_network"],
        game.metadata["white_network"],
    )
    assert post(alice[1], RATING, upload_fields(task["id"], game)).status_code == 200


@pytest.mark.parametrize(
    "change", [{"black_network": "test-other"}, {"white_network": "test-net1", "black_network": "test-net1"}]
)
def test_a_rating_game_must_be_between_the_tasks_networks(run, alice, second_network, rating_games, change):
    task = new_task(alice[1], kinds=("rating",))
    response = post(alice[1], RATING, upload_fields(task["id"], rating_games[0], **change))
    assert_refused(response, "metadata.black_network", "mismatch")
    assert_nothing_stored(task["id"])


def test_a_rating_game_must_use_the_rating_komi(run, alice, second_network, rating_games):
    task = new_task(alice[1], kinds=("rating",))
    game = rating_games[0]
    sgf = sgf_prop(game.sgf, "KM", "6.5")
    response = post(alice[1], RATING, upload_fields(task["id"], with_sgf(game, sgf), komi=6.5))
    assert_refused(response, "sgf", "not_in_settings")
    assert_nothing_stored(task["id"])


def test_a_rating_game_played_with_other_settings_is_refused(run, alice, second_network, rating_games):
    task = new_task(alice[1], kinds=("rating",))
    game = rating_games[0]
    rec = read_sgf(game.sgf)
    info = json.loads(rec.nodes[0].comment)
    info["settings"]["visits"] += 1
    rec.nodes[0].comment = json.dumps(info)
    response = post(alice[1], RATING, upload_fields(task["id"], with_sgf(game, rec.to_sgf().encode())))
    assert_refused(response, "sgf", "not_in_settings")
    assert "differ in visits" in response.json()["error"]["message"]
    assert_nothing_stored(task["id"])


def _noted_winrates(sgf: bytes, winrates: dict[int, float]) -> bytes:
    """The record with the win rate of each of the given moves' search notes (1-based) changed."""
    rec = read_sgf(sgf)
    for k, winrate in winrates.items():
        rec.nodes[k].comment = re.sub(r"winrate \d\.\d{3}", f"winrate {winrate:.3f}", rec.nodes[k].comment)
    return rec.to_sgf().encode()


def test_a_resigned_rating_game_is_taken_where_its_notes_support_it(run, alice, second_network, rating_games):
    """Black resigns after move 8: its win rate was below the threshold (0.05) in each of the last
    five notes, black's own searches (odd moves) and white's (even moves, noting white's win rate)."""
    from server.games.models import RatingGame

    task = new_task(alice[1], kinds=("rating",))
    game = rating_games[1]
    lost = {k: 0.02 if k % 2 else 0.98 for k in range(4, 9)}
    sgf = _noted_winrates(truncated(game.sgf, 8, "W+R"), lost)
    response = post(alice[1], RATING, upload_fields(task["id"], with_sgf(game, sgf), result="W+R", moves=8))
    assert response.status_code == 201, response.content
    row = RatingGame.objects.get()
    assert row.resigned and row.winner == "W" and row.score is None


@pytest.mark.parametrize(
    "winrates",
    [
        {},  # as played: near even, nobody resigns
        {k: 0.02 if k % 2 else 0.98 for k in range(5, 9)},  # four turns lost, five needed
        {k: 0.02 if k % 2 else 0.98 for k in range(4, 9)} | {6: 0.90},  # white's search saw black's chances
        {k: 0.98 if k % 2 else 0.02 for k in range(4, 9)},  # it was white whose game was lost
    ],
)
def test_a_resignation_the_notes_do_not_support_is_refused(run, alice, second_network, rating_games, winrates):
    """A forged resignation (a game cut short and given to one side) is refused: the notes say who
    was lost, and for how long; the task can still take its game."""
    task = new_task(alice[1], kinds=("rating",))
    game = rating_games[1]
    sgf = _noted_winrates(truncated(game.sgf, 8, "W+R"), winrates)
    response = post(alice[1], RATING, upload_fields(task["id"], with_sgf(game, sgf), result="W+R", moves=8))
    assert_refused(response, "sgf", "wrong_result")
    assert "black resigned, but the record does not support it" in response.json()["error"]["message"]
    assert_nothing_stored(task["id"])


def test_a_rating_game_notes_every_move(run, alice, second_network, rating_games):
    """Every move of a match is a full search with its note; a record without them is refused."""
    task = new_task(alice[1], kinds=("rating",))
    game = rating_games[0]
    rec = read_sgf(game.sgf)
    rec.nodes[3].comment = None
    response = post(alice[1], RATING, upload_fields(task["id"], with_sgf(game, rec.to_sgf().encode())))
    assert_refused(response, "sgf", "bad_record")
    assert "move 3 has no search note" in response.json()["error"]["message"]
    assert_nothing_stored(task["id"])


def test_a_selfplay_task_does_not_take_rating_games(run, alice, task, second_network, rating_games):
    assert_refused(post(alice[1], RATING, upload_fields(task["id"], rating_games[0])), "task", "wrong_kind")
    assert_nothing_stored(task["id"])


def test_a_game_of_gumbel_search_goes_in(alice, tmp_path):
    """Self-play with the Gumbel search: its policy targets (the improved policy, scaled to the rows'
    largest count) and its moves (the best of the most visited) pass the replay's checks."""
    from server.games.models import TrainingGame
    from server.runs.models import create_run

    search = SearchSettings(gumbel=True, gumbel_considered=4)
    settings = helpers.SETTINGS.replace(selfplay=helpers.SELFPLAY.replace(search=search))
    create_run(helpers.RUN, settings.to_dict())
    games = helpers.selfplay_games(tmp_path, helpers.RANDOM_NET, count=3, seed=3, settings=settings.selfplay)
    task = new_task(alice[1])
    for game in games:
        response = post(alice[1], TRAINING, upload_fields(task["id"], game))
        assert response.status_code == 201, response.content
    assert TrainingGame.objects.count() == len(games) > 0
