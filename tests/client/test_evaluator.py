"""The batched evaluator and the network's GTP commands, against real KataGo outputs."""

import json
import logging
import subprocess
import sys

import numpy as np
import pytest
import torch

from client.evaluator import Evaluator, PositionEval
from client.gtp.engine import GtpEngine
from client.gtp.players import PolicyPlayer, RandomPlayer
from common import canary
from common.encoding.features import NN_AREA, Encoder, new_batch, symmetry_map
from common.go.game import Game
from common.go.geometry import BLACK, WHITE, loc_of
from common.nn.katago_export import write_katago_model
from common.nn.model import Model, named_config
from common.nn.modelfile import read_model_file, save_model
from tests.common.nn.nets import random_model
from tests.golden import golden_positions

G170 = "models/g170-b6c96-s175395328-d26788732.bin.gz"


@pytest.fixture(scope="module")
def g170(shared):
    return Evaluator.from_file(shared / G170, device="cpu")


@pytest.mark.parametrize(
    "name",
    [
        # 15 positions: 7x7 to 19x19, all ko rules, passes.
        "katago_rawnn_sample.jsonl",
        # 16 positions under territory scoring: main phase and both encore phases, every tax, a
        # ko-recapture block, a pass for ko, after the end, handicap, 13x13.
        "katago_territory_rawnn_sample.jsonl",
    ],
)
def test_g170_matches_katagos_raw_outputs(shared, g170, name):
    """kata-raw-nn 0 of real KataGo, within the canary's tolerances."""
    pairs = list(golden_positions(shared, name))
    evals = g170.evaluate([g for g, _ in pairs], perspective="white")
    for (_, d), ev in zip(pairs, evals):
        k = d["katago_raw_nn"]
        size = d["size"]
        expected = np.array([np.nan if p is None else p for p in k["policy"]]).reshape(size, size)
        legal = ~np.isnan(expected)
        board = ev.policy_board(size, size)
        assert np.array_equal(board > 0, legal), "legal moves differ"
        assert np.abs(board[legal] - expected[legal]).max(initial=0) <= 0.002
        assert abs(ev.policy_pass - k["policyPass"]) <= 0.002
        assert abs(ev.win - k["whiteWin"]) <= 0.003 and abs(ev.loss - k["whiteLoss"]) <= 0.003
        assert abs(ev.no_result - k["noResult"]) <= 0.003
        assert abs(ev.lead - k["whiteLead"]) <= 0.1
        assert abs(ev.score_mean - k["whiteScoreSelfplay"]) <= 0.1
        assert np.abs(ev.ownership.ravel() - np.array(k["whiteOwnership"])).max() <= 0.01


def test_kata_raw_nn_prints_katagos_format(shared, g170):
    for _, d in golden_positions(shared):
        size = d["size"]
        engine = GtpEngine(RandomPlayer(1), evaluator=g170)
        for cmd in (f"boardsize {size}", "kata-set-rules " + json.dumps(d["rules"]), f"komi {d['komi']}"):
            assert engine.handle(cmd).startswith("=")
        for c, vertex in d["moves"]:
            engine.handle(f"play {c} {vertex}")
        ours = engine.handle("kata-raw-nn 0")
        assert ours.startswith("= ") and ours.endswith("\n\n")
        ours_lines = ours[2:].rstrip("\n").split("\n")
        gold_lines = d["raw_text"].split("\n")
        assert len(ours_lines) == len(gold_lines)
        for a, b in zip(ours_lines, gold_lines):
            wa, wb = a.split(), b.split()
            assert len(wa) == len(wb) and [w for w in wa if not _num(w)] == [w for w in wb if not _num(w)]
            assert ["NAN" in w for w in wa] == ["NAN" in w for w in wb]  # same illegal points
            for x, y in zip(wa, wb):
                if _num(x):
                    assert abs(float(x) - float(y)) <= 0.002, (a, b)
            # Same column layout: each value ends at the same character.
            assert [i for i, ch in enumerate(a) if ch == " "] == [i for i, ch in enumerate(b) if ch == " "] or (
                "-" in a or "-" in b
            )
    engine = GtpEngine(RandomPlayer(1))
    assert engine.handle("kata-raw-nn 0").startswith("? no network loaded")


