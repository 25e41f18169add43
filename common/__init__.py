"""What the client and the server must agree on: Go rules and SGF, the network's features, model and
files, the training rows, the settings and the API protocol."""

from common.numba_cache import install as _install_numba_cache_lock

__version__ = "0.1.0"

# Before any kernel is compiled: several processes may fill numba's cache at once.
_install_numba_cache_lock()
