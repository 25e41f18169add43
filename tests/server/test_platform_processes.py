"""The one-machine platform's children: one that dies of a fatal signal leaves every thread's stack
in its log, for the status the platform prints when a child ends by itself; stopped, those asked
together wind down side by side, each asked once."""

from __future__ import annotations

import signal
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


# A child that notes each stop signal it gets (its time) and ends WIND_DOWN seconds after the first.
WIND_DOWN = 1.5
CHILD = """
import signal, sys, time
log = open(sys.argv[1], "a")
def note(signum, frame):
    log.write(f"{time.time()}\\n")
    log.flush()
signal.signal(signal.SIGINT, note)
signal.signal(signal.SIGTERM, note)
open(sys.argv[2], "w").close()
while not open(sys.argv[1]).read():
    time.sleep(0.02)
time.sleep(float(sys.argv[3]))
"""


def test_children_asked_at_once_wind_down_side_by_side_each_asked_once(tmp_path):
    supervisor = Supervisor(tmp_path, {})
    children = {}
    for name, stop_signal in (("web", signal.SIGTERM), ("trainer", signal.SIGTERM), ("client", signal.SIGINT)):
        argv = [sys.executable, "-c", CHILD, str(tmp_path / f"{name}.signals"), str(tmp_path / f"{name}.ready")]
        children[name] = supervisor.start(name, [*argv, str(WIND_DOWN)], stop_signal=stop_signal)
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"{name}.ready").exists() for name in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.time()
    supervisor.stop_all({}, at_once=("client", "trainer"))
    took = time.time() - started
    asked = {name: [float(t) for t in (tmp_path / f"{name}.signals").read_text().split()] for name in children}
    assert all(len(times) == 1 for times in asked.values()), asked  # none hurried by a second signal
    # The trainer wound down beside the client; the web server was asked only once both had ended.
    assert abs(asked["trainer"][0] - asked["client"][0]) < WIND_DOWN / 2
    assert asked["web"][0] - asked["client"][0] >= WIND_DOWN
    assert took < 3 * WIND_DOWN, took
    assert not any(child.running() for child in children.values())
