"""The network against stored training rows: what the audit measures of each row.

A row's inputs are evaluated by the network its game's task named, under each of the 8 symmetries
of the square, and the policies and values are averaged (the client's search draws a symmetry per
evaluation, so its targets follow the network's average over symmetries, not any one of them).
Per row this gives:

- ``kl``: KL(policy target || network policy) in nats, over the legal points (on the board, empty)
  and pass;
- ``policy_gain``: how much better the network predicts the target than a uniform choice among the
  legal moves, in nats: sum over moves of target x log(network probability x legal moves). A search
  from the network puts its visits where the network's probability is: clearly positive; targets
  that are not the network's (shuffled, random, another network's) come out near or below 0,
  whatever their sharpness (which the KL mixes in);
- ``top_agree``: 1 when the target's largest entry is the network's most likely move;
- ``top_missed``: 1 when the network's most likely move has no share of the target at all (a search
  from the network visits its favourite move nearly always, so honest rows almost never miss it);
- ``value_error``: |search value - network value|, both win minus loss from the side to move (the
  row's globalTargetsNC channels 16-17 hold the search's value at that turn);
- ``raw_error``: |recorded raw value - network value|: the row records the network's own win minus
  loss at the root (channel 57), which the named network must reproduce up to the symmetry drawn.

Rows whose policy target has weight 0 have NaN for the policy figures, and side positions (game
branching) NaN for every figure: their positions follow a move off the game's line, drawn from the
raw policy at a high temperature or at random, where a network's predictions are not those of the
game's own positions the thresholds were measured on, and a contributor has more or fewer of them
by chance. Torch is imported here only:
the web server never imports this module (the audit runs in the task worker or ``manage.py audit``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from common.data.loader import decode_rows, make_batch
from common.data.schema import GT_MCTS_VALUE, GT_POLICY_WEIGHT, GT_RAW_WIN_LOSS, GT_SIDE_POSITION
from common.data.symmetry import NUM_SYMMETRIES, turn, unturn
from common.nn.model import Model

ROW_STATISTICS = ("kl", "policy_gain", "top_agree", "top_missed", "value_error", "raw_error")
PROBABILITY_FLOOR = 1e-6  # the network's probabilities are floored here before the log of the KL
BATCH_ROWS = 64  # rows per forward pass (times 8 symmetries)


@dataclass
class RowFigures:
    """Per row figures (arrays of one length), named as ``ROW_STATISTICS``."""

    kl: np.ndarray
    policy_gain: np.ndarray
    top_agree: np.ndarray
    top_missed: np.ndarray
    value_error: np.ndarray
    raw_error: np.ndarray

    def __len__(self) -> int:
        return int(self.kl.shape[0])

    @classmethod
    def concat(cls, parts: list[RowFigures]) -> RowFigures:
        if not parts:
            return cls(*(np.zeros(0, np.float64) for _ in ROW_STATISTICS))
        return cls(*(np.concatenate([getattr(p, s) for p in parts]) for s in ROW_STATISTICS))


@torch.inference_mode()
def network_average(
    model: Model, spatial: torch.Tensor, glob: torch.Tensor, legal: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The network's move probabilities [n, side*side + 1] (over ``legal``, pass last) and win minus
    loss [n], each averaged over the 8 symmetries. ``spatial`` [n, 22, side, side]."""
    n, _, side, _ = spatial.shape
    turned = torch.cat([turn(spatial, s) for s in range(NUM_SYMMETRIES)])
    out = model(turned.contiguous(), glob.repeat(NUM_SYMMETRIES, 1), with_score_belief=False)
    logits = out.policy[:, 0, :].float()
    board = logits[:, : side * side].reshape(NUM_SYMMETRIES, n, side, side)
    board = torch.stack([unturn(board[s], s) for s in range(NUM_SYMMETRIES)]).reshape(NUM_SYMMETRIES, n, -1)
    logits = torch.cat([board, logits[:, side * side :].reshape(NUM_SYMMETRIES, n, 1)], dim=2)
    logits = logits.masked_fill(~legal.unsqueeze(0), float("-inf"))
    policy = torch.softmax(logits, dim=2).mean(dim=0)
    value = torch.softmax(out.value.float(), dim=1).reshape(NUM_SYMMETRIES, n, 3)
    return policy, (value[..., 0] - value[..., 1]).mean(dim=0)


def evaluate_rows(model: Model, npz: bytes, indices: np.ndarray | None = None, name: str = "<bytes>") -> RowFigures:
    """The figures of the rows ``indices`` (default: all) of one npz file, on the model's device.
    ValueError names the file when it cannot be read."""
    rows = decode_rows(npz, name)
    if indices is not None:
        indices = np.asarray(indices, dtype=np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= len(rows)):
            raise ValueError(f"training rows {name}: row {int(indices.max())} asked for, the file holds {len(rows)}")
        rows = rows.take(indices)
    parts = []
    device = next(model.parameters()).device
    # Rows of one board side together, so each runs on its own board's crop.
    for side in np.unique(rows.sides):
        chosen = rows.take(np.flatnonzero(rows.sides == side))
        for start in range(0, len(chosen), BATCH_ROWS):
            part = chosen.take(np.arange(start, min(start + BATCH_ROWS, len(chosen))))
            parts.append(_figures(model, make_batch(part, None), device))
    return RowFigures.concat(parts)


def _figures(model: Model, batch, device: torch.device) -> RowFigures:
    n = batch.size
    spatial = torch.from_numpy(batch.spatial).to(device)
    glob = torch.from_numpy(np.ascontiguousarray(batch.global_inputs)).to(device)
    empty = (spatial[:, 0] > 0) & (spatial[:, 1] == 0) & (spatial[:, 2] == 0)
    legal_t = torch.cat([empty.reshape(n, -1), torch.ones((n, 1), dtype=torch.bool, device=device)], dim=1)
    policy_t, value_t = network_average(model, spatial, glob, legal_t)
    policy, value, legal = policy_t.cpu().double().numpy(), value_t.cpu().double().numpy(), legal_t.cpu().numpy()

    target = batch.policy[:, 0, :].astype(np.float64) * legal
    total = target.sum(axis=1)
    main = batch.global_targets[:, GT_SIDE_POSITION] == 0
    weighted = (batch.global_targets[:, GT_POLICY_WEIGHT] > 0) & (total > 0) & main
    target = np.divide(target, total[:, None], out=np.zeros_like(target), where=total[:, None] > 0)
    logp = np.log(np.maximum(policy, PROBABILITY_FLOOR))
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(target > 0, target * (np.log(target) - logp), 0.0)
    gain = (target * (logp + np.log(legal.sum(axis=1, keepdims=True)))).sum(axis=1)
    net_top = policy.argmax(axis=1)
    nan = np.full(n, np.nan)
    kl = np.where(weighted, terms.sum(axis=1), nan)
    top_agree = np.where(weighted, (target.argmax(axis=1) == net_top).astype(np.float64), nan)
    top_missed = np.where(weighted, (target[np.arange(n), net_top] <= 0).astype(np.float64), nan)
    gt = batch.global_targets.astype(np.float64)
    search_value = gt[:, GT_MCTS_VALUE] - gt[:, GT_MCTS_VALUE + 1]
    return RowFigures(
        kl=kl,
        policy_gain=np.where(weighted, gain, nan),
        top_agree=top_agree,
        top_missed=top_missed,
        value_error=np.where(main, np.abs(search_value - value), nan),
        raw_error=np.where(main, np.abs(gt[:, GT_RAW_WIN_LOSS] - value), nan),
    )
