"""Atomic file writes: a file is either fully there with its new content or not changed at all.

The data goes to a temporary file in the target's directory, is flushed and fsynced, gets the
permissions a normal new file would get (0666 minus the umask, not the temporary file's private
0600; a private file keeps 0600), and is renamed over the target; the directory is fsynced where
the platform allows it so the rename survives a crash. On any failure the temporary file is
removed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def atomic_write(path: str | os.PathLike[str], data: bytes | Callable[[BinaryIO], None], private: bool = False) -> Path:
    """Write bytes, or whatever ``data(file)`` writes, to path atomically; creates the directory.
    private: the file is readable by its owner only (0600), from its first byte on (secrets)."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        if not private:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, (bytes, bytearray, memoryview)):
                f.write(data)
            else:
                data(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)
    return target


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make the directory's entries (a rename into it) durable, where the platform allows it."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
