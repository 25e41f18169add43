"""Import KataGo model files of model versions 8 (the g170 generation), 10, 11 and 12 into our
:class:`Model`.

KataGo's format (cpp/neuralnet/desc.cpp, written by python/export_model.py): whitespace-separated
text tokens, gzipped as ``.bin.gz`` / ``.txt.gz``. Header: model name, model version, number of
spatial inputs, number of global inputs. Then the trunk, the policy head and the value head, each
a fixed sequence of layers. Every layer starts with its name and its sizes; its numbers follow as
either text floats (``.txt``) or ``@BIN@`` plus little-endian float32 (``.bin``).

- conv: name, ky, kx, in, out, dilation y, dilation x; weights in (y, x, in, out) order.
- batch norm: name, channels, epsilon, has scale (0/1), has bias (0/1); mean, variance,
  [scale], [bias] (a missing scale is 1, a missing bias 0). Eval-mode affine map
  y = (x - mean) * scale / sqrt(variance + epsilon) + bias.
- activation: name only up to version 10 (all ReLU); from version 11 name and kind (only
  ``ACTIVATION_RELU`` is read: KataGo's own later nets use Mish, which our network has not).
- matmul: name, in, out; weights (in, out). matbias: name, channels; values.

Version 8 layer order:

- trunk: ``trunk`` num_blocks trunk mid regular dilated gpool; conv1 (5x5); ginputw (matmul);
  per block ``ordinary_block`` name (norm1 actv1 w1 norm2 actv2 w2) or ``gpool_block`` name
  (norm1 actv1 w1a w1b norm1b actv1b w1r norm2 actv2 w2) or ``nested_bottleneck_block`` name
  number-of-inner-blocks (norm, actv, 1x1 conv down to the bottleneck; the inner blocks as above,
  each with its kind and name, at the bottleneck's width; norm, actv, 1x1 conv back up: KataGo
  parses this kind in files of every version since its 1.12); trunk/norm; trunk/actv.
- policy head: ``policyhead``; p1 conv; g1 conv; g1 norm; g1 actv; matmulg2w; p1 norm; p1 actv;
  p2 conv (1 output channel: only the move to play was exported); matmulpass (1 output).
- value head: ``valuehead``; v1 conv; v1 norm; v1 actv; v2 matmul; v2 bias; v2 actv; v3 matmul
  (3); v3 bias; sv3 matmul (4 misc values); sv3 bias; vownership conv (1 output).

Versions 10 to 12 are the same layers with more outputs: sv3 has 6 (the short-term win-loss and
score errors after the four, our misc 8 and 9, decoded alike), and from version 12 the policy head
has 2 channels (the move to play and the optimistic policy, our channel 4). Those are what
:mod:`common.nn.katago_export` writes for networks with those heads. The outputs such a file lacks
(policy channels 1-3, misc 4-7 and 10-13) come in as zero weights. Version 9 decoded the errors
differently and versions from 13 on carry settings and outputs of KataGo's own later nets: both are
refused.

KataGo files have no score belief head (the engine never computes it); the imported model's score
belief parameters are freshly initialised from a fixed seed, so its ``score_belief`` output is
meaningless until the network is trained further.
"""

from __future__ import annotations

import builtins
import gzip
import logging
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from common.architecture import (
    HEADS_POLICY_CHANNELS,
    MISC_SHORTTERM_SCORE_ERROR,
    MISC_SHORTTERM_VALUE_ERROR,
    OPTIMISTIC_POLICY_CHANNEL,
    POLICY_CHANNEL,
    SHORTTERM_MISC_VALUES,
)
from common.nn.device import resolve_device
from common.nn.model import (
    KATAGO_V8_POLICY_CHANNELS,
    MIN_MISC_VALUES,
    Model,
    ModelConfig,
    ModelConfigError,
)

logger = logging.getLogger(__name__)

SUPPORTED_VERSIONS = (8, 10, 11, 12)
NAMED_ACTIVATIONS_VERSION = 11
SHORTTERM_ERRORS_VERSION = 10
OPTIMISTIC_POLICY_VERSION = 12
MAX_CHARS_BEFORE_BIN = 100  # as KataGo: whitespace allowed before "@BIN@"
SCORE_BELIEF_INIT_SEED = 0


