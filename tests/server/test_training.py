"""Central training: the window and the rows a run counts, games held out by their rows' content, the
trainer's schedule and exports (candidate networks with their lineage, loadable by the client), its
state on the run, resuming at the exact batch with the chunk's own layout, a window that cannot be
read, a database that went away, learning on real self-play data (better than a guess uniform over
the legal moves), and a larger architecture trained alongside from when it begins and taking over."""

from __future__ import annotations

import contextlib
import io
import logging
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from django.core.files.base import ContentFile
from django.core.management import call_command

from common.settings import TrainingSettings
from tests.server import helpers

pytestmark = [pytest.mark.django_db, pytest.mark.kernels]  # most use the self-play games of training_games

TRAIN = TrainingSettings(
    architecture="tiny",
    window_c=300,
    samples_per_row=2.0,
    batch_size=32,
    learning_rate=2e-3,
    snapshot_every=128,
    export_every=512,
    holdout_one_in=5,
    validation_rows=500,
    shuffle_rows=600,
)


@pytest.fixture(scope="module")
def training_games(tmp_path_factory) -> list[helpers.PlayedGame]:
    """Sixty 7x7 self-play games of the random network, as the client plays them (each different)."""
    games = helpers.selfplay_games(Path(tmp_path_factory.mktemp("training")), helpers.RANDOM_NET, count=60, seed=11)
    assert len({g.npz for g in games}) == len(games) == 60
    return games


@pytest.fixture
def gen1(run):
    """An accepted network of the run whose games the tests store (rows of the random network count only
    up to window_c in the window's size)."""
    from server.networks.models import Network

    return Network.objects.create(name="test-gen1", run=run, state=Network.State.ACCEPTED)


def use_training(run, settings: TrainingSettings = TRAIN) -> None:
    document = helpers.SETTINGS.to_dict()
    document["training"] = settings.to_dict()
    run.set_settings(document)


def line(architecture: str = "tiny"):
    from server.training.models import TrainingLine

    return TrainingLine.objects.get(architecture=architecture)


def train(tmp_path: Path, stop_after: int | None = None, **options):
    """The trainer with --once; ``stop_after`` steps it is told to stop (as by Ctrl-C)."""
    from common.nn.training import Trainer
    from server.training.worker import TrainerOptions, TrainingWorker

    stop = threading.Event()
    worker = TrainingWorker(
        TrainerOptions(
            run=helpers.RUN,
            checkpoints=tmp_path / "checkpoints",
            device="cpu",
            once=True,
            report_seconds=0.0,
            **options,
        ),
        stop,
    )
    if stop_after is not None:
        step = Trainer.step
        calls = []

        def counting(self, batch):
            calls.append(1)
            if len(calls) == stop_after:
                stop.set()
            return step(self, batch)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Trainer, "step", counting)
            worker.run()
    else:
        worker.run()
    return worker


@contextlib.contextmanager
def counted_reads(path: Path):
    """The paths of the files ``torch.load`` reads that are ``path``, listed as they are read."""
    reads = []
    load = torch.load

    def counting(f, *args, **kwargs):
        if Path(f) == path:
            reads.append(Path(f))
        return load(f, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch, "load", counting)
        yield reads


# --- the window --------------------------------------------------------------------------------------
def test_the_window_grows_as_the_paper_says():
    s = TrainingSettings()  # c 250,000, alpha 0.75, beta 0.4
    assert s.window_rows(0) == 0 and s.window_rows(1000) == 1000  # below c: every row there is
    assert s.window_rows(250_000) == 250_000
    assert s.window_rows(1_000_000) == int(250_000 * (1 + 0.4 * (4**0.75 - 1) / 0.75))  # 493,790
    slope = (s.window_rows(251_000) - s.window_rows(250_000)) / 1000
    assert slope == pytest.approx(0.4, abs=0.002)  # grows by beta per new row at first
    sizes = [s.window_rows(n) for n in range(250_000, 10**8, 10**6)]
    assert sizes == sorted(sizes)
    steps = np.diff(sizes)
    assert (np.diff(steps) <= 1).all()  # ever slower (sublinear)


