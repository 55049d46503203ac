"""Ride out a blob store outage: retry unavailable-store errors with backoff for a bounded time.

A writer blocks until its blob has landed (or the retry window runs out), so an event that
references a blob is never published while the blob is missing. Missing or corrupted blobs are
answers, not outages, and are never retried.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import IO, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from bus_schemas.blob_ref import BlobRef
from infra.blobs.errors import BlobStoreUnavailable
from infra.blobs.port import BlobStore

log = logging.getLogger("flywheel.blobs")
T = TypeVar("T")


class RetryingBlobStore:
    def __init__(self, inner: BlobStore, *, retry_for_s: float = 120.0, max_wait_s: float = 5.0) -> None:
        self.inner = inner
        self.url = inner.url
        self.retry_for_s = retry_for_s
        self.max_wait_s = max_wait_s

    def _log_retry(self, state: RetryCallState) -> None:
        log.warning(
            "blob store %s unavailable (%s); retrying, attempt %d, %.1fs so far of %.0fs",
            self.url,
            state.outcome.exception() if state.outcome else "?",
            state.attempt_number,
            state.seconds_since_start or 0.0,
            self.retry_for_s,
        )

    def _retry(self, fn: Callable[[], T]) -> T:
        retrying = Retrying(
            retry=retry_if_exception_type(BlobStoreUnavailable),
            wait=wait_exponential(multiplier=0.2, max=self.max_wait_s),
            stop=stop_after_delay(self.retry_for_s),
            before_sleep=self._log_retry,
            reraise=True,
        )
        return retrying(fn)

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> BlobRef:
        return self._retry(lambda: self.inner.put(data, media_type))

    def put_stream(self, stream: IO[bytes], media_type: str = "application/octet-stream") -> BlobRef:
        start = stream.tell() if stream.seekable() else None

        def attempt() -> BlobRef:
            if start is not None:
                stream.seek(start)
            return self.inner.put_stream(stream, media_type)

        if start is None:  # a one-shot stream cannot be replayed; fail on the first outage
            return self.inner.put_stream(stream, media_type)
        return self._retry(attempt)

    def get(self, address: str | BlobRef) -> bytes:
        return self._retry(lambda: self.inner.get(address))

    def open(self, address: str | BlobRef) -> Iterator[bytes]:
        return self._retry(lambda: self.inner.open(address))

    def stat(self, address: str | BlobRef) -> BlobRef:
        return self._retry(lambda: self.inner.stat(address))

    def exists(self, address: str | BlobRef) -> bool:
        return self._retry(lambda: self.inner.exists(address))
