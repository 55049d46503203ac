"""The bus port: what services need from an event log, independent of Kafka or the embedded file."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from infra.bus.records import (
    DEFAULT_MAX_POLL_INTERVAL_S,
    OutgoingRecord,
    PartitionLag,
    Published,
    Record,
    TopicLayout,
    TopicPartition,
)


@runtime_checkable
class GroupConsumer(Protocol):
    """A member of a consumer group. Partitions are split between the live members of the group.

    Records are delivered at least once: what was polled but not committed is delivered again to
    whichever member owns the partition after a crash or a rebalance. After a rebalance (a change of ``generation``
    or of ``assignment``) every partition of the member's share restarts at the group's commit, also those it kept,
    as Kafka's eager rebalance does: a member may drop whatever it polled before and not yet handled.
    """

    group: str

    def poll(self, max_records: int = 500, timeout_s: float = 1.0) -> list[Record]: ...

    def commit(self, records: Iterable[Record]) -> None:
        """Mark these records (and everything before them in their partitions) as handled."""
        ...

    def publish_and_commit(self, outputs: Sequence[OutgoingRecord], consumed: Iterable[Record]) -> list[Published]:
        """Publish ``outputs`` and commit ``consumed`` atomically: after a crash either both are
        visible or neither is (readers never see outputs of an uncommitted step)."""
        ...

    def assignment(self) -> set[TopicPartition]: ...

    def generation(self) -> int:
        """Changes whenever the group's membership changed by the time this member last took its share (a member
        joined or left), even when the share came back the same: a peer that joined, started a record of this
        member's partition and died while this member was busy leaves an unchanged ``assignment`` behind."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Bus(Protocol):
    """Topics with partitions, keyed per-partition order, consumer groups, replay. Selected by URL."""

    url: str

    def create_topics(self, layouts: Sequence[TopicLayout]) -> None:
        """Create topics that do not exist yet (existing ones are left as they are)."""
        ...

    def topics(self) -> dict[str, int]:
        """Existing topics and their partition counts."""
        ...

    def partitions(self, topic: str) -> int: ...

    def publish(self, record: OutgoingRecord) -> Published:
        """Append one record; returns once it is durable."""
        ...

    def publish_many(self, records: Sequence[OutgoingRecord]) -> list[Published]:
        """Append records in order; returns once all are durable."""
        ...

    def consumer(
        self, group: str, topics: Sequence[str], *, max_poll_interval_s: float = DEFAULT_MAX_POLL_INTERVAL_S
    ) -> GroupConsumer:
        """A new member of ``group``. It stays a member while it works between polls (its client heartbeats in
        the background); one that has not polled for ``max_poll_interval_s`` leaves, and its partitions move."""
        ...

    def replay(
        self,
        topic: str,
        *,
        from_offset: int = 0,
        since: datetime | None = None,
        partition: int | None = None,
    ) -> Iterator[Record]:
        """Every stored record of a topic from an offset (per partition) or a time, partition by partition."""
        ...

    def end_offsets(self, topic: str) -> dict[int, int]: ...

    def lag(self, group: str, topics: Sequence[str]) -> list[PartitionLag]: ...

    def close(self) -> None: ...
