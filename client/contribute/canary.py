"""The worker's canary checks: does this device still compute what the network computes?

Before a network plays its first game on a device, and then again and again while it plays, the
worker evaluates it on the canary positions (:mod:`common.canary`) with the precision it plays
with, and holds the outputs against the reference the server computed on its CPU in fp32 (fetched
once per network; when the server has none yet, this client computes it on its own CPU in fp32, which
is slower but as honest). A CPU in fp32 must agree within KataGo's fp32 tolerance; reduced precision
and GPUs (whose fp32 convolutions may run in TF32) within its reduced-precision one. A failing check
in fp16 or bf16 first falls back to fp32, as the evaluator's own precision check does, and fails
only if fp32 fails too.

A failure raises :class:`Fatal` (kind ``CANARY``): the client ends with exit status 7 and a message
naming the network, the device, the precision and what differed by how much. The worker keeps its
finished games in the outbox's ``held/`` and moves a game to ``pending/`` only once a check of each of
its networks passed after the game ended, so nothing played since the last passing check is ever
uploaded; on a failure those games go to ``unchecked/``.

The checks repeat while games are held, each at most once every :data:`MIN_SECONDS` and at least
once every :data:`MAX_SECONDS`, spaced so that they take about 1% of the device's time
(:data:`SHARE`): on a GPU a check takes milliseconds and games wait seconds; a 19x19 network on a
CPU waits minutes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from client.contribute.tasks import CANARY, Fatal
from common import canary
from common.nn.canary import evaluate_canary
from common.nn.device import GPU_TYPES
from common.nn.runner import name_of

log = logging.getLogger(__name__)

MIN_SECONDS = 2.0
MAX_SECONDS = 3600.0
SHARE = 0.01


class CanaryGuard:
    """The canary checks of one worker's device. ``fetch(name)`` gives the server's reference (npz
    bytes) or None; its connection errors count as None (the client then computes the reference)."""

    def __init__(self, device: str, fetch: Callable[[str], bytes | None]) -> None:
        self.device = device
        self.fetch = fetch
        self.references: dict[str, tuple[canary.CanaryOutputs, str]] = {}
        self.passed_at: dict[str, float] = {}  # network -> when its last passing check began (time.time)
        self.last_check = 0.0  # time.monotonic() of the last round of checks
        self.last_seconds = 0.0  # how long it took
        self.not_before = 0.0  # time.time() before which no check vouches for a game (distrust)
        self._lock = threading.Lock()

    # --- the reference ------------------------------------------------------------------------------
    def reference(self, name: str, path: Path) -> tuple[canary.CanaryOutputs, str]:
        """The network's reference outputs and where they came from."""
        if name in self.references:
            return self.references[name]
        data = None
        try:
            data = self.fetch(name)
        except Exception as e:  # the server cannot be reached, or sent something wrong: computed here
            log.warning(
                "the server's canary reference of network %s could not be had (%s); computing it on this CPU", name, e
            )
        ref = None
        if data is not None:
            try:
                ref = (
                    canary.CanaryOutputs.from_npz(data, f"the server's canary reference of {name}"),
                    "the server's fp32 reference",
                )
            except ValueError as e:
                log.warning("%s; computing it on this CPU", e)
        if ref is None:
            ref = (self._compute(path), "this computer's CPU in fp32 (the server has no reference yet)")
        self.references[name] = ref
        return ref

    def _compute(self, path: Path) -> canary.CanaryOutputs:
        from client.evaluator import load_network

        started = time.perf_counter()
        outputs = evaluate_canary(load_network(path, "cpu").eval(), "cpu", None)
        log.info("canary reference of %s computed on the CPU in %.1f s", path.name, time.perf_counter() - started)
        return outputs

    # --- checking -----------------------------------------------------------------------------------
    def check(self, name: str, evaluator, path: Path) -> canary.CanaryResult:
        """Check the loaded network ``name`` (an Evaluator, from the file ``path``); Fatal(CANARY) when
        it fails in fp32 too. A failing reduced precision is turned off for the evaluator."""
        with self._lock:
            began = time.time()
            reference, source = self.reference(name, path)
            with evaluator._lock:  # between two batches of the games
                dtype = evaluator.dtype
                result = self._compare(evaluator, reference, dtype)
                if not result.passed and dtype is not None:
                    log.warning(
                        "network %s on %s in %s fails the canary check (%s); trying fp32",
                        name,
                        self.device,
                        name_of(dtype),
                        result.describe(),
                    )
                    fp32 = self._compare(evaluator, reference, None)
                    if fp32.passed:
                        evaluator.set_dtype(None)
                        log.warning(
                            "network %s on %s plays in fp32 from now on: it passes the canary check there",
                            name,
                            self.device,
                        )
                        result = fp32
            if not result.passed:
                tried = f"in {name_of(dtype)} and in fp32" if dtype is not None else f"in {name_of(dtype)}"
                raise Fatal(CANARY, failure_message(name, self.device, tried, source, result))
            first = name not in self.passed_at
            self.passed_at[name] = began
            log.log(
                logging.INFO if first else logging.DEBUG,
                "canary check of network %s on %s in %s passed (%s)",
                name,
                self.device,
                evaluator.precision,
                result.summary(),
            )
            return result

    def _compare(self, evaluator, reference: canary.CanaryOutputs, dtype) -> canary.CanaryResult:
        got = evaluator.canary_outputs(dtype)
        return canary.compare(reference, got, canary.tolerance_for(evaluator.device, dtype))

    def vouched(self, device: str, networks: tuple[str, ...], ended: float) -> bool:
        """Did a check of each network on this device pass after a game that ended at ``ended``
        (and after the last :meth:`distrust`)?"""
        after = max(ended, self.not_before)
        return device == self.device and all(self.passed_at.get(n, -1.0) > after for n in networks)

    def distrust(self, since: float) -> None:
        """Something may have gone wrong on the device at ``since`` (its GPU passed a limit): the
        games held now go out only after a check begun later, and the next round of checks is due
        at once."""
        self.not_before = max(self.not_before, since)
        self.last_check = 0.0

    def interval(self) -> float:
        """Seconds from one round of checks to the next."""
        return min(MAX_SECONDS, max(MIN_SECONDS, self.last_seconds / SHARE))


def failure_message(name: str, device: str, tried: str, source: str, result: canary.CanaryResult) -> str:
    """What a volunteer reads when the check fails: which network, device and precision, what differed
    by how much, and what to do."""
    advice = (
        "Update the GPU driver (and torch), check the GPU is not overheating or overclocked, or play on "
        "another device: --device cpu is slower but sure"
        if device.startswith(GPU_TYPES)
        else "Reinstall the client's packages (torch in particular) or try another computer"
    )
    return (
        f"network {name} on {device} {tried} does not compute what it should: on the canary positions its "
        f"{result.describe()}, against {source}. This device's games since its last passing check are not "
        f"uploaded (they are kept in the outbox's unchecked folder). {advice}; then start the client again"
    )