class KataGoModelError(ValueError):
    """A KataGo model file that cannot be imported; the message names the file, layer and problem."""


@dataclass
class KataGoImport:
    """The result of reading a KataGo model file."""

    name: str
    version: int
    config: ModelConfig
    state_dict: dict[str, torch.Tensor]
    layers: list[str] = field(default_factory=list)  # KataGo layer names, in file order


class _Reader:
    def __init__(self, data: bytes, binary: bool, path: str) -> None:
        self.data = data
        self.pos = 0
        self.binary = binary
        self.path = path
        self.layers: list[str] = []
        self.version = 0

    def fail(self, layer: str, problem: str) -> KataGoModelError:
        where = f"layer {layer!r}" if layer else "header"
        return KataGoModelError(f"KataGo model {self.path}: {where}: {problem}")

    def _skip_space(self) -> None:
        data, n = self.data, len(self.data)
        while self.pos < n and data[self.pos] in b" \t\r\n\v\f":
            self.pos += 1

    def token(self, layer: str, what: str) -> str:
        self._skip_space()
        start = self.pos
        data, n = self.data, len(self.data)
        while self.pos < n and data[self.pos] not in b" \t\r\n\v\f":
            self.pos += 1
        if start == self.pos:
            raise self.fail(layer, f"file ends where {what} was expected")
        try:
            return data[start : self.pos].decode("ascii")
        except UnicodeDecodeError:
            raise self.fail(layer, f"{what} is not text (binary data in a header position)") from None

    def int(self, layer: str, what: str, minimum: int = 1) -> int:
        tok = self.token(layer, what)
        try:
            value = int(tok)
        except ValueError:
            raise self.fail(layer, f"{what} should be an integer, found {tok[:40]!r}") from None
        if value < minimum:
            raise self.fail(layer, f"{what} must be at least {minimum}, found {value}")
        return value

    def float(self, layer: str, what: str) -> float:
        tok = self.token(layer, what)
        try:
            value = float(tok)
        except ValueError:
            raise self.fail(layer, f"{what} should be a number, found {tok[:40]!r}") from None
        if not math.isfinite(value):
            raise self.fail(layer, f"{what} is not finite ({tok})")
        return value

    def flag(self, layer: str, what: str) -> bool:
        tok = self.token(layer, what)
        if tok not in ("0", "1"):
            raise self.fail(layer, f"{what} should be 0 or 1, found {tok[:40]!r}")
        return tok == "1"

    def floats(self, layer: str, count: builtins.int) -> np.ndarray:
        if self.binary:
            start = self.pos
            at = self.data.find(b"@", start, start + MAX_CHARS_BEFORE_BIN + 1)
            if at < 0:
                raise self.fail(layer, "no @BIN@ block where its weights should start (is this a .txt model?)")
            if self.data[at : at + 5] != b"@BIN@":
                raise self.fail(layer, "expected @BIN@ before the weights")
            begin = at + 5
            end = begin + 4 * count
            if end > len(self.data):
                have = (len(self.data) - begin) // 4
                raise self.fail(layer, f"file ends inside the weights: expected {count} floats, found {have}")
            values = np.frombuffer(self.data, dtype="<f4", count=count, offset=begin).astype(np.float32)
            self.pos = end
        else:
            values = self._text_floats(layer, count)
        if not np.all(np.isfinite(values)):
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
            raise self.fail(layer, f"weight {bad} of {count} is NaN or infinite")
        return values

    def _text_floats(self, layer: str, count: builtins.int) -> np.ndarray:
        data, n = self.data, len(self.data)
        size = 32 * count + 64
        while True:
            chunk = data[self.pos : self.pos + size]
            pieces = chunk.split(None, count)
            if len(pieces) > count or self.pos + size >= n:
                break
            size *= 2
        tokens = pieces[:count]
        if len(tokens) < count:
            raise self.fail(layer, f"file ends inside the weights: expected {count} numbers, found {len(tokens)}")
        if len(pieces) > count:
            self.pos += len(chunk) - len(pieces[count])
        else:
            self.pos += len(chunk)
        try:
            return np.array(tokens).astype(np.float32)
        except ValueError:
            for i, tok in enumerate(tokens):
                try:
                    float(tok)
                except ValueError:
                    text = tok[:40].decode("ascii", "replace")
                    raise self.fail(layer, f"weight {i} of {count} is not a number: {text!r}") from None
            raise

    # -- layers ------------------------------------------------------------------------------

    def conv(
        self, expect_k: builtins.int, expect_in: builtins.int, expect_out: builtins.int
    ) -> tuple[str, torch.Tensor]:
        name = self.token("", "a conv layer name")
        self.layers.append(name)
        ky = self.int(name, "conv y size")
        kx = self.int(name, "conv x size")
        cin = self.int(name, "conv input channels")
        cout = self.int(name, "conv output channels")
        dy = self.int(name, "conv y dilation")
        dx = self.int(name, "conv x dilation")
        if (ky, kx) != (expect_k, expect_k):
            raise self.fail(name, f"conv size is {ky}x{kx}, expected {expect_k}x{expect_k}")
        if (dy, dx) != (1, 1):
            raise self.fail(name, f"dilation {dy}x{dx} is not supported (only 1x1)")
        if (cin, cout) != (expect_in, expect_out):
            raise self.fail(name, f"conv is {cin}->{cout} channels, expected {expect_in}->{expect_out}")
        w = self.floats(name, ky * kx * cin * cout).reshape(ky, kx, cin, cout)
        return name, torch.from_numpy(np.ascontiguousarray(w.transpose(3, 2, 0, 1)))

    def matmul(self, expect_in: builtins.int, expect_out: builtins.int) -> tuple[str, torch.Tensor]:
        name = self.token("", "a matmul layer name")
        self.layers.append(name)
        cin = self.int(name, "matmul input channels")
        cout = self.int(name, "matmul output channels")
        if (cin, cout) != (expect_in, expect_out):
            raise self.fail(name, f"matmul is {cin}->{cout}, expected {expect_in}->{expect_out}")
        w = self.floats(name, cin * cout).reshape(cin, cout)
        return name, torch.from_numpy(np.ascontiguousarray(w.T))

    def matbias(self, expect: builtins.int) -> tuple[str, torch.Tensor]:
        name = self.token("", "a bias layer name")
        self.layers.append(name)
        c = self.int(name, "bias channels")
        if c != expect:
            raise self.fail(name, f"bias has {c} channels, expected {expect}")
        return name, torch.from_numpy(self.floats(name, c))

    def batchnorm(self, expect: builtins.int) -> tuple[str, builtins.float, dict[str, torch.Tensor]]:
        name = self.token("", "a batch norm layer name")
        self.layers.append(name)
        c = self.int(name, "batch norm channels")
        eps = self.float(name, "batch norm epsilon")
        has_scale = self.flag(name, "has-scale flag")
        has_bias = self.flag(name, "has-bias flag")
        if c != expect:
            raise self.fail(name, f"batch norm has {c} channels, expected {expect}")
        if eps <= 0:
            raise self.fail(name, f"epsilon must be positive, found {eps}")
        mean = self.floats(name, c)
        var = self.floats(name, c)
        scale = self.floats(name, c) if has_scale else np.ones(c, dtype=np.float32)
        bias = self.floats(name, c) if has_bias else np.zeros(c, dtype=np.float32)
        if np.any(var.astype(np.float64) + eps <= 0):
            raise self.fail(name, "variance + epsilon is not positive")
        tensors = {
            "running_mean": torch.from_numpy(mean),
            "running_var": torch.from_numpy(var),
            "weight": torch.from_numpy(scale),
            "bias": torch.from_numpy(bias),
        }
        return name, eps, tensors

    def activation(self) -> str:
        name = self.token("", "an activation layer name")
        self.layers.append(name)
        if self.version >= NAMED_ACTIVATIONS_VERSION:
            kind = self.token(name, "the activation's kind")
            if kind != "ACTIVATION_RELU":
                raise self.fail(name, f"activation {kind[:40]!r} is not supported: our network uses ReLU only")
        return name


