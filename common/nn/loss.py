"""The training loss: KataGo's paper (Appendix B), the soft-policy targets, and KataGo's lead and variance-time terms.

Where the network puts things (policy channels, misc columns, output multipliers) is defined once, in
:mod:`common.nn.model`, and where KataGo's training rows put things (``GT_*``, globalTargetsNC
channels, reference §2) once, in :mod:`common.data.schema`; both are imported here.

Terms, per row r of a batch of N rows. Every term is multiplied by the row weight (globalTargetsNC
channel 25) and by the extra weight in brackets:

- policy: ``w_policy * CE(π, softmax(policy[0]))`` [policy weight, ch. 26]
- opponent_policy: ``w_opp * CE(π_opp, softmax(policy[1]))`` [next-move policy weight, ch. 28]
- soft_policy: ``w_soft_policy * CE(soft(π), softmax(policy[2]))`` [ch. 26]
- soft_opponent_policy: ``w_soft_opponent_policy * CE(soft(π_opp), softmax(policy[3]))`` [ch. 28]
- value: ``c_value * CE(z, softmax(value))`` over win / loss / no result [value weight, 1 - ch. 35]
- ownership: ``ownership_scale / B² * Σ_on-board BCE((1+o)/2, (1+tanh x)/2)`` [ownership weight, ch. 27]
- score_pdf: ``w_spdf * CE(p_s, p̂_s)`` over the 842 score buckets [ch. 27]
- score_cdf: ``w_scdf * Σ_x (P_s(x) - P̂_s(x))²`` with P the running sums over buckets [ch. 27]
- lead: ``w_lead * Huber(20 misc[2] - lead, δ_lead)``, lead from ch. 21 [lead weight, ch. 29]
- variance_time: ``w_variance_time * Huber(40 softplus(misc[3]) - (t_v + 1e-5), δ_vt)``, t_v from
  ch. 22 [ch. 27]
- root_variance: ``w_rv * Σ_i w_i (rv_i - softplus(misc[4+i]))²``, i = 0..3 [per-target weights w_i]
- score_mean_reg: ``w_sbreg * Huber(20 misc[0] - μ_s, δ)``, ``μ_s = Σ_x x p̂_s(x)`` [none]
- score_stdev_reg: ``w_sbreg * Huber(20 softplus(misc[1]) - σ_s, δ)`` [none]
- score_scale: ``w_scale * γ²`` [none]

With the short-term heads (``misc_values >= 14``; t the row's short-term targets, globalTargetsNC
12-15, from the side to move; ``w_td = 1 - ch. 24``):

- shortterm_value: ``w_stv * CE(t_value, softmax(misc[10:13]))`` [w_td]
- shortterm_score: ``w_sts * Huber(20 misc[13] - t_score, 12)`` [w_td]
- shortterm_value_error: ``w_stve * Huber(0.25 softplus(misc[8]), (sg(v̂) - t_wl)² + 1e-8, 0.4)``,
  ``v̂`` the short-term head's win minus loss, ``t_wl`` the target's [w_td]
- shortterm_score_error: ``w_stse * Huber(30 softplus(misc[9]), (sg(ŝ) - t_score)² + 1e-4, 100)``,
  ``ŝ = 20 misc[13]`` [w_td]
- optimistic_policy: ``w_optimistic * CE(π, softmax(policy[4]))`` [policy weight x ownership weight x
  ``clamp(σ(3(z_v - 1.5)) + σ(3(z_s - 1.5)), 0, 1)``], with ``z_v = (t_wl - sg(v̂)) / sg(sqrt(e_v +
  1e-4))`` and ``z_s = (t_score - sg(ŝ)) / sg(sqrt(e_s + 0.25))``, e the two error predictions: the
  methods page's surprise weighting, full weight where the side to move did about 1.5 standard
  deviations better than its network expected, little elsewhere (the ownership weight leaves out
  side positions and unfinished games).

``sg`` stops the gradient, so the error heads learn the error without moving the predictions, and
the optimistic policy's weighting moves neither.

With the methods page's one batch norm (``norm`` "fixscale"), the model's training output has a
second set of heads behind that norm (:attr:`ModelOutput.normalized`): every term above is taken
for both and weighted ``w_normalized`` (0.8) for that set and ``1 - w_normalized`` for the heads
that inference uses.

``CE(t, q) = -Σ t log q``; ``BCE(t, q) = -(t log q + (1-t) log(1-q))``; ``B²`` is the number of on-board
points of the row (from its mask), so a 9x9 row in the 19x19 tensor gets ``w_o = 1.5/81``;
``σ_s = sqrt(Σ_x (x - μ_s)² p̂_s(x) + 0.001)``; ``soft(π) ∝ ((π + floor) · legal)^(1/T)`` with T = 4;
``Huber(d, δ) = d²/2`` for ``|d| <= δ`` and ``δ(|d| - δ/2)`` beyond; the self-prediction terms have
δ = 10. The paper writes the cdf term with ``Σ_{y<x}``; the inclusive running sums used here give the
same total because both distributions sum to 1 (the last inclusive gap and the first exclusive gap are
0). The self-prediction terms let gradients reach both the misc outputs and the score belief, as the
formula does.

A term whose policy channel or misc column the output lacks contributes zero: an imported KataGo
network (one policy channel) trains only ``policy``, and the root-variance term needs
``misc_values >= 8`` (:data:`common.nn.model.MISC_ROOT_VARIANCE`).

Where the constants come from:

- Paper, Appendix B (katago-accelerating-self-play-2021): c_value 1.5, w_opp 0.15, ownership
  1.5 / B², w_spdf 0.02, w_scdf 0.02, w_sbreg 0.004 with δ = 10, w_scale 0.0005, the L2 coefficient
  3e-5, and w_rv 0.2 (:data:`PAPER_ROOT_VARIANCE_WEIGHT`). The default w_rv here is 0: the paper's
  root-variance targets were globalTargetsNC 21-24 in KataGo's early data; current rows use those
  channels for lead and variance time and carry no root-variance target (see
  :func:`targets_from_rows`).
- KataGo's methods page, "Auxiliary Soft Policy Target": T = 4 and the weight 8; "Short-term Value
  and Score Targets", "Uncertainty-Weighted MCTS Playouts" and "Optimistic Policy": the short-term
  terms' forms; "Fixed Variance Initialization and One Batch Norm": the 80% / 20% split.
- KataGo metrics_pytorch.py: the short-term terms' constants (``loss_td_value_samplewise`` 1.20 with
  the short horizon's scale 1, ``loss_td_score_samplewise`` 0.0004 and δ = 12,
  ``loss_shortterm_value_error_samplewise`` 2.0 and δ = 0.4, ``loss_shortterm_score_error_samplewise``
  0.00002 and δ = 100, the optimistic policy's 0.2 and its variance floors 1e-4 and 0.25). KataGo's
  td value term is a KL divergence (the cross-entropy less the target's entropy); the cross-entropy
  here has the same gradient.
- KataGo python/katago/train/metrics_pytorch.py (``Metrics.metrics_dict_batchwise_single_heads_output``):
  the soft targets' floor 1e-7 on legal entries; the soft opponent policy through the opponent-policy
  loss, so its weight is 8 (python/train.py ``-soft-policy-weight-scale``) times 0.15.
- lead: metrics_pytorch.py ``Metrics.loss_lead_samplewise``: 0.006 (:data:`KATAGO_LEAD_WEIGHT`) times
  a Huber loss with δ = 8 between the predicted lead and globalTargetsNC 21, weighted by channel 29
  (lead weight) and the row weight. The prediction is ``20 * misc[2]``
  (python/katago/train/model_pytorch.py ``Model.postprocess_single_heads_output``, lead_multiplier).
  KataGo's older TensorFlow trainer (python/model.py, ``Target_vars``) used the same form with 0.022.
- variance_time: metrics_pytorch.py ``Metrics.loss_variance_time_samplewise``: 0.0003
  (:data:`KATAGO_VARIANCE_TIME_WEIGHT`) times a Huber loss with δ = 50 between the prediction and
  globalTargetsNC 22 plus 1e-5 (a floor on the target), weighted by channel 27 (ownership/score
  weight) and the row weight, times python/train.py's ``-variance-time-loss-scale`` (default 1). The
  prediction is ``40 * softplus(misc[3])`` (model_pytorch.py, variance_time_multiplier). The older
  python/model.py gave this term weight 0 (KataGo's engine reports variance time only for model
  versions >= 9); the weight here is the PyTorch trainer's, so that our networks learn the output.
  One difference: KataGo's PyTorch trainer computes the stdev and variance-time softplus with a
  gradient floor of 0.05 (``SoftPlusWithGradientFloorFunction``); here both use the plain softplus,
  whose values are the same.

Batch reduction: the batch loss of a term is ``Σ_r (weights_r · loss_r) / N``, the sum of the
weighted per-row losses divided by the number of rows N (zero-weight rows count in N). The total is
the sum of the terms.

The paper's L2 penalty ``c ‖θ‖²`` (c = 3e-5, :data:`PAPER_L2_COEFFICIENT`) is not a term here: the
optimizer applies it as weight decay: its gradient per row is ``2cθ``, which is torch SGD's
``weight_decay = 2c`` on this loss (averaged per row).

Numerics: log-probabilities come from ``log_softmax``; ownership uses
``(1 + tanh x)/2 = sigmoid(2x)`` and ``binary_cross_entropy_with_logits``, never a log of a tanh;
off-board policy logits are excluded before the softmax and off-board points never enter a sum.

Sign conventions: Appendix B prints the value term without its minus sign and the two score
self-prediction terms with one; the losses here are the minimised forms (cross-entropy, +Huber).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from common.architecture import (
    MISC_SHORTTERM_SCORE,
    MISC_SHORTTERM_SCORE_ERROR,
    MISC_SHORTTERM_VALUE,
    MISC_SHORTTERM_VALUE_ERROR,
    OPTIMISTIC_POLICY_CHANNEL,
    SHORTTERM_MISC_VALUES,
    SHORTTERM_SCORE_ERROR_MULTIPLIER,
    SHORTTERM_SCORE_MULTIPLIER,
    SHORTTERM_VALUE_ERROR_MULTIPLIER,
)
from common.data.schema import (
    GT_FINAL_SCORE,
    GT_LEAD,
    GT_LEAD_WEIGHT,
    GT_ONE_MINUS_TD_WEIGHT,
    GT_ONE_MINUS_VALUE_WEIGHT,
    GT_OPPONENT_POLICY_WEIGHT,
    GT_OWNERSHIP_WEIGHT,
    GT_POLICY_WEIGHT,
    GT_ROW_WEIGHT,
    GT_TD_SHORT,
    GT_VALUE,
    GT_VARIANCE_TIME,
    SCORE_DISTR_LEN,
)
from common.encoding.features import NN_LEN
from common.nn.model import (
    LEAD_MULTIPLIER,
    MISC_LEAD,
    MISC_ROOT_VARIANCE,
    MISC_SCORE_MEAN,
    MISC_SCORE_STDEV,
    MISC_VARIANCE_TIME,
    NUM_ROOT_VARIANCES,
    OPPONENT_POLICY_CHANNEL,
    POLICY_CHANNEL,
    SCORE_MEAN_MULTIPLIER,
    SCORE_STDEV_MULTIPLIER,
    SOFT_OPPONENT_POLICY_CHANNEL,
    SOFT_POLICY_CHANNEL,
    VARIANCE_TIME_MULTIPLIER,
)
from common.nn.outputs import SCORE_BELIEF_LEN, ModelOutput

log = logging.getLogger(__name__)

SCORE_STDEV_EPSILON = 0.001  # added to the belief's variance before the square root
VARIANCE_TIME_TARGET_EPSILON = 1e-5  # added to the variance-time target (KataGo's irreducible error)

GT_MIN_CHANNELS = GT_ONE_MINUS_VALUE_WEIGHT + 1  # one past the last channel read here (64-channel rows suffice)
SCORE_DISTR_SCALE = 100.0  # scoreDistrN holds probabilities x 100

PAPER_L2_COEFFICIENT = 3e-5  # c in the paper's c‖θ‖²; applied by the optimizer, see the module docstring
PAPER_ROOT_VARIANCE_WEIGHT = 0.2  # w_rv in Appendix B; the default is 0 (no such targets in current rows)
KATAGO_LEAD_WEIGHT = 0.006  # python/katago/train/metrics_pytorch.py, Metrics.loss_lead_samplewise
KATAGO_VARIANCE_TIME_WEIGHT = 0.0003  # metrics_pytorch.py, Metrics.loss_variance_time_samplewise

REQUIRED_ROW_ARRAYS = ("policyTargetsNCMove", "globalTargetsNC", "scoreDistrN", "valueTargetsNCHW")


@dataclass(frozen=True)
class LossWeights:
    """Term weights and shape constants (origins in the module docstring).

    ``ownership_scale`` is the numerator of ``w_o = ownership_scale / B²``, B² taken per row from its
    mask. ``w_soft_policy`` is the methods page's "8 times the normal policy"; KataGo's training code
    also trains a soft *opponent* policy at 8 x ``w_opp``. ``soft_policy_floor`` is what KataGo's
    training code adds to every legal entry of the normalised target before the power; 0 gives the
    methods page's plain ``π^(1/T)`` renormalised. ``w_lead`` and ``w_variance_time`` with their Huber
    deltas are KataGo's PyTorch trainer's. ``w_rv`` is 0 because current rows carry no root-variance
    targets; the paper's value is :data:`PAPER_ROOT_VARIANCE_WEIGHT`.
    """

    w_policy: float = 1.0
    c_value: float = 1.5
    w_opp: float = 0.15
    ownership_scale: float = 1.5
    w_spdf: float = 0.02
    w_scdf: float = 0.02
    w_lead: float = KATAGO_LEAD_WEIGHT
    lead_huber_delta: float = 8.0
    w_variance_time: float = KATAGO_VARIANCE_TIME_WEIGHT
    variance_time_huber_delta: float = 50.0
    w_rv: float = 0.0
    w_sbreg: float = 0.004
    sbreg_huber_delta: float = 10.0
    w_scale: float = 0.0005
    w_soft_policy: float = 8.0
    w_soft_opponent_policy: float = 8.0 * 0.15
    soft_policy_temperature: float = 4.0
    soft_policy_floor: float = 1e-7
    w_stv: float = 1.2
    w_sts: float = 0.0004
    shortterm_score_huber_delta: float = 12.0
    w_stve: float = 2.0
    shortterm_value_error_huber_delta: float = 0.4
    w_stse: float = 0.00002
    shortterm_score_error_huber_delta: float = 100.0
    w_optimistic: float = 0.2
    w_normalized: float = 0.8


@dataclass
class Targets:
    """Training targets for a batch of N rows on the L x L data grid (L = 19), all from the side to move.

    Weights are per row, ``[N]``. A policy target whose (legal) entries sum to zero is all zeros with
    zero weight. ``ownership_weight`` also weights the score-belief and variance-time terms, as in
    KataGo. ``root_variance`` is ``[N, 4]`` with per-entry weights; KataGo's current rows carry no such
    targets (see :func:`targets_from_rows`), so there both are zero.
    """

    mask: torch.Tensor  # [N, L, L] 1 on the board, 0 off it
    policy: torch.Tensor  # [N, L*L+1] normalised; pass last
    policy_weight: torch.Tensor  # [N]
    opponent_policy: torch.Tensor  # [N, L*L+1] normalised; the opponent's reply next turn
    opponent_policy_weight: torch.Tensor  # [N]
    value: torch.Tensor  # [N, 3] win, loss, no result
    value_weight: torch.Tensor  # [N]
    score_distribution: torch.Tensor  # [N, 2*L*L+120]; bucket i is the score i - (L*L+60) + 0.5
    final_score: torch.Tensor  # [N] the same score as a number (for metrics; no term uses it)
    ownership: torch.Tensor  # [N, L, L] in [-1, 1], 0 off the board
    ownership_weight: torch.Tensor  # [N] also weights the score-belief and variance-time terms
    lead: torch.Tensor  # [N] points the side to move leads by
    lead_weight: torch.Tensor  # [N]
    variance_time: torch.Tensor  # [N] expected arrival time (turns) of the win/loss variance
    row_weight: torch.Tensor  # [N]
    root_variance: torch.Tensor  # [N, 4]
    root_variance_weight: torch.Tensor  # [N, 4]
    shortterm_value: torch.Tensor  # [N, 3] win, loss, no result over the next turns (about 6 on 19x19)
    shortterm_score: torch.Tensor  # [N] the score the same way
    td_weight: torch.Tensor  # [N] the weight of both

    @property
    def num_rows(self) -> int:
        return int(self.policy.shape[0])

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Targets:
        return Targets(**{f: getattr(self, f).to(device, non_blocking=non_blocking) for f in self.__dataclass_fields__})

    def pin_memory(self) -> Targets:
        return Targets(**{f: getattr(self, f).pin_memory() for f in self.__dataclass_fields__})

    def policy_mask(self) -> torch.Tensor:
        """[N, L*L+1]: 1 for on-board points and for pass."""
        n = self.mask.shape[0]
        flat = self.mask.reshape(n, -1)
        return torch.cat((flat, flat.new_ones((n, 1))), dim=1)


def score_bucket_values(length: int = SCORE_BELIEF_LEN, device: torch.device | str | None = None) -> torch.Tensor:
    """The score of each bucket: bucket i is ``i - length/2 + 0.5`` (-420.5 .. 420.5 for 842 buckets).

    This is how KataGo fills scoreDistrN: a final score s goes to the buckets of ``round(s) ∓ 0.5``
    with the upper one getting ``s - (round(s) - 0.5)`` of the mass, so the distribution's mean is s.
    """
    return torch.arange(length, dtype=torch.float32, device=device) - (length // 2) + 0.5


def soft_policy_target(
    policy: torch.Tensor, policy_mask: torch.Tensor, temperature: float = 4.0, floor: float = 1e-7
) -> torch.Tensor:
    """``((policy + floor) * policy_mask) ** (1/temperature)`` renormalised over each row.

    Rows that come out all zero (an empty target with ``floor`` 0) stay all zero.
    """
    soft = ((policy + floor) * policy_mask).clamp_min(0.0).pow(1.0 / temperature)
    total = soft.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, soft / total.clamp_min(1e-30), torch.zeros_like(soft))


def _unpack_mask(packed: np.ndarray, side: int) -> np.ndarray:
    """Input channel 0 of binaryInputNCHWPacked (big-endian bits per byte) as [N, side, side] float32."""
    if packed.ndim != 3 or packed.shape[1] < 1 or packed.shape[2] * 8 < side * side:
        raise ValueError(
            f"binaryInputNCHWPacked has shape {packed.shape}; expected [N, C, >= {(side * side + 7) // 8}] "
            f"bytes for a {side}x{side} grid"
        )
    bits = np.unpackbits(np.ascontiguousarray(packed[:, 0, :]), axis=1)[:, : side * side]
    return bits.reshape(-1, side, side).astype(np.float32)


def _normalise_policy(raw: np.ndarray, legal: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    target = raw.astype(np.float32) * legal
    total = target.sum(axis=1, keepdims=True)
    has_mass = total[:, 0] > 0
    target = np.divide(target, total, out=np.zeros_like(target), where=total > 0)
    return target, np.where(has_mass, weight, 0.0).astype(np.float32)


def targets_from_rows(
    rows: Mapping[str, np.ndarray],
    device: torch.device | str | None = None,
    mask: np.ndarray | None = None,
) -> Targets:
    """Targets from KataGo's npz row arrays (reference §2 channel meanings).

    ``rows`` needs policyTargetsNCMove [N,2,L²+1], globalTargetsNC [N,>=36], scoreDistrN [N,842],
    valueTargetsNCHW [N,>=1,L,L] and, unless ``mask`` ([N,L,L], 1 on the board) is given,
    binaryInputNCHWPacked, whose input channel 0 is the on-board mask. L is 19 for rows as stored; the
    training loader crops batches to their largest board (``common.data.loader``), so L may be less.
    The score distribution covers the same scores whatever L is.

    Policy targets are restricted to the board and pass and normalised; a row whose target sums to 0
    gets policy weight 0. KataGo writes a missing target as all ones with weight 0; it stays weight 0.
    Ownership is valueTargetsNCHW channel 0, which current KataGo writes in {-1, 0, 1}. Lead is
    globalTargetsNC channel 21 with weight 29 (KataGo writes a lead only for some rows; the others have
    weight 0); variance time is channel 22, weighted by the ownership weight 27.

    Root-variance targets: the paper's rv_i (variance of the root value between 1 and 4/16/64/256
    visits) were globalTargetsNC channels 21-24 with weights 29-32 in KataGo's early data format; the
    current format (format version 3, 64 or 80 channels) uses those channels for lead, variance-time
    and other weights, so rows carry no root-variance target and both tensors are zero.

    The short-term targets are globalTargetsNC 12-15 (the search values blended over the next turns,
    KataGo's shortest horizon) with weight 1 - channel 24.
    """
    missing = [name for name in REQUIRED_ROW_ARRAYS if name not in rows]
    if mask is None and "binaryInputNCHWPacked" not in rows:
        missing.append("binaryInputNCHWPacked (or pass mask=)")
    if missing:
        raise ValueError(f"training rows are missing array(s): {', '.join(missing)}")

    policy_raw = np.asarray(rows["policyTargetsNCMove"])
    if policy_raw.ndim != 3 or policy_raw.shape[1] < 2:
        raise ValueError(f"policyTargetsNCMove has shape {policy_raw.shape}; expected [N, 2, L*L+1]")
    n = policy_raw.shape[0]
    side = math.isqrt(policy_raw.shape[2] - 1)
    if side * side + 1 != policy_raw.shape[2]:
        raise ValueError(f"policyTargetsNCMove has {policy_raw.shape[2]} moves per row, which is not L*L+1")
    area = side * side

    globals_ = np.asarray(rows["globalTargetsNC"], dtype=np.float32)
    if globals_.ndim != 2 or globals_.shape[0] != n or globals_.shape[1] < GT_MIN_CHANNELS:
        raise ValueError(f"globalTargetsNC has shape {globals_.shape}; expected [{n}, >= {GT_MIN_CHANNELS}]")
    score_raw = np.asarray(rows["scoreDistrN"])
    if score_raw.shape != (n, SCORE_DISTR_LEN):
        raise ValueError(f"scoreDistrN has shape {score_raw.shape}; expected [{n}, {SCORE_DISTR_LEN}]")
    value_spatial = np.asarray(rows["valueTargetsNCHW"])
    if value_spatial.ndim != 4 or value_spatial.shape[0] != n or value_spatial.shape[2:] != (side, side):
        raise ValueError(f"valueTargetsNCHW has shape {value_spatial.shape}; expected [{n}, C, {side}, {side}]")

    if mask is None:
        board = _unpack_mask(np.asarray(rows["binaryInputNCHWPacked"]), side)
        if board.shape[0] != n:
            raise ValueError(f"binaryInputNCHWPacked has {board.shape[0]} rows; the targets have {n}")
    else:
        board = np.asarray(mask, dtype=np.float32)
        if board.shape != (n, side, side):
            raise ValueError(f"mask has shape {board.shape}; expected [{n}, {side}, {side}]")
    if np.any(board.reshape(n, -1).sum(axis=1) == 0):
        raise ValueError("the on-board mask (input channel 0) is empty for some rows")

    legal = np.concatenate((board.reshape(n, area), np.ones((n, 1), np.float32)), axis=1)
    policy, policy_weight = _normalise_policy(policy_raw[:, 0], legal, globals_[:, GT_POLICY_WEIGHT])
    opponent, opponent_weight = _normalise_policy(policy_raw[:, 1], legal, globals_[:, GT_OPPONENT_POLICY_WEIGHT])

    ownership = value_spatial[:, 0].astype(np.float32)
    if np.any(np.abs(ownership) > 1):
        raise ValueError(
            "valueTargetsNCHW channel 0 (ownership) has values outside [-1, 1]; early KataGo data stored "
            "ownership x 100, current data stores -1, 0, 1"
        )

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.ascontiguousarray(a, dtype=np.float32), device=device)

    return Targets(
        mask=t(board),
        policy=t(policy),
        policy_weight=t(policy_weight),
        opponent_policy=t(opponent),
        opponent_policy_weight=t(opponent_weight),
        value=t(globals_[:, GT_VALUE]),
        value_weight=t(1.0 - globals_[:, GT_ONE_MINUS_VALUE_WEIGHT]),
        score_distribution=t(score_raw.astype(np.float32) / SCORE_DISTR_SCALE),
        final_score=t(globals_[:, GT_FINAL_SCORE]),
        ownership=t(ownership * board),
        ownership_weight=t(globals_[:, GT_OWNERSHIP_WEIGHT]),
        lead=t(globals_[:, GT_LEAD]),
        lead_weight=t(globals_[:, GT_LEAD_WEIGHT]),
        variance_time=t(globals_[:, GT_VARIANCE_TIME]),
        row_weight=t(globals_[:, GT_ROW_WEIGHT]),
        root_variance=t(np.zeros((n, NUM_ROOT_VARIANCES), np.float32)),
        root_variance_weight=t(np.zeros((n, NUM_ROOT_VARIANCES), np.float32)),
        shortterm_value=t(globals_[:, GT_TD_SHORT : GT_TD_SHORT + 3]),
        shortterm_score=t(globals_[:, GT_TD_SHORT + 3]),
        td_weight=t(1.0 - globals_[:, GT_ONE_MINUS_TD_WEIGHT]),
    )


def _check_shape(name: str, tensor: torch.Tensor, shape: tuple[int, ...]) -> None:
    if tuple(tensor.shape) != shape:
        raise ValueError(f"{name} has shape {tuple(tensor.shape)}; expected {shape}")


def _check_inputs(out: ModelOutput, targets: Targets) -> None:
    n = targets.num_rows
    side = targets.mask.shape[-1]
    moves = side * side + 1
    _check_shape("targets.mask", targets.mask, (n, side, side))
    for name in ("policy", "opponent_policy"):
        _check_shape(f"targets.{name}", getattr(targets, name), (n, moves))
    for name in (
        "policy_weight",
        "opponent_policy_weight",
        "value_weight",
        "final_score",
        "ownership_weight",
        "lead",
        "lead_weight",
        "variance_time",
        "row_weight",
        "shortterm_score",
        "td_weight",
    ):
        _check_shape(f"targets.{name}", getattr(targets, name), (n,))
    _check_shape("targets.value", targets.value, (n, 3))
    _check_shape("targets.shortterm_value", targets.shortterm_value, (n, 3))
    _check_shape("targets.ownership", targets.ownership, (n, side, side))
    _check_shape("targets.root_variance", targets.root_variance, (n, NUM_ROOT_VARIANCES))
    _check_shape("targets.root_variance_weight", targets.root_variance_weight, (n, NUM_ROOT_VARIANCES))
    belief_len = targets.score_distribution.shape[-1]
    _check_shape("targets.score_distribution", targets.score_distribution, (n, belief_len))

    if out.policy.ndim != 3 or out.policy.shape[0] != n or out.policy.shape[2] != moves:
        raise ValueError(f"output policy has shape {tuple(out.policy.shape)}; expected ({n}, P, {moves})")
    _check_shape("output value", out.value, (n, 3))
    if out.misc.ndim != 2 or out.misc.shape[0] != n:
        raise ValueError(f"output misc has shape {tuple(out.misc.shape)}; expected ({n}, M)")
    _check_shape("output ownership", out.ownership, (n, side, side))
    _check_shape("output score_belief", out.score_belief, (n, belief_len))
    gamma = out.score_belief_gamma
    if gamma.ndim == 0 or gamma.shape[0] != n or gamma.numel() != n:
        raise ValueError(f"output score_belief_gamma has shape {tuple(gamma.shape)}; expected ({n}, 1)")
    if side != NN_LEN:
        log.debug("loss on a %dx%d grid (the network grid is %dx%d)", side, side, NN_LEN, NN_LEN)


def _masked_cross_entropy(logits: torch.Tensor, target: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """Per-row ``-Σ target log softmax(logits)`` over the legal entries only."""
    is_legal = legal > 0
    log_probs = torch.log_softmax(logits.masked_fill(~is_legal, float("-inf")), dim=-1)
    log_probs = torch.where(is_legal, log_probs, torch.zeros_like(log_probs))
    return -(target * log_probs).sum(dim=-1)


def loss_terms_per_row(
    out: ModelOutput, targets: Targets, weights: LossWeights | None = None
) -> dict[str, torch.Tensor]:
    """Each term's loss for each row, ``[N]``, with its weight constant and row weights applied (and,
    with a second set of heads behind the one batch norm, the two sets' losses in their shares)."""
    weights = weights or LossWeights()
    terms = _terms_per_row(out, targets, weights)
    if out.normalized is None:
        return terms
    share = weights.w_normalized
    normalized = _terms_per_row(out.normalized, targets, weights)
    return {name: share * normalized[name] + (1.0 - share) * value for name, value in terms.items()}


def _terms_per_row(out: ModelOutput, targets: Targets, weights: LossWeights) -> dict[str, torch.Tensor]:
    _check_inputs(out, targets)
    n = targets.num_rows
    zero = out.value.new_zeros(n, dtype=torch.float32)
    legal = targets.policy_mask()
    policy = out.policy.float()
    num_policy = policy.shape[1]
    misc = out.misc.float()
    terms: dict[str, torch.Tensor] = {}

    def policy_term(channel: int, target: torch.Tensor, weight: torch.Tensor, scale: float) -> torch.Tensor:
        if num_policy <= channel or scale == 0.0:
            return zero
        return scale * weight * _masked_cross_entropy(policy[:, channel], target, legal)

    terms["policy"] = policy_term(POLICY_CHANNEL, targets.policy, targets.policy_weight, weights.w_policy)
    terms["opponent_policy"] = policy_term(
        OPPONENT_POLICY_CHANNEL, targets.opponent_policy, targets.opponent_policy_weight, weights.w_opp
    )
    soft = {
        name: soft_policy_target(target, legal, weights.soft_policy_temperature, weights.soft_policy_floor)
        for name, target in (("player", targets.policy), ("opponent", targets.opponent_policy))
    }
    terms["soft_policy"] = policy_term(
        SOFT_POLICY_CHANNEL, soft["player"], targets.policy_weight, weights.w_soft_policy
    )
    terms["soft_opponent_policy"] = policy_term(
        SOFT_OPPONENT_POLICY_CHANNEL, soft["opponent"], targets.opponent_policy_weight, weights.w_soft_opponent_policy
    )

    value_log_probs = torch.log_softmax(out.value.float(), dim=-1)
    terms["value"] = weights.c_value * targets.value_weight * -(targets.value * value_log_probs).sum(dim=-1)

    board = targets.mask.reshape(n, -1)
    board_area = board.sum(dim=1).clamp_min(1.0)
    own_logits = 2.0 * out.ownership.float().reshape(n, -1)  # (1 + tanh x) / 2 == sigmoid(2x)
    own_target = (1.0 + targets.ownership.reshape(n, -1)) / 2.0
    own_bce = F.binary_cross_entropy_with_logits(own_logits, own_target, reduction="none")
    own_sum = torch.where(board > 0, own_bce, torch.zeros_like(own_bce)).sum(dim=1)
    terms["ownership"] = weights.ownership_scale / board_area * targets.ownership_weight * own_sum

    belief_log_probs = torch.log_softmax(out.score_belief.float(), dim=-1)  # idempotent on log-probabilities
    belief = belief_log_probs.exp()
    score_target = targets.score_distribution
    terms["score_pdf"] = weights.w_spdf * targets.ownership_weight * -(score_target * belief_log_probs).sum(dim=-1)
    cdf_gap = torch.cumsum(score_target, dim=-1) - torch.cumsum(belief, dim=-1)
    terms["score_cdf"] = weights.w_scdf * targets.ownership_weight * cdf_gap.square().sum(dim=-1)

    num_misc = misc.shape[1]
    if num_misc > MISC_LEAD and weights.w_lead != 0.0:
        predicted_lead = LEAD_MULTIPLIER * misc[:, MISC_LEAD]
        huber = F.huber_loss(predicted_lead, targets.lead, reduction="none", delta=weights.lead_huber_delta)
        terms["lead"] = weights.w_lead * targets.lead_weight * huber
    else:
        terms["lead"] = zero
    if num_misc > MISC_VARIANCE_TIME and weights.w_variance_time != 0.0:
        predicted_time = VARIANCE_TIME_MULTIPLIER * F.softplus(misc[:, MISC_VARIANCE_TIME])
        target_time = targets.variance_time + VARIANCE_TIME_TARGET_EPSILON
        huber = F.huber_loss(predicted_time, target_time, reduction="none", delta=weights.variance_time_huber_delta)
        terms["variance_time"] = weights.w_variance_time * targets.ownership_weight * huber
    else:
        terms["variance_time"] = zero

    if num_misc >= MISC_ROOT_VARIANCE.stop and weights.w_rv != 0.0:
        predicted_rv = F.softplus(misc[:, MISC_ROOT_VARIANCE])
        rv_error = (targets.root_variance_weight * (targets.root_variance - predicted_rv).square()).sum(dim=-1)
        terms["root_variance"] = weights.w_rv * rv_error
    else:
        terms["root_variance"] = zero

    scores = score_bucket_values(belief.shape[-1], device=belief.device)
    belief_mean = (belief * scores).sum(dim=-1)
    belief_var = (belief * (scores - belief_mean.unsqueeze(-1)).square()).sum(dim=-1)
    belief_stdev = torch.sqrt(belief_var + SCORE_STDEV_EPSILON)
    delta = weights.sbreg_huber_delta
    if num_misc > MISC_SCORE_MEAN:
        predicted_mean = SCORE_MEAN_MULTIPLIER * misc[:, MISC_SCORE_MEAN]
        huber = F.huber_loss(predicted_mean, belief_mean, reduction="none", delta=delta)
        terms["score_mean_reg"] = weights.w_sbreg * huber
    else:
        terms["score_mean_reg"] = zero
    if num_misc > MISC_SCORE_STDEV:
        predicted_stdev = SCORE_STDEV_MULTIPLIER * F.softplus(misc[:, MISC_SCORE_STDEV])
        huber = F.huber_loss(predicted_stdev, belief_stdev, reduction="none", delta=delta)
        terms["score_stdev_reg"] = weights.w_sbreg * huber
    else:
        terms["score_stdev_reg"] = zero

    terms["score_scale"] = weights.w_scale * out.score_belief_gamma.float().reshape(n).square()
    terms.update(_shortterm_terms(policy, misc, targets, weights, legal, zero))

    return {name: targets.row_weight * value for name, value in terms.items()}


def _shortterm_terms(
    policy: torch.Tensor,
    misc: torch.Tensor,
    targets: Targets,
    weights: LossWeights,
    legal: torch.Tensor,
    zero: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """The short-term heads' terms and the optimistic policy's (module docstring); zero without them."""
    names = ("shortterm_value", "shortterm_score", "shortterm_value_error", "shortterm_score_error")
    if misc.shape[1] < SHORTTERM_MISC_VALUES:
        return {name: zero for name in (*names, "optimistic_policy")}
    w_td = targets.td_weight
    value_log_probs = torch.log_softmax(misc[:, MISC_SHORTTERM_VALUE], dim=-1)
    score = SHORTTERM_SCORE_MULTIPLIER * misc[:, MISC_SHORTTERM_SCORE]
    with torch.no_grad():
        probs = value_log_probs.exp()
        value_miss = targets.shortterm_value[:, 0] - targets.shortterm_value[:, 1] - (probs[:, 0] - probs[:, 1])
        score_miss = targets.shortterm_score - score
    value_error = SHORTTERM_VALUE_ERROR_MULTIPLIER * F.softplus(misc[:, MISC_SHORTTERM_VALUE_ERROR])
    score_error = SHORTTERM_SCORE_ERROR_MULTIPLIER * F.softplus(misc[:, MISC_SHORTTERM_SCORE_ERROR])

    def huber(predicted: torch.Tensor, target: torch.Tensor, delta: float) -> torch.Tensor:
        return F.huber_loss(predicted, target, reduction="none", delta=delta)

    terms = {
        "shortterm_value": weights.w_stv * w_td * -(targets.shortterm_value * value_log_probs).sum(dim=-1),
        "shortterm_score": weights.w_sts
        * w_td
        * huber(score, targets.shortterm_score, weights.shortterm_score_huber_delta),
        "shortterm_value_error": weights.w_stve
        * w_td
        * huber(value_error, value_miss.square() + 1e-8, weights.shortterm_value_error_huber_delta),
        "shortterm_score_error": weights.w_stse
        * w_td
        * huber(score_error, score_miss.square() + 1e-4, weights.shortterm_score_error_huber_delta),
    }
    if policy.shape[1] <= OPTIMISTIC_POLICY_CHANNEL or weights.w_optimistic == 0.0:
        terms["optimistic_policy"] = zero
        return terms
    with torch.no_grad():
        z_value = value_miss / torch.sqrt(value_error + 1e-4)
        z_score = score_miss / torch.sqrt(score_error + 0.25)
        surprise = (torch.sigmoid(3.0 * (z_value - 1.5)) + torch.sigmoid(3.0 * (z_score - 1.5))).clamp(0.0, 1.0)
        weight = surprise * targets.policy_weight * targets.ownership_weight
    ce = _masked_cross_entropy(policy[:, OPTIMISTIC_POLICY_CHANNEL], targets.policy, legal)
    terms["optimistic_policy"] = weights.w_optimistic * weight * ce
    return terms


def compute_loss(
    out: ModelOutput, targets: Targets, weights: LossWeights | None = None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The batch loss and its terms (each weighted, summed over rows and divided by N; detached for logging).

    Raises ValueError naming the output or target whose shape does not fit the batch.
    """
    n = targets.num_rows
    if n == 0:
        raise ValueError("targets hold no rows")
    per_row = loss_terms_per_row(out, targets, weights)
    batch = {name: value.sum() / n for name, value in per_row.items()}
    total = torch.stack(list(batch.values())).sum()
    return total, {name: value.detach() for name, value in batch.items()}
