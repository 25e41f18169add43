"""Export our networks to KataGo's model format, so KataGo itself (and the programs built on it:
KaTrain, Lizzie, Sabaki through KataGo's GTP) plays them at GPU speed.

The file written is a KataGo ``.bin.gz``, laid out as :mod:`common.nn.katago_import` describes
(the importer reads back exactly what is written here), of the oldest model version that holds
every output of the network that KataGo's engine reads:

- version 8, the format of KataGo's g170 networks, for the paper's networks: its layers are
  exactly the paper's architecture (inputs version 7, four misc values, one policy channel), and
  every KataGo release since 1.4 loads it;
- version 10 for a network with the short-term heads: the value head's misc layer has two more
  outputs, the short-term errors (misc 8 and 9 here), which KataGo's engine decodes as ours do and
  weighs playouts by (KataGo 1.9 on);
- version 12 when the network also has the optimistic policy: the policy head has two channels,
  the move to play and the optimistic policy (here channel 4), which KataGo mixes in with its
  ``policyOptimism`` (KataGo 1.13 on). From version 11 on every activation layer names its kind
  (all ReLU here).

Nested bottleneck nets are the same files with ``nested_bottleneck_block`` blocks in the trunk:
KataGo reads that block kind whatever the file's version, from its 1.12 on (older releases refuse
the file, naming the block kind). The fixed-variance norms are written as the batch norms they are
at inference (their scale kept as the variance), and the heads behind the one batch norm, which
only training uses, stay out. KataGo's later versions (13 on) change how the errors are decoded or
add outputs our networks do not have.

What else the format cannot carry is left out: the policy channels KataGo's engine does not read
(the opponent's reply, the soft policies), the root-variance predictions and the short-term value
and score predictions (only their errors reach the search), and the score belief head. The exported
network's outputs in KataGo are the same as ours for everything its engine reads.

The gzip is written without a timestamp, so the same network always exports to the same bytes
(a server can cache the file under the network's sha256). The weights may be torch tensors (a
model's state dict) or numpy arrays (a network file read with ``safetensors.numpy``): the web
server exports without importing torch.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from common.architecture import (
    MIN_MISC_VALUES,
    MISC_SHORTTERM_SCORE_ERROR,
    MISC_SHORTTERM_VALUE_ERROR,
    NUM_GLOBAL_INPUTS,
    NUM_SPATIAL_INPUTS,
    OPTIMISTIC_POLICY_CHANNEL,
    POLICY_CHANNEL,
    ModelConfig,
)
from common.files import atomic_write

logger = logging.getLogger(__name__)

SUFFIX = ".bin.gz"
NAMED_ACTIVATIONS_VERSION = 11  # from this version on, each activation layer names its kind


def export_version(config: ModelConfig) -> int:
    """The KataGo model version a network of ``config`` is exported as (module docstring)."""
    if config.has_optimistic_policy:
        return 12
    if config.has_shortterm_heads:
        return 10
    return 8


def exported_policy_channels(config: ModelConfig) -> list[int]:
    """Our policy channels in the order of the exported file's."""
    return [POLICY_CHANNEL, OPTIMISTIC_POLICY_CHANNEL] if export_version(config) >= 12 else [POLICY_CHANNEL]


def exported_misc_values(config: ModelConfig) -> list[int]:
    """Our misc columns in the order of the exported file's."""
    errors = [MISC_SHORTTERM_VALUE_ERROR, MISC_SHORTTERM_SCORE_ERROR] if export_version(config) >= 10 else []
    return list(range(MIN_MISC_VALUES)) + errors


class KataGoExportError(ValueError):
    """A network that KataGo's format cannot describe; the message says why."""