def test_a_line_shows_its_numeric_losses_by_head():
    from server.training.models import TrainingLine

    line = TrainingLine(losses={"value": 0.5, "policy": 2, "note": "nan", "skipped": None})
    assert line.loss_items == [("policy", 2), ("value", 0.5)]
    assert TrainingLine(losses={}).loss_items == []


def test_the_rows_counted_and_the_window(run, alice, bob, training_games, tmp_path):
    from server.games.holdout import is_held_out
    from server.networks.models import Network
    from server.training.plan import Fresh, LineState, budget, plan_training
    from server.training.window import row_counts, training_window, validation_files
    from server.training.worker import TrainerOptions, TrainingWorker

    use_training(run, TRAIN.replace(window_c=150, export_every=256))
    random_games = helpers.store_training_games(run, alice[0], training_games[:10], minutes_apart=10)
    settings = run.current_settings().settings.training
    random_rows = sum(g.rows for g in random_games)
    assert random_rows > 150
    # Only the random network has played, past c: the window stays at c rows, but the budget counts
    # every row, so a line that has trained what c rows allow still has work.
    counts = row_counts(run)
    assert (counts.total, counts.for_window(settings)) == (random_rows, 150)
    window = training_window(run, settings, counts)
    assert window.target_rows == 150 and window.total_rows == random_rows
    trained_on_c = budget(settings, 150, 0)
    plan = plan_training(
        run.name, settings, counts.total, 1, [LineState("tiny", 0, trained_on_c, None, Fresh())], window
    )
    (work,) = plan.work
    assert work.chunk.end_samples > trained_on_c and work.chunk.total_rows == random_rows
    (work,) = TrainingWorker(TrainerOptions(run=helpers.RUN, checkpoints=tmp_path, device="cpu"))._plan().work
    assert work.chunk.total_rows == random_rows and work.chunk.window_rows >= 150  # as the trainer plans it

    trained = Network.objects.create(name="test-trained", run=run, state=Network.State.ACCEPTED)
    later = helpers.store_training_games(run, alice[0], training_games[10:30], network=trained)
    bobs = helpers.store_training_games(run, bob[0], training_games[30:34], network=trained)
    later_rows = sum(g.rows for g in later)
    counts = row_counts(run)
    assert counts.for_window(settings) == 150 + later_rows + sum(g.rows for g in bobs)  # random rows capped at c
    assert counts.total == random_rows + later_rows + sum(g.rows for g in bobs)

    bob[0].is_active = False  # a disabled account and a disabled game no longer count
    bob[0].save()
    later[-1].disabled = True
    later[-1].save()
    counts = row_counts(run)
    assert counts.for_window(settings) == 150 + later_rows - later[-1].rows
    assert counts.total == random_rows + later_rows - later[-1].rows

    window = training_window(run, settings)
    assert window.total_rows == counts.total
    assert window.target_rows == settings.window_rows(counts.for_window(settings))
    stored = {g.npz.name: g for g in random_games + later}
    games = [stored[f.name] for f in window.files]
    assert all(f.rows == stored[f.name].rows for f in window.files)
    assert [g.created_at for g in games] == sorted((g.created_at for g in games), reverse=True)  # newest first
    assert all(not is_held_out(g.npz_sha256, 5) and not g.disabled for g in games)
    assert window.rows >= window.target_rows and window.rows - games[-1].rows < window.target_rows
    held_out = [stored[f.name] for f in validation_files(run, settings) if f.name in stored]
    assert held_out and all(is_held_out(g.npz_sha256, 5) for g in held_out)
    assert not {f.name for f in window.files} & {g.npz.name for g in held_out}


