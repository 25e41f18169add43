"""Each numba kernel compiles once per set of argument types, not once more for every memory layout
its arrays come in: a search lane's scratch rows have the layout of a root's rows and of a single
scratch, so the kernels both call (playing a move, encoding a position, reading a ladder) compile
once. A second layout costs a volunteer's first start (and a clean checkout's tests) the whole
compile of the kernel and of everything it calls again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.kernels

# After the warm-up's games (a GTP game, self-play and a match, a network's evaluation and a scored
# game) and a search in two lanes, the kernels of this code with two signatures equal but for layout.
PROBE = """
import json, re, sys
from numba.core.registry import CPUDispatcher
from tests import warmup
from client.search.engine import BatchedSearch, NullEvaluator
from common.go.game import Game
from common.settings import SearchSettings

warmup.main([])
search = BatchedSearch(NullEvaluator(), 2, 16, 2, threads=2)
for i in range(2):
    search.start(i, Game(7), 16, SearchSettings())
search.run()

def layout_free(sig):
    return re.sub(r"(\\d+d), A\\)", r"\\1, C)", str(sig)).replace("'A'", "'C'")

twice = {}
for name, module in list(sys.modules.items()):
    if not name.startswith(("client.", "common.")):
        continue
    for value in vars(module).values():
        if isinstance(value, CPUDispatcher) and value.py_func.__module__ == name:
            seen = {}
            for sig in value.signatures:
                seen.setdefault(layout_free(sig), []).append(str(sig))
            for sigs in seen.values():
                if len(sigs) > 1:
                    twice[f"{name}.{value.py_func.__name__}"] = sigs
print(json.dumps(twice))
"""


def test_no_kernel_compiles_twice_for_the_layout_of_its_arrays():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=900, check=True
    ).stdout
    twice = json.loads(out.strip().splitlines()[-1])
    assert not twice, "\n".join(f"{k}:\n  " + "\n  ".join(v) for k, v in twice.items())
