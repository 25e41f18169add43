"""A network's outputs on the canary positions (:mod:`common.canary` holds the positions, the
outputs' format and their comparison)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from common.canary import CanaryOutputs, encode, fingerprint, games
from common.encoding.features import NN_AREA, NN_LEN, NUM_GLOBAL, NUM_SPATIAL, POLICY_LEN
from common.nn.interpret import interpret, no_result_possible
from common.nn.model import Model
from common.nn.outputs import ModelOutput, pad_to_grid
from common.nn.runner import runner


def evaluate_canary(
    model: Model,
    device: torch.device | str = "cpu",
    dtype: torch.dtype | None = None,
    net: Callable[..., ModelOutput] | None = None,
) -> CanaryOutputs:
    """The model's outputs on the canary positions, evaluated on ``device`` in fp32 or in ``dtype``
    (float16, bfloat16) as :func:`common.nn.precision.runner` runs it there, or by ``net`` (a module
    that runs the model, as an evaluator does). One batch per board size, cropped to it."""
    device = torch.device(device)
    if net is None:
        net = runner(model, device, dtype)
    game_list = games()
    spatial, glob, legal = encode(game_list)
    n = len(game_list)
    policy = np.zeros((n, POLICY_LEN), dtype=np.float32)
    value = np.zeros((n, 3))
    lead = np.zeros(n)
    score_mean = np.zeros(n)
    ownership = np.zeros((n, NN_AREA), dtype=np.float32)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, game in enumerate(game_list):
        groups.setdefault((game.x_size, game.y_size), []).append(i)
    for (w, h), rows in groups.items():
        x = torch.from_numpy(spatial[rows]).view(len(rows), NUM_SPATIAL, NN_LEN, NN_LEN)[:, :, :h, :w]
        x = x.contiguous().to(device)
        g = torch.from_numpy(glob[rows]).view(len(rows), NUM_GLOBAL).to(device)
        with torch.inference_mode():
            raw = net(x, g, with_score_belief=False)
            out = pad_to_grid(raw.map(lambda t: t.float()), h, w)
            ev = interpret(
                out,
                torch.from_numpy(legal[rows]).to(device) > 0,
                False,
                [no_result_possible(game_list[i].rules.ko, game_list[i].rules.scoring) for i in rows],
                model_version=model.config.version,
            )
        policy[rows] = ev.policy_full.float().cpu().numpy()
        value[rows] = torch.stack([ev.win, ev.loss, ev.no_result], 1).cpu().numpy()
        lead[rows] = ev.lead.cpu().numpy()
        score_mean[rows] = ev.score_mean.cpu().numpy()
        own = ev.ownership.float().cpu().numpy().reshape(len(rows), NN_AREA)
        ownership[rows] = own
    return CanaryOutputs(
        policy=policy, value=value, lead=lead, score_mean=score_mean, ownership=ownership, fingerprint=fingerprint()
    )