class _Writer:
    """Tokens on lines, weights as ``@BIN@`` plus little-endian float32, as KataGo's .bin files."""

    def __init__(self, state_dict: Mapping[str, Any], eps: float, version: int) -> None:
        self.out = io.BytesIO()
        self.sd = state_dict
        self.eps = eps
        self.version = version

    def line(self, *tokens: object) -> None:
        for token in tokens:
            self.out.write(f"{token}\n".encode("ascii"))

    def weights(self, values: np.ndarray) -> None:
        self.out.write(b"@BIN@")
        self.out.write(np.ascontiguousarray(values, dtype="<f4").tobytes())
        self.out.write(b"\n")

    def tensor(self, key: str) -> np.ndarray:
        try:
            value = self.sd[key]
        except KeyError:
            raise KataGoExportError(f"the network's weights lack {key}") from None
        if hasattr(value, "detach"):  # a torch tensor
            value = value.detach().cpu()
        return np.asarray(value, dtype=np.float32)

    def conv(self, name: str, key: str, out_rows: list[int] | None = None) -> None:
        w = self.tensor(key)  # (out, in, ky, kx)
        if out_rows is not None:
            w = w[out_rows]
        cout, cin, ky, kx = w.shape
        self.line(name, ky, kx, cin, cout, 1, 1)
        self.weights(w.transpose(2, 3, 1, 0))  # KataGo's order: y, x, in, out

    def matmul(self, name: str, key: str, out_rows: list[int] | None = None) -> None:
        w = self.tensor(key)  # (out, in)
        if out_rows is not None:
            w = w[out_rows]
        cout, cin = w.shape
        self.line(name, cin, cout)
        self.weights(w.T)  # KataGo's order: in, out

    def matbias(self, name: str, key: str, out_rows: list[int] | None = None) -> None:
        b = self.tensor(key)
        if out_rows is not None:
            b = b[out_rows]
        self.line(name, b.shape[0])
        self.weights(b)

    def batchnorm(self, name: str, prefix: str) -> None:
        mean = self.tensor(f"{prefix}.running_mean")
        # Scale and bias are always written: some KataGo releases read a missing bias as 1, not 0.
        self.line(name, mean.shape[0], repr(float(self.eps)), 1, 1)
        for part in ("running_mean", "running_var", "weight", "bias"):
            self.weights(self.tensor(f"{prefix}.{part}"))

    def activation(self, name: str) -> None:
        if self.version >= NAMED_ACTIVATIONS_VERSION:
            self.line(name, "ACTIVATION_RELU")
        else:
            self.line(name)


def export_refusal(config: ModelConfig) -> str | None:
    """Why KataGo's format cannot hold a network of ``config``, or None when it can."""
    if "mobile" in config.blocks:
        return (
            "KataGo's engine has no MobileNet blocks (depthwise convolutions, squeeze and excitation): "
            "a mobile network plays in Sente's own engines only"
        )
    if config.mid_channels <= config.regular_channels:
        return (
            f"KataGo's format needs mid_channels ({config.mid_channels}) larger than "
            f"regular_channels ({config.regular_channels}): it stores the difference as a positive count"
        )
    if (config.spatial_inputs, config.global_inputs) != (NUM_SPATIAL_INPUTS, NUM_GLOBAL_INPUTS):
        return "KataGo's format needs inputs version 7 (22 spatial, 19 global)"
    return None


def check_exportable(config: ModelConfig) -> None:
    """Raise :class:`KataGoExportError` if ``config`` has no KataGo equivalent."""
    refusal = export_refusal(config)
    if refusal is not None:
        raise KataGoExportError(refusal)


def _residual_block(w: _Writer, gpool: bool, p: str, n: str) -> None:
    """An ordinary or global pooling block (of the trunk, or inside a nested bottleneck block)."""
    w.line("gpool_block" if gpool else "ordinary_block", n)
    w.batchnorm(f"{n}/norm1", f"{p}.norm1")
    w.activation(f"{n}/actv1")
    if gpool:
        w.conv(f"{n}/w1a", f"{p}.conv1_regular.weight")
        w.conv(f"{n}/w1b", f"{p}.conv1_gpool.weight")
        w.batchnorm(f"{n}/norm1b", f"{p}.norm_gpool")
        w.activation(f"{n}/actv1b")
        w.matmul(f"{n}/w1r", f"{p}.gpool_to_bias.weight")
    else:
        w.conv(f"{n}/w1", f"{p}.conv1.weight")
    w.batchnorm(f"{n}/norm2", f"{p}.norm2")
    w.activation(f"{n}/actv2")
    w.conv(f"{n}/w2", f"{p}.conv2.weight")


