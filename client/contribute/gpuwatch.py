"""How the client keeps its GPUs within the volunteer's limits and out of the owner's way.

* **Heat and power** (``--max-temperature``, ``--max-power``): a GPU above a limit, over the
  readings of :data:`STEP_SECONDS`, plays half the games at once, then a quarter, then none (its
  worker pauses); one back under the limits with a margin (:data:`TEMPERATURE_MARGIN` degrees,
  :data:`POWER_MARGIN` of the watts) for as long plays twice as many again, up to all of them. A
  card's temperature follows its load within seconds to a minute, so a step waits that long for
  the last one to show. Each step down asks the GPU's worker for a canary check at once: the games
  it holds go out only after a check that began after the step passed (a hot card makes bad data).
* **The owner first** (``--pause-when-busy``): while another program uses the GPU (NVML's list of
  its processes, less the client's own), its worker pauses; it plays again once the GPU has been
  free for :data:`FREE_SECONDS`.

A GPU that cannot be read (its driver was reset, say) keeps its games at once for
:data:`UNREAD_SECONDS`, then plays all of them again, saying that its limits cannot act: a
volunteer's GPU is never held for good by readings that stopped.

The policies are arithmetic on readings (:class:`~client.contribute.nvml.GpuReading`) and the
caller's clock; :class:`GpuWatch` reads the GPUs through a reader (NVML's, or the tests'), sets each
worker's share of its games at once in :class:`~client.contribute.worker.Control`, and says what it
sees in the status.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from client.contribute.nvml import GpuReader, GpuReading

log = logging.getLogger(__name__)

SHARES = (1.0, 0.5, 0.25, 0.0)  # the steps of the games at once; 0: paused
STEP_SECONDS = 20.0  # the shortest time between two steps of one GPU
TEMPERATURE_MARGIN = 5.0  # degrees under --max-temperature before playing more again
POWER_MARGIN = 0.9  # the share of --max-power to be under before playing more again
FREE_SECONDS = 10.0  # how long the GPU must be free of other programs before play resumes
LOOK_SECONDS = 2.0  # how often the GPUs are read
UNREAD_SECONDS = 60.0  # how long a GPU held by its limits stays held while it cannot be read


def parse_power(text: str) -> tuple[float, bool]:
    """``"200"`` (watts) or ``"80%"`` (of the card's power limit): (the number, whether a share)."""
    text = text.strip()
    share = text.endswith("%")
    try:
        value = float(text[:-1] if share else text.removesuffix("W").removesuffix("w"))
    except ValueError:
        raise ValueError(f"{text!r} is not watts (200) or a share of the card's limit (80%)") from None
    if share and not 0 < value <= 100:
        raise ValueError(f"{text!r}: a share of the card's limit is above 0% and at most 100%")
    if not share and not 0 < value < math.inf:
        raise ValueError(f"{text!r}: the watts must be above 0")
    return value, share


def parse_temperature(value: object) -> float:
    try:
        degrees = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a temperature in degrees Celsius (83)") from None
    if isinstance(value, bool) or not 30 <= degrees <= 120:
        raise ValueError(f"{value!r}: a GPU's temperature limit is between 30 and 120 degrees Celsius")
    return degrees


@dataclass
class HeatGuard:
    """The games at once of one GPU under the limits (either may be None): :attr:`level` indexes
    :data:`SHARES`."""

    max_temperature: float | None = None
    max_power: str | None = None  # as the volunteer gave it: "200" or "80%"
    level: int = 0
    since: float | None = None  # when the current step began (the first reading, at first)

    def __post_init__(self) -> None:
        self._power = parse_power(self.max_power) if self.max_power else None
        self._readings: list[GpuReading] = []

    def watts(self, reading: GpuReading) -> float | None:
        """The power limit in watts for this card (a share needs the card's own limit)."""
        if self._power is None:
            return None
        value, share = self._power
        if not share:
            return value
        return None if reading.power_limit is None else reading.power_limit * value / 100.0

    def observe(self, reading: GpuReading, now: float) -> int:
        """Take a reading: -1 when the GPU steps down (fewer games), +1 up, 0 when it stays."""
        if self.since is None:
            self.since = now
        self._readings.append(reading)
        if now - self.since < STEP_SECONDS:
            return 0
        temperature = _mean(r.temperature for r in self._readings)
        power = _mean(r.power for r in self._readings)
        watts = self.watts(reading)
        self._readings.clear()
        self.since = now
        hot = (self.max_temperature is not None and temperature is not None and temperature > self.max_temperature) or (
            watts is not None and power is not None and power > watts
        )
        cool = (
            self.max_temperature is None
            or temperature is None
            or temperature <= self.max_temperature - TEMPERATURE_MARGIN
        ) and (watts is None or power is None or power <= watts * POWER_MARGIN)
        if hot and self.level < len(SHARES) - 1:
            self.level += 1
            return -1
        if cool and not hot and self.level > 0:
            self.level -= 1
            return 1
        return 0

    @property
    def share(self) -> float:
        return SHARES[self.level]


@dataclass
class BusyGuard:
    """Is another program using the GPU (and until the GPU has been free for FREE_SECONDS)?"""

    busy: bool = False
    free_since: float | None = None

    def observe(self, others: int, now: float) -> bool:
        if others:
            self.busy, self.free_since = True, None
        elif self.busy:
            if self.free_since is None:
                self.free_since = now
            if now - self.free_since >= FREE_SECONDS:
                self.busy, self.free_since = False, None
        return self.busy


def others_on(reading: GpuReading, ours: set[int], workers_here: int) -> int:
    """How many processes of other programs use the GPU. Inside a container NVML gives the host's
    process ids, none of which is one of ours: then the processes beyond this GPU's workers count."""
    if reading.processes & ours:
        return len(reading.processes - ours)
    return max(0, len(reading.processes) - workers_here)


def describe(reading: GpuReading) -> str:
    """'71 °C, 183 of 250 W'."""
    parts = []
    if reading.temperature is not None:
        parts.append(f"{reading.temperature:.0f} °C")
    if reading.power is not None:
        parts.append(
            f"{reading.power:.0f} of {reading.power_limit:.0f} W"
            if reading.power_limit is not None
            else f"{reading.power:.0f} W"
        )
    return ", ".join(parts) or "no readings"


class GpuWatch:
    """The GPUs of the workers (``devices``: worker index to device) read every LOOK_SECONDS; each
    worker's share of its games at once set through ``control``; what it sees put in
    ``status.gpus``. ``ours()`` gives the client's process ids."""

    def __init__(
        self,
        reader: GpuReader,
        devices: dict[int, str],
        control,
        status,
        ours: Callable[[], set[int]],
        max_temperature: float | None = None,
        max_power: str | None = None,
        pause_when_busy: bool = False,
    ) -> None:
        self.reader = reader
        self.devices = {i: d for i, d in devices.items() if d.startswith("cuda")}
        self.control = control
        self.status = status
        self.ours = ours
        self.pause_when_busy = pause_when_busy
        self.heat = {i: HeatGuard(max_temperature, max_power) for i in self.devices}
        self.busy = {i: BusyGuard() for i in self.devices}
        self.workers_on = Counter(self.devices.values())  # the client's workers on each GPU
        self.last_read: dict[int, float | None] = {i: None for i in self.devices}  # when each GPU was last read
        self.last_look: float | None = None

    def look(self, now: float) -> None:
        if self.last_look is not None and now - self.last_look < LOOK_SECONDS:
            return
        self.last_look = now
        ours = self.ours()
        for index, device in self.devices.items():
            reading = self.reader.read(device)
            if reading is None:
                self._unread(index, device, now)
                continue
            self.last_read[index] = now
            heat = self.heat[index]
            step = heat.observe(reading, now)
            if step < 0:
                log.warning("%s is over its limit (%s): %s", device, describe(reading), _share_words(heat.share))
                self.control.recheck(index)
            elif step > 0:
                log.warning(
                    "%s is within its limits again (%s): %s", device, describe(reading), _share_words(heat.share)
                )
            busy = False
            if self.pause_when_busy:
                was = self.busy[index].busy
                busy = self.busy[index].observe(others_on(reading, ours, self.workers_on[device]), now)
                if busy != was:
                    log.warning(
                        "another program uses %s: its games wait" if busy else "%s is free again: playing", device
                    )
            self.control.set_share(index, 0.0 if busy else heat.share)
            words = describe(reading)
            if busy:
                words += "; paused: another program uses it"
            elif heat.level:
                words += f"; over its limit: {_share_words(heat.share)}"
            self.status.gpus[index] = words

    def _unread(self, index: int, device: str, now: float) -> None:
        since = self.last_read[index]
        if since is None:
            self.last_read[index] = since = now
        held = self.heat[index].level or self.busy[index].busy
        if held and now - since >= UNREAD_SECONDS:
            log.warning(
                "%s cannot be read for %.0f s: its limits cannot act; it plays all its games", device, now - since
            )
            self.heat[index] = HeatGuard(self.heat[index].max_temperature, self.heat[index].max_power)
            self.busy[index] = BusyGuard()
            self.control.set_share(index, 1.0)
        self.status.gpus[index] = "cannot be read"


def _share_words(share: float) -> str:
    if share == 0:
        return "paused until it cools"
    if share == 1:
        return "all its games at once"
    return f"{share:.0%} of its games at once"


def _mean(values) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None