def _decompress(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise KataGoModelError(f"KataGo model {path}: cannot read the file: {e}") from e
    if path.name.lower().endswith(".gz"):
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise KataGoModelError(f"KataGo model {path}: not a valid gzip file ({e})") from e
    return raw


def _is_binary(path: Path, data: bytes) -> bool:
    lower = path.name.lower()
    if lower.endswith((".bin", ".bin.gz")):
        return True
    if lower.endswith((".txt", ".txt.gz")):
        return False
    return b"@BIN@" in data


def read_katago_model(path: str | Path) -> KataGoImport:
    """Parse a KataGo model file of version 8, 10, 11 or 12 into our config and a complete state dict.

    Raises :class:`KataGoModelError` for other versions, malformed or truncated files, sizes our
    architecture cannot represent, non-finite weights and any data left after the value head.
    """
    path = Path(path)
    data = _decompress(path)
    r = _Reader(data, _is_binary(path, data), str(path))

    name = r.token("", "the model name")
    version = r.int("", "the model version", minimum=0)
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        raise r.fail("", f"model version {version} is not supported; versions {supported} can be imported")
    r.version = version
    n_spatial = r.int("", "the number of spatial inputs")
    n_global = r.int("", "the number of global inputs")
    if (n_spatial, n_global) != (22, 19):
        raise r.fail("", f"inputs are {n_spatial} spatial / {n_global} global; version {version} needs 22 / 19")

    trunk_name = r.token("", "the trunk section")
    if trunk_name != "trunk":
        raise r.fail("", f"expected the trunk section, found {trunk_name[:40]!r}")
    num_blocks = r.int("trunk", "number of blocks")
    c = r.int("trunk", "trunk channels")
    mid = r.int("trunk", "mid channels")
    regular = r.int("trunk", "regular channels")
    dilated = r.int("trunk", "dilated channels")
    gpool = r.int("trunk", "gpool channels")
    if mid != regular + dilated:
        raise r.fail("trunk", f"mid channels {mid} != regular {regular} + dilated {dilated}")

    sd: dict[str, torch.Tensor] = {}
    epsilons: dict[str, float] = {}

    def put_bn(prefix: str, expect: int) -> None:
        _, eps, tensors = r.batchnorm(expect)
        epsilons[prefix] = eps
        for k, v in tensors.items():
            sd[f"{prefix}.{k}"] = v

    _, sd["conv_spatial.weight"] = r.conv(5, n_spatial, c)
    _, sd["linear_global.weight"] = r.matmul(n_global, c)

    def residual_block(kind: str, p: str, c_main: int, c_mid: int, c_regular: int) -> None:
        """An ordinary or gpool block at width c_main (the trunk's, or a bottleneck's)."""
        put_bn(f"{p}.norm1", c_main)
        r.activation()
        if kind == "ordinary_block":
            _, sd[f"{p}.conv1.weight"] = r.conv(3, c_main, c_mid)
        else:
            _, sd[f"{p}.conv1_regular.weight"] = r.conv(3, c_main, c_regular)
            _, sd[f"{p}.conv1_gpool.weight"] = r.conv(3, c_main, gpool)
            put_bn(f"{p}.norm_gpool", gpool)
            r.activation()
            _, sd[f"{p}.gpool_to_bias.weight"] = r.matmul(3 * gpool, c_regular)
            c_mid = c_regular
        put_bn(f"{p}.norm2", c_mid)
        r.activation()
        _, sd[f"{p}.conv2.weight"] = r.conv(3, c_mid, c_main)

    blocks: list[str] = []
    bottleneck, inner_blocks = 0, 0
    for i in range(num_blocks):
        kind = r.token("trunk", f"the kind of block {i}")
        block_name = r.token("trunk", f"the name of block {i}")
        p = f"blocks.{i}"
        if kind in ("ordinary_block", "gpool_block"):
            blocks.append("regular" if kind == "ordinary_block" else "gpool")
            residual_block(kind, p, c, mid, regular)
        elif kind == "nested_bottleneck_block":
            n_inner = r.int(block_name, "number of inner blocks")
            put_bn(f"{p}.norm_in", c)
            r.activation()
            b = _peek_conv_out(r)
            if (bottleneck, inner_blocks) not in ((0, 0), (b, n_inner)):
                raise r.fail(block_name, "nested bottleneck blocks of different widths or depths are not supported")
            bottleneck, inner_blocks = b, n_inner
            _, sd[f"{p}.conv_in.weight"] = r.conv(1, c, b)
            inner_kinds = []
            for j in range(n_inner):
                inner = r.token(block_name, f"the kind of inner block {j}")
                r.token(block_name, f"the name of inner block {j}")
                if inner not in ("ordinary_block", "gpool_block") or (inner == "gpool_block" and j > 0):
                    raise r.fail(
                        block_name,
                        f"inner block {j} is {inner[:40]!r}: only ordinary blocks, the first possibly gpool, "
                        "are supported",
                    )
                inner_kinds.append(inner)
                residual_block(inner, f"{p}.inner.{j}", b, b, b - gpool)
            blocks.append("nbt_gpool" if inner_kinds[0] == "gpool_block" else "nbt")
            put_bn(f"{p}.norm_out", b)
            r.activation()
            _, sd[f"{p}.conv_out.weight"] = r.conv(1, b, c)
        else:
            raise r.fail(
                block_name,
                f"block kind {kind[:40]!r} is not supported (ordinary_block, gpool_block, nested_bottleneck_block)",
            )
    put_bn("norm_trunk", c)
    r.activation()

    head = r.token("", "the policy head section")
    if head != "policyhead":
        raise r.fail("", f"expected the policy head section, found {head[:40]!r}")
    # Head widths are only known from their first layer: peek at its sizes, then read it checked.
    p1 = _peek_conv_out(r)
    _, sd["policy_head.conv_p1.weight"] = r.conv(1, c, p1)
    g1 = _peek_conv_out(r)
    _, sd["policy_head.conv_g1.weight"] = r.conv(1, c, g1)
    put_bn("policy_head.norm_g1", g1)
    r.activation()
    _, sd["policy_head.gpool_to_bias.weight"] = r.matmul(3 * g1, p1)
    put_bn("policy_head.norm_p1", p1)
    r.activation()
    # Our channels in the file's order, and how many our network has.
    if version >= OPTIMISTIC_POLICY_VERSION:
        policy, policy_channels = [POLICY_CHANNEL, OPTIMISTIC_POLICY_CHANNEL], HEADS_POLICY_CHANNELS
    else:
        policy, policy_channels = [POLICY_CHANNEL], KATAGO_V8_POLICY_CHANNELS
    _, p2 = r.conv(1, p1, len(policy))
    _, pass_weight = r.matmul(3 * g1, len(policy))
    sd["policy_head.conv_p2.weight"] = _spread(p2, policy, policy_channels)
    sd["policy_head.linear_pass.weight"] = _spread(pass_weight, policy, policy_channels)

    head = r.token("", "the value head section")
    if head != "valuehead":
        raise r.fail("", f"expected the value head section, found {head[:40]!r}")
    v1 = _peek_conv_out(r)
    _, sd["value_head.conv_v1.weight"] = r.conv(1, c, v1)
    put_bn("value_head.norm_v1", v1)
    r.activation()
    v2 = _peek_matmul_out(r)
    _, sd["value_head.linear_v2.weight"] = r.matmul(3 * v1, v2)
    _, sd["value_head.linear_v2.bias"] = r.matbias(v2)
    r.activation()
    _, sd["value_head.linear_v3.weight"] = r.matmul(v2, 3)
    _, sd["value_head.linear_v3.bias"] = r.matbias(3)
    misc, misc_values = list(range(MIN_MISC_VALUES)), MIN_MISC_VALUES
    if version >= SHORTTERM_ERRORS_VERSION:
        misc, misc_values = [*misc, MISC_SHORTTERM_VALUE_ERROR, MISC_SHORTTERM_SCORE_ERROR], SHORTTERM_MISC_VALUES
    _, misc_weight = r.matmul(v2, len(misc))
    _, misc_bias = r.matbias(len(misc))
    sd["value_head.linear_misc.weight"] = _spread(misc_weight, misc, misc_values)
    sd["value_head.linear_misc.bias"] = _spread(misc_bias, misc, misc_values)
    _, sd["value_head.conv_ownership.weight"] = r.conv(1, v1, 1)

    r._skip_space()
    if r.pos != len(data):
        raise r.fail(r.layers[-1], f"{len(data) - r.pos} unexpected bytes after the value head")

    eps = next(iter(epsilons.values()))
    for prefix, layer_eps in epsilons.items():
        if layer_eps != eps:
            # Same affine map with the config's epsilon: variance + eps is what matters.
            var = sd[f"{prefix}.running_var"].double() + layer_eps - eps
            sd[f"{prefix}.running_var"] = var.float()

    try:
        config = ModelConfig(
            blocks=blocks,
            trunk_channels=c,
            mid_channels=mid,
            regular_channels=regular,
            gpool_channels=gpool,
            p1_channels=p1,
            g1_channels=g1,
            v1_channels=v1,
            v2_size=v2,
            sbv2_channels=max(v2 - 16, 8),  # not in the file; KataGo's configs use v2 = sbv2 + 16
            policy_channels=policy_channels,
            misc_values=misc_values,
            bn_epsilon=float(eps),
            bottleneck_channels=bottleneck,
            nbt_inner_blocks=inner_blocks or 2,
        )
    except ModelConfigError as e:
        raise KataGoModelError(f"KataGo model {path}: {e}") from e

    # Parameters KataGo files do not carry: the score belief head.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SCORE_BELIEF_INIT_SEED)
        fresh = Model(config).state_dict()
    expected = set(fresh)
    unknown = sorted(set(sd) - expected)
    if unknown:  # a bug in the mapping above, not in the file
        raise AssertionError(f"import produced unknown tensors {unknown}")
    for key, value in fresh.items():
        if key not in sd:
            if not key.startswith("value_head.score_belief."):
                raise AssertionError(f"import did not fill {key}")
            sd[key] = value.clone()
        elif tuple(sd[key].shape) != tuple(value.shape):
            raise AssertionError(f"import shape mismatch for {key}: {tuple(sd[key].shape)} vs {tuple(value.shape)}")
    sd = {k: sd[k] for k in fresh}
    logger.info("imported KataGo model %s (version %d, %d layers) from %s", name, version, len(r.layers), path)
    return KataGoImport(name=name, version=version, config=config, state_dict=sd, layers=r.layers)


def _spread(weights: torch.Tensor, rows: list[int], total: int) -> torch.Tensor:
    """Output rows of a layer read from a file put at our rows ``rows`` of ``total``, zero elsewhere."""
    out = weights.new_zeros((total, *weights.shape[1:]))
    out[rows] = weights
    return out


def _peek_conv_out(r: _Reader) -> int:
    """Output channels of the conv layer starting at the reader position, without consuming it."""
    save = r.pos
    layer = r.token("", "a conv layer name")
    for what in ("conv y size", "conv x size", "conv input channels"):
        r.int(layer, what)
    out = r.int(layer, "conv output channels")
    r.pos = save
    return out


def _peek_matmul_out(r: _Reader) -> int:
    """Output channels of the matmul layer starting at the reader position, without consuming it."""
    save = r.pos
    layer = r.token("", "a matmul layer name")
    r.int(layer, "matmul input channels")
    out = r.int(layer, "matmul output channels")
    r.pos = save
    return out


def load_katago_model(path: str | Path) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """(config, state dict for :class:`Model`) of a KataGo version 8 model file."""
    imported = read_katago_model(path)
    return imported.config, imported.state_dict


def build_katago_model(path: str | Path, device: torch.device | str | None = None) -> Model:
    """Our model with a KataGo version 8 file's weights, in eval mode on ``device``."""
    config, state_dict = load_katago_model(path)
    model = Model(config)
    model.load_state_dict(state_dict, strict=True)
    return model.to(resolve_device(device)).eval()
