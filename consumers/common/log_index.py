"""An in-process index of one topic, read from the bus by replay and caught up on demand.

Consumers keep no private database: what they need beyond the event in hand (the episode's steps, the
task spec, earlier verdicts) is read back from the log. Replaying the log rebuilds the same index, so a
replayed consumer makes the same decisions; a redelivered event finds the same entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from bus_schemas.envelope import Event
from bus_schemas.errors import SchemaError
from infra.bus.partitioner import partition_for_key
from infra.bus.port import Bus
from infra.events import from_record

KeyOf = Callable[[Event], str | None]


class LogIndex:
    """Events of ``topic`` grouped by ``key_of(event)`` in log order; undecodable records are skipped."""

    def __init__(self, bus: Bus, topic: str, key_of: KeyOf) -> None:
        self.bus, self.topic, self.key_of = bus, topic, key_of
        self._cursor: dict[int, int] = {}
        self._by_key: dict[str, list[Event]] = {}

    def catch_up(self, partition: int | None = None) -> None:
        """Read what was appended since the last catch-up (of one partition, or of all)."""
        ends = self.bus.end_offsets(self.topic)
        for part, end in sorted(ends.items()):
            start = self._cursor.get(part, 0)
            if (partition is not None and part != partition) or start >= end:
                continue
            for record in self.bus.replay(self.topic, from_offset=start, partition=part):
                self._cursor[part] = record.offset + 1
                try:
                    event = from_record(record)
                except SchemaError:
                    continue
                key = self.key_of(event)
                if key is not None:
                    self._by_key.setdefault(key, []).append(event)
            self._cursor[part] = max(self._cursor.get(part, 0), end)

    def partition_of(self, key: str) -> int | None:
        """The partition a record keyed ``key`` lands in (topics are keyed by the same attribute)."""
        count = self.bus.partitions(self.topic)
        return partition_for_key(key.encode(), count) if count else None

    def lookup(self, key: str, complete: Callable[[list[Event]], bool]) -> list[Event]:
        """Events under ``key``; catches up, then re-reads the whole topic once, until ``complete`` holds."""
        if not complete(self._by_key.get(key, [])):
            self.catch_up(self.partition_of(key))
        if not complete(self._by_key.get(key, [])):  # evicted earlier (e.g. a redelivery): rebuild from the start
            self._cursor.clear()
            self._by_key.clear()
            self.catch_up()
        return self._by_key.get(key, [])

    def get(self, key: str) -> list[Event]:
        return self._by_key.get(key, [])

    def forget(self, key: str) -> None:
        """Drop a key that will not be asked for again (a finished episode), to bound memory."""
        self._by_key.pop(key, None)

    def events(self) -> Iterator[Event]:
        for events in self._by_key.values():
            yield from events
