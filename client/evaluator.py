"""The batched evaluator: many positions in, one forward pass, per-position results out.

Positions are encoded into preallocated buffers (common.encoding.features), cropped to the largest board
of the batch (boards sit in the top-left corner of the 19x19 grid and the network is fully
convolutional with masking, so a 9x9 batch runs on 9x9 tensors), evaluated in one pass and
post-processed as KataGo does (common.nn.interpret). Results come from the side to move or from
white's point of view. An LRU cache keyed by a hash of everything the inputs depend on skips
repeated positions.

The precision (common.nn.precision): ``auto`` runs a GPU under fp16 (or bf16) autocast, and a CPU
with bf16 instructions on a bf16 copy of the weights, when a start-up check on the canary positions
(common.canary) shows the reduced precision agrees with fp32 within KataGo's tolerance for it (as
KataGo's client checks its fp16 path); otherwise, and on every other CPU, fp32. A precision asked
for by name is checked the same way, and fp32 is used if it fails.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from common import canary
from common.architecture import OPTIMISTIC_POLICY_CHANNEL, POLICY_CHANNEL
from common.encoding.features import (
    NN_AREA,
    NN_LEN,
    NUM_GLOBAL,
    NUM_SPATIAL,
    Encoder,
    position_key,
    unapply_symmetry,
)
from common.go.game import Game
from common.go.geometry import BLACK, WHITE
from common.nn import precision as precisions
from common.nn import runner as runners
from common.nn.canary import evaluate_canary
from common.nn.device import resolve_device
from common.nn.interpret import interpret, no_result_possible
from common.nn.model import Model
from common.nn.outputs import ModelOutput, pad_to_grid

log = logging.getLogger(__name__)

# Agreement required of reduced precision against fp32 on the canary positions.
PRECISION_TOLERANCE = canary.REDUCED_TOLERANCE
COMPILED_SHAPES = 64


@dataclass
class PositionEval:
    """One position's evaluation (numpy). ``policy`` [362]: probabilities of the legal moves
    (index y * 19 + x, pass last; illegal 0). ``ownership`` [y_size, x_size] in [-1, 1].
    Values are from the side to move, or from white when the evaluator was asked for white."""

    policy: np.ndarray
    win: float
    loss: float
    no_result: float
    score_mean: float
    score_stdev: float
    score_mean_sq: float
    lead: float
    ownership: np.ndarray
    perspective: str  # "side" or "white"
    shortterm_winloss_error: float = -1.0  # the short-term errors' predicted standard deviations
    shortterm_score_error: float = -1.0  # (-1 for a network without those heads)

    @property
    def policy_pass(self) -> float:
        return float(self.policy[NN_AREA])

    def policy_board(self, x_size: int, y_size: int) -> np.ndarray:
        """The board part of the policy as a [y_size, x_size] grid."""
        return self.policy[:NN_AREA].reshape(NN_LEN, NN_LEN)[:y_size, :x_size]


def load_network(path: str | Path, device: torch.device | str | None = None) -> Model:
    """A network from our .safetensors file or from a KataGo .bin.gz / .txt.gz file."""
    p = Path(path)
    if p.name.endswith((".bin.gz", ".txt.gz", ".bin", ".txt")):
        from common.nn.katago_import import build_katago_model

        return build_katago_model(p, device)
    from common.nn.modelfile import load_model

    return load_model(p, device)[0]


class Evaluator:
    """Evaluates Game positions with a network, in batches."""

    def __init__(
        self,
        model: Model,
        device: torch.device | str | None = None,
        max_batch: int = 256,
        cache_size: int = 65536,
        precision: str = "auto",
        seed: int | None = None,
        compile: bool = False,
    ) -> None:
        # One caller at a time: the buffers, the cache and the counters are shared, and concurrent
        # forward passes would only contend for the device (self-play drives its groups of games
        # from several threads; each waits here while the others go on with their own work).
        self._lock = threading.RLock()
        precisions.check_precision(precision)
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        # torch.compile fuses the many small operations of a forward pass (several times faster on
        # the CPU at small batches) at the price of compiling once per input shape.
        self.compile = compile
        # The precision in use (None: fp32), the modules that run each one checked so far, and the
        # one the forward pass calls (compiled when asked).
        self.dtype: torch.dtype | None = None
        self._runners: dict[torch.dtype | None, torch.nn.Module] = {None: self.model}
        self.net: Callable[..., ModelOutput] = self.model
        self.set_dtype(None)
        self.max_batch = max_batch
        # The search mixes the optimistic policy into its priors when the network has that head
        # (common.architecture; the short-term errors it finds by the misc outputs' width).
        self.optimistic_policy = model.config.policy_channels > OPTIMISTIC_POLICY_CHANNEL
        self.cache_size = cache_size
        self.cache: OrderedDict[int, PositionEval] = OrderedDict()
        self.encoder = Encoder()
        self.rng = random.Random(seed)
        self.spatial = np.zeros((max_batch, NUM_SPATIAL, NN_AREA), dtype=np.float32)
        self.glob = np.zeros((max_batch, NUM_GLOBAL), dtype=np.float32)
        self.legal = np.zeros((max_batch, NN_AREA + 1), dtype=np.float32)
        self.hits = 0
        self.misses = 0
        self._choose_precision(precision)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs) -> Evaluator:
        device = kwargs.pop("device", None)
        return cls(load_network(path, resolve_device(device)), device=device, **kwargs)

    # --- evaluation ------------------------------------------------------------------------------
    def evaluate(
        self,
        games: Sequence[Game],
        symmetries: Sequence[int] | str | None = None,
        perspective: str = "side",
        use_cache: bool = True,
        players: Sequence[int] | None = None,
    ) -> list[PositionEval]:
        """Evaluate each game's position for its side to move (or for players[i]).

        symmetries: None (identity), "random" (a random one of 8 per position) or one per game.
        perspective: "side" (values from the player evaluated for) or "white".
        """
        if perspective not in ("side", "white"):
            raise ValueError(f"perspective {perspective!r}: expected 'side' or 'white'")
        with self._lock:
            return self._evaluate(games, symmetries, perspective, use_cache, players)

    def _evaluate(
        self,
        games: Sequence[Game],
        symmetries: Sequence[int] | str | None,
        perspective: str,
        use_cache: bool,
        players: Sequence[int] | None,
    ) -> list[PositionEval]:
        if symmetries is None:
            syms = [0] * len(games)
        elif symmetries == "random":
            syms = [self.rng.randrange(8) for _ in games]
        else:
            syms = [int(s) for s in symmetries]
            if len(syms) != len(games) or any(not 0 <= s < 8 for s in syms):
                raise ValueError("symmetries must give one value in 0..7 per position")
        plas = [g.to_move for g in games] if players is None else [int(p) for p in players]
        if len(plas) != len(games) or any(p not in (BLACK, WHITE) for p in plas):
            raise ValueError("players must give BLACK or WHITE per position")
        results: list[PositionEval | None] = [None] * len(games)
        todo: list[tuple[int, int]] = []
        for i, (game, s) in enumerate(zip(games, syms)):
            key = int(
                position_key(game.g, game.b, game.hist, game.moves, plas[i], s, 1 if perspective == "white" else 0)
            )
            cached = self.cache.get(key) if use_cache else None
            if cached is not None:
                self.cache.move_to_end(key)
                self.hits += 1
                results[i] = cached
            else:
                todo.append((i, key))
        self.misses += len(todo)
        for start in range(0, len(todo), self.max_batch):
            chunk = todo[start : start + self.max_batch]
            evals = self._evaluate_batch(
                [games[i] for i, _ in chunk], [syms[i] for i, _ in chunk], [plas[i] for i, _ in chunk], perspective
            )
            for (i, key), ev in zip(chunk, evals):
                results[i] = ev
                if use_cache and self.cache_size > 0:
                    self.cache[key] = ev
                    if len(self.cache) > self.cache_size:
                        self.cache.popitem(last=False)
        return results  # type: ignore[return-value]

    def _evaluate_batch(
        self, games: list[Game], syms: list[int], plas: list[int], perspective: str
    ) -> list[PositionEval]:
        n = len(games)
        spatial, glob, legal = self.spatial[:n], self.glob[:n], self.legal[:n]
        self.encoder.encode(games, spatial, glob, legal, symmetries=syms, players=plas)
        # Crop to the largest (possibly transposed) board of the batch.
        w = max(g.y_size if s & 4 else g.x_size for g, s in zip(games, syms))
        h = max(g.x_size if s & 4 else g.y_size for g, s in zip(games, syms))
        x = torch.from_numpy(spatial).view(n, NUM_SPATIAL, NN_LEN, NN_LEN)[:, :, :h, :w]
        out = self._forward(x, torch.from_numpy(glob))
        out = pad_to_grid(out, h, w)
        legal_t = torch.from_numpy(legal) > 0
        white = [p == WHITE for p in plas]
        nr = [no_result_possible(g.rules.ko, g.rules.scoring) for g in games]
        ev = interpret(out, legal_t, white, nr, model_version=self.model.config.version)
        if perspective == "white":
            win_t, loss_t, lead_t = ev.white_win, ev.white_loss, ev.white_lead
            mean_t, own_t = ev.white_score_selfplay, ev.white_ownership
        else:
            win_t, loss_t, lead_t, mean_t, own_t = ev.win, ev.loss, ev.lead, ev.score_mean, ev.ownership
        policy = ev.policy_full.float().cpu().numpy()
        own_np = own_t.float().cpu().numpy().reshape(n, NN_AREA)
        win, loss, nr_p = win_t.cpu().numpy(), loss_t.cpu().numpy(), ev.no_result.cpu().numpy()
        mean, stdev, msq, lead = (t.cpu().numpy() for t in (mean_t, ev.score_stdev, ev.score_mean_sq, lead_t))
        st_wl, st_score = ev.shortterm_winloss_error.cpu().numpy(), ev.shortterm_score_error.cpu().numpy()
        results = []
        for i, (game, s) in enumerate(zip(games, syms)):
            pol, own_i = policy[i], own_np[i]
            if s:
                pol = unapply_symmetry(pol, game.x_size, game.y_size, s)
                own_i = unapply_symmetry(own_i, game.x_size, game.y_size, s)
            results.append(
                PositionEval(
                    policy=pol,
                    win=float(win[i]),
                    loss=float(loss[i]),
                    no_result=float(nr_p[i]),
                    score_mean=float(mean[i]),
                    score_stdev=float(stdev[i]),
                    score_mean_sq=float(msq[i]),
                    lead=float(lead[i]),
                    ownership=own_i.reshape(NN_LEN, NN_LEN)[: game.y_size, : game.x_size].copy(),
                    perspective=perspective,
                    shortterm_winloss_error=float(st_wl[i]),
                    shortterm_score_error=float(st_score[i]),
                )
            )
        return results

    def forward_raw(
        self, spatial: np.ndarray, glob: np.ndarray, width: int, optimistic: bool = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The network's raw outputs for encoded rows (the search's path): spatial [n, 22, W * W]
        (a W x W crop of the grid), glob [n, 19]. Returns float32 numpy arrays: the move policy
        logits [n, W * W + 1] (pass last; with optimistic, [n, 2, W * W + 1]: the move policy and
        the optimistic policy, for a network that has it), value logits [n, 3] and misc outputs
        [n, M].

        With a compiled network the batch is padded to a multiple of 8 rows, so that varying batch
        sizes share a few compiled shapes."""
        n = spatial.shape[0]
        x = torch.from_numpy(spatial).view(n, NUM_SPATIAL, width, width)
        g = torch.from_numpy(glob)
        if self.compile and n % 8:
            pad = 8 - n % 8
            x = torch.cat([x, x.new_zeros((pad, *x.shape[1:]))])
            g = torch.cat([g, g.new_zeros((pad, g.shape[1]))])
        with self._lock:
            out = self._run(x, g)
            if optimistic:
                policy = out.policy[:n, [POLICY_CHANNEL, OPTIMISTIC_POLICY_CHANNEL], :].float().cpu().numpy()
            else:
                policy = out.policy[:n, POLICY_CHANNEL, :].float().cpu().numpy()
            value = out.value[:n].float().cpu().numpy()
            misc = out.misc[:n].float().cpu().numpy()
            self.misses += n
        return policy, value, misc

    def _run(self, spatial: torch.Tensor, glob: torch.Tensor) -> ModelOutput:
        """The network on the device, in the checked precision."""
        non_blocking = self.device.type == "cuda"
        spatial = spatial.to(self.device, non_blocking=non_blocking)
        glob = glob.to(self.device, non_blocking=non_blocking)
        with torch.inference_mode():
            return self.net(spatial, glob, with_score_belief=False)

    def _forward(self, spatial: torch.Tensor, glob: torch.Tensor) -> ModelOutput:
        out = self._run(spatial, glob)
        return out.map(lambda t: t.float())

    # --- precision -------------------------------------------------------------------------------
    @property
    def precision(self) -> str:
        """The precision in use: fp32, fp16 or bf16."""
        return runners.name_of(self.dtype)

    def runner(self, dtype: torch.dtype | None) -> torch.nn.Module:
        """The (uncompiled) module that runs the network in ``dtype`` (None: fp32) on this device."""
        if dtype not in self._runners:
            self._runners[dtype] = runners.runner(self.model, self.device, dtype)
        return self._runners[dtype]

    def set_dtype(self, dtype: torch.dtype | None) -> None:
        """Run the network in ``dtype`` (None: fp32) from now on."""
        with self._lock:
            module = self.runner(dtype)
            if self.compile:
                # One compilation per (batch, board) shape: allow as many as a client meets.
                torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, COMPILED_SHAPES)
                self.net = torch.compile(module, dynamic=False)
            else:
                self.net = module
            self.dtype = dtype
            for other in [d for d in self._runners if d not in (None, dtype)]:
                del self._runners[other]  # a precision given up: its copy of the weights goes

    def canary_outputs(self, dtype: torch.dtype | None) -> canary.CanaryOutputs:
        """The network's outputs on the canary positions as it runs in ``dtype`` (None: fp32) here."""
        with self._lock:
            return evaluate_canary(self.model, self.device, dtype, net=self.runner(dtype))

    def _choose_precision(self, precision: str) -> None:
        """Use the first candidate precision (common.nn.precision.candidates) whose outputs on the
        canary positions agree with fp32's on this device within KataGo's reduced-precision tolerance
        (common.canary); fp32 when none does."""
        candidates = [runners.DTYPES[name] for name in precisions.candidates(precision, self.device.type)]
        if not candidates:
            return
        if self.device.type == "cpu" and not precisions.cpu_bf16():
            log.warning(
                "this CPU has no bf16 instructions (AVX-512 BF16, AMX or Arm BF16): torch emulates %s here, "
                "several times slower than fp32 (--precision auto picks fp32 on it)",
                precision,
            )
        with self._lock:
            ref = self.canary_outputs(None)
            for dtype in candidates:
                try:
                    got = self.canary_outputs(dtype)
                except RuntimeError as e:  # a device without that type
                    log.info("%s unavailable on %s: %s", runners.name_of(dtype), self.device, e)
                    self._runners.pop(dtype, None)
                    continue
                result = canary.compare(ref, got, PRECISION_TOLERANCE)
                if result.passed:
                    self.set_dtype(dtype)
                    log.info(
                        "running the network in %s on %s (against fp32 on the canary: %s)",
                        runners.name_of(dtype),
                        self.device,
                        result.summary(),
                    )
                    return
                self._runners.pop(dtype, None)
                log.warning(
                    "%s differs from fp32 on %s (%s): using fp32",
                    runners.name_of(dtype),
                    self.device,
                    result.describe(),
                )
