"""Which failures are a server being unreachable (an outage to wait out) rather than a bad request or a bug.

The registry adapter retries its calls through an MLflow outage, and the consumer runtime waits out an outage of any
server a handler uses (the broker, the S3 store, MLflow) instead of dead-lettering the event it was handling.
"""

from __future__ import annotations

import logging
import time

from aiokafka.errors import KafkaError as AioKafkaError
from aiokafka.errors import KafkaTimeoutError as AioKafkaTimeoutError
from kafka.errors import RetriableError as KafkaRetriableError

from infra.blobs.errors import BlobStoreUnavailable
from infra.bus.errors import BusUnavailable
from infra.registry.port import RegistryUnavailable

log = logging.getLogger("flywheel.outages")
_OUTAGE_MARKERS = (
    "Connection refused",
    "Max retries exceeded",
    "Failed to establish a new connection",
    "Connection aborted",
    "RemoteDisconnected",
    "Read timed out",
)
_OUTAGE_TYPES = (
    RegistryUnavailable,
    BusUnavailable,
    BlobStoreUnavailable,
    KafkaRetriableError,  # kafka-python: connection errors, no leader, timeouts
    AioKafkaTimeoutError,  # aiokafka: a send or request the broker did not answer in time (not marked retriable)
    ConnectionError,
    TimeoutError,
)


def is_outage(exc: BaseException) -> bool:
    """True when ``exc`` (or its cause chain) says a server could not be reached, or answered that it cannot serve
    yet (the Kafka clients' retriable errors). A write the bus refused for good (a fenced producer, a full disk) is
    not an outage unless its cause is one."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _OUTAGE_TYPES):
            return True
        if isinstance(seen, AioKafkaError) and seen.retriable:
            return True
        if any(marker in str(seen) for marker in _OUTAGE_MARKERS):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class OutageWait:
    """Waits out one outage: each :meth:`pause` sleeps a little longer (about doubling, at most ``max_wait_s``)
    and re-raises the error once the outage has lasted ``retry_for_s``. One instance per piece of work."""

    def __init__(self, retry_for_s: float, *, max_wait_s: float = 5.0) -> None:
        self.retry_for_s = retry_for_s
        self.max_wait_s = max_wait_s
        self._since: float | None = None

    @property
    def waited_s(self) -> float:
        return 0.0 if self._since is None else time.monotonic() - self._since

    def pause(self, exc: BaseException, what: str) -> None:
        """Sleep before ``what`` is tried again after ``exc``; raise ``exc`` when the outage has lasted too long."""
        if self._since is None:
            self._since = time.monotonic()
        waited = self.waited_s
        if waited >= self.retry_for_s:
            log.error("%s: a server is still unreachable after %.0f s; giving up: %r", what, waited, exc)
            raise exc
        log.warning("%s waits for a server (%.0f s of %.0f s): %r", what, waited, self.retry_for_s, exc)
        time.sleep(min(self.max_wait_s, max(0.25, waited / 2), self.retry_for_s - waited))
