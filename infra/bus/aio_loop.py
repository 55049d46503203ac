"""A private asyncio loop on a daemon thread, so synchronous callers can drive aiokafka's clients."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from infra.bus.errors import BusClosed

T = TypeVar("T")


class LoopThread:
    """Runs coroutines on one background event loop; the clients' heartbeats keep running between calls.

    The thread is a daemon and ``stop()`` joins it with a bound, so a client that was never closed (or whose
    broker is gone) can neither keep the interpreter alive nor block its caller: once stopped, every ``run``
    raises :class:`BusClosed` at once instead of waiting on a loop that will never run the coroutine.
    """

    def __init__(self, name: str = "flywheel-kafka-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run_forever, name=name, daemon=True)
        self._thread.start()

    def _run_forever(self) -> None:
        try:
            self.loop.run_forever()
        finally:
            self._stopped.set()

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        if self._stopped.is_set():
            coro.close()
            raise BusClosed("the Kafka client was closed")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        # Wait in slices, so a loop stopped meanwhile (close() from another thread) ends the wait too.
        waited = 0.0
        while True:
            slice_s = 0.5 if timeout_s is None else min(0.5, max(timeout_s - waited, 0.0))
            try:
                return future.result(slice_s)
            except TimeoutError:
                waited += slice_s
                if self._stopped.is_set():
                    future.cancel()
                    raise BusClosed("the Kafka client was closed while a call was waiting") from None
                if timeout_s is not None and waited >= timeout_s:
                    future.cancel()
                    raise

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def stop(self, join_timeout_s: float = 5.0) -> None:
        if not self._stopped.is_set():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=join_timeout_s)
