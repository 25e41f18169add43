"""Training one network: steps that lower the loss, the paper's per-sample learning rate, weight
averaging and exports, steps with a non-finite gradient left out, checkpoints that resume bit for bit
and survive a crash while written, and processes under torchrun (the backend, steps in lockstep)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from common.data.loader import decode_rows, make_batch
from common.nn.model import MaskedBatchNorm
from common.nn.training import (
    MAX_NONFINITE_STEPS,
    CheckpointError,
    Distributed,
    Lockstep,
    TrainBatch,
    Trainer,
    evaluate,
    read_checkpoint,
    recompute_norm_statistics,
    to_tensors,
)
from common.settings import TrainingSettings

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = TrainingSettings(architecture="tiny", batch_size=32, learning_rate=1e-3, snapshot_every=64, export_every=128)


@pytest.fixture(scope="module")
def golden_batches(shared):
    """KataGo's real 9x9 self-play rows, as batches of 32 with random symmetries."""
    data = (shared / "golden" / "katago_selfplay_9x9.npz").read_bytes()
    rows = decode_rows(data, "katago_selfplay_9x9.npz")
    rng = np.random.default_rng(0)
    return [to_tensors(make_batch(rows.take(np.arange(k, k + 32)), rng)) for k in range(0, 256, 32)]


def state_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("arch", ["tiny", "b3c32", "b4c48", "tinynbt", "b4c48nbt", "tinymobile"])
def test_a_few_steps_lower_the_loss_on_a_fixed_batch(golden_batches, arch):
    trainer = Trainer(arch, SETTINGS, device="cpu")
    batch = golden_batches[0]
    before = evaluate(trainer.model, [batch], trainer.device)
    trainer.model.train()
    results = [trainer.step(batch) for _ in range(30)]
    # Evaluated as exported: the batch norms' statistics recomputed (30 steps of running averages
    # lag far behind the weights, and b4c48's policy read through them was worse than before).
    recompute_norm_statistics(trainer.model, [batch], trainer.device)
    after = evaluate(trainer.model, [batch], trainer.device)
    assert results[-1]["loss"] < 0.8 * results[0]["loss"]
    assert results[-1]["policy"] < results[0]["policy"]
    # Evaluation reads the heads inference uses; with the one batch norm they have 20% of the loss
    # and follow the others more slowly.
    assert after["loss"] < before["loss"]
    if trainer.config.norm == "batch":
        assert after["policy"] < before["policy"]
    assert trainer.samples == 30 * 32 and trainer.steps == 30
    assert all(np.isfinite(r["grad_norm"]) for r in results)


def test_the_step_size_is_the_per_sample_rate_times_the_rows(golden_batches):
    settings = TrainingSettings(architecture="tiny", learning_rate=6e-5, lr_decay=1e-3, batch_size=32)
    trainer = Trainer("tiny", settings, device="cpu")
    trainer.samples = 3000
    result = trainer.step(golden_batches[0])
    expected = 6e-5 * (1e-3 * 3000 + 1) ** (-4 / 3)
    assert result["learning_rate"] == pytest.approx(expected)
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(expected * 32)
    assert trainer.optimizer.param_groups[0]["weight_decay"] == pytest.approx(2 * settings.l2)
    assert trainer.optimizer.param_groups[0]["momentum"] == 0.9
    assert settings.learning_rate_at(0, "tiny") == 6e-5
    assert TrainingSettings(next_architecture="b10c128").lr_decay_for("b10c128") == 7.5e-8


def test_each_networks_first_samples_learn_at_the_lowered_early_rate(golden_batches):
    settings = TrainingSettings(architecture="tiny", learning_rate=6e-5, lr_decay=1e-3, early_lr_samples=5000)
    decayed = 6e-5 * (1e-3 * 4999 + 1) ** (-4 / 3)
    assert settings.learning_rate_at(0, "tiny") == pytest.approx(2e-5)
    assert settings.learning_rate_at(4999, "tiny") == pytest.approx(decayed / 3)
    assert settings.learning_rate_at(5000, "tiny") == pytest.approx(6e-5 * (1e-3 * 5000 + 1) ** (-4 / 3))
    trainer = Trainer("tiny", settings, device="cpu")
    trainer.samples = 4999
    assert trainer.step(golden_batches[0])["learning_rate"] == pytest.approx(decayed / 3)
    assert trainer.step(golden_batches[0])["learning_rate"] > decayed / 2  # past its early samples


