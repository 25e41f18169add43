"""The precisions the network can run in, and which ones a device does fast (no torch here: the
command line names them before anything loads torch; :mod:`common.nn.runner` runs them).

On a GPU a reduced precision (fp16, bf16) runs under autocast. On the CPU torch does bf16 quickly
only on processors with bf16 instructions (x86's AVX-512 BF16 or AMX, Arm's BF16); elsewhere it
converts every value to fp32 and back, and is several times slower than fp32 (four times in
compiled self-play on an AMD EPYC with AVX2 only, twenty uncompiled). ``auto`` tries fp16 then
bf16 on a GPU, bf16 on a CPU that has bf16 instructions, and nothing else; the evaluator keeps the
first one whose outputs agree with fp32's on the canary positions.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

PRECISIONS = ("auto", "fp32", "fp16", "bf16")
GPU_TYPES = ("cuda", "mps")  # devices whose reduced precision is checked against fp32 before use

# The processor features that make bf16 arithmetic fast, by the names Linux's /proc/cpuinfo gives
# them: x86's AMX and AVX-512 BF16, Arm's BF16 extension.
CPU_BF16_FEATURES = {"amx_bf16": "AMX", "avx512_bf16": "AVX-512 BF16", "bf16": "Arm BF16"}
CPUINFO = Path("/proc/cpuinfo")


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    return precision


@functools.lru_cache(maxsize=1)
def cpu_features() -> frozenset[str]:
    """This processor's feature flags as Linux lists them; empty where there is no /proc/cpuinfo
    (other systems: bf16 is then never assumed)."""
    try:
        return parse_cpuinfo(CPUINFO.read_text())
    except OSError:
        return frozenset()


def parse_cpuinfo(text: str) -> frozenset[str]:
    """The feature flags in /proc/cpuinfo's text (x86's ``flags``, Arm's ``Features``)."""
    found: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            found.update(value.split())
    return frozenset(found)


def cpu_bf16(features: frozenset[str] | None = None, machine: str | None = None) -> str | None:
    """The instructions that give this CPU fast bf16 (AMX, AVX-512 BF16, Arm BF16), or None."""
    have = cpu_features() if features is None else features
    arm = (machine or platform.machine()).lower() in ("aarch64", "arm64")
    for flag, name in CPU_BF16_FEATURES.items():
        if flag in have and (flag != "bf16" or arm):
            return name
    return None


def candidates(precision: str, device_type: str) -> list[str]:
    """The reduced precisions to try, in order, for ``precision`` on a device of ``device_type``
    (cpu, cuda, mps); empty: fp32."""
    check_precision(precision)
    if precision in ("fp16", "bf16"):
        return [precision]
    if precision == "fp32":
        return []
    if device_type in GPU_TYPES:
        return ["fp16", "bf16"]
    return ["bf16"] if device_type == "cpu" and cpu_bf16() else []