def test_games_are_held_out_by_their_content_and_a_window_holds_each_file_once(run, alice, bob, gen1, training_games):
    """The same rows uploaded under other game ids (files are stored by their content) are held out
    under every id or under none, and count once in the window."""
    from server.games.holdout import is_held_out
    from server.training.window import training_window, validation_files

    use_training(run, TRAIN.replace(window_c=100_000, validation_rows=100_000))
    first = helpers.store_training_games(run, alice[0], training_games[:30], network=gen1, minutes_apart=2)
    again = helpers.store_training_games(run, bob[0], training_games[:30], network=gen1)  # newer, other ids
    assert {g.npz.name for g in first} == {g.npz.name for g in again} and first[0].id != again[0].id
    settings = run.current_settings().settings.training
    window = training_window(run, settings)
    held_out = validation_files(run, settings)
    names = [f.name for f in window.files]
    held_names = [f.name for f in held_out]
    assert len(names) == len(set(names)) and len(held_names) == len(set(held_names))  # each file once
    expected_held = {g.npz.name for g in first if is_held_out(g.npz_sha256, 5)}
    assert 0 < len(expected_held) < 30
    assert set(held_names) == expected_held
    assert set(names) == {g.npz.name for g in first} - expected_held
    assert window.rows == sum(g.rows for g in first if g.npz.name not in expected_held)
    assert not is_held_out(first[0].npz_sha256, 0)  # holdout_one_in 0: none


def test_a_stored_file_is_read_again_when_a_read_fails(monkeypatch):
    from django.core.files.storage import default_storage

    from server import files

    monkeypatch.setattr(files, "READ_RETRY_SECONDS", 0.001)
    default_storage.save("rows/flaky.npz", ContentFile(b"PK rows"))
    opened = []

    class Flaky:
        """The storage, failing the first ``failures`` reads as object storage now and then does."""

        def __init__(self, failures: int) -> None:
            self.failures = failures

        def open(self, name, mode="rb"):
            opened.append(name)
            if len(opened) <= self.failures:
                raise ConnectionError("connection reset by peer")
            return default_storage.open(name, mode)

    monkeypatch.setattr(files, "default_storage", Flaky(files.READ_ATTEMPTS - 1))
    assert files.read_file("rows/flaky.npz") == b"PK rows"
    assert len(opened) == files.READ_ATTEMPTS
    opened.clear()
    monkeypatch.setattr(files, "default_storage", Flaky(files.READ_ATTEMPTS))
    with pytest.raises(ConnectionError):
        files.read_file("rows/flaky.npz")
    assert len(opened) == files.READ_ATTEMPTS  # then it gives up
    opened.clear()
    monkeypatch.setattr(files, "default_storage", Flaky(0))
    with pytest.raises(FileNotFoundError):
        files.read_file("rows/missing.npz")
    assert len(opened) == 1  # a file that is not there is not waited for


# --- the trainer -------------------------------------------------------------------------------------------
def test_the_trainer_waits_for_the_first_window(run, alice, training_games, tmp_path):
    from server.training.models import TrainingLine

    use_training(run, TRAIN.replace(window_c=100_000))
    total = sum(g.rows for g in helpers.store_training_games(run, alice[0], training_games[:5]))
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    call_command("train", run=helpers.RUN, once=True, checkpoints=tmp_path, device="cpu")
    # Called in-process, it leaves the caller's Ctrl-C and SIGTERM handlers as they were.
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    row = line()
    assert row.role == "current" and row.samples == 0
    assert row.status == "stopped"
    assert row.status_note == (
        f"the trainer stopped, waiting for data: {total:,} of the 100,000 rows training starts with"
    )
    assert TrainingLine.objects.count() == 1
    assert not run.networks.filter(is_random=False).exists()


