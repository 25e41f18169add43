"""Which precisions a device is offered: bf16 on a CPU only where /proc/cpuinfo shows bf16
instructions, fp16 then bf16 on a GPU, and the runners that carry them out."""

from __future__ import annotations

import pytest
import torch

from common.nn import precision
from common.nn.model import Model, named_config
from common.nn.runner import Autocast, ReducedCopy, name_of, runner

X86 = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu sse2 avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 amx_tile
processor\t: 1
flags\t\t: fpu sse2 avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 amx_tile
"""
ZEN3 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx avx2 fma f16c vaes\n"
ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes sha2 crc32 bf16 i8mm sve\n"


def test_the_flags_are_read_from_cpuinfo():
    for text, machine, found in (
        (X86, "x86_64", "AVX-512 BF16"),
        (ZEN3, "x86_64", None),
        (ARM, "aarch64", "Arm BF16"),
        (ARM, "x86_64", None),  # Arm's feature name means nothing elsewhere
        ("flags : amx_bf16 avx512_bf16\n", "x86_64", "AMX"),
    ):
        assert precision.cpu_bf16(precision.parse_cpuinfo(text), machine) == found, text
    assert "avx2" in precision.parse_cpuinfo(ZEN3) and precision.parse_cpuinfo("") == frozenset()


def test_candidates(monkeypatch):
    monkeypatch.setattr(precision, "cpu_features", lambda: frozenset({"avx2"}))
    assert precision.candidates("auto", "cpu") == [] == precision.candidates("fp32", "cuda")
    assert precision.candidates("auto", "cuda") == ["fp16", "bf16"] == precision.candidates("auto", "mps")
    assert precision.candidates("bf16", "cpu") == ["bf16"]  # asked for: tried (slowly) and checked
    monkeypatch.setattr(precision, "cpu_features", lambda: frozenset({"avx512_bf16"}))
    assert precision.candidates("auto", "cpu") == ["bf16"]
    with pytest.raises(ValueError, match="precision 'fp8'"):
        precision.candidates("fp8", "cpu")


def test_runners():
    model = Model(named_config("tiny")).eval()
    cpu = torch.device("cpu")
    assert runner(model, cpu, None) is model
    copy = runner(model, cpu, torch.bfloat16)
    assert isinstance(copy, ReducedCopy) and copy.model is not model
    assert all(p.dtype == torch.bfloat16 for p in copy.parameters())
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the original is untouched
    x = torch.zeros(2, 22, 9, 9)
    x[:, 0] = 1.0
    with torch.inference_mode():
        out = copy(x, torch.zeros(2, 19), with_score_belief=False)
        ref = model(x, torch.zeros(2, 19), with_score_belief=False)
    assert out.policy.dtype == torch.bfloat16
    assert torch.allclose(out.value.float(), ref.value, atol=0.05)
    assert isinstance(runner(model, torch.device("meta"), torch.float16), Autocast)
    assert [name_of(d) for d in (None, torch.float16, torch.bfloat16)] == ["fp32", "fp16", "bf16"]
