"""numba's on-disk cache made safe for several processes compiling the same kernels at once.

First, the index: numba keeps a function's compiled signatures in one index file (``NAME.nbi``) that
names a data file per signature (``NAME.1.nbc``, ``NAME.2.nbc``, ...). Saving a new signature reads
the index, takes the first free number, writes the index and then the data, with no lock: two
processes that compile different signatures of one function at the same time both take number 1, and
the index of one ends up naming the data file of the other. A later process then loads machine code
made for other argument types, and crashes. That happens when a volunteer's client starts one worker
per GPU on a fresh install, when the platform's processes start together, and in the test run's
warm-up.

:func:`install` replaces that save with one that holds an exclusive lock on a file in the cache
folder (``fcntl.flock``; where there is none, as on Windows, the save is numba's own) while it reads
the index, writes the data file, and then the index: every number names one signature's data, and
an index never names a file that is not written yet. Loading needs no lock: both files are replaced
atomically.

Second, the names of compiled functions: numba names each compiled function after its qualified
name, its argument types and a number from a per-process counter (``FunctionIdentity``), and emits
it as a weak symbol. One function compiled twice with the same types but different code (with and
without numba's runtime, as our ``_nrt=False`` kernels call shared helpers, or with other literal
arguments) gets two numbers. Two processes count alike, so the same name can stand for different
code in libraries cached by different processes; a process that loads both links every call to
whichever definition came first, and crashes. :func:`install` starts this process's counter at a
random offset of its own, so names made in different processes never meet.

``common`` installs both on import, before any kernel is compiled.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import secrets

from numba.core import bytecode, caching

try:
    import fcntl
except ImportError:  # not on Windows: numba's own save
    fcntl = None

log = logging.getLogger(__name__)

LOCK_NAME = ".numba-cache.lock"


@contextlib.contextmanager
def cache_lock(folder: str):
    """An exclusive lock on ``folder``'s lock file while the block runs (none where it cannot be had:
    no fcntl, or a folder that takes no file)."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(os.path.join(folder, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            log.debug("no lock on numba's cache in %s: %s", folder, e)
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock


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


def install() -> None:
    """Make numba's cache saves take the lock, and its function numbers this process's own."""
    caching.IndexDataCacheFile.save = _locked_save
    identity = bytecode.FunctionIdentity
    if not getattr(identity, "_sente_salted", False):
        # Numbers already given (numba's own functions at its import) stay below the offset.
        identity._unique_ids = itertools.count(next(identity._unique_ids) + ((1 + secrets.randbits(40)) << 20))
        identity._sente_salted = True
