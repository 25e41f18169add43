"""Training one network: the paper's optimiser and schedule (section 4.7), weight averaging, exports,
checkpoints, and several GPUs through DistributedDataParallel.

- SGD with momentum; the loss of Appendix B (:mod:`common.nn.loss`) averaged over the batch; the
  per-sample learning rate of :meth:`common.settings.TrainingSettings.learning_rate_at`, which on a
  batch-mean loss is a step size of that rate times the rows of the step (over every process); the L2
  penalty ``c |theta|^2`` as weight decay ``2c`` (see :mod:`common.nn.loss`); the gradient norm
  clipped at ``grad_clip``.
- Every ``snapshot_every`` samples the weights enter an exponential moving average with
  ``ema_decay`` (the paper's stochastic weight averaging); an export is that average, or the current
  weights before the first snapshot. Averaged weights come with batch-norm statistics that belong
  to other weights, so an export recomputes them on a few training batches (as SWA does).
- A checkpoint holds everything needed to continue bit for bit: weights, optimiser, average, sample
  counts, the random state, and whatever the caller adds (where it was in its data). It is written
  to a temporary file and renamed.
- A step whose gradient norm is not finite (a NaN or an infinity somewhere in the batch's loss) is
  skipped: the weights, the optimiser and the batch-norm statistics stay as they were, and the step
  is counted; ``MAX_NONFINITE_STEPS`` in a row end training with FloatingPointError. Weights that are
  not finite are never written to a checkpoint or exported.
- Under ``torchrun`` each process trains on its own batches with the same model; gradients are
  averaged by DistributedDataParallel; process 0 writes checkpoints and exports. The process group
  runs gloo for tensors on the CPU (the processes' flags and broadcasts) and NCCL for those on GPUs.
  :class:`Lockstep` keeps the processes' steps matched when one of them runs out of batches.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, replace

import torch
from torch import nn

from common.architecture import ModelConfig, named_config
from common.data.loader import Batch
from common.files import atomic_write
from common.nn.device import resolve_device
from common.nn.loss import LossWeights, Targets, compute_loss, targets_from_rows
from common.nn.model import MaskedBatchNorm, Model
from common.settings import TrainingSettings

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = "sente-checkpoint"
CHECKPOINT_VERSION = 1
NORM_BATCHES = 16  # training batches that recompute an export's batch-norm statistics
MAX_NONFINITE_STEPS = 8  # steps in a row with a non-finite gradient after which training stops


@dataclass
class TrainBatch:
    """A batch as tensors: the network's inputs and the loss's targets."""

    spatial: torch.Tensor
    global_inputs: torch.Tensor
    targets: Targets

    @property
    def size(self) -> int:
        return int(self.spatial.shape[0])

    def to(self, device: torch.device) -> TrainBatch:
        if self.spatial.device == device:
            return self
        non_blocking = device.type == "cuda"
        return TrainBatch(
            self.spatial.to(device, non_blocking=non_blocking),
            self.global_inputs.to(device, non_blocking=non_blocking),
            self.targets.to(device, non_blocking=non_blocking),
        )


def to_tensors(batch: Batch, pin: bool = False) -> TrainBatch:
    """A loader batch as CPU tensors (pinned for a fast copy to a GPU when ``pin``); runs in the
    loader's thread."""
    spatial = torch.from_numpy(batch.spatial)
    targets = targets_from_rows(batch.rows(), mask=batch.spatial[:, 0])
    tb = TrainBatch(spatial, torch.from_numpy(batch.global_inputs), targets)
    if pin:
        tb = TrainBatch(tb.spatial.pin_memory(), tb.global_inputs.pin_memory(), tb.targets.pin_memory())
    return tb


