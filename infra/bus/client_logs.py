"""Kafka clients retry a lost broker many times a second and log every attempt; this keeps one line per interval.

While a broker is down, aiokafka logs "Unable connect to node ..." on each reconnect (every ``retry_backoff_ms``),
which buried real output and filled a CI log with 450 MB in minutes. A repeated warning or error (same logger,
same message template) is let through once per interval, with the number of repeats it stood for.
"""

from __future__ import annotations

import logging
import threading
import time

CLIENT_LOGGER_PREFIXES = ("aiokafka", "kafka")


class RepeatedFailureFilter(logging.Filter):
    """Passes the first record of a kind, then at most one per ``interval_s``, counting what it held back."""

    def __init__(self, interval_s: float = 30.0, clock=time.monotonic) -> None:  # noqa: ANN001 - a () -> float
        super().__init__()
        self.interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, int, str], float] = {}
        self._held: dict[tuple[str, int, str], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval_s:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} (repeated {held} more times in the last {self.interval_s:.0f}s)"
        return True


_installed: RepeatedFailureFilter | None = None


def throttle_client_logs(interval_s: float = 30.0) -> RepeatedFailureFilter:
    """Attach one shared filter to every Kafka client logger (logger filters do not reach child loggers)."""
    global _installed  # noqa: PLW0603 - one filter per process
    if _installed is None:
        _installed = RepeatedFailureFilter(interval_s)
    names = [n for n in logging.Logger.manager.loggerDict if n.split(".")[0] in CLIENT_LOGGER_PREFIXES]
    for name in names:
        logger = logging.getLogger(name)
        if _installed not in logger.filters:
            logger.addFilter(_installed)
    return _installed