def test_without_the_ownership_and_score_targets_their_terms_weigh_nothing(golden_batches):
    settings = replace(SETTINGS, ownership_score_targets=False)
    trainer = Trainer("tiny", settings, device="cpu")
    result = trainer.step(golden_batches[0])
    for term in ("ownership", "score_pdf", "score_cdf", "lead", "score_mean_reg", "score_stdev_reg"):
        assert result[term] == 0.0, term
    assert result["policy"] > 0.0 and result["value"] > 0.0
    with_targets = Trainer("tiny", SETTINGS, device="cpu").step(golden_batches[0])
    assert with_targets["ownership"] > 0.0 and with_targets["loss"] > result["loss"]
    # A new settings version switches them back on.
    trainer.use_settings(SETTINGS)
    assert trainer.step(golden_batches[1])["ownership"] > 0.0


def test_snapshots_make_an_exponential_average_that_is_exported(golden_batches):
    trainer = Trainer("tiny", SETTINGS, device="cpu")
    exported = trainer.export_model()
    assert state_equal(exported.state_dict(), trainer.model.state_dict())  # no snapshot yet: the weights
    weights = []
    for k in range(8):  # 256 samples: snapshots after 64, 128, 192, 256
        trainer.step(golden_batches[k])
        if trainer.samples % 64 == 0:
            weights.append({n: v.clone() for n, v in trainer.model.state_dict().items()})
    assert trainer.snapshots == 4
    name = "value_head.linear_v2.weight"
    expected = weights[0][name]
    for w in weights[1:]:
        expected = 0.75 * expected + 0.25 * w[name]
    torch.testing.assert_close(trainer.average[name], expected)
    torch.testing.assert_close(trainer.export_model().state_dict()[name], expected)
    assert trainer.export_due and trainer.next_export == 128
    trainer.exported()
    assert not trainer.export_due and trainer.next_export == 384


def test_an_export_recomputes_the_batch_norm_statistics(golden_batches):
    trainer = Trainer("tiny", SETTINGS, device="cpu")
    for batch in golden_batches[:4]:
        trainer.step(batch)
    model = trainer.export_model(golden_batches[:3])
    norm = model.norm_trunk
    # The running mean is the average of the three batches' own means at that norm (the layers
    # before it normalising with their batch statistics too, as in training).
    probe = trainer.export_model()
    inputs = []
    probe.norm_trunk.register_forward_hook(lambda m, args, out: inputs.append(args[0].detach()))
    probe.train()
    with torch.no_grad():
        for batch in golden_batches[:3]:
            probe(batch.spatial, batch.global_inputs)
    masks = [batch.spatial[:, 0:1] for batch in golden_batches[:3]]
    means = [(x * mask).sum(dim=(0, 2, 3)) / mask.sum() for x, mask in zip(inputs, masks, strict=True)]
    torch.testing.assert_close(norm.running_mean, torch.stack(means).mean(0), rtol=1e-4, atol=1e-5)
    assert not model.training
    assert all(m.momentum == 0.001 for m in model.modules() if isinstance(m, MaskedBatchNorm))
    untouched = trainer.export_model()
    assert recompute_norm_statistics(untouched, [], trainer.device) == 0  # no batches: left as they were
    torch.testing.assert_close(untouched.norm_trunk.running_mean, trainer.average["norm_trunk.running_mean"])


