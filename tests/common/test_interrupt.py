"""Ctrl-C for long commands: the first signal stops at a clean point, a second at once, and the
handlers before are put back."""

import os
import signal
import threading

import pytest

from common.interrupt import on_signals, stop_on_signals


def test_the_first_signal_sets_stop_and_a_second_interrupts():
    before = signal.getsignal(signal.SIGINT)
    stop, notices = threading.Event(), []
    with pytest.raises(KeyboardInterrupt), stop_on_signals(stop, lambda: notices.append(1)):
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.is_set() and notices == [1]
        os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_handlers_count_the_signals_and_are_put_back():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGHUP)}
    seen: list[int] = []
    with on_signals(seen.append, (signal.SIGINT, signal.SIGHUP)):
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGINT)
    assert seen == [1, 2]
    assert {s: signal.getsignal(s) for s in before} == before


def test_outside_the_main_thread_nothing_is_installed():
    before = signal.getsignal(signal.SIGINT)
    during = []

    def work():
        with stop_on_signals(threading.Event()):
            during.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert during == [before]
