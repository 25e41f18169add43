"""The one-machine platform's children: one that dies of a fatal signal leaves every thread's stack
in its log, for the status the platform prints when a child ends by itself."""

from __future__ import annotations

import sys
import time

from server.platform.processes import Supervisor


def test_a_child_killed_by_a_fatal_signal_leaves_its_stack_in_its_log(tmp_path):
    supervisor = Supervisor(tmp_path, {})
    crash = "import faulthandler\ndef in_compiled_code():\n    faulthandler._sigsegv()\nin_compiled_code()\n"
    child = supervisor.start("crasher", [sys.executable, "-c", crash])
    deadline = time.monotonic() + 60
    while child.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert supervisor.exited() is child and child.process.returncode == -11
    tail = child.log_tail(lines=20)
    assert "Segmentation fault" in tail and "in_compiled_code" in tail
