"""The client's wheel: setuptools' build, with numba's compiled kernels in it.

``pip install`` or ``pipx install`` of this project builds a wheel through this backend
(``pyproject.toml``'s ``build-backend``). Before setuptools packs the wheel, the backend runs
``python -m client.kernels`` in the source tree, which compiles the client's kernels into numba's
cache beside the modules (``__pycache__/*.nbi`` and ``*.nbc``: minutes of one core on an empty cache,
seconds on a filled one), and the wheel takes those files as package data. A volunteer's first start
then loads the kernels instead of compiling them. Where the compile fails the wheel is built without
them and says so: the client then compiles each kernel at its first use, as numba does.

``SENTE_WHEEL_KERNELS=0`` builds the wheel without compiling (for a wheel meant for other Python or
numba versions, whose cache would not be used anyway).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the hooks this backend leaves to setuptools)
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

# What compiling the kernels imports (client.kernels) besides the standard library, as the wheel's
# own dependencies ask for them (pyproject.toml): the build then compiles with the numba that the
# wheel installs beside its files, as a cache is only used by the numba version that wrote it.
KERNEL_IMPORTS = ("numpy", "numba", "filelock", "tqdm")


def get_requires_for_build_wheel(config_settings=None):
    return [*_setuptools.get_requires_for_build_wheel(config_settings), *_kernel_requirements()]


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    if _kernel_requirements():
        compile_kernels()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def _kernel_requirements() -> list[str]:
    if os.environ.get("SENTE_WHEEL_KERNELS") == "0":
        return []
    with open("pyproject.toml", "rb") as f:
        dependencies = tomllib.load(f)["project"]["dependencies"]
    return [d for d in dependencies if re.split(r"[^A-Za-z0-9_.-]", d, maxsplit=1)[0].lower() in KERNEL_IMPORTS]


def compile_kernels() -> bool:
    """Compile the client's kernels into numba's cache beside the modules of the source tree (the
    current folder, where the build runs). Whether it worked."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}  # the cache beside the modules
    env["NUMBA_CPU_NAME"] = "generic"  # what the client asks numba for, whatever this shell asks
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    print("compiling the client's numba kernels into the wheel (minutes on a first build)", file=sys.stderr)
    done = subprocess.run([sys.executable, "-m", "client.kernels"], env=env, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        print(
            f"compiling the client's kernels failed (status {done.returncode}): the wheel goes without "
            "them, and the client compiles each at its first use",
            file=sys.stderr,
        )
    return done.returncode == 0
