"""A bus seen through a topic namespace: ``tasks`` becomes ``<namespace>.tasks`` on the wire.

Lets several runs, tenants or test suites share one Kafka cluster without seeing each other's
events (``kafka://host:port?namespace=run42``). Everything above the port keeps using plain names.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime

from infra.bus.port import Bus, GroupConsumer
from infra.bus.records import (
    DEFAULT_MAX_POLL_INTERVAL_S,
    OutgoingRecord,
    PartitionLag,
    Published,
    Record,
    TopicLayout,
    TopicPartition,
)


class NamespacedBus:
    def __init__(self, inner: Bus, namespace: str) -> None:
        self.inner = inner
        self.prefix = f"{namespace}."
        self.url = f"{inner.url}?namespace={namespace}"

    def wire(self, topic: str) -> str:
        return self.prefix + topic

    def local(self, topic: str) -> str:
        return topic.removeprefix(self.prefix)

    def _out(self, record: OutgoingRecord) -> OutgoingRecord:
        return replace(record, topic=self.wire(record.topic))

    def _pub(self, published: Published) -> Published:
        return replace(published, topic=self.local(published.topic))

    def _rec(self, record: Record) -> Record:
        return record._replace(topic=self.local(record.topic))

    def create_topics(self, layouts: Sequence[TopicLayout]) -> None:
        self.inner.create_topics([replace(layout, name=self.wire(layout.name)) for layout in layouts])

    def topics(self) -> dict[str, int]:
        return {self.local(t): n for t, n in self.inner.topics().items() if t.startswith(self.prefix)}

    def partitions(self, topic: str) -> int:
        return self.inner.partitions(self.wire(topic))

    def publish(self, record: OutgoingRecord) -> Published:
        return self._pub(self.inner.publish(self._out(record)))

    def publish_many(self, records: Sequence[OutgoingRecord]) -> list[Published]:
        return [self._pub(p) for p in self.inner.publish_many([self._out(r) for r in records])]

    def consumer(
        self, group: str, topics: Sequence[str], *, max_poll_interval_s: float = DEFAULT_MAX_POLL_INTERVAL_S
    ) -> GroupConsumer:
        inner = self.inner.consumer(
            self.prefix + group, [self.wire(t) for t in topics], max_poll_interval_s=max_poll_interval_s
        )
        return NamespacedConsumer(self, inner)

    def replay(
        self, topic: str, *, from_offset: int = 0, since: datetime | None = None, partition: int | None = None
    ) -> Iterator[Record]:
        for record in self.inner.replay(self.wire(topic), from_offset=from_offset, since=since, partition=partition):
            yield self._rec(record)

    def end_offsets(self, topic: str) -> dict[int, int]:
        return self.inner.end_offsets(self.wire(topic))

    def lag(self, group: str, topics: Sequence[str]) -> list[PartitionLag]:
        return [
            replace(lag, topic=self.local(lag.topic))
            for lag in self.inner.lag(self.prefix + group, [self.wire(t) for t in topics])
        ]

    def close(self) -> None:
        self.inner.close()


class NamespacedConsumer:
    def __init__(self, bus: NamespacedBus, inner: GroupConsumer) -> None:
        self.bus = bus
        self.inner = inner
        self.group = inner.group

    def _wire(self, record: Record) -> Record:
        return record._replace(topic=self.bus.wire(record.topic))

    def poll(self, max_records: int = 500, timeout_s: float = 1.0) -> list[Record]:
        return [self.bus._rec(r) for r in self.inner.poll(max_records, timeout_s)]

    def commit(self, records: Iterable[Record]) -> None:
        self.inner.commit([self._wire(r) for r in records])

    def publish_and_commit(self, outputs: Sequence[OutgoingRecord], consumed: Iterable[Record]) -> list[Published]:
        published = self.inner.publish_and_commit(
            [self.bus._out(o) for o in outputs], [self._wire(r) for r in consumed]
        )
        return [self.bus._pub(p) for p in published]

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(self.bus.local(tp.topic), tp.partition) for tp in self.inner.assignment()}

    def generation(self) -> int:
        return self.inner.generation()

    def close(self) -> None:
        self.inner.close()
