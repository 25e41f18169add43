"""Honest and dishonest training rows for the audit's tests and benchmark, made with the client's
own self-play code and networks with opinions: a freshly initialised tiny network's policy is
nearly uniform (its output layers start small), under which no search and no tampering differ;
scaling its output layers up gives a tiny network whose policy and value are as sharp as a trained
one's, with the same architecture and file format."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from common.data.schema import DATA_AREA, PASS_POS
from tests.server.helpers import SELFPLAY, PlayedGame, training_metadata

POLICY_SCALE = 40.0  # the output layers' scale: the tiny network's policy then puts ~30-60% on its favourite
VALUE_SCALE = 8.0


def sharp_network(seed: int):
    """A tiny network (``common.nn`` model) with random weights and sharp outputs."""
    import torch

    from common.nn.model import Model, named_config

    torch.manual_seed(seed)
    model = Model(named_config("tiny"))
    with torch.no_grad():
        model.policy_head.conv_p2.weight.mul_(POLICY_SCALE)
        model.policy_head.linear_pass.weight.mul_(POLICY_SCALE)
        model.value_head.linear_v3.weight.mul_(VALUE_SCALE)
    return model.eval()


def sharp_network_file(name: str, seed: int) -> bytes:
    from common.nn.modelfile import encode_model

    model = sharp_network(seed)
    return encode_model(model.config, model.state_dict(), name)


def honest_games(model, name: str, out: Path, count: int, seed: int, settings=SELFPLAY) -> list[PlayedGame]:
    """Self-play games of ``model`` as the client plays them (CPU), named as the network ``name``."""
    from client.evaluator import Evaluator
    from client.selfplay.run import run_selfplay

    run_selfplay(
        Evaluator(model, device="cpu", cache_size=0),
        settings,
        games=count,
        parallel=count,
        out_dir=out,
        seed=seed,
        progress=False,
        player_name=name,
    )
    games = []
    for sgf_path in sorted(out.glob("*.sgf")):
        npz_path = sgf_path.with_suffix(".npz")
        if npz_path.exists():
            sgf, npz = sgf_path.read_bytes(), npz_path.read_bytes()
            games.append(PlayedGame(sgf, npz, training_metadata(sgf, npz, name, sgf_path.stem)))
    return games


def _legal(arrays: dict) -> np.ndarray:
    """[N, 362] the points a policy target may hold: on the board and empty, and pass."""
    packed = arrays["binaryInputNCHWPacked"]
    planes = np.unpackbits(packed[:, :3], axis=-1, count=DATA_AREA).astype(bool)
    legal = np.zeros((packed.shape[0], DATA_AREA + 1), dtype=bool)
    legal[:, :DATA_AREA] = planes[:, 0] & ~planes[:, 1] & ~planes[:, 2]
    legal[:, PASS_POS] = True
    return legal


def _rewrite(game: PlayedGame, change) -> PlayedGame:
    with np.load(io.BytesIO(game.npz)) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    change(arrays)
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    return PlayedGame(game.sgf, out.getvalue(), dict(game.metadata))


def shuffled_targets(game: PlayedGame, seed: int) -> PlayedGame:
    """The game with each row's policy target permuted over the row's legal points."""
    rng = np.random.default_rng(seed)

    def change(arrays: dict) -> None:
        targets, legal = arrays["policyTargetsNCMove"], _legal(arrays)
        for i in range(targets.shape[0]):
            points = np.flatnonzero(legal[i])
            targets[i, 0, points] = targets[i, 0, rng.permutation(points)]

    return _rewrite(game, change)


def random_targets(game: PlayedGame, seed: int) -> PlayedGame:
    """The game with each row's policy target drawn at random (a Dirichlet over its legal points)."""
    rng = np.random.default_rng(seed)

    def change(arrays: dict) -> None:
        targets, legal = arrays["policyTargetsNCMove"], _legal(arrays)
        for i in range(targets.shape[0]):
            points = np.flatnonzero(legal[i])
            targets[i, 0] = 0
            targets[i, 0, points] = np.round(rng.dirichlet(np.full(points.size, 0.3)) * 1000).astype(np.int16)

    return _rewrite(game, change)
