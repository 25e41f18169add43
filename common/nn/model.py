"""The network: the KataGo paper's Appendix A architecture, laid out as KataGo's model version 8.

Inputs are KataGo's inputs version 7: ``spatial`` float32 [N, 22, H, W] whose channel 0 is the
on-board mask (boards smaller than the tensor sit in its top-left corner) and ``global_inputs``
float32 [N, 19]. The standard tensor is 19x19 and then the outputs follow the contract in
:mod:`common.nn.outputs`; the model itself works for any H, W (policy then has H*W+1 entries and
ownership is [N, H, W]), which is what lets tests check that a board computed inside a larger,
masked tensor equals the same board computed in a tensor of exactly its size.

Structure (every "norm" is a batch norm that is a per-channel affine map in eval mode, always
followed by ReLU and by multiplication with the on-board mask, so off-board cells are exactly 0
whenever a convolution or pooling reads them):

- trunk: 5x5 conv of the (masked) spatial input, plus a bias per channel from a matmul of the
  global input; then the residual blocks; then norm + ReLU + mask.
- regular block: norm, ReLU, 3x3 conv (mid channels), norm, ReLU, 3x3 conv, added to the trunk.
- gpool block: norm, ReLU, then two 3x3 convs: "regular" channels and "gpool" channels; the gpool
  channels go through norm + ReLU + mask and global pooling (3 values per channel), a matmul of
  the pooled values is added to the regular channels as a per-channel bias; then norm, ReLU, 3x3
  conv back to the trunk width, added to the trunk.
- policy head: 1x1 conv P1 and 1x1 conv G1 of the trunk; G1 -> norm, ReLU, mask, global pooling;
  matmul of the pooled G1 added to P1 as a bias; P1 -> norm, ReLU, mask, 1x1 conv to
  ``policy_channels`` logits per point. Pass logits: matmul of the pooled G1, one per channel.
- value head: 1x1 conv V1 -> norm, ReLU, mask -> value pooling (3 values per channel) -> v2
  (matmul + bias, ReLU) -> v3 (3 logits: win, loss, no result) and the misc values (matmul +
  bias). Ownership: 1x1 conv of the V1 activations, masked.
- score belief head (training only; KataGo's C++ engine and .bin files do not have it): see
  :class:`ScoreBeliefHead`.

Normalisation (``config.norm``): ``batch``, the paper's, makes every norm a batch norm. ``fixscale``
is the methods page's fixed variance initialisation and one batch norm: every norm is a fixed
scale K (set by :class:`Norms` so that a fresh network's activations keep variance 1) times a
learnt per-channel weight plus a bias, the same in training and inference; one true batch norm
reads the trunk before its final norm, and a copy of the policy and value heads reads through it
(``*_bn`` modules). In training the model returns both sets (:attr:`ModelOutput.normalized`), the
loss weighs them 80% (behind the batch norm) and 20%; inference runs only the first set.

Global pooling (KataGo ``global_pool``): with b = sqrt(number of on-board cells) (KataGo uses the
square root of the mask sum, i.e. sqrt(area) also for rectangular boards), per channel:
mean over on-board cells, mean * (b - 14) / 10, max over on-board cells. The value head's pooling
(KataGo ``value_head_pool``) replaces the max with mean * ((b - 14)^2 / 100 - 0.1).

Policy channels, ``ModelOutput.policy[:, c]`` (each a separate distribution over the points and
pass, side to move):

==== ================================================ ==========================================
 c    prediction of                                    present in
==== ================================================ ==========================================
 0    the move to play (the search's policy target)    every network; the only one the engine uses
 1    the opponent's reply on the next turn            our networks (KataGo trains it too, but its
                                                       version 8 files carry only channel 0)
 2    the soft policy target (channel 0's target       our networks; training only
      to the power 1/T, renormalised)
 3    the soft opponent policy target                  our networks; training only
 4    the optimistic policy (methods page): channel    the methods page's sizes; the search mixes
      0's target weighted by the short-term surprise   it into the priors (``policy_optimism``)
==== ================================================ ==========================================

The paper's named sizes have the first four (:data:`OWN_POLICY_CHANNELS`), the methods page's all
five (:data:`HEADS_POLICY_CHANNELS`); imported KataGo version 8 networks have one
(:data:`KATAGO_V8_POLICY_CHANNELS`). The loss (:mod:`common.nn.loss`) trains each channel that is
present and skips the others.

Misc (score) values layout, ``ModelOutput.misc[:, i]`` (KataGo's "sv3" for version 8, from the
side to move, before the post-processing in :mod:`common.nn.interpret`):

==== =========================================== ==========================================
 i    meaning                                      post-processing (KataGo model version 8)
==== =========================================== ==========================================
 0    score mean ("selfplay score")                x * 20
 1    score standard deviation, before softplus    softplus(x) * 20
 2    lead                                         x * 20
 3    variance time, before softplus               softplus(x) * 40 (engine reports it only
                                                   for model version >= 9)
 4-7  the paper's root-variance predictions,       softplus(x); training only, not used by
      before softplus: variance of the root        the engine
      value between 1 and 4, 16, 64, 256 visits
      (present only when misc_values >= 8)
 8    short-term win-loss error: the predicted      sqrt(softplus(x) * 0.25): KataGo's version
      squared error of the short-term value target  10 decoding; the search weighs playouts by
      (8-13 present only when misc_values >= 14)     it (``uncertainty_weighted``)
 9    short-term score error, the same for score    sqrt(softplus(x) * 30)
 10-  short-term value: win, loss, no result        softmax; training only (the errors above
 12   logits over the next turns (about 6 on        are measured from it)
      19x19; globalTargetsNC 12-14)
 13   short-term score (globalTargetsNC 15)         x * 20; training only
 14+  unused
==== =========================================== ==========================================

Columns 0-3 are KataGo's version 8 layout and are all an imported version 8 network has. The paper
(Appendix A) put the root variances right after the score stdev; version 8 replaced those columns
with lead and variance time, so ours come after them. KataGo's own training networks use the
columns after 3 for other training-only outputs; its engine reads columns 0-3 of version 8 files
(and 4-5 of versions 10 to 12 as the short-term errors, which ours keep in 8-9 after the root
variances: the exporter and importer move them), so the difference never reaches a KataGo
program. The multipliers are :data:`SCORE_MEAN_MULTIPLIER`, :data:`SCORE_STDEV_MULTIPLIER`,
:data:`LEAD_MULTIPLIER` and :data:`VARIANCE_TIME_MULTIPLIER` (KataGo's ModelPostProcessParams
defaults, cpp/neuralnet/desc.cpp, and python/katago/train/model_pytorch.py).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from common.architecture import (  # noqa: F401 (the architecture's names live on here too)
    BLOCK_KINDS,
    KATAGO_V8_POLICY_CHANNELS,
    KOMI_PARITY_GLOBAL_INDEX,
    LEAD_MULTIPLIER,
    MAX_POLICY_CHANNELS,
    MIN_MISC_VALUES,
    MISC_LEAD,
    MISC_ROOT_VARIANCE,
    MISC_SCORE_MEAN,
    MISC_SCORE_STDEV,
    MISC_VARIANCE_TIME,
    NAMED_SIZES,
    NUM_GLOBAL_INPUTS,
    NUM_ROOT_VARIANCES,
    NUM_SPATIAL_INPUTS,
    OPPONENT_POLICY_CHANNEL,
    OWN_POLICY_CHANNELS,
    POLICY_CHANNEL,
    POOL_CENTER_BOARD_LEN,
    POOL_LINEAR_SCALE,
    POOL_QUADRATIC_OFFSET,
    POOL_QUADRATIC_SCALE,
    SCORE_MEAN_MULTIPLIER,
    SCORE_STDEV_MULTIPLIER,
    SOFT_OPPONENT_POLICY_CHANNEL,
    SOFT_POLICY_CHANNEL,
    VARIANCE_TIME_MULTIPLIER,
    ModelConfig,
    ModelConfigError,
    named_config,
)
from common.encoding.features import NN_LEN
from common.nn.device import resolve_device
from common.nn.outputs import SCORE_BELIEF_LEN, SCORE_BELIEF_OFFSET, ModelOutput

# ---------------------------------------------------------------------------------------------
# Building blocks


class MaskedBatchNorm(nn.Module):
    """Batch norm over on-board cells only, followed by ReLU and the mask.

    Eval mode: the per-channel affine map y = x * s + t with s = weight / sqrt(running_var + eps)
    and t = bias - running_mean * s (KataGo's merged scale and bias). Training mode: the mean and
    (biased) variance are taken over the on-board cells of the whole batch (KataGo masks the
    statistics the same way) and the running statistics move by ``momentum``.

    With ``fixed_scale`` K it is the methods page's fixed-variance norm instead: the input times K
    (then the learnt per-channel ``weight`` and ``bias``) in training and in eval mode alike, no
    batch statistics. K is kept as the running statistics (mean 0, variance 1/K² - eps), so the
    layer is saved, exported and read back as any batch norm.
    """

    # registered as buffers in __init__: saved with the weights, not trained
    running_mean: torch.Tensor
    running_var: torch.Tensor

    def __init__(self, channels: int, eps: float, momentum: float = 0.001, fixed_scale: float | None = None) -> None:
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.fixed = fixed_scale is not None
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.register_buffer("running_mean", torch.zeros(channels))
        variance = 1.0 if fixed_scale is None else 1.0 / fixed_scale**2 - eps
        self.register_buffer("running_var", torch.full((channels,), variance))

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mask_sum: torch.Tensor) -> torch.Tensor:
        if self.training and not self.fixed:
            total = mask_sum.sum()
            mean = (x * mask).sum(dim=(0, 2, 3)) / total
            centered = (x - mean.view(1, -1, 1, 1)) * mask
            var = (centered * centered).sum(dim=(0, 2, 3)) / total
            with torch.no_grad():
                self.running_mean.lerp_(mean.detach(), self.momentum)
                self.running_var.lerp_(var.detach(), self.momentum)
            scale = self.weight / torch.sqrt(var + self.eps)
            shift = self.bias - mean * scale
        else:
            scale = self.weight / torch.sqrt(self.running_var + self.eps)
            shift = self.bias - self.running_mean * scale
        return F.relu(x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)) * mask


def global_pool(x: torch.Tensor, mask: torch.Tensor, mask_sum: torch.Tensor) -> torch.Tensor:
    """[N, C, H, W] (zero off board) -> [N, 3C]: mean, mean * (b - 14) / 10, on-board max."""
    mean = x.sum(dim=(2, 3)) / mask_sum
    b = torch.sqrt(mask_sum)
    linear = mean * ((b - POOL_CENTER_BOARD_LEN) * POOL_LINEAR_SCALE)
    maximum = x.masked_fill(mask == 0, float("-inf")).amax(dim=(2, 3))
    return torch.cat([mean, linear, maximum], dim=1)


def value_pool(x: torch.Tensor, mask_sum: torch.Tensor) -> torch.Tensor:
    """[N, C, H, W] (zero off board) -> [N, 3C]: mean, linear and quadratic board-size terms."""
    mean = x.sum(dim=(2, 3)) / mask_sum
    d = torch.sqrt(mask_sum) - POOL_CENTER_BOARD_LEN
    linear = mean * (d * POOL_LINEAR_SCALE)
    quadratic = mean * (d * d * POOL_QUADRATIC_SCALE - POOL_QUADRATIC_OFFSET)
    return torch.cat([mean, linear, quadratic], dim=1)


def _conv(cin: int, cout: int, k: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=k, padding=k // 2, bias=False)


class Norms:
    """Makes a network's norm layers: batch norms, or with ``fixscale`` the methods page's fixed
    variance norms, whose K makes the idealised variance of the layer's output 1 again: every conv
    after a norm outputs variance 1 and a sum's variance is the sum of its parts', so a norm reading
    a trunk after i blocks (variance i + 1) scales by 1/sqrt(i + 1)."""

    def __init__(self, cfg: ModelConfig) -> None:
        self.eps = cfg.bn_epsilon
        self.fixscale = cfg.norm == "fixscale"

    def __call__(self, channels: int, variance: float = 1.0) -> MaskedBatchNorm:
        """A norm whose input has the idealised ``variance``."""
        return MaskedBatchNorm(channels, self.eps, fixed_scale=1.0 / math.sqrt(variance) if self.fixscale else None)


class RegularBlock(nn.Module):
    def __init__(self, c_main: int, c_mid: int, norms: Norms, variance: float = 1.0) -> None:
        """``variance``: the idealised variance of the trunk the block reads (fixed-variance norms)."""
        super().__init__()
        self.norm1 = norms(c_main, variance)
        self.conv1 = _conv(c_main, c_mid, 3)
        self.norm2 = norms(c_mid)
        self.conv2 = _conv(c_mid, c_main, 3)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mask_sum: torch.Tensor) -> torch.Tensor:
        h = self.conv1(self.norm1(x, mask, mask_sum))
        h = self.conv2(self.norm2(h, mask, mask_sum))
        return x + h


class GPoolBlock(nn.Module):
    def __init__(self, c_main: int, c_regular: int, c_gpool: int, norms: Norms, variance: float = 1.0) -> None:
        super().__init__()
        self.norm1 = norms(c_main, variance)
        self.conv1_regular = _conv(c_main, c_regular, 3)
        self.conv1_gpool = _conv(c_main, c_gpool, 3)
        self.norm_gpool = norms(c_gpool)
        self.gpool_to_bias = nn.Linear(3 * c_gpool, c_regular, bias=False)
        self.norm2 = norms(c_regular, 2.0)  # the conv plus the pooled bias
        self.conv2 = _conv(c_regular, c_main, 3)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mask_sum: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x, mask, mask_sum)
        a = self.conv1_regular(h)
        g = self.norm_gpool(self.conv1_gpool(h), mask, mask_sum)
        a = a + self.gpool_to_bias(global_pool(g, mask, mask_sum)).unsqueeze(-1).unsqueeze(-1)
        h = self.conv2(self.norm2(a, mask, mask_sum))
        return x + h


class NestedBottleneckBlock(nn.Module):
    """The methods page's nested bottleneck residual block: norm, ReLU, 1x1 conv from the trunk down
    to the bottleneck width; residual blocks at that width (the first a global pooling block when
    ``gpool``); norm, ReLU, 1x1 conv back up, added to the trunk."""

    def __init__(self, cfg: ModelConfig, gpool: bool, variance: float = 1.0) -> None:
        super().__init__()
        b, norms = cfg.bottleneck_channels, Norms(cfg)
        self.norm_in = norms(cfg.trunk_channels, variance)
        self.conv_in = _conv(cfg.trunk_channels, b, 1)
        self.inner = nn.ModuleList(
            GPoolBlock(b, b - cfg.gpool_channels, cfg.gpool_channels, norms, 1.0 + i)
            if gpool and i == 0
            else RegularBlock(b, b, norms, 1.0 + i)
            for i in range(cfg.nbt_inner_blocks)
        )
        self.norm_out = norms(b, 1.0 + cfg.nbt_inner_blocks)
        self.conv_out = _conv(b, cfg.trunk_channels, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mask_sum: torch.Tensor) -> torch.Tensor:
        h = self.conv_in(self.norm_in(x, mask, mask_sum))
        for block in self.inner:
            h = block(h, mask, mask_sum)
        return x + self.conv_out(self.norm_out(h, mask, mask_sum))


class MobileBlock(nn.Module):
    """Cazenave's MobileNet block with squeeze and excitation (his section 4; MobileNetV2's inverted
    residual): norm, ReLU, 1x1 conv up to ``mobile_expansion`` times the trunk's width; norm, ReLU,
    depthwise 3x3 conv; norm, ReLU, 1x1 conv back down; squeeze and excitation (mean over the
    on-board cells, a ReLU layer of ``se_channels``, a sigmoid gate per channel) scales the result
    before it is added to the trunk (``se_ratio`` 0: the result is added as it is, MobileNetV2's
    block). Pre-activation and masked, as the other blocks."""

    def __init__(self, cfg: ModelConfig, variance: float = 1.0) -> None:
        super().__init__()
        c, e, norms = cfg.trunk_channels, cfg.trunk_channels * cfg.mobile_expansion, Norms(cfg)
        self.norm1 = norms(c, variance)
        self.conv_expand = _conv(c, e, 1)
        self.norm2 = norms(e)
        self.conv_depthwise = nn.Conv2d(e, e, kernel_size=3, padding=1, groups=e, bias=False)
        self.norm3 = norms(e)
        self.conv_project = _conv(e, c, 1)
        self.squeeze_excite = cfg.se_channels > 0
        if self.squeeze_excite:
            self.se_squeeze = nn.Linear(c, cfg.se_channels, bias=False)
            self.se_excite = nn.Linear(cfg.se_channels, c, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mask_sum: torch.Tensor) -> torch.Tensor:
        h = self.conv_expand(self.norm1(x, mask, mask_sum))
        h = self.conv_depthwise(self.norm2(h, mask, mask_sum))
        h = self.conv_project(self.norm3(h, mask, mask_sum))
        if not self.squeeze_excite:
            return x + h
        gate = torch.sigmoid(self.se_excite(F.relu(self.se_squeeze(h.sum(dim=(2, 3)) / mask_sum))))
        return x + h * gate.unsqueeze(-1).unsqueeze(-1)


def trunk_block(cfg: ModelConfig, kind: str, index: int = 0) -> nn.Module:
    """The trunk's block number ``index`` (from 0), of the kind named in ``cfg.blocks``."""
    variance = 1.0 + index  # the input layer's output and each block before this one add 1
    if kind == "regular":
        return RegularBlock(cfg.trunk_channels, cfg.mid_channels, Norms(cfg), variance)
    if kind == "gpool":
        return GPoolBlock(cfg.trunk_channels, cfg.regular_channels, cfg.gpool_channels, Norms(cfg), variance)
    if kind == "mobile":
        return MobileBlock(cfg, variance)
    return NestedBottleneckBlock(cfg, kind == "nbt_gpool", variance)