def test_the_trainer_trains_as_the_data_allows_and_exports_candidates(run, alice, gen1, training_games, tmp_path):
    from django.core.files.storage import default_storage
    from rest_framework.test import APIClient

    from client.evaluator import Evaluator
    from common.go.game import Game

    use_training(run)
    games = helpers.store_training_games(run, alice[0], training_games[:40], network=gen1)
    total = sum(g.rows for g in games)
    train(tmp_path)

    row = line()
    budget = int(TRAIN.samples_per_row * total)
    assert budget - 10 * TRAIN.batch_size <= row.samples < budget + TRAIN.batch_size
    assert row.rows_total == total and row.window_rows > 0
    assert {"policy", "value", "loss", "learning_rate", "samples_per_s"} <= set(row.losses)
    assert row.validation["rows"] > 0 and row.validation["policy"] > 0
    candidates = list(run.networks.filter(name__contains="-tiny-").order_by("train_step"))
    assert len(candidates) == row.samples // TRAIN.export_every == row.exports
    assert row.last_export == candidates[-1]
    assert [c.parent for c in candidates] == [gen1, *candidates[:-1]]  # the line's lineage
    for k, c in enumerate(candidates):
        assert c.state == "candidate" and c.size_name == "b2c16"
        assert TRAIN.export_every * (k + 1) <= c.train_step < TRAIN.export_every * (k + 1) + TRAIN.batch_size
        assert c.rows_seen == total
        assert c.name == f"{run.name}-tiny-s{c.train_step}-d{total}"
    assert (tmp_path / "checkpoints" / helpers.RUN / "tiny.ckpt").exists()

    # The client loads the export and evaluates a position with it.
    evaluator = Evaluator.from_file(Path(default_storage.path(candidates[-1].file.name)), device="cpu")
    out = evaluator.evaluate([Game(7)])[0]
    assert np.isfinite(out.policy).all() and abs(out.policy.sum() - 1) < 1e-4

    # The run shows the trainer's state.
    body = APIClient().get(f"/api/v1/runs/{run.name}/").json()
    assert body["training"][0]["architecture"] == "tiny"
    assert body["training"][0]["samples"] == row.samples
    assert body["training"][0]["last_export"] == candidates[-1].name
    assert body["training"][0]["status"] == "stopped"

    # More data, more training: it continues from its checkpoint.
    more = helpers.store_training_games(run, alice[0], training_games[40:50], network=gen1)
    train(tmp_path)
    assert line().samples >= row.samples + TRAIN.samples_per_row * sum(g.rows for g in more) - 10 * 32


def test_a_stopped_trainer_resumes_at_the_exact_batch(run, alice, gen1, training_games, tmp_path):
    from server.networks.models import Network
    from server.training.models import TrainingLine

    use_training(run, TRAIN.replace(export_every=600, snapshot_every=64))
    helpers.store_training_games(run, alice[0], training_games[:40], network=gen1)
    train(tmp_path / "a", stop_after=5)
    path = tmp_path / "a" / "checkpoints" / helpers.RUN / "tiny.ckpt"
    state = torch.load(path, weights_only=True)
    assert state["samples"] == 5 * 32 and state["extra"]["chunk"]["next_batch"] == 5
    assert line().status == "stopped"
    with counted_reads(path) as reads:
        train(tmp_path / "a")
    assert reads == [path]  # the checkpoint is read once, to plan and to start from
    resumed = torch.load(tmp_path / "a" / "checkpoints" / helpers.RUN / "tiny.ckpt", weights_only=True)

    TrainingLine.objects.all().delete()
    for network in Network.objects.filter(name__contains="-tiny-").order_by("-train_step"):
        network.delete()  # children before their parents
    train(tmp_path / "b")  # the same training without the stop
    straight = torch.load(tmp_path / "b" / "checkpoints" / helpers.RUN / "tiny.ckpt", weights_only=True)
    assert resumed["samples"] == straight["samples"] > 5 * 32
    assert resumed["extra"]["chunk"] is None
    for name, value in straight["model"].items():
        assert torch.equal(resumed["model"][name], value), name
    for name, value in straight["average"].items():
        assert torch.equal(resumed["average"][name], value), name


def test_a_resumed_chunk_keeps_its_batch_layout_when_the_settings_change(run, alice, gen1, training_games, tmp_path):
    """Batch size, shuffle size and symmetries are the chunk's: the batch it resumes at is the one it
    stopped before, as if it had not stopped."""
    from server.training.models import TrainingLine

    settings = TRAIN.replace(export_every=600, snapshot_every=64)
    use_training(run, settings)
    helpers.store_training_games(run, alice[0], training_games[:40], network=gen1)
    train(tmp_path / "a", stop_after=5)
    use_training(run, settings.replace(batch_size=16, shuffle_rows=300, symmetries=False))
    train(tmp_path / "a", stop_after=3)
    resumed = torch.load(tmp_path / "a" / "checkpoints" / helpers.RUN / "tiny.ckpt", weights_only=True)
    chunk = resumed["extra"]["chunk"]
    assert (chunk["batch_size"], chunk["shuffle_rows"], chunk["symmetries"]) == (32, 600, True)
    assert resumed["samples"] == 8 * 32 and chunk["next_batch"] == 8

    TrainingLine.objects.all().delete()
    use_training(run, settings)
    train(tmp_path / "b", stop_after=8)  # the same 8 steps without the stop
    straight = torch.load(tmp_path / "b" / "checkpoints" / helpers.RUN / "tiny.ckpt", weights_only=True)
    assert straight["samples"] == resumed["samples"]
    for name, value in straight["model"].items():
        assert torch.equal(resumed["model"][name], value), name


