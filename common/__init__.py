"""What the client and the server must agree on: Go rules and SGF, the network's features, model and
files, the training rows, the settings and the API protocol."""

import os

# Before torch or numba start their OpenMP runtimes (each reads this when loaded): threads that
# finished a parallel pass sleep instead of spinning. The search's numba passes and the network's
# torch passes take turns on the same cores, and each runtime's spinning threads held the cores the
# other needed: self-play on the CPU ran ten times slower (docs/benchmarks.md). A value set in the
# environment is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from common.numba_cache import install as _install_numba_cache_lock

__version__ = "0.1.0"

# Before any kernel is compiled: several processes may fill numba's cache at once.
_install_numba_cache_lock()
