"""Plain value types that cross the bus port: records as stored, where a publish landed, topic layout."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

DEFAULT_MAX_POLL_INTERVAL_S = 300.0
"""How long a group member may go without polling before it leaves its group (Kafka's ``max.poll.interval.ms``
default); long work (training) asks for more."""


class Record(NamedTuple):
    """One stored record: its position (topic, partition, offset), key, value bytes, headers, timestamp (ms).

    A NamedTuple rather than a frozen dataclass: consumers build hundreds of thousands per second.
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp_ms: int
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class Published:
    """Where a published record landed; returned only once the record is durable."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    """A record to publish; the partition is chosen from the key unless given."""

    topic: str
    value: bytes
    key: bytes | None = None
    headers: tuple[tuple[str, bytes], ...] = ()
    partition: int | None = None


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """Committed offset vs end offset of one partition, for one consumer group."""

    topic: str
    partition: int
    committed: int
    end: int

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


@dataclass(frozen=True, slots=True)
class TopicLayout:
    """How a topic is created: partition count and retention (-1 keeps everything, for audit topics)."""

    name: str
    partitions: int = 3
    retention_ms: int = -1
    config: dict[str, str] = field(default_factory=dict)


def next_offsets(records: Iterable[Record]) -> dict[TopicPartition, int]:
    """The offsets to commit after handling ``records``: one past the highest offset per partition."""
    highest: dict[tuple[str, int], int] = {}  # plain tuples: hashing dataclasses per record is slow
    for rec in records:
        key = (rec.topic, rec.partition)
        if rec.offset >= highest.get(key, -1):
            highest[key] = rec.offset
    return {TopicPartition(topic, part): off + 1 for (topic, part), off in highest.items()}


def by_partition(records: Iterable[Record]) -> dict[tuple[str, int], list[Record]]:
    """``records`` grouped by (topic, partition), each group in its polled order.

    Consumers make each partition's outputs durable in a transaction of its own, so that on Kafka a member
    that lost the partition (a zombie) is fenced by the new owner's producer for that same partition.
    """
    groups: dict[tuple[str, int], list[Record]] = {}
    for rec in records:
        groups.setdefault((rec.topic, rec.partition), []).append(rec)
    return groups
