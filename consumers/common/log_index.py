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
from infra.bus.records import Record
from infra.events import from_record, header

KeyOf = Callable[[Event], str | None]


class LogIndex:
    """Events of ``topic`` grouped by ``key_of(event)`` in log order; undecodable records are skipped.

    With ``by_record_key`` (when ``key_of`` gives the topic's record key, e.g. episodes by episode id)
    records are kept raw under their key and decoded only when the key is asked for: a consumer that
    looks up a few keys (the diagnoser, failed episodes only) never decodes the others.
    """

    def __init__(self, bus: Bus, topic: str, key_of: KeyOf, *, by_record_key: bool = False) -> None:
        self.bus, self.topic, self.key_of = bus, topic, key_of
        self.by_record_key = by_record_key
        self._cursor: dict[int, int] = {}
        self._by_key: dict[str, list[Event]] = {}
        self._raw: dict[str, list[Record]] = {}

    def catch_up(self, partition: int | None = None) -> None:
        """Read what was appended since the last catch-up (of one partition, or of all)."""
        ends = self.bus.end_offsets(self.topic)
        for part, end in sorted(ends.items()):
            start = self._cursor.get(part, 0)
            if (partition is not None and part != partition) or start >= end:
                continue
            for record in self.bus.replay(self.topic, from_offset=start, partition=part):
                self._cursor[part] = record.offset + 1
                if self.by_record_key and record.key:
                    self._raw.setdefault(record.key.decode("utf-8", "replace"), []).append(record)
                    continue
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
        if not complete(self.get(key)):
            self.catch_up(self.partition_of(key))
        if not complete(self.get(key)):  # evicted earlier (e.g. a redelivery): rebuild from the start
            self._cursor.clear()
            self._by_key.clear()
            self._raw.clear()
            self.catch_up()
        return self.get(key)

    def first_of(self, key: str, event_type: str) -> Event | None:
        """The first ``event_type`` event under ``key``, caught up (and re-read from the start) as :meth:`lookup`
        does. Only records whose header names that type are decoded; the others stay raw for :meth:`get`."""
        found = self._first(key, event_type)
        if found is None:
            self.catch_up(self.partition_of(key))
            found = self._first(key, event_type)
        if found is None:  # evicted earlier (e.g. a redelivery): rebuild from the start
            self._cursor.clear()
            self._by_key.clear()
            self._raw.clear()
            self.catch_up()
            found = self._first(key, event_type)
        return found

    def _first(self, key: str, event_type: str) -> Event | None:
        for event in self._by_key.get(key, []):
            if event.event_type == event_type:
                return event
        for record in self._raw.get(key, []):
            declared = header(record, "event_type")
            if declared is not None and declared != event_type:
                continue
            try:
                event = from_record(record)
            except SchemaError:
                continue
            if event.event_type == event_type and self.key_of(event) == key:
                return event
        return None

    def get(self, key: str) -> list[Event]:
        raw = self._raw.pop(key, None)
        if raw:
            self._decode(key, raw)
        return self._by_key.get(key, [])

    def _decode(self, key: str, records: list[Record]) -> None:
        for record in records:
            try:
                event = from_record(record)
            except SchemaError:
                continue
            if self.key_of(event) == key:
                self._by_key.setdefault(key, []).append(event)

    def forget(self, key: str) -> None:
        """Drop a key that will not be asked for again (a finished episode), to bound memory."""
        self._by_key.pop(key, None)
        self._raw.pop(key, None)

    def events(self) -> Iterator[Event]:
        for key in list(self._raw):
            self.get(key)
        for events in self._by_key.values():
            yield from events
