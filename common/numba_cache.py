"""numba's on-disk cache made safe for several processes that fill and load it.

First, the index: numba keeps a function's compiled signatures in one index file (``NAME.nbi``) that
names a data file per signature (``NAME.1.nbc``, ``NAME.2.nbc``, ...). Saving a new signature reads
the index, takes the first free number, writes the index and then the data, with no lock: two
processes that compile different signatures of one function at the same time both take number 1, and
the index of one ends up naming the data file of the other. A later process then loads machine code
made for other argument types, and crashes. That happens when a volunteer's client starts one worker
per GPU on a fresh install, when the platform's processes start together, and in the test run's
warm-up.

:func:`install` replaces that save with one that holds an exclusive lock on a file in the cache
folder (the ``filelock`` package's, on every platform) while it reads the index, writes the data
file, and then the index: every number names one signature's data, and an index never names a file
that is not written yet. Loading needs no lock: both files are replaced
atomically.

Second, the start-up of numba's threads: a parallel kernel's code calls numba's scheduler, whose
symbols exist once the threading layer is started. A compiled kernel carries the functions to run
before its code is loaded (``reload_init``), and a caller inherits them from the libraries it links,
but a library loaded from the cache comes back without them: a kernel that calls a cached parallel
kernel is then cached without the start-up, and a process that loads it before running anything
else parallel calls the scheduler through a null pointer. :func:`install` hands a loaded library its
kernel's start-up functions again.

``common`` installs both on import, before any kernel is compiled.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import logging
import os

from filelock import FileLock
from numba.core import caching, compiler

log = logging.getLogger(__name__)

LOCK_NAME = ".numba-cache.lock"


@contextlib.contextmanager
def cache_lock(folder: str):
    """An exclusive lock on ``folder``'s lock file while the block runs (filelock's: ``flock`` on
    POSIX, ``msvcrt.locking`` on Windows); none where the folder takes no file."""
    lock = FileLock(os.path.join(folder, LOCK_NAME))
    try:
        lock.acquire()
    except OSError as e:
        log.debug("no lock on numba's cache in %s: %s", folder, e)
        yield
        return
    try:
        yield
    finally:
        lock.release()


def _locked_save(self, key, data) -> None:
    """``IndexDataCacheFile.save`` under the cache folder's lock, the data written before the index."""
    with cache_lock(self._cache_path):
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            taken = set(overloads.values())
            name = next(n for n in map(self._data_name, itertools.count(1)) if n not in taken)
        self._save_data(name, data)
        if overloads.get(key) != name:
            overloads[key] = name
            self._save_index(overloads)


def _keeping_reload_init(rebuild):
    """``CompileResult._rebuild`` that leaves the start-up functions it ran on the loaded library, so
    that kernels linking it inherit them as they do from a freshly compiled one."""
    signature = inspect.signature(rebuild)

    @functools.wraps(rebuild)
    def _rebuild(cls, *args, **kwargs):
        result = rebuild(cls, *args, **kwargs)
        reload_init = signature.bind(cls, *args, **kwargs).arguments.get("reload_init")
        if reload_init:
            result.library._reload_init.update(reload_init)
        return result

    # read by install(), so that installing twice does not wrap twice
    _rebuild._sente_keeps_reload_init = True  # type: ignore[attr-defined]
    return _rebuild


def install() -> None:
    """Make numba's cache saves take the lock, and its loaded libraries keep their start-up
    functions."""
    caching.IndexDataCacheFile.save = _locked_save
    rebuild = compiler.CompileResult._rebuild.__func__
    if "reload_init" in inspect.signature(rebuild).parameters and not hasattr(rebuild, "_sente_keeps_reload_init"):
        compiler.CompileResult._rebuild = classmethod(_keeping_reload_init(rebuild))