def test_a_resumed_trainer_continues_from_the_exact_step(golden_batches, tmp_path):
    path = tmp_path / "tiny.ckpt"
    straight = Trainer("tiny", SETTINGS, device="cpu", seed=5)
    for batch in golden_batches:
        straight.step(batch)

    first = Trainer("tiny", SETTINGS, device="cpu", seed=5)
    for batch in golden_batches[:3]:
        first.step(batch)
    first.save_checkpoint(path, {"chunk": {"next_batch": 3}})
    resumed = Trainer("tiny", SETTINGS, device="cpu", seed=77)  # other initial weights: all replaced
    extra = resumed.load_checkpoint(path)
    assert extra == {"chunk": {"next_batch": 3}}
    assert (resumed.samples, resumed.steps, resumed.snapshots) == (96, 3, 1)
    for batch in golden_batches[3:]:
        resumed.step(batch)
    assert state_equal(resumed.model.state_dict(), straight.model.state_dict())
    assert state_equal(resumed.average, straight.average)
    assert (resumed.samples, resumed.next_snapshot, resumed.next_export) == (
        straight.samples,
        straight.next_snapshot,
        straight.next_export,
    )


def test_a_crash_while_a_checkpoint_is_written_leaves_the_previous_one(golden_batches, tmp_path, monkeypatch):
    path = tmp_path / "tiny.ckpt"
    trainer = Trainer("tiny", SETTINGS, device="cpu", seed=5)
    trainer.step(golden_batches[0])
    trainer.save_checkpoint(path, {"chunk": {"next_batch": 1}})
    trainer.step(golden_batches[1])
    save = torch.save

    def crash_midway(obj, f, *args, **kwargs):
        save(obj, f, *args, **kwargs)
        f.truncate(f.tell() // 2)  # half of the new checkpoint is on disk
        raise OSError("no space left on device")

    monkeypatch.setattr(torch, "save", crash_midway)
    with pytest.raises(OSError, match="no space left"):
        trainer.save_checkpoint(path, {"chunk": {"next_batch": 2}})
    monkeypatch.undo()
    assert read_checkpoint(path)["samples"] == 32  # the previous checkpoint, whole
    resumed = Trainer("tiny", SETTINGS, device="cpu")
    assert resumed.load_checkpoint(path) == {"chunk": {"next_batch": 1}}
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.ckpt"]  # nothing half-written stays behind


def _poisoned(batch: TrainBatch) -> TrainBatch:
    """The batch with a NaN in one row's stones: the loss and the gradient come out NaN."""
    spatial = batch.spatial.clone()
    spatial[3, 1, 2, 2] = float("nan")
    return TrainBatch(spatial, batch.global_inputs, batch.targets)


def test_a_step_with_a_non_finite_gradient_is_left_out(golden_batches, caplog):
    trainer = Trainer("tiny", SETTINGS, device="cpu", seed=3)
    trainer.step(golden_batches[0])
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    momentum = {k: v["momentum_buffer"].clone() for k, v in trainer.optimizer.state_dict()["state"].items()}
    result = trainer.step(_poisoned(golden_batches[1]))
    assert result["skipped"] == 1.0 and not np.isfinite(result["grad_norm"]) and "loss" not in result
    assert state_equal(trainer.model.state_dict(), before)  # weights and batch-norm statistics as they were
    after = trainer.optimizer.state_dict()["state"]
    assert all(torch.equal(after[k]["momentum_buffer"], v) for k, v in momentum.items())
    assert (trainer.samples, trainer.steps, trainer.skipped_steps) == (32, 1, 1)
    assert "step left out at 32 samples" in caplog.text

    good = trainer.step(golden_batches[1])  # training goes on
    assert good["skipped"] == 0.0 and np.isfinite(good["loss"]) and trainer.samples == 64
    assert trainer.nonfinite_in_a_row == 0
    for _ in range(MAX_NONFINITE_STEPS - 1):
        trainer.step(_poisoned(golden_batches[2]))
    with pytest.raises(FloatingPointError, match=rf"not finite in {MAX_NONFINITE_STEPS} steps in a row"):
        trainer.step(_poisoned(golden_batches[2]))
    assert trainer.skipped_steps == MAX_NONFINITE_STEPS + 1
    assert all(torch.isfinite(v).all() for v in trainer.model.state_dict().values() if v.is_floating_point())


def test_weights_that_are_not_finite_are_never_checkpointed_or_exported(golden_batches, tmp_path):
    path = tmp_path / "tiny.ckpt"
    trainer = Trainer("tiny", SETTINGS, device="cpu")
    trainer.step(golden_batches[0])
    trainer.save_checkpoint(path)
    with torch.no_grad():
        trainer.model.value_head.linear_v2.weight[0, 0] = float("inf")
    with pytest.raises(FloatingPointError, match=r"not finite \(tensor value_head\.linear_v2\.weight\)"):
        trainer.save_checkpoint(path)
    with pytest.raises(FloatingPointError, match="is not exported"):
        trainer.export_model()
    assert read_checkpoint(path)["samples"] == 32
    assert torch.isfinite(read_checkpoint(path)["model"]["value_head.linear_v2.weight"]).all()


def test_the_process_group_carries_cpu_tensors_with_gloo_also_on_gpus(monkeypatch):
    """NCCL carries only GPU tensors; the flags and broadcasts are CPU tensors."""
    chosen = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.distributed, "init_process_group", lambda backend: chosen.append(backend))
    monkeypatch.setattr(torch.distributed, "get_rank", lambda: 1)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda: 2)
    assert Distributed.from_environment() == Distributed(rank=1, world=2)
    backends = dict(part.split(":") for part in chosen[0].split(","))
    assert backends == {"cpu": "gloo", "cuda": "nccl"}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    Distributed.from_environment()
    assert chosen[1] == "gloo"


