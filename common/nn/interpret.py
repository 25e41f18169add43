"""Turn raw :class:`ModelOutput` into KataGo's numbers, as KataGo's nneval does for model version 8.

The conventions (cpp/neuralnet/nneval.cpp ``NNEvaluator::evaluate``, model versions 4..8, and the
defaults of ``ModelPostProcessParams`` in cpp/neuralnet/desc.cpp, which version 8 files do not
override):

- value: softmax of the 3 logits (win, loss, no result). When the rules cannot produce a no-result
  (ko rule not SIMPLE and scoring not TERRITORY) KataGo removes that logit and sets noResult = 0.
- score mean ("selfplay score") = misc[0] * 20; score stdev = softplus(misc[1]) * 20;
  score mean square = mean^2 + stdev^2; lead = misc[2] * 20. All three are then multiplied by
  (1 - noResult): no result counts as score 0.
- variance time = softplus(misc[3]) * 40, reported only by model versions >= 9 (else -1).
- ownership = tanh(raw), 0 off board.
- policy: logits / temperature, illegal moves removed, softmax over the legal moves (pass
  included when legal). Illegal moves get probability 0 here (KataGo stores -1 and prints NAN).
- from the side to move to white's perspective: when black is to move, win and loss swap and
  score mean, lead and ownership change sign; noResult and score mean square do not change.

Our own networks use the same misc layout and constants (see :mod:`common.nn.model`).
The search reads its rows one at a time, with these conventions, in the numba kernels of
:mod:`common.encoding.readout`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from common.architecture import (
    MISC_SHORTTERM_SCORE_ERROR,
    MISC_SHORTTERM_VALUE_ERROR,
    SHORTTERM_MISC_VALUES,
    SHORTTERM_SCORE_ERROR_MULTIPLIER,
    SHORTTERM_VALUE_ERROR_MULTIPLIER,
)
from common.encoding.features import NN_AREA, NN_LEN, POLICY_LEN
from common.nn.model import (
    LEAD_MULTIPLIER,
    MISC_LEAD,
    MISC_SCORE_MEAN,
    MISC_SCORE_STDEV,
    MISC_VARIANCE_TIME,
    POLICY_CHANNEL,
    SCORE_MEAN_MULTIPLIER,
    SCORE_STDEV_MULTIPLIER,
    VARIANCE_TIME_MULTIPLIER,
)
from common.nn.outputs import ModelOutput

NO_RESULT_LOGIT_PENALTY = 100000.0


@dataclass(frozen=True)
class PostProcessParams:
    """KataGo's ModelPostProcessParams defaults (cpp/neuralnet/desc.cpp); version 8 uses these."""

    score_mean_multiplier: float = SCORE_MEAN_MULTIPLIER
    score_stdev_multiplier: float = SCORE_STDEV_MULTIPLIER
    lead_multiplier: float = LEAD_MULTIPLIER
    variance_time_multiplier: float = VARIANCE_TIME_MULTIPLIER
    output_scale_multiplier: float = 1.0


@dataclass
class Evaluation:
    """Post-processed network outputs; every tensor has the batch as its first dimension.

    Side-to-move fields: ``win``, ``loss``, ``no_result``, ``score_mean``, ``score_mean_sq``,
    ``score_stdev``, ``lead``, ``ownership``, and the short-term errors' predicted standard
    deviations ``shortterm_winloss_error`` and ``shortterm_score_error`` (-1 for a network without
    those heads; the same from either side). White's-perspective fields are named as KataGo's
    ``kata-raw-nn`` prints them: ``white_win``, ``white_loss``, ``no_result``, ``white_lead``,
    ``white_score_selfplay``, ``white_score_selfplay_sq``, ``white_ownership``. ``policy`` [N, 361]
    (row-major from the top-left of the 19x19 grid) and ``policy_pass`` [N] are probabilities over
    the legal moves, with illegal moves at 0; ``policy_full`` [N, 362] is both together.
    Scalars are float64, spatial outputs float32.
    """

    win: torch.Tensor
    loss: torch.Tensor
    no_result: torch.Tensor
    score_mean: torch.Tensor
    score_mean_sq: torch.Tensor
    score_stdev: torch.Tensor
    lead: torch.Tensor
    var_time_left: torch.Tensor
    shortterm_winloss_error: torch.Tensor
    shortterm_score_error: torch.Tensor
    ownership: torch.Tensor
    policy_full: torch.Tensor
    white_win: torch.Tensor
    white_loss: torch.Tensor
    white_lead: torch.Tensor
    white_score_selfplay: torch.Tensor
    white_score_selfplay_sq: torch.Tensor
    white_ownership: torch.Tensor

    @property
    def policy(self) -> torch.Tensor:
        return self.policy_full[:, :NN_AREA]

    @property
    def policy_pass(self) -> torch.Tensor:
        return self.policy_full[:, NN_AREA]

    @property
    def white_score_mean(self) -> torch.Tensor:
        return self.white_score_selfplay

    @property
    def white_score_mean_sq(self) -> torch.Tensor:
        return self.white_score_selfplay_sq


def no_result_possible(ko_rule: str, scoring: str) -> bool:
    """Whether KataGo lets the no-result probability stand: ko rule SIMPLE or TERRITORY scoring."""
    return ko_rule.upper() == "SIMPLE" or scoring.upper() == "TERRITORY"