class PolicyHead(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        norms = Norms(cfg)
        self.conv_p1 = _conv(cfg.trunk_channels, cfg.p1_channels, 1)
        self.conv_g1 = _conv(cfg.trunk_channels, cfg.g1_channels, 1)
        self.norm_g1 = norms(cfg.g1_channels)
        self.gpool_to_bias = nn.Linear(3 * cfg.g1_channels, cfg.p1_channels, bias=False)
        self.norm_p1 = norms(cfg.p1_channels, 2.0)  # the conv plus the pooled bias
        self.conv_p2 = _conv(cfg.p1_channels, cfg.policy_channels, 1)
        self.linear_pass = nn.Linear(3 * cfg.g1_channels, cfg.policy_channels, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, mask_sum: torch.Tensor) -> torch.Tensor:
        p = self.conv_p1(x)
        g = self.norm_g1(self.conv_g1(x), mask, mask_sum)
        pooled = global_pool(g, mask, mask_sum)
        p = p + self.gpool_to_bias(pooled).unsqueeze(-1).unsqueeze(-1)
        p = self.conv_p2(self.norm_p1(p, mask, mask_sum))
        passes = self.linear_pass(pooled)
        return torch.cat([p.flatten(2), passes.unsqueeze(-1)], dim=2)


def scale_transform(x: torch.Tensor) -> torch.Tensor:
    """KataGo's positive scaling of a real value: 1 + log(1 + x) for x > 0, 1 / (1 + log(1 - x)) else."""
    t = 1.0 + torch.log1p(x.abs())
    return torch.where(x > 0, t, 1.0 / t)


class ScoreBeliefHead(nn.Module):
    """Distribution over final score differences s = -S+0.5 .. S-0.5 (S = 421), side to move.

    As KataGo's model version 8 training net (python/model.py): for every bucket i (score
    s_i = i - S + 0.5) a shared 2-layer MLP reads the pooled value features plus two per-bucket
    inputs, 0.05 * s_i and parity_i * w, where parity_i = +0.5 when (i - S) is even and -0.5 when
    odd, and w is the komi/board-area parity triangle wave (global input 18). Its single output
    per bucket, multiplied by a positive scale, is the logit. The scale is
    scale_transform(gamma) with gamma = sbscale3(relu(sbscale2(pooled))); ``gamma`` is returned
    for the training penalty w_scale * gamma^2.
    """

    # registered as buffers in __init__: derived from the bucket count, never saved
    offset_vector: torch.Tensor
    parity_vector: torch.Tensor

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        c_in = 3 * cfg.v1_channels
        h = cfg.sbv2_channels
        self.linear_sb2 = nn.Linear(c_in, h)
        self.sb2_offset = nn.Parameter(torch.zeros(h))
        self.sb2_parity = nn.Parameter(torch.zeros(h))
        self.linear_sb3 = nn.Linear(h, 1, bias=False)
        self.linear_sbscale2 = nn.Linear(c_in, h)
        self.linear_sbscale3 = nn.Linear(h, 1)
        i = torch.arange(SCORE_BELIEF_LEN, dtype=torch.float64) - SCORE_BELIEF_OFFSET
        self.register_buffer("offset_vector", (0.05 * (i + 0.5)).float(), persistent=False)
        self.register_buffer("parity_vector", (0.5 - torch.remainder(i, 2.0)).float(), persistent=False)

    def forward(self, pooled: torch.Tensor, komi_wave: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        base = self.linear_sb2(pooled).unsqueeze(1)  # [N, 1, h]
        offset = self.offset_vector.view(1, -1, 1) * self.sb2_offset.view(1, 1, -1)  # [1, L, h]
        parity = (self.parity_vector.view(1, -1) * komi_wave.view(-1, 1)).unsqueeze(-1) * self.sb2_parity.view(1, 1, -1)
        logits = self.linear_sb3(F.relu(base + offset + parity)).squeeze(-1)  # [N, L]
        gamma = self.linear_sbscale3(F.relu(self.linear_sbscale2(pooled)))  # [N, 1]
        return F.log_softmax(logits * scale_transform(gamma), dim=1), gamma


class ValueHead(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.conv_v1 = _conv(cfg.trunk_channels, cfg.v1_channels, 1)
        self.norm_v1 = Norms(cfg)(cfg.v1_channels)
        self.linear_v2 = nn.Linear(3 * cfg.v1_channels, cfg.v2_size)
        self.linear_v3 = nn.Linear(cfg.v2_size, 3)
        self.linear_misc = nn.Linear(cfg.v2_size, cfg.misc_values)
        self.conv_ownership = _conv(cfg.v1_channels, 1, 1)
        self.score_belief = ScoreBeliefHead(cfg)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        mask_sum: torch.Tensor,
        global_inputs: torch.Tensor,
        with_score_belief: bool = True,
    ) -> tuple[torch.Tensor, ...]:
        v1 = self.norm_v1(self.conv_v1(x), mask, mask_sum)
        pooled = value_pool(v1, mask_sum)
        v2 = F.relu(self.linear_v2(pooled))
        value = self.linear_v3(v2)
        misc = self.linear_misc(v2)
        ownership = (self.conv_ownership(v1) * mask).squeeze(1)
        if with_score_belief:
            score_belief, gamma = self.score_belief(pooled, global_inputs[:, KOMI_PARITY_GLOBAL_INDEX])
        else:
            score_belief, gamma = pooled.new_zeros((x.shape[0], 0)), pooled.new_zeros((x.shape[0], 0))
        return value, misc, ownership, score_belief, gamma


class Model(nn.Module):
    """The network; ``forward(spatial, global_inputs) -> ModelOutput`` (raw outputs, side to move)."""

    def __init__(self, config: ModelConfig, initialize: bool = True) -> None:
        """``initialize=False`` skips :func:`init_weights` (for weights about to be loaded)."""
        super().__init__()
        config.validate()
        self.config = config
        self.conv_spatial = _conv(config.spatial_inputs, config.trunk_channels, 5)
        self.linear_global = nn.Linear(config.global_inputs, config.trunk_channels, bias=False)
        self.blocks = nn.ModuleList(trunk_block(config, kind, i) for i, kind in enumerate(config.blocks))
        self.norm_trunk = Norms(config)(config.trunk_channels, 1.0 + config.num_blocks)
        self.policy_head = PolicyHead(config)
        self.value_head = ValueHead(config)
        if config.norm == "fixscale":  # the one batch norm, and the heads that read through it
            self.norm_trunk_bn = MaskedBatchNorm(config.trunk_channels, config.bn_epsilon)
            self.policy_head_bn = PolicyHead(config)
            self.value_head_bn = ValueHead(config)
        if initialize:
            init_weights(self)

    def head_pairs(self) -> list[tuple[PolicyHead, ValueHead]]:
        """The heads: the ones inference uses, then (fixed-variance norms) the ones behind the batch norm."""
        pairs = [(self.policy_head, self.value_head)]
        if self.config.norm == "fixscale":
            pairs.append((self.policy_head_bn, self.value_head_bn))
        return pairs

    def forward(
        self, spatial: torch.Tensor, global_inputs: torch.Tensor, with_score_belief: bool = True
    ) -> ModelOutput:
        """Raw outputs. ``with_score_belief=False`` skips the score belief head (used only in
        training; it is the costliest head at inference), leaving its fields empty ([N, 0])."""
        cfg = self.config
        if spatial.dim() != 4 or spatial.shape[1] != cfg.spatial_inputs:
            raise ValueError(f"spatial input must be [N, {cfg.spatial_inputs}, H, W], got {list(spatial.shape)}")
        if global_inputs.shape != (spatial.shape[0], cfg.global_inputs):
            raise ValueError(
                f"global input must be [{spatial.shape[0]}, {cfg.global_inputs}], got {list(global_inputs.shape)}"
            )
        mask = spatial[:, 0:1]
        mask_sum = mask.sum(dim=(2, 3))  # [N, 1]
        x = self.conv_spatial(spatial * mask)
        x = x + self.linear_global(global_inputs).unsqueeze(-1).unsqueeze(-1)
        for block in self.blocks:
            x = block(x, mask, mask_sum)
        out = self._heads(
            self.norm_trunk(x, mask, mask_sum),
            mask,
            mask_sum,
            global_inputs,
            with_score_belief,
            "policy_head",
            "value_head",
        )
        if self.training and cfg.norm == "fixscale":
            trunk = self.norm_trunk_bn(x, mask, mask_sum)
            args = ("policy_head_bn", "value_head_bn")
            out.normalized = self._heads(trunk, mask, mask_sum, global_inputs, with_score_belief, *args)
        return out

    def _heads(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        mask_sum: torch.Tensor,
        global_inputs: torch.Tensor,
        with_score_belief: bool,
        policy_head: str,
        value_head: str,
    ) -> ModelOutput:
        policy = getattr(self, policy_head)(x, mask, mask_sum)
        value, misc, ownership, score_belief, gamma = getattr(self, value_head)(
            x, mask, mask_sum, global_inputs, with_score_belief
        )
        return ModelOutput(
            policy=policy,
            value=value,
            misc=misc,
            ownership=ownership,
            score_belief=score_belief,
            score_belief_gamma=gamma,
        )


TRUNCATED_NORMAL_STD = 0.8796256610342398  # the std of a standard normal cut at +-2


def _trunc_normal_(t: torch.Tensor, std: float) -> None:
    if std <= 0:
        nn.init.zeros_(t)
    else:
        nn.init.trunc_normal_(t, mean=0.0, std=std, a=-2.0 * std, b=2.0 * std)


def init_weights(model: Model) -> None:
    """He-style truncated-normal initialisation (std sqrt(2 / fan_in), as KataGo's training code).

    With batch norms, the last conv of each residual block (nested ones included, a nested
    bottleneck block's and a mobile block's 1x1 conv back to the trunk) starts at zero, so a fresh
    trunk is the identity plus the input layer (KataGo's fixup scheme does the same). With the
    fixed-variance norms every conv keeps its He initialisation, which passes on the variance it
    reads: the norms' scales are set for exactly that. For it to hold, the truncated normal's std is
    corrected for the truncation (as KataGo's initialisation does), and a mobile block's projection
    starts at twice that scale where its squeeze and excitation gate halves what it passes at first.
    Output layers start small.
    """
    fixscale = model.config.norm == "fixscale"
    gain = 1.0 / TRUNCATED_NORMAL_STD if fixscale else 1.0
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d | nn.Linear):
                fan_in = m.weight[0].numel()
                _trunc_normal_(m.weight, gain * math.sqrt(2.0 / fan_in))
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)
        for m in model.modules():
            if isinstance(m, MobileBlock) and fixscale:
                if m.squeeze_excite:
                    m.conv_project.weight.mul_(2.0)
            elif fixscale:
                continue
            elif isinstance(m, RegularBlock | GPoolBlock):
                nn.init.zeros_(m.conv2.weight)
            elif isinstance(m, NestedBottleneckBlock):
                nn.init.zeros_(m.conv_out.weight)
            elif isinstance(m, MobileBlock):
                nn.init.zeros_(m.conv_project.weight)
        for policy, value in model.head_pairs():
            small: list[nn.Conv2d | nn.Linear] = [
                policy.conv_p2,
                policy.linear_pass,
                value.linear_v3,
                value.linear_misc,
                value.conv_ownership,
                value.score_belief.linear_sb3,
                value.score_belief.linear_sbscale3,
            ]
            for m in small:
                m.weight.mul_(0.3)
            sb = value.score_belief
            _trunc_normal_(sb.sb2_offset, 0.5 * math.sqrt(2.0 / (3 * model.config.v1_channels + 1)))
            _trunc_normal_(sb.sb2_parity, math.sqrt(2.0 / (3 * model.config.v1_channels + 1)))


def build_model(config: ModelConfig, device: torch.device | str | None = None) -> Model:
    """A freshly initialised model on ``device`` (default: :func:`common.nn.device.default_device`)."""
    return Model(config).to(resolve_device(device))


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def board_mask(sizes: list[tuple[int, int]], length: int = NN_LEN) -> torch.Tensor:
    """On-board masks [N, length, length] for boards given as (width, height), top-left aligned."""
    mask = torch.zeros(len(sizes), length, length)
    for i, (w, h) in enumerate(sizes):
        if not (1 <= w <= length and 1 <= h <= length):
            raise ValueError(f"board {w}x{h} does not fit in a {length}x{length} network grid")
        mask[i, :h, :w] = 1.0
    return mask