def test_an_export_made_again_after_a_crash_is_counted_once(run, alice, gen1, training_games, tmp_path):
    """A crash after an export was stored but before the checkpoint that follows it: the trainer
    started again makes the same export, finds it stored, and does not count it again."""
    from common.nn.training import Trainer

    use_training(run, TRAIN.replace(export_every=256))
    helpers.store_training_games(run, alice[0], training_games[:20], network=gen1)

    def power_cut(self) -> None:
        raise RuntimeError("power cut")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Trainer, "exported", power_cut)
        with pytest.raises(RuntimeError, match="power cut"):
            train(tmp_path, checkpoint_seconds=0.0)  # a checkpoint after every step but the export's
    first = line()
    assert first.exports == 1 and first.last_export.train_step == 256
    train(tmp_path, checkpoint_seconds=0.0)
    row = line()
    candidates = run.networks.filter(name__contains="-tiny-")
    assert row.exports == candidates.count() >= 2
    assert candidates.filter(train_step=256).count() == 1


def test_a_window_that_cannot_be_read_stops_the_trainer_with_the_files_named(
    run, alice, gen1, training_games, tmp_path
):
    from django.core.files.storage import default_storage
    from django.core.management import CommandError

    from server.training.worker import TrainingWorker

    use_training(run)
    games = helpers.store_training_games(run, alice[0], training_games[:20], network=gen1)
    for game in games:
        default_storage.delete(game.npz.name)
    chunks = []
    train_chunk = TrainingWorker._train_chunk

    def counting(self, line, chunk):
        chunks.append(chunk)
        assert len(chunks) < 3, "the same chunk planned again and again"
        return train_chunk(self, line, chunk)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TrainingWorker, "_train_chunk", counting)
        with pytest.raises(CommandError) as raised:
            call_command("train", run=helpers.RUN, once=True, checkpoints=tmp_path, device="cpu")
    message = str(raised.value)
    assert len(chunks) == 1
    assert message.startswith(
        f"tiny: {len(chunks[0].files)} of the {len(chunks[0].files)} training-row files read "
        "for this chunk could not be read ("
    )
    assert chunks[0].files[0].name in message or " and " in message
    assert "the chunk trained nothing" in message and "disable their games" in message
    assert line().status == "stopped" and line().samples == 0


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_trainer_waits_for_a_database_that_went_away(run, tmp_path, caplog):
    from django.db import connection

    use_training(run)
    connection.close()  # a connection of its own (an earlier test may have left Django's one unusable)
    connection.ensure_connection()
    connection.connection.close()  # as a restart of the database leaves it; Django does not know yet
    with caplog.at_level(logging.WARNING):
        train(tmp_path, poll_seconds=0.01)
    assert "the database cannot be reached" in caplog.text
    assert line().status == "stopped"
    assert line().status_note.startswith("the trainer stopped, waiting for data")


