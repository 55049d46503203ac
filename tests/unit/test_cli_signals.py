"""A consumer run in-process takes Ctrl-C/SIGTERM as a stop request only while it runs."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from infra.cli.signals import stop_on_signals

pytestmark = pytest.mark.unit


def test_sigterm_stops_the_loop_and_the_old_handlers_come_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with stop_on_signals() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5), "SIGTERM did not reach the loop"
    after = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    # Left installed, SIGTERM would only set a dead event: the test process could no longer be terminated.
    assert after == before


def test_outside_the_main_thread_it_installs_nothing() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def body() -> None:
        with stop_on_signals() as stop:
            seen.append(signal.getsignal(signal.SIGTERM))
            assert not stop.is_set()

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [before]