def katago_model_text(config: ModelConfig, state_dict: Mapping[str, Any], name: str) -> bytes:
    """The uncompressed bytes of a KataGo ``.bin`` model of our network (version: :func:`export_version`)."""
    check_exportable(config)
    token = "_".join(name.split())
    if not token:
        raise KataGoExportError("the network name must not be empty")
    version = export_version(config)
    w = _Writer(state_dict, config.bn_epsilon, version)
    c = config
    w.line(token, version, c.spatial_inputs, c.global_inputs)
    w.line("trunk", c.num_blocks, c.trunk_channels, c.mid_channels, c.regular_channels)
    w.line(c.mid_channels - c.regular_channels, c.gpool_channels)
    w.conv("conv1", "conv_spatial.weight")
    w.matmul("ginputw", "linear_global.weight")
    for i, kind in enumerate(c.blocks):
        p, n = f"blocks.{i}", f"rconv{i + 1}"
        if kind in ("regular", "gpool"):
            _residual_block(w, kind == "gpool", p, n)
            continue
        w.line("nested_bottleneck_block", n, c.nbt_inner_blocks)
        w.batchnorm(f"{n}/norm1", f"{p}.norm_in")
        w.activation(f"{n}/actv1")
        w.conv(f"{n}/w1", f"{p}.conv_in.weight")
        for j in range(c.nbt_inner_blocks):
            _residual_block(w, kind == "nbt_gpool" and j == 0, f"{p}.inner.{j}", f"{n}/blockstack/{j}")
        w.batchnorm(f"{n}/norm2", f"{p}.norm_out")
        w.activation(f"{n}/actv2")
        w.conv(f"{n}/w2", f"{p}.conv_out.weight")
    w.batchnorm("trunk/norm", "norm_trunk")
    w.activation("trunk/actv")

    policy = exported_policy_channels(config)
    w.line("policyhead")
    w.conv("p1/intermediate_conv/w", "policy_head.conv_p1.weight")
    w.conv("g1/w", "policy_head.conv_g1.weight")
    w.batchnorm("g1/norm", "policy_head.norm_g1")
    w.activation("g1/actv")
    w.matmul("matmulg2w", "policy_head.gpool_to_bias.weight")
    w.batchnorm("p1/norm", "policy_head.norm_p1")
    w.activation("p1/actv")
    w.conv("p2/w", "policy_head.conv_p2.weight", policy)
    w.matmul("matmulpass", "policy_head.linear_pass.weight", policy)

    misc = exported_misc_values(config)
    w.line("valuehead")
    w.conv("v1/w", "value_head.conv_v1.weight")
    w.batchnorm("v1/norm", "value_head.norm_v1")
    w.activation("v1/actv")
    w.matmul("v2/w", "value_head.linear_v2.weight")
    w.matbias("v2/b", "value_head.linear_v2.bias")
    w.activation("v2/actv")
    w.matmul("v3/w", "value_head.linear_v3.weight")
    w.matbias("v3/b", "value_head.linear_v3.bias")
    w.matmul("sv3/w", "value_head.linear_misc.weight", misc)
    w.matbias("sv3/b", "value_head.linear_misc.bias", misc)
    w.conv("vownership/w", "value_head.conv_ownership.weight")
    return w.out.getvalue()


def katago_model_bytes(config: ModelConfig, state_dict: Mapping[str, Any], name: str) -> bytes:
    """The ``.bin.gz`` bytes: :func:`katago_model_text` gzipped without a timestamp (reproducible)."""
    return gzip.compress(katago_model_text(config, state_dict, name), compresslevel=6, mtime=0)


def write_katago_model(path: str | Path, config: ModelConfig, state_dict: Mapping[str, Any], name: str) -> str:
    """Write the KataGo model file atomically; returns its sha256."""
    data = katago_model_bytes(config, state_dict, name)
    atomic_write(Path(path), data)
    digest = hashlib.sha256(data).hexdigest()
    logger.info("exported network %s to KataGo's format in %s (sha256 %s)", name, path, digest)
    return digest
