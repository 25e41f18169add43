"""A network's architecture as data, without torch: :class:`ModelConfig`, the named sizes, and the
constants of the inputs and outputs layout that a configuration refers to (see
:mod:`common.nn.model` for what they mean). Programs that only read or check network files (the
server) use this module; :mod:`common.nn.model` builds the network from it."""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any

NUM_SPATIAL_INPUTS = 22
NUM_GLOBAL_INPUTS = 19
KOMI_PARITY_GLOBAL_INDEX = 18  # the komi/board-parity triangle wave; feeds the score belief head

# Misc values layout (see the module docstring).
MISC_SCORE_MEAN = 0
MISC_SCORE_STDEV = 1
MISC_LEAD = 2
MISC_VARIANCE_TIME = 3
MIN_MISC_VALUES = 4  # KataGo's version 8 layout: columns 0-3
MISC_ROOT_VARIANCE = slice(4, 8)  # root-variance predictions, before softplus, when misc_values >= 8
NUM_ROOT_VARIANCES = MISC_ROOT_VARIANCE.stop - MISC_ROOT_VARIANCE.start  # between 1 and 4/16/64/256 visits
SCORE_MEAN_MULTIPLIER = 20.0  # score mean = 20 * misc[0]
SCORE_STDEV_MULTIPLIER = 20.0  # score stdev = 20 * softplus(misc[1])
LEAD_MULTIPLIER = 20.0  # lead = 20 * misc[2]
VARIANCE_TIME_MULTIPLIER = 40.0  # variance time = 40 * softplus(misc[3])
# The short-term heads (methods page, "Short-term Value and Score Targets" and "Uncertainty-Weighted
# MCTS Playouts"), when misc_values >= SHORTTERM_MISC_VALUES: the predicted squared error of the
# short-term value (win-loss) and score, as softplus(misc[k]) * multiplier (KataGo's model versions
# 10-13 and its multipliers), whose square roots the search reads; and the short-term predictions
# those errors are measured from: win, loss, no result logits and the score (times 20).
MISC_SHORTTERM_VALUE_ERROR = 8
MISC_SHORTTERM_SCORE_ERROR = 9
MISC_SHORTTERM_VALUE = slice(10, 13)
MISC_SHORTTERM_SCORE = 13
SHORTTERM_MISC_VALUES = 14
SHORTTERM_VALUE_ERROR_MULTIPLIER = 0.25
SHORTTERM_SCORE_ERROR_MULTIPLIER = 30.0
SHORTTERM_SCORE_MULTIPLIER = 20.0

# Policy channels (see the module docstring).
POLICY_CHANNEL = 0  # the move to play
OPPONENT_POLICY_CHANNEL = 1  # the opponent's reply on the next turn
SOFT_POLICY_CHANNEL = 2  # the soft policy target (training only)
SOFT_OPPONENT_POLICY_CHANNEL = 3  # the soft opponent policy target (training only)
# The optimistic policy (methods page, "Optimistic Policy"): the move to play, learnt from the rows
# whose short-term outcome surprised the side to move; the search mixes its logits in when a network
# has the channel.
OPTIMISTIC_POLICY_CHANNEL = 4
MAX_POLICY_CHANNELS = 5
OWN_POLICY_CHANNELS = 4  # the paper's sizes carry channels 0-3
HEADS_POLICY_CHANNELS = 5  # the methods page's sizes add the optimistic policy
KATAGO_V8_POLICY_CHANNELS = 1  # KataGo's version 8 model files carry only the move to play

# Global pooling constants (KataGo python/model.py global_pool / value_head_pool).
POOL_CENTER_BOARD_LEN = 14.0
POOL_LINEAR_SCALE = 0.1
POOL_QUADRATIC_SCALE = 0.01
POOL_QUADRATIC_OFFSET = 0.1

BLOCK_KINDS = ("regular", "gpool", "nbt", "nbt_gpool", "mobile")
# How the network is normalised: "batch", a batch norm in every norm layer (the paper's networks);
# "fixscale", the methods page's fixed variance initialisation and one batch norm (see the model).
NORM_KINDS = ("batch", "fixscale")
NBT_KINDS = ("nbt", "nbt_gpool")
# Fields that describe some kinds of block only (field -> those kinds): left out of
# :meth:`ModelConfig.to_dict` for a network without such blocks, so that its file reads as before in
# programs that predate them, and held at their defaults there.
KIND_FIELDS = {
    "bottleneck_channels": NBT_KINDS,
    "nbt_inner_blocks": NBT_KINDS,
    "mobile_expansion": ("mobile",),
    "se_ratio": ("mobile",),
}


class ModelConfigError(ValueError):
    """A model configuration that cannot describe a network."""