@dataclass(frozen=True)
class Distributed:
    """This process's place among ``torchrun``'s: ``rank`` of ``world`` (1: no distribution)."""

    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_environment(cls) -> Distributed:
        """Set up torch.distributed when started by torchrun (WORLD_SIZE > 1); see :func:`process_group_backend`."""
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return cls()
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group(backend=process_group_backend(torch.cuda.is_available()))
        return cls(rank=torch.distributed.get_rank(), world=torch.distributed.get_world_size())

    def device(self, requested: str | None) -> torch.device:
        """Process r of a multi-GPU run uses GPU LOCAL_RANK; otherwise the requested device."""
        if self.world > 1 and torch.cuda.is_available() and requested in (None, "cuda"):
            index = int(os.environ.get("LOCAL_RANK", self.rank))
            torch.cuda.set_device(index)
            return torch.device("cuda", index)
        return resolve_device(requested)

    def broadcast(self, value):
        """Process 0's value, in every process."""
        if self.world == 1:
            return value
        box = [value]
        torch.distributed.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        if self.world > 1:
            torch.distributed.barrier()

    def flags(self, *flags: bool) -> tuple[bool, ...]:
        """Whether each flag is set in any process, in one collective (every process must ask at the
        same point, with as many flags)."""
        if self.world == 1:
            return tuple(bool(f) for f in flags)
        value = torch.tensor([1 if f else 0 for f in flags], dtype=torch.int32)  # on the CPU: gloo
        torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.MAX)
        return tuple(bool(v) for v in value.tolist())

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is set in any process (every process must ask at the same point)."""
        return self.flags(flag)[0]

    def close(self) -> None:
        """End the process group, once this process needs it no more and ends normally (one left to the
        interpreter's exit may abort it: gloo's threads still hold tensors then). Not after a failure:
        a process still in a collective would wait for this one; torchrun ends them."""
        if self.world > 1 and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def process_group_backend(cuda: bool) -> str:
    """The backend torchrun's processes talk through: gloo on the CPU; with GPUs NCCL for the tensors on
    them (DistributedDataParallel's gradients) and gloo still for the CPU tensors of
    :meth:`Distributed.flags` and :meth:`Distributed.broadcast` (NCCL carries only GPU tensors)."""
    return "cpu:gloo,cuda:nccl" if cuda else "gloo"


class Lockstep:
    """``batches`` taken in step by every process: the iteration ends in all of them at the same step
    as soon as one process has no batch left or any is asked to ``stop`` (a process that read fewer
    batches, say because a file could not be read, would otherwise leave the others waiting in a
    collective). ``stopped`` tells afterwards whether a stop ended it."""

    def __init__(self, distributed: Distributed, batches: Iterable, stop: Callable[[], bool]) -> None:
        self.distributed = distributed
        self.batches = batches
        self.stop = stop
        self.stopped = False

    def __iter__(self) -> Generator:
        end = object()
        items = iter(self.batches)
        try:
            while True:
                batch = next(items, end)
                stop, ended = self.distributed.flags(self.stop(), batch is end)
                if stop:
                    self.stopped = True
                    return
                if ended:
                    return
                yield batch
        finally:
            close = getattr(items, "close", None)
            if close is not None:  # a generator of batches: ends its reader thread
                close()


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used; the message names the file and the problem."""


def _norms(model: nn.Module) -> list[MaskedBatchNorm]:
    return [m for m in model.modules() if isinstance(m, MaskedBatchNorm)]


def first_nonfinite(tensors: dict[str, torch.Tensor] | None) -> str | None:
    """The name of the first floating-point tensor holding a NaN or an infinity, or None."""
    for name, value in (tensors or {}).items():
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            return name
    return None


def loss_weights(settings: TrainingSettings) -> LossWeights:
    """The loss terms' weights a run's training settings ask for: without the ownership and score
    targets, the ownership, score belief, lead, score self-prediction and short-term score terms weigh 0."""
    if settings.ownership_score_targets:
        return LossWeights()
    return replace(
        LossWeights(), ownership_scale=0.0, w_spdf=0.0, w_scdf=0.0, w_lead=0.0, w_sbreg=0.0, w_sts=0.0, w_stse=0.0
    )


class Trainer:
    """Trains one network of ``architecture`` (a named size) with ``settings``; see the module docstring."""

    def __init__(
        self,
        architecture: str,
        settings: TrainingSettings,
        device: torch.device | str | None = None,
        distributed: Distributed | None = None,
        seed: int = 0,
        config: ModelConfig | None = None,
        weights: LossWeights | None = None,
    ) -> None:
        self.architecture = architecture
        self.settings = settings
        self.distributed = distributed or Distributed()
        self.device = resolve_device(device)
        self.config = config or named_config(architecture)
        self.given_weights = weights
        self.weights = weights or loss_weights(settings)
        torch.manual_seed(seed)
        self.model = Model(self.config).to(self.device).train()
        self.module: nn.Module = self.model
        if self.distributed.world > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.module = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.optimizer = torch.optim.SGD(
            self.model.parameters(),
            lr=settings.learning_rate,
            momentum=settings.momentum,
            weight_decay=2.0 * settings.l2,
        )
        self.samples = 0  # training samples seen, over every process
        self.steps = 0
        self.skipped_steps = 0  # steps left out for a non-finite gradient
        self.nonfinite_in_a_row = 0
        self.snapshots = 0
        self.average: dict[str, torch.Tensor] | None = None
        self.next_snapshot = settings.snapshot_every
        self.next_export = settings.export_every

    def use_settings(self, settings: TrainingSettings) -> None:
        """Train on with changed settings (the run's newest version)."""
        self.settings = settings
        self.weights = self.given_weights or loss_weights(settings)
        for group in self.optimizer.param_groups:
            group["momentum"] = settings.momentum
            group["weight_decay"] = 2.0 * settings.l2

    # --- training --------------------------------------------------------------------------------------
    def learning_rate(self) -> float:
        return self.settings.learning_rate_at(self.samples, self.architecture)

    def step(self, batch: TrainBatch) -> dict[str, float]:
        """One optimiser step on ``batch`` (this process's share); returns the loss terms and the
        total, the gradient norm before clipping, the learning rate per sample and ``skipped`` (1.0
        when the gradient norm was not finite and the step was left out: then only the norm and the
        rate are there). FloatingPointError after ``MAX_NONFINITE_STEPS`` such steps in a row."""
        batch = batch.to(self.device)
        rows = batch.size * self.distributed.world
        per_sample = self.learning_rate()
        for group in self.optimizer.param_groups:
            group["lr"] = per_sample * rows
        self.module.train()
        buffers = [b.detach().clone() for b in self.model.buffers()]  # a forward pass moves the norms' statistics
        out = self.module(batch.spatial, batch.global_inputs)
        loss, terms = compute_loss(out, batch.targets, self.weights)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        # Under DistributedDataParallel the gradients are averaged over the processes by now, so every
        # process finds the same norm and skips the same steps.
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.settings.grad_clip)
        values = torch.stack([norm.detach(), loss.detach(), *terms.values()]).tolist()  # one wait for the device
        grad_norm = values[0]
        if not math.isfinite(grad_norm):
            return self._skip(grad_norm, per_sample, buffers)
        self.nonfinite_in_a_row = 0
        self.optimizer.step()
        self.samples += rows
        self.steps += 1
        while self.samples >= self.next_snapshot:
            self.snapshot()
            self.next_snapshot += self.settings.snapshot_every
        result = {"loss": values[1], "grad_norm": grad_norm, "learning_rate": per_sample, "skipped": 0.0}
        result.update(zip(terms, values[2:], strict=True))
        return result

    def _skip(self, grad_norm: float, per_sample: float, buffers: list[torch.Tensor]) -> dict[str, float]:
        """Leave out a step whose gradient is not finite: gradients dropped, the batch-norm statistics
        its forward pass moved put back."""
        self.optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            for buffer, kept in zip(self.model.buffers(), buffers, strict=True):
                buffer.copy_(kept)
        self.skipped_steps += 1
        self.nonfinite_in_a_row += 1
        log.warning(
            "%s: step left out at %d samples: the gradient norm is %s (%d such steps in a row, %d in all)",
            self.architecture,
            self.samples,
            grad_norm,
            self.nonfinite_in_a_row,
            self.skipped_steps,
        )
        if self.nonfinite_in_a_row >= MAX_NONFINITE_STEPS:
            raise FloatingPointError(
                f"{self.architecture}: the gradient norm was not finite in {self.nonfinite_in_a_row} steps in a row "
                f"at {self.samples} samples; the weights are those before them. Look for rows with extreme values "
                "in the window, or lower the learning rate"
            )
        return {"grad_norm": grad_norm, "learning_rate": per_sample, "skipped": 1.0}

    def snapshot(self) -> None:
        """Move the weight average towards the current weights (the first snapshot starts it)."""
        current = self.model.state_dict()
        if self.average is None:
            self.average = {k: v.detach().clone() for k, v in current.items()}
        else:
            decay = self.settings.ema_decay
            for k, v in current.items():
                if v.is_floating_point():
                    self.average[k].mul_(decay).add_(v.detach(), alpha=1.0 - decay)
                else:
                    self.average[k].copy_(v)
        self.snapshots += 1

    @property
    def export_due(self) -> bool:
        return self.samples >= self.next_export

    def exported(self) -> None:
        """Note an export: the next is due ``export_every`` samples later."""
        while self.samples >= self.next_export:
            self.next_export += self.settings.export_every

    # --- what gets exported and measured -------------------------------------------------------------------
    def export_model(self, norm_batches: Iterable[TrainBatch] = ()) -> Model:
        """The network to export, in eval mode: the weight average (the current weights before the
        first snapshot), with batch-norm statistics recomputed on ``norm_batches`` when given."""
        model = Model(self.config, initialize=False).to(self.device)
        model.load_state_dict(self.average if self.average is not None else self.model.state_dict())
        recompute_norm_statistics(model, norm_batches, self.device)
        bad = first_nonfinite(model.state_dict())
        if bad is not None:
            raise FloatingPointError(
                f"{self.architecture}: the export at {self.samples} samples is not finite "
                f"(tensor {bad}); it is not exported"
            )
        return model.eval()

    # --- checkpoints -----------------------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "format": CHECKPOINT_FORMAT,
            "version": CHECKPOINT_VERSION,
            "architecture": self.architecture,
            "config": self.config.to_dict(),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "average": self.average,
            "samples": self.samples,
            "steps": self.steps,
            "snapshots": self.snapshots,
            "next_snapshot": self.next_snapshot,
            "next_export": self.next_export,
            "skipped_steps": self.skipped_steps,
            "torch_rng": torch.get_rng_state(),
        }

    def save_checkpoint(self, path: str | os.PathLike, extra: dict | None = None) -> None:
        """Write the trainer's state (and ``extra``, plain data) to ``path`` atomically (process 0 only)."""
        if not self.distributed.main:
            return
        bad = first_nonfinite(self.model.state_dict()) or first_nonfinite(self.average)
        if bad is not None:
            raise FloatingPointError(
                f"{self.architecture}: the weights at {self.samples} samples are not finite "
                f"(tensor {bad}); the checkpoint {path} is left as it was"
            )
        state = self.state()
        state["extra"] = extra or {}
        atomic_write(path, lambda f: torch.save(state, f))
        log.info("checkpoint of %s at %d samples written to %s", self.architecture, self.samples, path)

    def load_checkpoint(self, path: str | os.PathLike, state: dict | None = None) -> dict:
        """Continue from a checkpoint; returns the ``extra`` it was saved with. ``state``: its contents
        as :func:`read_checkpoint` returned them (so that a caller that read them does not read the
        file again)."""
        if state is None:
            state = read_checkpoint(path, self.device)
        if state["config"] != self.config.to_dict():
            raise CheckpointError(
                f"checkpoint {path}: its network is {state['architecture']} with another "
                f"configuration than this trainer's {self.architecture}"
            )
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])  # moves its state to the weights' device
        average = state["average"]
        self.average = {k: v.to(self.device) for k, v in average.items()} if average is not None else None
        self.samples, self.steps, self.snapshots = state["samples"], state["steps"], state["snapshots"]
        self.next_snapshot, self.next_export = state["next_snapshot"], state["next_export"]
        self.skipped_steps = state.get("skipped_steps", 0)
        self.nonfinite_in_a_row = 0
        torch.set_rng_state(state["torch_rng"].cpu())
        return state.get("extra", {})

    def start_from(self, state_dict: dict[str, torch.Tensor], samples: int) -> None:
        """Continue from exported weights (when no checkpoint survived): the optimiser starts afresh."""
        self.model.load_state_dict(state_dict)
        self.samples = samples
        self.average = None
        settings = self.settings
        self.next_snapshot = (samples // settings.snapshot_every + 1) * settings.snapshot_every
        self.next_export = (samples // settings.export_every + 1) * settings.export_every


def read_checkpoint(path: str | os.PathLike, device: torch.device | str = "cpu") -> dict:
    """A checkpoint's contents (:meth:`Trainer.state` and ``extra``); CheckpointError names the file
    and what is wrong with it."""
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except FileNotFoundError:
        raise
    except Exception as e:
        message = str(e).splitlines()[0] if str(e) else ""
        raise CheckpointError(
            f"checkpoint {path}: cannot be read ({type(e).__name__}: {message[:200]}); "
            "move it away to start from the line's last export"
        ) from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"checkpoint {path}: not a {CHECKPOINT_FORMAT} file")
    if state.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"checkpoint {path}: version {state.get('version')}, this trainer reads {CHECKPOINT_VERSION}"
        )
    return state


