"""What the model returns: raw head outputs, before any activation, from the side to move.

Spatial outputs use the 19x19 network grid: index ``y * 19 + x`` with y the row from the top and
x the column from the left; boards smaller than 19x19 sit in the top-left corner. Off-board
entries are meaningless and must be masked by callers (the mask is input channel 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from common.encoding.features import NN_AREA, NN_LEN

SCORE_BELIEF_OFFSET = NN_AREA + 60  # S: scores run over -S+0.5 .. S-0.5
SCORE_BELIEF_LEN = 2 * SCORE_BELIEF_OFFSET  # 842


@dataclass
class ModelOutput:
    policy: torch.Tensor  # [N, P, 362] logits; index 361 is pass. Channel 0 the move to play; our
    #                       networks add 1 the opponent's reply and 2, 3 the soft policy targets
    #                       (layout documented by the model, common/nn/model.py)
    value: torch.Tensor  # [N, 3] logits of win, loss, no result
    misc: torch.Tensor  # [N, M] the score/variance outputs before their activations; the layout
    #                     is documented by the model (common/nn/model.py)
    ownership: torch.Tensor  # [N, 19, 19] before tanh; +1 means the side to move owns the point
    score_belief: torch.Tensor  # [N, 842] log-probabilities of final score differences
    #                             -S+0.5 .. S-0.5 (S = 421), side to move
    score_belief_gamma: torch.Tensor  # [N, 1] the belief's scaling activation (for its penalty)
    # In training only, for a network normalised as the methods page's ("fixscale"): the outputs of
    # the copy of the heads that reads the trunk through its one batch norm (the loss weighs both).
    normalized: ModelOutput | None = None

    def tensors(self) -> dict[str, torch.Tensor]:
        """The outputs by name (without :attr:`normalized`)."""
        return {name: value for name, value in vars(self).items() if name != "normalized"}

    def map(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> ModelOutput:
        """``fn`` of every output (without :attr:`normalized`)."""
        return ModelOutput(
            policy=fn(self.policy),
            value=fn(self.value),
            misc=fn(self.misc),
            ownership=fn(self.ownership),
            score_belief=fn(self.score_belief),
            score_belief_gamma=fn(self.score_belief_gamma),
        )


def pad_to_grid(out: ModelOutput, h: int, w: int) -> ModelOutput:
    """Outputs of an h x w crop laid out on the 19x19 grid again."""
    if h == NN_LEN and w == NN_LEN:
        return out
    n, p, _ = out.policy.shape
    board = out.policy[:, :, : h * w].reshape(n, p, h, w)
    grid = torch.zeros((n, p, NN_LEN, NN_LEN), dtype=out.policy.dtype, device=out.policy.device)
    grid[:, :, :h, :w] = board
    policy = torch.cat([grid.reshape(n, p, NN_AREA), out.policy[:, :, h * w :]], dim=2)
    own = torch.zeros((n, NN_LEN, NN_LEN), dtype=out.ownership.dtype, device=out.ownership.device)
    own[:, :h, :w] = out.ownership
    return ModelOutput(policy, out.value, out.misc, own, out.score_belief, out.score_belief_gamma)
