"""Why a worker died when Python could not say: a fatal signal (a crash in compiled code, SIGSEGV or
SIGBUS; the kernel's out-of-memory killer's SIGKILL) ends the process without a traceback. Each
worker has ``faulthandler`` write its threads' stacks to a file of its own when such a signal comes,
and the supervisor puts them, with the signal's name, in the log before it starts the worker again."""

from __future__ import annotations

import faulthandler
import signal
from pathlib import Path
from typing import TextIO

MOST_CHARS = 20_000  # of a crash's stacks in the log (a worker has a handful of threads)


def crash_path(data_dir: str | Path, index: int) -> Path:
    return Path(data_dir) / f"worker-{index}.crash"


def record_fatal_signals(data_dir: str | Path, index: int) -> TextIO | None:
    """In the worker: write the stacks of every thread to its crash file on a fatal signal. The file
    is emptied now (a new life of the worker) and stays open for as long as the process runs. A file
    that cannot be written costs only the diagnosis: the stacks go to standard error instead (None)."""
    try:
        path = crash_path(data_dir, index)
        path.parent.mkdir(parents=True, exist_ok=True)
        out = path.open("w")
    except OSError:
        faulthandler.enable(all_threads=True)
        return None
    faulthandler.enable(out, all_threads=True)
    return out


def read_crash(data_dir: str | Path, index: int) -> str:
    """In the supervisor: the stacks the worker wrote when it died (empty when it wrote none)."""
    try:
        text = crash_path(data_dir, index).read_text(errors="replace")
    except OSError:  # none written, or none could be
        return ""
    return text.strip()[-MOST_CHARS:]


def exit_words(exitcode: int | None) -> str:
    """``exit code 1``, or ``killed by SIGSEGV`` for a process a signal ended."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"