@torch.no_grad()
def recompute_norm_statistics(model: Model, batches: Iterable[TrainBatch], device: torch.device) -> int:
    """Set every batch norm's running mean and variance to their averages over ``batches`` (forward
    passes in training mode, weights unchanged); returns the batches used (0 leaves them as they were)."""
    norms = _norms(model)
    kept = [(m.momentum, m.running_mean.clone(), m.running_var.clone()) for m in norms]
    used = 0
    model.train()
    try:
        for batch in batches:
            batch = batch.to(device)
            used += 1
            for m in norms:
                m.momentum = 1.0 / used  # a running average of the per-batch statistics
            model(batch.spatial, batch.global_inputs, with_score_belief=False)
    finally:
        for m, (momentum, mean, var) in zip(norms, kept, strict=True):
            m.momentum = momentum
            if used == 0:
                m.running_mean.copy_(mean)
                m.running_var.copy_(var)
        model.eval()
    return used


@torch.no_grad()
def evaluate(
    model: Model, batches: Iterable[TrainBatch], device: torch.device, weights: LossWeights | None = None
) -> dict[str, float]:
    """The loss terms of ``model`` (eval mode) averaged over every row of ``batches``, with ``rows``."""
    model.eval()
    sums: dict[str, float] = {}
    rows = 0
    for batch in batches:
        batch = batch.to(device)
        loss, terms = compute_loss(model(batch.spatial, batch.global_inputs), batch.targets, weights)
        n = batch.size
        rows += n
        for name, value in {"loss": loss, **terms}.items():
            sums[name] = sums.get(name, 0.0) + float(value) * n
    if rows == 0:
        return {"rows": 0}
    return {"rows": rows, **{name: total / rows for name, total in sums.items()}}
