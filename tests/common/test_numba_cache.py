"""numba's cache with several processes (``common.numba_cache``): every signature saved at once is in
the index and names its own data, and code loaded from the cache starts the threads it needs; and the
OpenMP threads of numba and torch sleep between passes."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.caching import IndexDataCacheFile

import common  # noqa: F401  (installs the locked save and the loads that keep their start-up)

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 4
KEYS = 40


def _save_many(folder: str, worker: int, barrier) -> None:
    # (a spawned process imports this module, and with it common, which installs the lock)
    cache = IndexDataCacheFile(folder, "kernel-f", "stamp")
    barrier.wait()
    for k in range(KEYS):
        cache.save(("sig", worker, k), f"code of {worker}/{k}")


def test_processes_saving_signatures_at_once_keep_each_its_own_data(tmp_path):
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    processes = [context.Process(target=_save_many, args=(str(tmp_path), w, barrier)) for w in range(PROCESSES)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(60)
        assert p.exitcode == 0
    cache = IndexDataCacheFile(str(tmp_path), "kernel-f", "stamp")
    index = cache._load_index()
    assert len(index) == PROCESSES * KEYS  # no save lost another's entry
    assert len(set(index.values())) == PROCESSES * KEYS  # each signature its own data file
    for w in range(PROCESSES):
        for k in range(KEYS):
            assert cache.load(("sig", w, k)) == f"code of {w}/{k}"


def test_the_save_is_the_locked_one():
    from common.numba_cache import _locked_save

    assert IndexDataCacheFile.save is _locked_save


PARALLEL_MODULE = """
import numpy as np
from numba import njit, prange

import common  # noqa: F401


@njit(cache=True, parallel=True)
def inner(a):
    for i in prange(a.shape[0]):
        a[i] += 1.0


@njit(cache=True)
def outer(a):
    inner(a)
    return a.sum()


if __name__ == "__main__":
    import sys

    a = np.zeros(64)
    print(inner(a) if sys.argv[1] == "inner" else outer(a))
"""


def test_a_cached_caller_of_a_parallel_kernel_starts_the_threads_it_needs(tmp_path):
    """A kernel that calls a parallel one, compiled in a process that found the parallel one in the
    cache, is cached together with the parallel code; a process that loads it before anything else
    parallel must start numba's threading layer first, or the code calls its scheduler through a null
    pointer."""
    (tmp_path / "parallel_module.py").write_text(PARALLEL_MODULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}

    def run(what: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(tmp_path / "parallel_module.py"), what],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )

    assert run("inner").returncode == 0  # caches inner
    assert run("outer").returncode == 0  # inner from the cache, outer compiled and cached
    third = run("outer")  # both from the cache, and nothing else has started the threads
    assert third.returncode == 0, f"exit {third.returncode}: {third.stderr[-2000:]}"
    assert float(third.stdout.split()[-1]) == 64.0
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "__pycache__").glob("*.nbi")) == [
        "parallel_module.inner",
        "parallel_module.outer",
    ]


@pytest.mark.parametrize("given, kept", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_sleep_between_passes_unless_told_otherwise(given, kept):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    code = "import common, os, sys; print(os.environ['OMP_WAIT_POLICY'], 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [kept, "False"]  # set before torch loads its runtime