def test_a_next_line_budgets_from_the_rows_since_it_began(run, alice, gen1, training_games, tmp_path):
    """The paper's Table 3: a larger net trains alongside from when it begins (the 10-block one began
    when the 6-block one had 70M samples, and had 20M of its own when it overtook at 100M), it does
    not catch up on the data that came before."""
    from server.training.plan import Chunk, chunk_samples
    from server.training.window import training_window
    from server.training.worker import TrainerOptions, TrainingWorker

    settings = TRAIN.replace(samples_per_row=0.5, export_every=128, snapshot_every=64)
    use_training(run, settings)
    before = sum(g.rows for g in helpers.store_training_games(run, alice[0], training_games[:30], network=gen1))
    worker = TrainingWorker(TrainerOptions(run=helpers.RUN, checkpoints=tmp_path, device="cpu"))

    def chunks() -> dict[str, Chunk]:
        return {item.architecture: item.chunk for item in worker._plan().work}

    def planned(budget: int) -> int:
        window = training_window(run, run.current_settings().settings.training)
        return min(chunk_samples(0, budget, 32, 128), window.rows)

    assert chunks()["tiny"].end_samples == planned(int(0.5 * before))
    use_training(run, settings.replace(next_architecture="b6c96"))
    plan = chunks()
    big = line("b6c96")
    assert (big.role, big.rows_at_start, line("tiny").rows_at_start) == ("next", before, 0)
    assert "b6c96" not in plan  # no rows of its own yet
    assert big.status_note == (
        f"waiting for data: 0 samples trained, 0 allowed by 0 rows since the line began at {before:,} at 0.5 per row"
    )

    after = sum(g.rows for g in helpers.store_training_games(run, alice[0], training_games[30:50], network=gen1))
    plan = chunks()
    assert plan["b6c96"].end_samples == planned(int(0.5 * after)) < planned(int(0.5 * (before + after)))
    assert plan["tiny"].end_samples == planned(int(0.5 * (before + after)))  # the run's first line: every row


def uniform_policy_loss(held_out) -> float:
    """The policy loss on the held-out rows of a guess uniform over each position's legal moves (pass
    among them), found by replaying the games' SGF to each row's turn; weighted as the loss weights it."""
    from common.data.schema import GT_TURN_INDEX
    from common.go.sgf import read_sgf
    from common.nn.loss import targets_from_rows
    from server.files import read_file
    from server.games.models import TrainingGame

    total, rows = 0.0, 0
    for f in held_out:
        game = TrainingGame.objects.filter(npz=f.name).first()
        record = read_sgf(read_file(game.sgf.name))
        with np.load(io.BytesIO(read_file(f.name))) as npz:
            arrays = {name: npz[name] for name in npz.files}
        targets = targets_from_rows(arrays)
        for r, turn in enumerate(arrays["globalTargetsNC"][:, GT_TURN_INDEX].astype(int)):
            legal = len(record.to_game(upto=turn).legal_moves()) + 1
            assert int((targets.policy[r] > 0).sum()) <= legal
            total += float(targets.row_weight[r] * targets.policy_weight[r]) * np.log(legal)
        rows += len(targets.policy)
    return total / rows


def test_the_trained_network_predicts_held_out_moves_better_than_the_initial_one(
    run, alice, gen1, training_games, tmp_path
):
    """The learning test: real self-play games of the random network on 7x7 (each one different), the
    tiny network, a minute of CPU at most; the policy loss on held-out rows falls, to that of a guess
    uniform over the legal moves. (That guess is about the best there is for these games: the random
    network's search spreads its visits over the legal moves at random. Coming close to it, the
    network has learned which moves are legal; an untrained one is about 1 nat worse.)"""
    from common.data.loader import ShuffledPass
    from common.nn.training import Trainer, evaluate, to_tensors
    from server.files import read_file
    from server.training.window import validation_files

    use_training(run, TRAIN.replace(window_c=700, samples_per_row=6.0, export_every=4096, snapshot_every=512))
    helpers.store_training_games(run, alice[0], training_games, network=gen1)
    settings = run.current_settings().settings.training
    held_out = validation_files(run, settings)
    assert sum(f.rows for f in held_out) > 150

    def policy_loss(model) -> float:
        batches = ShuffledPass(held_out, read_file, 64, seed=0, symmetries=False, transform=to_tensors).batches()
        return evaluate(model, batches, torch.device("cpu"))["policy"]

    from server.training.plan import seed_of

    initial = Trainer("tiny", settings, device="cpu", seed=seed_of(helpers.RUN, "tiny")).export_model()
    train(tmp_path)
    trained = run.networks.filter(name__contains="-tiny-").latest("train_step")
    from django.core.files.storage import default_storage

    from common.nn.modelfile import load_model

    model, _ = load_model(default_storage.path(trained.file.name), device="cpu")
    before, after, uniform = policy_loss(initial), policy_loss(model), uniform_policy_loss(held_out)
    assert after < before - 0.3, (before, after)
    assert after < uniform + 0.1, (uniform, after)
    assert line().validation["policy"] == pytest.approx(after, rel=1e-4)


