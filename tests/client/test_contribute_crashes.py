"""A worker killed by a fatal signal leaves its threads' stacks for the supervisor's log, and the
supervisor names the signal."""

from __future__ import annotations

import faulthandler
import multiprocessing
import threading

from client.contribute.crashes import exit_words, read_crash, record_fatal_signals


def _dies_in_compiled_code(data_dir: str) -> None:
    record_fatal_signals(data_dir, 3)
    threading.Thread(target=threading.Event().wait, name="waiting", daemon=True).start()
    faulthandler._sigsegv()  # a crash in compiled code, as a kernel reading out of bounds makes one


def test_a_worker_killed_by_sigsegv_leaves_its_stacks(tmp_path):
    (tmp_path / "worker-3.crash").write_text("the stacks of its last life\n")  # emptied at the start
    process = multiprocessing.get_context("spawn").Process(target=_dies_in_compiled_code, args=(str(tmp_path),))
    process.start()
    process.join(60)
    assert exit_words(process.exitcode) == "killed by SIGSEGV"
    stacks = read_crash(tmp_path, 3)
    assert "Segmentation fault" in stacks and "_dies_in_compiled_code" in stacks
    assert "last life" not in stacks
    assert stacks.lower().count("thread 0x") >= 2  # every thread's stack, the waiting one too
    assert read_crash(tmp_path, 4) == ""  # a worker that never crashed wrote nothing


def test_exit_words():
    assert exit_words(1) == "exit code 1"
    assert exit_words(-9) == "killed by SIGKILL"
    assert exit_words(None) == "exit code None"


def _crash_file_unwritable(data_dir: str) -> None:
    assert record_fatal_signals(data_dir, 0) is None  # the worker goes on, its stacks to stderr
    faulthandler._sigsegv()


def test_a_crash_file_that_cannot_be_written_does_not_stop_the_worker(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    process = multiprocessing.get_context("spawn").Process(target=_crash_file_unwritable, args=(str(blocker),))
    process.start()
    process.join(60)
    assert exit_words(process.exitcode) == "killed by SIGSEGV"  # it got as far as its crash
    assert read_crash(blocker, 0) == ""