def test_lockstep_ends_at_a_stop_or_when_the_batches_end():
    one = Distributed()
    steps = Lockstep(one, range(5), lambda: False)
    assert list(steps) == [0, 1, 2, 3, 4] and not steps.stopped
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 2

    steps = Lockstep(one, iter(range(5)), stop)
    assert list(steps) == [0, 1] and steps.stopped

    closed = []

    def batches():
        try:
            yield from range(5)
        finally:
            closed.append(True)

    for batch in Lockstep(one, batches(), lambda: False):
        if batch == 1:
            break
    assert closed == [True]  # the batches' reader ends with the loop


def test_a_checkpoint_that_does_not_fit_is_refused_by_name(tmp_path):
    path = tmp_path / "tiny.ckpt"
    Trainer("tiny", SETTINGS, device="cpu").save_checkpoint(path)
    with pytest.raises(CheckpointError, match="another configuration"):
        Trainer("b6c96", SETTINGS, device="cpu").load_checkpoint(path)
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"junk\.ckpt: cannot be read"):
        Trainer("tiny", SETTINGS, device="cpu").load_checkpoint(junk)
    other = tmp_path / "other.ckpt"
    torch.save({"format": "something else"}, other)
    with pytest.raises(CheckpointError, match="not a sente-checkpoint file"):
        Trainer("tiny", SETTINGS, device="cpu").load_checkpoint(other)


@pytest.mark.slow
def test_two_processes_under_torchrun_train_one_network(tmp_path, shared):
    """torchrun with two CPU processes (gloo): each trains on its own batches, DistributedDataParallel
    keeps their weights equal, and every step counts both processes' rows; a process with more batches
    than the other stops with it (instead of waiting for it in a step), and a stop asked for in one
    process stops both."""
    out = tmp_path / "result"
    env = dict(os.environ, SENTE_SHARED=str(shared), OMP_NUM_THREADS="1")
    torchrun = Path(sys.executable).parent / "torchrun"
    done = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node", "2", "-m", "tests.common.nn.distributed_run", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads((tmp_path / f"result.{rank}").read_text()) for rank in range(2)]
    assert results[0]["weights"] == results[1]["weights"]  # a checksum of every parameter
    assert results[0]["samples"] == results[1]["samples"] == 4 * 2 * 32
    assert results[0]["first_loss"] != results[1]["first_loss"]  # each trained on its own batches
    assert results[0]["checkpoint"] and not results[1]["checkpoint"]  # only process 0 writes
    assert results[0]["stopped"] == results[1]["stopped"] == [False, True]