def _as_bool_rows(x: torch.Tensor | bool | list[bool], n: int, device: torch.device, what: str) -> torch.Tensor:
    t = torch.as_tensor(x, device=device)
    if t.dim() == 0:
        t = t.expand(n)
    if t.shape != (n,):
        raise ValueError(f"{what} must be a bool or [{n}] bools, got shape {list(t.shape)}")
    return t.to(torch.bool)


def interpret(
    output: ModelOutput,
    legal: torch.Tensor,
    white_to_move: torch.Tensor | bool | list[bool],
    no_result_allowed: torch.Tensor | bool | list[bool] = True,
    on_board: torch.Tensor | None = None,
    policy_temperature: float = 1.0,
    model_version: int = 8,
    params: PostProcessParams | None = None,
) -> Evaluation:
    """KataGo's post-processing of a batch of raw outputs.

    ``legal`` bool [N, 362]: legal moves (index y * 19 + x, then pass). ``white_to_move``: per
    row, whether the evaluated side is white. ``no_result_allowed``: per row, whether the rules
    allow a no-result (see :func:`no_result_possible`); where False the no-result probability is
    forced to 0 as KataGo does. ``on_board`` [N, 19, 19] (input channel 0): ownership is set to 0
    off board when given. Only the policy's first channel (the move to play) is used.
    """
    params = params or PostProcessParams()
    policy_logits = output.policy[:, POLICY_CHANNEL, :]
    n = policy_logits.shape[0]
    device = policy_logits.device
    if policy_logits.shape[1] != POLICY_LEN:
        raise ValueError(f"policy must have {POLICY_LEN} entries per row, got {policy_logits.shape[1]}")
    if legal.shape != (n, POLICY_LEN):
        raise ValueError(f"legal mask must be [{n}, {POLICY_LEN}], got {list(legal.shape)}")
    legal = legal.to(device=device, dtype=torch.bool)
    if not bool(legal.any(dim=1).all()):
        bad = int((~legal.any(dim=1)).nonzero()[0])
        raise ValueError(f"row {bad} of the legal mask has no legal move")
    if policy_temperature <= 0:
        raise ValueError(f"policy temperature must be positive, got {policy_temperature}")
    white = _as_bool_rows(white_to_move, n, device, "white_to_move")
    nr_allowed = _as_bool_rows(no_result_allowed, n, device, "no_result_allowed")
    scale = params.output_scale_multiplier

    # Policy, in float32 as KataGo.
    scaled = policy_logits.float() * (scale / policy_temperature)
    scaled = scaled.masked_fill(~legal, float("-inf"))
    policy = torch.softmax(scaled, dim=1).masked_fill(~legal, 0.0)

    # Value and scores, in float64 as KataGo.
    logits = output.value.double() * scale
    penalty = (~nr_allowed).double().unsqueeze(1) * NO_RESULT_LOGIT_PENALTY
    logits = torch.cat([logits[:, :2], logits[:, 2:3] - penalty], 1)
    probs = torch.softmax(logits, dim=1)
    probs = torch.cat([probs[:, :2], probs[:, 2:3] * nr_allowed.double().unsqueeze(1)], 1)
    probs = probs / probs.sum(dim=1, keepdim=True)
    win, loss, no_result = probs[:, 0], probs[:, 1], probs[:, 2]

    misc = output.misc.double() * scale
    has_result = 1.0 - no_result
    score_mean = misc[:, MISC_SCORE_MEAN] * params.score_mean_multiplier
    score_stdev = F.softplus(misc[:, MISC_SCORE_STDEV]) * params.score_stdev_multiplier
    score_mean_sq = (score_mean * score_mean + score_stdev * score_stdev) * has_result
    score_mean = score_mean * has_result
    lead = misc[:, MISC_LEAD] * params.lead_multiplier * has_result
    if model_version >= 9:
        var_time_left = F.softplus(misc[:, MISC_VARIANCE_TIME]) * params.variance_time_multiplier
    else:
        var_time_left = torch.full_like(win, -1.0)
    if misc.shape[1] >= SHORTTERM_MISC_VALUES:
        shortterm_winloss_error = torch.sqrt(
            F.softplus(misc[:, MISC_SHORTTERM_VALUE_ERROR]) * SHORTTERM_VALUE_ERROR_MULTIPLIER
        )
        shortterm_score_error = torch.sqrt(
            F.softplus(misc[:, MISC_SHORTTERM_SCORE_ERROR]) * SHORTTERM_SCORE_ERROR_MULTIPLIER
        )
    else:
        shortterm_winloss_error = shortterm_score_error = torch.full_like(win, -1.0)

    ownership = torch.tanh(output.ownership.float() * scale)
    if on_board is not None:
        if on_board.shape != (n, NN_LEN, NN_LEN):
            raise ValueError(f"on_board must be [{n}, {NN_LEN}, {NN_LEN}], got {list(on_board.shape)}")
        ownership = ownership * (on_board.to(device) > 0)

    sign = torch.where(white, 1.0, -1.0).double()
    return Evaluation(
        win=win,
        loss=loss,
        no_result=no_result,
        score_mean=score_mean,
        score_mean_sq=score_mean_sq,
        score_stdev=score_stdev,
        lead=lead,
        var_time_left=var_time_left,
        shortterm_winloss_error=shortterm_winloss_error,
        shortterm_score_error=shortterm_score_error,
        ownership=ownership,
        policy_full=policy,
        white_win=torch.where(white, win, loss),
        white_loss=torch.where(white, loss, win),
        white_lead=lead * sign,
        white_score_selfplay=score_mean * sign,
        white_score_selfplay_sq=score_mean_sq,
        white_ownership=ownership * sign.float().view(-1, 1, 1),
    )
