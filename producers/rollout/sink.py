"""Publishes an episode's events in order, batched per step: a durable publish per event costs a round trip.

EpisodeStarted is published at once: it is the claim a peer's recovery scan sees (a peer that got the
request in a rebalance waits for a live attempt instead of running it twice). Later events are
buffered and published (one ``publish_many``) when a ContextBuilt arrives and at least
``min_interval_s`` passed since the last publish, so with a slow model every step is on the bus
before the model is asked; and always when the episode ends. A crash loses only the unpublished
tail, and the log keeps a consistent prefix of the episode (the re-run closes it as abandoned).

The harness writes the episode's blobs through a group commit (``infra.blobs.group_commit``): each publish
first makes every blob written so far durable (``blobs_durable``), so no event reaches the bus before the
blobs it references, at one filesystem sync per batch instead of an fsync per blob.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bus_schemas.envelope import Event
from bus_schemas.events.episodes import ContextBuilt, EpisodeEnded, EpisodeStarted
from infra.bus.port import Bus
from infra.events import publish_all


class EpisodeEventSink:
    """An ``EventSink`` for the harness; ``flush`` publishes what is buffered and returns once it is durable."""

    def __init__(self, bus: Bus, min_interval_s: float = 0.2, blobs_durable: Callable[[], None] | None = None) -> None:
        self._bus = bus
        self._blobs_durable = blobs_durable or (lambda: None)
        self.min_interval_s = min_interval_s
        self._buffer: list[Event] = []
        self._last = time.monotonic()
        self.published = 0

    def __call__(self, event: Event) -> None:
        self._buffer.append(event)
        due = isinstance(event, ContextBuilt) and time.monotonic() - self._last >= self.min_interval_s
        if due or isinstance(event, (EpisodeStarted, EpisodeEnded)):
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            self._blobs_durable()  # the blobs the buffered events reference, first
            publish_all(self._bus, self._buffer)
            self.published += len(self._buffer)
            self._buffer = []
        self._last = time.monotonic()
