"""Plain value types that cross the bus port: records as stored, where a publish landed, topic layout."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Record:
    """One stored record: its position (topic, partition, offset), key, value bytes, headers, timestamp (ms)."""

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
    offsets: dict[TopicPartition, int] = {}
    for rec in records:
        tp = TopicPartition(rec.topic, rec.partition)
        offsets[tp] = max(offsets.get(tp, 0), rec.offset + 1)
    return offsets
