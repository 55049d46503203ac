"""Ctrl-C / SIGTERM as a stop request for a long-running loop, for as long as the loop runs."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event set by SIGINT or SIGTERM while the block runs; the previous handlers are restored after it.

    Left installed, a handler outlives its loop: a process that called a consumer in-process (a test session,
    the main job) then ignored SIGTERM for good, because the signal only set an event nobody waited on.
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # signals are only delivered to the main thread
        yield stop
        return
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def exit_on_sigterm() -> Iterator[threading.Event]:
    """SIGTERM raises SystemExit(143) while the block runs, so ``finally`` blocks run as on Ctrl-C: the run's
    consumer processes are stopped and its MLflow run is marked killed (the default handler ends the process at
    once and leaves both behind). The yielded event is set too: an exception raised where Python ignores it (a
    weakref callback during garbage collection) is lost, so a loop that checks the event stops at its next turn."""
    stopping = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stopping
        return

    def leave(signum: int, _frame: object) -> None:
        stopping.set()
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, leave)
    try:
        yield stopping
    finally:
        signal.signal(signal.SIGTERM, previous)