@dataclass
class ModelConfig:
    """Architecture of a network. JSON-serialisable through :meth:`to_dict` / :meth:`from_dict`.

    ``version`` is KataGo's model version whose conventions the network follows (8: outputs and
    post-processing as KataGo's version 8 networks, inputs version 7).

    Block kinds: ``regular`` and ``gpool`` are the paper's residual blocks; ``nbt`` and
    ``nbt_gpool`` are the methods page's nested bottleneck blocks (KataGo's "bottlenest2" and
    "bottlenest2gpool" of its b18c384nbt): a 1x1 conv down to ``bottleneck_channels``, then
    ``nbt_inner_blocks`` residual blocks at that width (the first a global pooling block in
    ``nbt_gpool``, with ``gpool_channels`` pooled), then a 1x1 conv back to the trunk. ``mobile``
    is Cazenave's MobileNet block with squeeze and excitation: a 1x1 conv up to
    ``mobile_expansion`` times the trunk's width, a depthwise 3x3 conv, a 1x1 conv back down, then
    squeeze and excitation (on-board mean, a layer of 1/``se_ratio`` the width, a sigmoid gate per
    channel) before the sum with the trunk.
    """

    blocks: list[str]  # residual blocks in order, kinds above
    trunk_channels: int  # C, the trunk width
    mid_channels: int  # inner width of regular blocks
    regular_channels: int  # gpool blocks: width of the biased conv (KataGo: mid - C_pool)
    gpool_channels: int  # gpool blocks: pooled channels, C_pool
    p1_channels: int  # policy head P (C_head1)
    g1_channels: int  # policy head G, pooled (C_head1)
    v1_channels: int  # value head V (C_head1)
    v2_size: int  # value head hidden layer
    sbv2_channels: int  # score belief hidden layer (C_head2)
    policy_channels: int = OWN_POLICY_CHANNELS  # layout in the module docstring; 1 for imported KataGo nets
    misc_values: int = MIN_MISC_VALUES  # score outputs, layout in the module docstring
    spatial_inputs: int = NUM_SPATIAL_INPUTS
    global_inputs: int = NUM_GLOBAL_INPUTS
    bn_epsilon: float = 1e-3  # KataGo's TF batch norm epsilon (fixup-exported nets use 1e-20)
    version: int = 8
    bottleneck_channels: int = 0  # width inside nested bottleneck blocks; 0 without them
    nbt_inner_blocks: int = 2  # residual blocks inside each nested bottleneck block
    mobile_expansion: int = 6  # mobile blocks: the expanded width, in trunk widths (Cazenave: 6)
    se_ratio: int = 16  # mobile blocks: the squeeze layer is trunk_channels / se_ratio wide (at least 1); 0: none
    norm: str = "batch"  # one of NORM_KINDS; left out of to_dict when "batch"

    def __post_init__(self) -> None:
        self.blocks = list(self.blocks)
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ModelConfigError` naming the first field that is wrong."""
        if self.norm not in NORM_KINDS:
            raise ModelConfigError(f"model config: norm is {self.norm!r}; expected one of {NORM_KINDS}")
        if self.version != 8:
            raise ModelConfigError(f"model config: version {self.version} is not supported (only 8)")
        if not self.blocks:
            raise ModelConfigError("model config: blocks is empty; a network needs at least one block")
        for i, kind in enumerate(self.blocks):
            if kind not in BLOCK_KINDS:
                raise ModelConfigError(f"model config: blocks[{i}] is {kind!r}; expected one of {BLOCK_KINDS}")
        for f in fields(self):
            if f.name in ("blocks", "bn_epsilon", "version", "norm", *KIND_FIELDS):
                continue
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ModelConfigError(f"model config: {f.name} must be a positive integer, got {value!r}")
        self._validate_kind_fields()
        if self.policy_channels > MAX_POLICY_CHANNELS:
            raise ModelConfigError(
                f"model config: policy_channels must be 1..{MAX_POLICY_CHANNELS}, got {self.policy_channels}"
            )
        if self.misc_values < MIN_MISC_VALUES:
            raise ModelConfigError(
                f"model config: misc_values must be at least {MIN_MISC_VALUES}, got {self.misc_values}"
            )
        if self.has_optimistic_policy and not self.has_shortterm_heads:
            raise ModelConfigError(
                f"model config: the optimistic policy (policy channel {OPTIMISTIC_POLICY_CHANNEL}) learns from the "
                f"short-term heads; misc_values must be at least {SHORTTERM_MISC_VALUES}, got {self.misc_values}"
            )
        if self.spatial_inputs != NUM_SPATIAL_INPUTS or self.global_inputs != NUM_GLOBAL_INPUTS:
            raise ModelConfigError(
                f"model config: inputs must be {NUM_SPATIAL_INPUTS} spatial and {NUM_GLOBAL_INPUTS} global "
                f"(inputs version 7), got {self.spatial_inputs} and {self.global_inputs}"
            )
        if not (isinstance(self.bn_epsilon, float | int) and math.isfinite(self.bn_epsilon) and self.bn_epsilon > 0):
            raise ModelConfigError(f"model config: bn_epsilon must be a positive number, got {self.bn_epsilon!r}")

    def _validate_kind_fields(self) -> None:
        defaults = {f.name: f.default for f in fields(self)}
        for name, kinds in KIND_FIELDS.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ModelConfigError(f"model config: {name} must be a non-negative integer, got {value!r}")
            if value != defaults[name] and not self._has(kinds):
                raise ModelConfigError(f"model config: {name} is set but no block is {' or '.join(kinds)}")
        if self.has_nbt:
            if self.bottleneck_channels <= 0:
                raise ModelConfigError("model config: nbt blocks need bottleneck_channels, a positive integer")
            if self.nbt_inner_blocks <= 0:
                raise ModelConfigError("model config: nbt_inner_blocks must be at least 1")
            if "nbt_gpool" in self.blocks and self.gpool_channels >= self.bottleneck_channels:
                raise ModelConfigError(
                    f"model config: nbt_gpool blocks pool gpool_channels ({self.gpool_channels}) of "
                    f"bottleneck_channels ({self.bottleneck_channels}); it must be fewer"
                )
        if self.mobile_expansion <= 0:
            raise ModelConfigError(
                f"model config: mobile_expansion must be a positive integer, got {self.mobile_expansion}"
            )
        if self.se_ratio < 0:
            raise ModelConfigError(
                "model config: se_ratio must be a non-negative integer (0: no squeeze and excitation), "
                f"got {self.se_ratio}"
            )

    def _has(self, kinds: tuple[str, ...]) -> bool:
        return any(kind in kinds for kind in self.blocks)

    @property
    def has_nbt(self) -> bool:
        return self._has(NBT_KINDS)

    @property
    def has_shortterm_heads(self) -> bool:
        """The short-term value and score predictions and their error predictions (misc 8-13)."""
        return self.misc_values >= SHORTTERM_MISC_VALUES

    @property
    def has_optimistic_policy(self) -> bool:
        return self.policy_channels > OPTIMISTIC_POLICY_CHANNEL

    @property
    def se_channels(self) -> int:
        """The width of a mobile block's squeeze layer (0: the blocks have no squeeze and excitation)."""
        return max(1, self.trunk_channels // self.se_ratio) if self.se_ratio else 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name, kinds in KIND_FIELDS.items():
            if not self._has(kinds):
                del data[name]
        if self.norm == "batch":
            del data["norm"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build a config from :meth:`to_dict` output; unknown or missing keys are errors."""
        if not isinstance(data, dict):
            raise ModelConfigError(f"model config: expected a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ModelConfigError(f"model config: unknown keys {unknown}")
        required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
        missing = sorted(required - set(data))
        if missing:
            raise ModelConfigError(f"model config: missing keys {missing}")
        try:
            return cls(**data)
        except TypeError as e:
            raise ModelConfigError(f"model config: {e}") from e

    @property
    def num_blocks(self) -> int:
        return len(self.blocks)


def _sizes(blocks: list[str], c: int, gpool: int, head1: int, sbv2: int, v2: int, **extra: Any) -> ModelConfig:
    sizes: dict[str, Any] = dict(
        trunk_channels=c,
        mid_channels=c,
        regular_channels=c - gpool,
        gpool_channels=gpool,
        p1_channels=head1,
        g1_channels=head1,
        v1_channels=head1,
        v2_size=v2,
        sbv2_channels=sbv2,
        policy_channels=OWN_POLICY_CHANNELS,
    )
    return ModelConfig(blocks=blocks, **{**sizes, **extra})


def _blocks(n: int, gpool_at: tuple[int, ...], kinds: tuple[str, str] = ("regular", "gpool")) -> list[str]:
    return [kinds[1] if i in gpool_at else kinds[0] for i in range(n)]


# What the methods page's networks add to the paper's: fixed variance initialisation with one batch
# norm, the short-term heads and the optimistic policy.
METHODS_PAGE: dict[str, Any] = dict(
    norm="fixscale", policy_channels=HEADS_POLICY_CHANNELS, misc_values=SHORTTERM_MISC_VALUES
)


def _nbt_sizes(
    n: int, gpool_at: tuple[int, ...], c: int, gpool: int, head1: int, v1: int, sbv2: int, v2: int
) -> ModelConfig:
    """Nested bottleneck blocks at half the trunk's width (KataGo's b18c384nbt proportions)."""
    blocks = _blocks(n, gpool_at, ("nbt", "nbt_gpool"))
    return _sizes(blocks, c, gpool, head1, sbv2, v2, v1_channels=v1, bottleneck_channels=c // 2, **METHODS_PAGE)


def _mobile_sizes(n: int, c: int, gpool: int, head1: int, sbv2: int, v2: int) -> ModelConfig:
    return _sizes(["mobile"] * n, c, gpool, head1, sbv2, v2, **METHODS_PAGE)


def named_config(name: str) -> ModelConfig:
    """A fresh config for a named size.

    Sizes follow the paper's Table 5 (N, C, C_pool, C_head1, C_head2 = score-belief hidden size)
    with the block layouts, gpool-block regular widths (mid - C_pool) and v2 sizes of KataGo's
    python/modelconfigs.py (b6c96 equals the g170 b6c96 net). ``tiny`` is a 2-block net for tests.
    Between it and b6c96, for 9x9 runs on small machines: ``b3c32`` (KataGo's b4c32 widths: 16
    pooled channels, C_head1 12, C_head2 and v2 24; one global pooling block, the middle one) and
    ``b4c48`` (b6c96's proportions: C_pool and C_head1 a third of C, C_head2 half of C, v2 =
    C_head2 + 16 as in KataGo's b6c96 and up; one global pooling block, the third as in KataGo's
    b4c32). The ``nbt`` sizes are nested bottleneck nets: ``b18c384nbt`` is KataGo's (trunk 384,
    bottleneck 192, 64 pooled channels, global pooling in every third block), ``b6c96nbt`` and
    ``b4c48nbt`` the same shape at the widths of b6c96 and b4c48 (a third of the bottleneck pooled)
    and ``tinynbt`` a test net. The ``mobile`` sizes are Cazenave's MobileNets with squeeze and
    excitation (expansion 6): ``b17c64mobile`` is his net of under a million parameters (17 blocks
    of 384 planes on a trunk of 64), about b6c96's weight; ``b24c96mobile`` is a larger one;
    ``tinymobile`` a test net. Their heads are ours (b6c96's widths).

    The paper's sizes (``tiny`` to ``b20c256``) are the paper's network: a batch norm in every norm
    layer, the four policy channels and the four version 8 misc values. The nbt and mobile sizes are
    the methods page's network: fixed variance initialisation and one batch norm (``norm``
    "fixscale"), the short-term heads (misc 8-13) and the optimistic policy (policy channel 4).
    """
    makers = {
        "tiny": lambda: _sizes(["regular", "gpool"], 16, 8, 8, 12, 12),
        "b3c32": lambda: _sizes(_blocks(3, (1,)), 32, 16, 12, 24, 24),
        "b4c48": lambda: _sizes(_blocks(4, (2,)), 48, 16, 16, 24, 40),
        "b6c96": lambda: _sizes(_blocks(6, (2, 4)), 96, 32, 32, 48, 64),
        "b10c128": lambda: _sizes(_blocks(10, (4, 7)), 128, 32, 32, 64, 80),
        "b15c192": lambda: _sizes(_blocks(15, (6, 11)), 192, 64, 32, 80, 96),
        "b20c256": lambda: _sizes(_blocks(20, (6, 11, 16)), 256, 64, 48, 96, 112),
        "tinynbt": lambda: _nbt_sizes(2, (1,), 16, 4, 8, 8, 12, 12),
        "b4c48nbt": lambda: _nbt_sizes(4, (2,), 48, 8, 16, 16, 24, 40),
        "b6c96nbt": lambda: _nbt_sizes(6, (2, 4), 96, 16, 32, 32, 48, 64),
        "b18c384nbt": lambda: _nbt_sizes(18, (2, 5, 8, 11, 14), 384, 64, 48, 96, 112, 128),
        "tinymobile": lambda: _mobile_sizes(2, 16, 8, 8, 12, 12),
        "b17c64mobile": lambda: _mobile_sizes(17, 64, 16, 32, 48, 64),
        "b24c96mobile": lambda: _mobile_sizes(24, 96, 32, 32, 48, 64),
    }
    if name not in makers:
        raise ModelConfigError(f"unknown model size {name!r}; known sizes: {sorted(makers)}")
    return makers[name]()


NAMED_SIZES = (
    "tiny",
    "b3c32",
    "b4c48",
    "b6c96",
    "b10c128",
    "b15c192",
    "b20c256",
    "tinynbt",
    "b4c48nbt",
    "b6c96nbt",
    "b18c384nbt",
    "tinymobile",
    "b17c64mobile",
    "b24c96mobile",
)
