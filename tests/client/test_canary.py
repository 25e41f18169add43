"""The worker's canary checks: a real network passes on the CPU against the server's reference (or
its own), a network with one weight changed fails with a message naming what differed, a failing
reduced precision falls back to fp32, and the outbox holds games until a check vouches for them."""

from __future__ import annotations

import pytest
import torch

from client.contribute.canary import CanaryGuard
from client.contribute.outbox import Outbox
from client.contribute.tasks import CANARY, Fatal
from client.evaluator import Evaluator
from common import canary
from common.nn.canary import evaluate_canary
from tests.client.test_evaluator import G170


def test_g170_passes_and_a_perturbed_weight_fails(shared):
    path = shared / G170
    evaluator = Evaluator.from_file(path, device="cpu")
    g170_reference = evaluate_canary(evaluator.model).to_npz()  # what the server computes: fp32 on its CPU
    asked = []
    guard = CanaryGuard("cpu", lambda name: asked.append(name) or g170_reference)
    result = guard.check("g170", evaluator, path)
    assert result.passed and asked == ["g170"]
    assert guard.vouched("cpu", ("g170",), guard.passed_at["g170"] - 1)
    assert not guard.vouched("cpu", ("g170",), guard.passed_at["g170"] + 1)  # ended after the check began
    assert not guard.vouched("cuda:0", ("g170",), 0) and not guard.vouched("cpu", ("g170", "other"), 0)

    with torch.no_grad():  # one weight changed
        evaluator.model.conv_spatial.weight[0, 0, 2, 2] += 0.5
    with pytest.raises(Fatal) as failed:
        guard.check("g170", evaluator, path)
    assert failed.value.kind == CANARY and asked == ["g170"]  # the reference was fetched once
    message = failed.value.message
    assert "network g170 on cpu in fp32" in message and "winrate differs by up to" in message, message
    assert "fp32 allows 1.35%" in message and "the server's fp32 reference" in message, message


def test_without_a_server_reference_a_failing_reduced_precision_falls_back_to_fp32(network, monkeypatch):
    evaluator = Evaluator.from_file(network, device="cpu", precision="bf16")
    assert evaluator.dtype == torch.bfloat16
    guard = CanaryGuard("cpu", lambda name: None)  # the server has no reference yet
    monkeypatch.setattr(canary, "REDUCED_TOLERANCE", canary.Tolerance("exact", *[(0.0, 0.0)] * 4))
    assert guard.check("tiny", evaluator, network).passed
    assert evaluator.dtype is None and evaluator.net is evaluator.model  # it plays in fp32 from now on
    assert "this computer's CPU" in guard.references["tiny"][1]


def test_the_check_runs_the_bf16_copy_that_plays(network):
    """On the CPU bf16 plays from its own copy of the weights: the check evaluates that copy, so a
    fault in it is found even though the fp32 weights are sound."""
    evaluator = Evaluator.from_file(network, device="cpu", precision="bf16")
    guard = CanaryGuard("cpu", lambda name: evaluate_canary(evaluator.model).to_npz())
    assert guard.check("tiny", evaluator, network).passed and evaluator.precision == "bf16"
    with torch.no_grad():
        evaluator.net.model.conv_spatial.weight.mul_(-1.0)  # the copy that plays, not evaluator.model
    assert guard.check("tiny", evaluator, network).passed  # by fp32, which is sound
    assert evaluator.precision == "fp32" and evaluator.net is evaluator.model


def test_held_games_wait_for_a_check(tmp_path):
    outbox = Outbox(tmp_path / "outbox")
    a = outbox.put("training", "t1", {"game_id": "a"}, b"(;)", b"npz", held_for=("cpu", ("n1",)))
    outbox.put("rating", "t2", {"game_id": "b"}, b"(;)", held_for=("cuda:0", ("n1", "n2")))
    outbox.put("rating", "t3", {"game_id": "c"}, b"(;)")  # not held: goes out as always
    outbox.refresh()
    assert [e.game_id for e in outbox.pending()] == ["c"]
    held = outbox.held("cpu")
    assert [(e.game_id, e.networks) for e in held] == [("a", ("n1",))] and held[0].created == a.created
    assert outbox.release(held) == 1
    outbox.refresh()
    assert sorted(e.game_id for e in outbox.pending()) == ["a", "c"] and outbox.held("cpu") == []
    assert (outbox.pending_dir / a.path.name / "game.npz").exists()
    assert outbox.set_aside(outbox.held("cuda:0"), "failed the check") == 1
    assert outbox.count_held() == 0
    assert [(p / "reason.txt").read_text() for p in outbox.unchecked_dir.iterdir()] == ["failed the check\n"]
