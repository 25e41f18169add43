"""What the client and the server must agree on: Go rules and SGF, the network's features, model and
files, the training rows, the settings and the API protocol."""

import os
import sys

# Before torch or numba start their OpenMP runtimes (each reads this when loaded): threads that
# finished a parallel pass sleep instead of spinning. The search's numba passes and the network's
# torch passes take turns on the same cores, and each runtime's spinning threads held the cores the
# other needed: self-play on the CPU ran ten times slower (docs/benchmarks.md). A value set in the
# environment is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# numba's kernels compiled for any processor of the architecture rather than this one's model: numba
# keys its cache by the processor, so a cache built once (the wheel's, a Docker image's) serves every
# machine. They run as fast as kernels made for this processor (docs/benchmarks.md). A value set in
# the environment is kept; a numba loaded before this reads it again.
if "NUMBA_CPU_NAME" not in os.environ:
    os.environ["NUMBA_CPU_NAME"] = "generic"
    if "numba" in sys.modules:
        sys.modules["numba"].core.config.reload_config()

from common.numba_cache import install as _install_numba_cache_lock

__version__ = "0.1.0"

# Before any kernel is compiled: several processes may fill numba's cache at once.
_install_numba_cache_lock()
