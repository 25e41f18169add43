"""What the client reads of an NVIDIA GPU through NVML (the ``nvidia-ml-py`` package): its
temperature, power draw and power limit, and the processes using it. :class:`GpuReading` is what
every reader gives, so that the policies of :mod:`client.contribute.gpuwatch` take readings from
anywhere (the tests inject theirs)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GpuReading:
    """One look at one GPU; a figure the card does not give is None."""

    temperature: float | None = None  # degrees Celsius, of the GPU's core
    power: float | None = None  # watts drawn
    power_limit: float | None = None  # watts, the limit the card enforces now
    processes: frozenset[int] = field(default_factory=frozenset)  # the ids of processes using it


class GpuReader(Protocol):
    def read(self, device: str) -> GpuReading | None:
        """The reading of ``device`` ("cuda:0"); None when it cannot be read."""
        ...


class NvmlReader:
    """Readings from NVML. :meth:`open` gives one, or the reason there is none."""

    def __init__(self, nvml, handles: dict[str, object]) -> None:
        self.nvml = nvml
        self.handles = handles  # by torch's device name
        self._failed: set[str] = set()

    @classmethod
    def open(cls, devices: list[str]) -> NvmlReader | str:
        """A reader of the CUDA devices among ``devices``, or why NVML cannot read them."""
        cuda = [d for d in devices if d.startswith("cuda")]
        if not cuda:
            return "no NVIDIA GPU is played on"
        try:
            import pynvml
        except ImportError:
            return "the nvidia-ml-py package is not installed (pip install nvidia-ml-py)"
        try:
            pynvml.nvmlInit()
            handles = {d: _handle(pynvml, d) for d in cuda}
        except pynvml.NVMLError as e:
            return f"NVML cannot be used: {e}"
        return cls(pynvml, handles)

    def read(self, device: str) -> GpuReading | None:
        handle = self.handles.get(device)
        if handle is None:
            return None
        nvml = self.nvml
        try:
            temperature = float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
            processes = frozenset(
                p.pid
                for get in (nvml.nvmlDeviceGetComputeRunningProcesses, nvml.nvmlDeviceGetGraphicsRunningProcesses)
                for p in get(handle)
            )
        except nvml.NVMLError as e:
            if device not in self._failed:  # said once: a card that cannot say it once rarely can later
                self._failed.add(device)
                log.warning("NVML cannot read %s: %s", device, e)
            return None
        return GpuReading(
            temperature=temperature,
            power=_optional(lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0, nvml.NVMLError),
            power_limit=_optional(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0, nvml.NVMLError),
            processes=processes,
        )


def _handle(nvml, device: str):
    """NVML's handle of torch's ``device``: by the GPU's UUID, since NVML numbers the cards in the
    order of their PCI buses and CUDA (by default) fastest first, and CUDA_VISIBLE_DEVICES renumbers
    them; by the number when torch cannot give the UUID."""
    index = int(device.partition(":")[2] or 0)
    try:
        import torch

        uuid = str(torch.cuda.get_device_properties(index).uuid)
        return nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except (AttributeError, RuntimeError, nvml.NVMLError):
        return nvml.nvmlDeviceGetHandleByIndex(index)


def _optional(read, error: type[Exception]) -> float | None:
    """A figure some cards do not give (the power of many laptops' GPUs)."""
    try:
        return float(read())
    except error:
        return None
