"""``--parallel auto`` (the default): the games a worker plays at once, measured on its own device.

More games at once make larger batches for the network, and a GPU computes a batch of 256 in little
more time than one of 16; past some size it is busy all the time and more games only wait longer
for their turn (and hold more memory). Where that size lies depends on the card, the network's size
and the board: a small card with a large network has its best speed at a few dozen, a large card
with a small network at hundreds.

So the first time a worker plays a network of a given size on a board of a given size on its
device, it plays self-play for :data:`SECONDS_EACH` seconds at each of the counts of
:data:`CANDIDATES` in turn (from the smallest, once warmed up) and takes the count past which the
evaluations per second stop rising: the first whose next count brings less than :data:`RISE`
times as many (or the last that fits in the device's memory). The measurement (a quarter of a
minute to a minute, its games thrown away) is kept in the data folder (``parallel/``, one file per
device and size) and used from then on; a network of another size, or another board, is measured
anew. The random network, which needs no evaluation, is not measured: it plays at the default
count.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from common.files import atomic_write

log = logging.getLogger(__name__)

CANDIDATES = {"gpu": (16, 32, 64, 128, 256, 512, 1024), "cpu": (4, 8, 16, 32, 64, 128, 256)}
SECONDS_EACH = {"gpu": 4.0, "cpu": 6.0}
WARM_SECONDS = 2.0  # first, at the smallest count: the network's first batches are slow
RISE = 1.05  # a count is worth it if it brings 5% more evaluations per second than the one before


def choose(rates: dict[int, float]) -> int | None:
    """The count past which the evaluations per second (``rates``, by count) stop rising; None when
    they still rise at the largest one measured (measure a larger one)."""
    counts = sorted(rates)
    for here, after in itertools.pairwise(counts):
        if rates[after] < RISE * rates[here]:
            return here
    return None


def measure(rate_at: Callable[[int, float], float], candidates: Sequence[int], seconds: float) -> tuple[int, dict]:
    """Measure ``rate_at(count, seconds)`` (evaluations per second) from the smallest count up, until
    they stop rising: the count chosen and every rate measured."""
    rate_at(candidates[0], WARM_SECONDS)
    rates: dict[int, float] = {}
    for count in candidates:
        try:
            rates[count] = rate_at(count, seconds)
        except (RuntimeError, MemoryError) as e:  # out of the device's memory (torch's is a RuntimeError)
            if not rates:
                raise
            log.info("%d games at once do not fit (%s): %d it is", count, str(e).splitlines()[0][:200], max(rates))
            return max(rates), rates
        log.info("%d games at once: %.0f evaluations/s", count, rates[count])
        chosen = choose(rates)
        if chosen is not None:
            return chosen, rates
    return max(rates), rates  # still rising at the largest: the largest


def selfplay_rate(evaluator, settings) -> Callable[[int, float], float]:
    """The evaluations per second of self-play with ``evaluator`` and ``settings`` at a count."""
    from client.selfplay.run import run_selfplay

    def rate_at(count: int, seconds: float) -> float:
        with tempfile.TemporaryDirectory(prefix="sente-parallel-") as out:
            summary = run_selfplay(
                evaluator, settings, 1 << 20, count, out, progress=False, time_limit=seconds, seed=count
            )
        return summary.nn_evals / max(summary.seconds, 1e-9)

    return rate_at


def device_model(device: str, cores: int | None = None) -> str:
    """What the device is, as far as its speed goes: the GPU's name, or the CPU and its cores."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(int(device.partition(":")[2] or 0))
    if device == "mps":
        return f"Apple GPU ({platform.machine()})"
    return f"{platform.processor() or platform.machine()} CPU, {cores or os.cpu_count()} cores"


def size_key(model: str, network_config: dict, board: int) -> str:
    """The key of a measurement: the device's model, the network's architecture and the board."""
    text = json.dumps({"device": model, "network": network_config, "board": board}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class ParallelCache:
    """The measurements, one file each in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> int | None:
        try:
            data = json.loads((self.folder / f"{key}.json").read_text())
            count = int(data["parallel"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # none yet, or a file that is not one: measured again
        return count if count >= 1 else None

    def put(self, key: str, count: int, rates: dict[int, float], what: dict) -> None:
        record = {**what, "parallel": count, "evals_per_second": {str(k): round(v, 1) for k, v in rates.items()}}
        record["measured"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        atomic_write(self.folder / f"{key}.json", (json.dumps(record, indent=2) + "\n").encode())


def games_at_once(
    cache: ParallelCache,
    device: str,
    cores: int | None,
    evaluator,
    settings,
    rate_at: Callable[[int, float], float] | None = None,
) -> int | None:
    """The count for this device, network and board: kept, or measured now (None for the random
    network, which is not measured)."""
    config = getattr(getattr(evaluator, "model", None), "config", None)
    if config is None:
        return None
    board = max(settings.board_sizes)
    model = device_model(device, cores)
    key = size_key(model, config.to_dict(), board)
    kept = cache.get(key)
    if kept is not None:
        return kept
    kind = "cpu" if device == "cpu" else "gpu"
    log.info(
        "measuring the best number of games at once on %s (%s) for this network on %dx%d", device, model, board, board
    )
    started = time.monotonic()
    count, rates = measure(rate_at or selfplay_rate(evaluator, settings), CANDIDATES[kind], SECONDS_EACH[kind])
    log.info(
        "%d games at once on %s: evaluations per second stop rising there (measured in %.0f s; kept in %s)",
        count,
        device,
        time.monotonic() - started,
        cache.folder,
    )
    cache.put(
        key,
        count,
        rates,
        {"device": model, "board": board, "blocks": len(config.blocks), "channels": config.trunk_channels},
    )
    return count
