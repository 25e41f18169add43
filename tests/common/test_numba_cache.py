"""numba's cache with several processes saving at once (``common.numba_cache``): every signature saved
is in the index and names its own data."""

from __future__ import annotations

import multiprocessing

from numba.core.caching import IndexDataCacheFile

import common  # noqa: F401  (installs the locked save)

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


def _first_numbers(_) -> list[int]:
    from numba.core.bytecode import FunctionIdentity

    def f(x):
        return x

    return [FunctionIdentity.from_function(f).unique_id for _ in range(3)]


def test_each_process_numbers_its_compiled_functions_apart():
    """Compiled functions are named with these numbers: two processes that count alike could give one
    name to different code, which a third, loading both from the cache, would link together."""
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        first, second = pool.map(_first_numbers, range(2))
    assert first[1] == first[0] + 1 and second[1] == second[0] + 1  # in a process, one after another
    assert not set(first) & set(second) and min(first + second) > 1 << 20
