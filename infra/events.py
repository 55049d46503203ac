"""Typed events over the bus port: encode + route on the way out, decode (with upcasting) on the way in.

Each record carries ``event_type`` and ``schema_version`` headers so ops tools can filter without
parsing; the value is the canonical JSON of the event (``bus_schemas.codec``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from bus_schemas.codec import check_envelope, decode, encode
from bus_schemas.envelope import Event
from bus_schemas.errors import SchemaError
from bus_schemas.topics import TOPICS, route
from infra.bus.port import Bus
from infra.bus.records import OutgoingRecord, Published, Record, TopicLayout


def topic_layouts() -> list[TopicLayout]:
    """Every topic of the registry as the bus creates it."""
    return [TopicLayout(spec.name, spec.partitions, spec.retention_ms) for spec in TOPICS.values()]


def ensure_topics(bus: Bus) -> None:
    bus.create_topics(topic_layouts())


def to_record(event: Event, *, max_inline_bytes: int | None = None) -> OutgoingRecord:
    topic, key = route(event)
    return OutgoingRecord(
        topic=topic,
        value=encode(event, max_inline_bytes=max_inline_bytes),
        key=key.encode(),
        headers=(("event_type", event.event_type.encode()), ("schema_version", str(event.schema_version).encode())),
    )


def publish(bus: Bus, *events: Event) -> list[Published]:
    """Publish events in order; returns once every one is durable."""
    return bus.publish_many([to_record(e) for e in events])


def publish_all(bus: Bus, events: Sequence[Event]) -> list[Published]:
    return bus.publish_many([to_record(e) for e in events])


def header(record: Record | OutgoingRecord, name: str) -> str | None:
    """A header's value as text (undecodable bytes replaced), or None when the record does not carry it."""
    for key, value in record.headers or ():
        if key == name:
            return bytes(value).decode("utf-8", "replace")
    return None


def from_record(record: Record) -> Event:
    """The current-version event in a record; raises a ``SchemaError`` subclass for bad records, including a
    valid event whose record disagrees with it (``event_type`` header, topic): see ``check_envelope``."""
    event = decode(record.value)
    check_envelope(event, declared_type=header(record, "event_type"), topic=record.topic)
    return event


def decodable(records: Iterable[Record]) -> Iterator[Event]:
    """The events of ``records``, skipping undecodable ones (consumers dead-lettered those when they met them)."""
    for record in records:
        try:
            yield from_record(record)
        except SchemaError:
            continue
