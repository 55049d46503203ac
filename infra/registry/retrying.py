"""Ride out an MLflow outage: registry calls that fail to connect are retried with backoff, logged clearly.

Training finishes while the tracking server is down; registering its result waits (bounded) until the
server is back. Errors the server answered (unknown alias, bad request) are not retried.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_delay, wait_exponential

from infra.outages import is_outage
from infra.registry.port import Registry

log = logging.getLogger("flywheel.registry")


class RetryingRegistry:
    """Every method of the wrapped registry, retried while the server is unreachable."""

    def __init__(self, inner: Registry, *, retry_for_s: float = 120.0, max_wait_s: float = 5.0) -> None:
        self.inner = inner
        self.url = inner.url
        self.retry_for_s = retry_for_s
        self.max_wait_s = max_wait_s

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target):
            return target

        @functools.wraps(target)
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._retrying(name)(lambda: target(*args, **kwargs))

        return call

    def _retrying(self, method: str) -> Callable[[Callable[[], Any]], Any]:
        def log_wait(state: RetryCallState) -> None:
            log.warning(
                "MLflow at %s is unavailable; waiting to retry %s (attempt %d, %.1fs of %.0fs): %s",
                self.url,
                method,
                state.attempt_number,
                state.seconds_since_start or 0.0,
                self.retry_for_s,
                state.outcome.exception() if state.outcome else "?",
            )

        return Retrying(
            retry=retry_if_exception(is_outage),
            wait=wait_exponential(multiplier=0.5, max=self.max_wait_s),
            stop=stop_after_delay(self.retry_for_s),
            before_sleep=log_wait,
            reraise=True,
        )