def test_a_larger_architecture_takes_over_once_it_predicts_better(run, alice, gen1, training_games, tmp_path):
    from server.networks.models import Network
    from server.training.models import TrainingLine

    use_training(run, TRAIN.replace(export_every=256, samples_per_row=1.0))
    helpers.store_training_games(run, alice[0], training_games[:20], network=gen1)
    train(tmp_path)
    tiny = line("tiny")
    assert tiny.role == "current" and tiny.exports > 0

    # b3c32 alongside: its exports are measured against tiny's last one; a worse one changes nothing.
    from server.training.window import row_counts, validation_files
    from server.training.worker import TrainerOptions, TrainingWorker

    use_training(run, TRAIN.replace(export_every=256, samples_per_row=2.0, next_architecture="b3c32"))
    worker = TrainingWorker(TrainerOptions(run=helpers.RUN, checkpoints=tmp_path, device="cpu"))
    worker.run_row, worker.settings = run, run.current_settings().settings.training
    big = worker._sync_lines(run, worker.settings, row_counts(run).total)[1]
    assert (big.architecture, big.role) == ("b3c32", "next")
    held_out = validation_files(run, worker.settings)
    assert not worker._overtakes(big, {"rows": 100, "policy": 50.0, "value": 50.0}, held_out)
    assert (line("tiny").role, line("b3c32").role) == ("current", "next")

    # The current line's last export turns out bad (a scrambled copy): the next line overtakes it.
    bad = Network.objects.create(
        name="test-scrambled",
        run=run,
        file=tiny.last_export.file.name,
        size_bytes=tiny.last_export.size_bytes,
        sha256="0" * 64,
    )
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from common.nn.modelfile import encode_model, read_model_file

    mf = read_model_file(default_storage.path(tiny.last_export.file.name))
    scrambled = {k: (v * 40 if v.is_floating_point() and "running" not in k else v) for k, v in mf.state_dict.items()}
    bad.file.save("scrambled.safetensors", ContentFile(encode_model(mf.config, scrambled, "test-scrambled")))
    TrainingLine.objects.filter(architecture="tiny").update(last_export=bad)
    helpers.store_training_games(run, alice[0], training_games[20:40], network=gen1)  # b3c32's own rows
    train(tmp_path, architecture="b3c32")
    assert line("b3c32").role == "current"
    assert line("tiny").role == "retired" and "overtaken by b3c32" in line("tiny").status_note
    candidate = run.networks.filter(name__contains="-b3c32-").latest("train_step")
    assert candidate.state == "candidate" and candidate.size_name == "b3c32"
    assert line("b3c32").last_export == candidate


def test_bad_trainer_options_are_refused_with_what_to_do(run, tmp_path):
    from django.core.management import CommandError

    use_training(run)
    common = {"once": True, "checkpoints": tmp_path, "device": "cpu"}
    with pytest.raises(CommandError, match="there is no run 'nope'"):
        call_command("train", run="nope", **common)
    with pytest.raises(CommandError, match=r"--poll-seconds: 0\.0 must be a positive number"):
        call_command("train", run=helpers.RUN, **{**common, "poll_seconds": 0.0})
    with pytest.raises(CommandError, match="CUDA is not available"):
        call_command("train", run=helpers.RUN, **{**common, "device": "cuda"})
    with pytest.raises(CommandError, match="settings train tiny, not b6c96"):
        call_command("train", run=helpers.RUN, architecture="b6c96", **common)
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        with pytest.raises(CommandError, match="pip install tensorboard"):
            call_command("train", run=helpers.RUN, tensorboard=tmp_path / "tb", **common)
    (tmp_path / helpers.RUN).mkdir()
    (tmp_path / helpers.RUN / "tiny.ckpt").write_bytes(b"damaged")
    with pytest.raises(CommandError, match=r"tiny\.ckpt: cannot be read"):
        call_command("train", run=helpers.RUN, **common)
