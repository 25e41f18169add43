"""The client's process priority: low by default, so that the owner's own programs come first. The
workers, started after it is set, inherit it."""

from __future__ import annotations

import contextlib
import os
import sys

PRIORITIES = ("low", "normal")
LOW_NICE = 10  # POSIX niceness of "low"; on Windows, the below-normal priority class


def set_priority(priority: str) -> str:
    """Lower this process's priority to ``priority`` (one of PRIORITIES; "normal" leaves it as it is,
    and "low" never raises a priority already lower, such as a service's); what it is now, in words."""
    if priority not in PRIORITIES:
        raise ValueError(f"priority {priority!r}: expected one of {', '.join(PRIORITIES)}")
    if sys.platform == "win32":
        import psutil

        process = psutil.Process()
        if priority == "low" and process.nice() in (psutil.NORMAL_PRIORITY_CLASS, psutil.ABOVE_NORMAL_PRIORITY_CLASS):
            process.nice(psutil.BELOW_NORMAL_PRIORITY_CLASS)
        return "below normal" if process.nice() == psutil.BELOW_NORMAL_PRIORITY_CLASS else "as it was"
    if not hasattr(os, "getpriority"):
        return "as it was (no priorities here)"
    now = os.getpriority(os.PRIO_PROCESS, 0)
    if priority == "low" and now < LOW_NICE:
        with contextlib.suppress(OSError):  # a system that refuses even a lower priority: as it was
            os.setpriority(os.PRIO_PROCESS, 0, LOW_NICE)
        now = os.getpriority(os.PRIO_PROCESS, 0)
    return f"nice {now}"