def _num(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return word != "NAN"


def test_policy_player_plays_the_networks_top_move(g170):
    game = Game(9)
    player = PolicyPlayer(g170)
    loc = player.choose_move(game, BLACK)
    ev = g170.evaluate([game])[0]
    assert ev.policy[(loc // 20 - 1) * 19 + (loc % 20 - 1)] == ev.policy.max()
    # Asked for white on black's turn, it answers for white.
    white = g170.evaluate([game], players=[WHITE])[0]
    assert white.policy.argmax() == loc_index(player.choose_move(game, WHITE))


def loc_index(loc: int) -> int:
    return (loc // 20 - 1) * 19 + (loc % 20 - 1)


def test_cache_and_perspective(g170):
    game = Game(9, komi=7.5)
    game.play(loc_of(4, 4))
    before = g170.hits
    side = g170.evaluate([game])[0]
    again = g170.evaluate([game])[0]
    assert again is side and g170.hits == before + 1
    white = g170.evaluate([game], perspective="white")[0]
    assert white.win == pytest.approx(side.win)  # white is to move
    game.play(loc_of(2, 2))
    black_side = g170.evaluate([game])[0]
    black_white = g170.evaluate([game], perspective="white")[0]
    assert black_white.win == pytest.approx(black_side.loss)
    assert black_white.lead == pytest.approx(-black_side.lead)
    np.testing.assert_allclose(black_white.ownership, -black_side.ownership)


# One small network of each trunk: the paper's residual blocks, nested bottlenecks, MobileNet blocks.
ARCHITECTURES = ["tiny", "tinynbt", "tinymobile"]


def random_net_evaluator(arch: str = "tiny") -> Evaluator:
    torch.manual_seed(3)
    model = Model(named_config(arch))
    # Random batch-norm statistics, so that the test exercises every layer.
    for m in model.modules():
        for name in ("running_mean", "running_var"):
            if hasattr(m, name):
                getattr(m, name).uniform_(0.5, 1.5) if name == "running_var" else getattr(m, name).normal_()
    return Evaluator(model, device="cpu", cache_size=0)


def play_random(game: Game, count: int, seed: int) -> list[tuple[int, int]]:
    rng = np.random.RandomState(seed)
    played = []
    for _ in range(count):
        legal = game.legal_moves()
        loc = legal[rng.randint(len(legal))]
        played.append((loc % 20 - 1, loc // 20 - 1))
        game.play(loc)
    return played


LADDER_PLANES = [14, 15, 16, 17]


def rotated_game(moves: list[tuple[int, int]], x_size: int, y_size: int, s: int) -> tuple[Game, np.ndarray]:
    """The game of `moves` played on the board turned by symmetry s, and the point map."""
    perm = np.empty(NN_AREA, dtype=np.int64)
    symmetry_map(x_size, y_size, s, perm)
    rotated = Game(y_size, x_size) if s & 4 else Game(x_size, y_size)
    for x, y in moves:
        p = perm[y * 19 + x]
        rotated.play(loc_of(p % 19, p // 19))
    return rotated, perm


def encoded(game: Game, s: int) -> np.ndarray:
    spatial, glob, _ = new_batch(1)
    Encoder().encode([game], spatial, glob, symmetries=[s])
    return spatial[0]


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("size", [(9, 9), (13, 7)])
def test_symmetry_equals_evaluating_the_rotated_position(size, arch):
    """Evaluating under symmetry s gives what evaluating the turned board gives.

    KataGo's ladder reading bounds the liberties of the last move of the defender's list, and
    which move is last follows the order of a chain's stones, so on rare boards the ladder planes
    of a turned board differ (the rules allow both answers; tests/common/encoding/test_ladders.py reads
    them). Every other input must agree exactly; the outputs are compared on the positions whose
    ladder planes agree too, and there must be enough of those for the test to mean something.
    """
    ev = random_net_evaluator(arch)
    x_size, y_size = size
    game = Game(x_size, y_size)
    moves: list[tuple[int, int]] = []
    compared = 0
    for seed in range(4):
        moves += play_random(game, 10, seed=x_size + seed)
        for s in range(8):
            rotated, perm = rotated_game(moves, x_size, y_size, s)
            mine, theirs = encoded(game, s), encoded(rotated, 0)
            other = [c for c in range(mine.shape[0]) if c not in LADDER_PLANES]
            np.testing.assert_array_equal(mine[other], theirs[other])
            if not np.array_equal(mine[LADDER_PLANES], theirs[LADDER_PLANES]):
                continue
            compared += 1
            a = ev.evaluate([game], symmetries=[s])[0]
            b = ev.evaluate([rotated])[0]
            # b is on the rotated board: bring it back to the original points.
            back = np.zeros(NN_AREA + 1)
            on = perm >= 0
            back[:NN_AREA][on] = b.policy[perm[on]]
            back[NN_AREA] = b.policy[NN_AREA]
            np.testing.assert_allclose(a.policy, back, atol=1e-5)
            assert a.win == pytest.approx(b.win, abs=1e-5) and a.lead == pytest.approx(b.lead, abs=1e-4)
            own_b = b.ownership.T if s & 4 else b.ownership
            assert np.abs(np.sort(a.ownership.ravel()) - np.sort(own_b.ravel())).max() <= 1e-5
    assert compared >= 24


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_mixed_sizes_in_one_batch_equal_each_alone(arch):
    ev = random_net_evaluator(arch)
    games = []
    for i, size in enumerate([(9, 9), (19, 19), (13, 13), (7, 11), (5, 5)]):
        g = Game(*size)
        play_random(g, 6, seed=i)
        games.append(g)
    together = ev.evaluate(games)
    for g, t in zip(games, together):
        alone = ev.evaluate([g])[0]
        np.testing.assert_allclose(t.policy, alone.policy, atol=1e-5)
        np.testing.assert_allclose(t.ownership, alone.ownership, atol=1e-5)
        assert t.win == pytest.approx(alone.win, abs=1e-5)
        assert t.score_mean == pytest.approx(alone.score_mean, abs=1e-4)


def test_convert_katago_then_load_gives_identical_outputs(shared, g170, tmp_path):
    out = tmp_path / "g170.safetensors"
    proc = subprocess.run(
        [sys.executable, "-m", "client", "convert-katago", str(shared / G170), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    mf = read_model_file(out)
    assert mf.name == "g170-b6c96-s175395328-d26788732" and mf.sha256 in proc.stdout
    converted = Evaluator.from_file(out, device="cpu", cache_size=0)
    game = Game(19)
    play_random(game, 30, seed=5)
    a = g170.evaluate([game], use_cache=False)[0]
    b = converted.evaluate([game])[0]
    assert np.array_equal(a.policy, b.policy) and a.win == b.win and np.array_equal(a.ownership, b.ownership)
    bad = tmp_path / "bad.bin.gz"
    bad.write_bytes(b"\x1f\x8b not really gzip")
    proc = subprocess.run(
        [sys.executable, "-m", "client", "convert-katago", str(bad), str(tmp_path / "x")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1 and "bad.bin.gz" in proc.stderr


@pytest.mark.parametrize("arch", ["b3c32", "b4c48", "b4c48nbt"])
def test_the_small_9x9_sizes_load_from_our_file_and_from_katagos(arch, tmp_path):
    """The sizes between tiny and b6c96 as a client gets them: the server's network file and the
    .bin.gz offered for KataGo, each loaded by the client, evaluate as the network itself."""
    model = random_model(7, named_config(arch))
    ours, katago = tmp_path / f"{arch}.safetensors", tmp_path / f"{arch}.bin.gz"
    save_model(model, ours, f"sente-{arch}")
    write_katago_model(katago, model.config, model.state_dict(), f"sente-{arch}")
    game = Game(9)
    play_random(game, 20, seed=2)
    direct = Evaluator(model, device="cpu", cache_size=0).evaluate([game])[0]
    from_ours = Evaluator.from_file(ours, device="cpu", cache_size=0)
    assert from_ours.model.config == model.config
    a = from_ours.evaluate([game])[0]
    assert np.array_equal(a.policy, direct.policy) and a.win == direct.win
    assert np.array_equal(a.ownership, direct.ownership) and a.lead == direct.lead
    b = Evaluator.from_file(katago, device="cpu", cache_size=0).evaluate([game])[0]
    np.testing.assert_allclose(b.policy, direct.policy, atol=1e-5)
    np.testing.assert_allclose(b.ownership, direct.ownership, atol=1e-5)
    assert b.win == pytest.approx(direct.win, abs=1e-5) and b.lead == pytest.approx(direct.lead, abs=1e-4)
    assert direct.policy.max() < 0.9 and direct.ownership.std() > 0.01  # outputs that say something


def test_evaluation_fields():
    ev = random_net_evaluator().evaluate([Game(9)])[0]
    assert isinstance(ev, PositionEval)
    assert ev.policy.shape == (NN_AREA + 1,) and ev.ownership.shape == (9, 9)
    assert ev.policy.sum() == pytest.approx(1.0, abs=1e-5)
    assert ev.win + ev.loss + ev.no_result == pytest.approx(1.0)
    with pytest.raises(ValueError, match="perspective"):
        random_net_evaluator().evaluate([Game(9)], perspective="black")


def test_the_short_term_errors_reach_kata_raw_nn_when_the_network_has_their_heads():
    heads = random_net_evaluator("tinynbt")
    ev = heads.evaluate([Game(9)], perspective="white")[0]
    with torch.no_grad():
        misc = heads.model(*encoded_position(Game(9))).misc[0].double()
    softplus = torch.nn.functional.softplus
    assert ev.shortterm_winloss_error == pytest.approx(float(torch.sqrt(softplus(misc[8]) * 0.25)), rel=1e-5)
    assert ev.shortterm_score_error == pytest.approx(float(torch.sqrt(softplus(misc[9]) * 30.0)), rel=1e-5)
    engine = GtpEngine(RandomPlayer(1), evaluator=heads)
    assert engine.handle("boardsize 9").startswith("=")
    answer = engine.handle("kata-raw-nn 0")
    assert f"shorttermWinlossError {ev.shortterm_winloss_error:.3f}\n" in answer
    assert f"shorttermScoreError {ev.shortterm_score_error:.3f}\n" in answer
    paper = random_net_evaluator("tiny").evaluate([Game(9)])[0]
    assert (paper.shortterm_winloss_error, paper.shortterm_score_error) == (-1.0, -1.0)


def encoded_position(game: Game) -> tuple[torch.Tensor, torch.Tensor]:
    spatial, glob, legal = new_batch(1)
    Encoder().encode([game], spatial, glob, legal)
    return torch.from_numpy(spatial).view(1, -1, 19, 19), torch.from_numpy(glob)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_reduced_precision_is_checked_against_fp32(monkeypatch, arch):
    import client.evaluator as evaluator_module

    torch.manual_seed(1)
    model = Model(named_config(arch))
    ev = Evaluator(model, device="cpu", precision="bf16")
    assert ev.dtype == torch.bfloat16 and ev.precision == "bf16"  # a tiny net agrees with fp32 within tolerance
    # On the CPU it runs a bf16 copy of the weights in channels-last layout; the model stays fp32.
    conv = ev.net.model.conv_spatial.weight
    assert conv.dtype == torch.bfloat16 and conv.is_contiguous(memory_format=torch.channels_last)
    assert model.conv_spatial.weight.dtype == torch.float32
    a = ev.evaluate([Game(9)])[0]
    assert a.policy.sum() == pytest.approx(1.0, abs=1e-3)
    reference = Evaluator(model, device="cpu", precision="fp32").evaluate([Game(9)])[0]
    assert abs(a.win - reference.win) < 0.02 and np.abs(a.policy - reference.policy).max() < 0.02
    spatial, glob = encoded_position(Game(9))
    policy, value, misc = ev.forward_raw(spatial[:, :, :9, :9].reshape(1, -1, 81).numpy(), glob.numpy(), 9)
    assert policy.dtype == value.dtype == misc.dtype == np.float32
    zero = canary.Tolerance("exact", (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0))
    monkeypatch.setattr(evaluator_module, "PRECISION_TOLERANCE", zero)
    strict = Evaluator(model, device="cpu", precision="bf16")
    assert strict.dtype is None and strict.net is model  # disagreement: fp32, and the copy is dropped
    assert list(strict._runners) == [None]


def test_auto_uses_bf16_on_a_cpu_only_when_it_has_bf16_instructions(monkeypatch, caplog):
    import common.nn.precision as precision

    model = Model(named_config("tiny"))
    checks = []
    real = Evaluator.canary_outputs
    monkeypatch.setattr(Evaluator, "canary_outputs", lambda self, dtype: checks.append(dtype) or real(self, dtype))
    monkeypatch.setattr(precision, "cpu_features", lambda: frozenset({"avx2", "fma"}))
    plain = Evaluator(model, device="cpu")
    assert plain.precision == "fp32" and checks == []  # nothing tried, nothing evaluated at start
    monkeypatch.setattr(precision, "cpu_features", lambda: frozenset({"avx2", "avx512f", "avx512_bf16"}))
    fast = Evaluator(model, device="cpu")
    assert fast.precision == "bf16" and checks == [None, torch.bfloat16]  # fp32's outputs, then bf16's
    assert Evaluator(model, device="cpu", precision="fp32").precision == "fp32"
    monkeypatch.setattr(precision, "cpu_features", lambda: frozenset({"avx2", "fma"}))
    with caplog.at_level(logging.WARNING, logger="client.evaluator"):
        assert Evaluator(model, device="cpu", precision="bf16").precision == "bf16"  # asked for: it runs
    assert "this CPU has no bf16 instructions" in caplog.text
    with pytest.raises(ValueError, match="precision 'int4': expected one of auto, fp32, fp16, bf16"):
        Evaluator(model, device="cpu", precision="int4")
