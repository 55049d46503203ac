"""Zombie fencing on Kafka: one transactional producer per owned input partition, with a stable id.

A consumer makes a partition's outputs and offsets durable in one transaction. If its member pauses (GC, SIGSTOP,
a network partition) past the session timeout, the group gives the partition to another member, which handles
the same records; when the paused member wakes up it would still commit its own transaction: duplicated effects.

aiokafka has no KIP-447 (consumer-group-metadata) fencing, so this is the classic per-partition scheme: the
producer for input partition ``p`` of group ``g`` always has ``transactional.id = g.<topic>.<p>``. Starting it
(InitProducerId) bumps the id's epoch, which aborts any open transaction of the previous owner and makes every
later commit of the previous owner fail with ``ProducerFenced``. The new owner claims its partitions *before* it
reads their committed offsets (they are re-read after the claim), so a commit that slipped in before the fence
is seen and nothing is handled twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.errors import ProducerFenced

from infra.bus.errors import BusWriteError
from infra.bus.records import OutgoingRecord

log = logging.getLogger("flywheel.bus")

TRANSACTION_TIMEOUT_MS = 10_000
CLAIM_WAIT_S = 120.0


class Fenced(BusWriteError):
    """Another member owns the partition now; this member's transaction was aborted and must not be retried."""


def transactional_id(group: str, tp: AioTopicPartition) -> str:
    return f"{group}.{tp.topic}.{tp.partition}"


class PartitionProducers:
    """The transactional producers of one group member, one per input partition it owns."""

    def __init__(self, bootstrap: str, group: str, *, client_id: str) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.client_id = client_id
        self._owned: dict[AioTopicPartition, AIOKafkaProducer] = {}
        # Partitions whose producer was dropped after an error other than a fence: still ours while assigned.
        self._broken: set[AioTopicPartition] = set()
        # Set while no claim is under way: the fetcher may hand out records of a partition while the rebalance
        # callback is still starting its producer, and such a commit must wait for the claim, not fail.
        self._settled: asyncio.Event | None = None

    def _settled_event(self) -> asyncio.Event:
        if self._settled is None:
            self._settled = asyncio.Event()  # created on the loop that uses it
        return self._settled

    def owns(self, tp: AioTopicPartition) -> bool:
        return tp in self._owned

    async def recover(self, consumer: AIOKafkaConsumer, tp: AioTopicPartition) -> None:
        """After a failed (not fenced) transaction, claim ``tp`` again if the group still assigns it to us."""
        if tp in self._broken and tp not in self._owned and tp in consumer.assignment():
            self._broken.discard(tp)
            await self.claim(consumer, [tp])

    async def claim(self, consumer: AIOKafkaConsumer, assigned: Iterable[AioTopicPartition]) -> None:
        """Fence the previous owners of ``assigned``, then start reading each from its (now final) commit."""
        assigned = sorted(assigned)
        settled = self._settled_event()
        settled.clear()
        # Nothing of these partitions reaches the handler until the claim is done: aiokafka starts fetching
        # from the offsets it read on assignment while this callback runs, and those may predate the fence.
        consumer.pause(*assigned)
        try:
            await self._claim(consumer, assigned)
        finally:
            consumer.resume(*[tp for tp in assigned if tp in consumer.assignment()])
            settled.set()

    async def _claim(self, consumer: AIOKafkaConsumer, assigned: Iterable[AioTopicPartition]) -> None:
        for tp in sorted(assigned):
            if tp not in self._owned:
                producer = AIOKafkaProducer(
                    bootstrap_servers=self.bootstrap,
                    client_id=self.client_id,
                    transactional_id=transactional_id(self.group, tp),
                    enable_idempotence=True,
                    acks="all",
                    linger_ms=5,
                    # A member killed mid-transaction blocks read_committed readers of its outputs until the
                    # coordinator aborts the transaction (or the next owner fences it); keep that window short.
                    transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
                )
                await producer.start()  # InitProducerId: the fence
                self._owned[tp] = producer
        for tp in sorted(assigned):
            committed = await consumer.committed(tp)
            if committed is not None:
                consumer.seek(tp, committed)

    async def release(self, revoked: Iterable[AioTopicPartition]) -> None:
        for tp in list(revoked):
            self._broken.discard(tp)
            producer = self._owned.pop(tp, None)
            if producer is not None:
                await producer.stop()

    async def commit(
        self,
        tp: AioTopicPartition,
        outputs: Sequence[OutgoingRecord],
        offset: int,
        *,
        topic_name=lambda name: name,  # noqa: ANN001 - maps an output's topic to its wire name
    ) -> list:
        """``outputs`` and the offset of ``tp`` in the transaction of ``tp``'s producer: both or neither."""
        try:
            await asyncio.wait_for(self._settled_event().wait(), CLAIM_WAIT_S)
        except TimeoutError:
            raise Fenced(f"group {self.group!r} never finished claiming its partitions") from None
        producer = self._owned.get(tp)
        if producer is None:
            raise Fenced(f"group {self.group!r} does not own {tp.topic}[{tp.partition}] (revoked or fenced)")
        try:
            async with producer.transaction():
                futures = [
                    await producer.send(
                        topic_name(r.topic), value=r.value, key=r.key, headers=list(r.headers), partition=r.partition
                    )
                    for r in outputs
                ]
                await producer.send_offsets_to_transaction({tp: offset}, self.group)
        except ProducerFenced as exc:
            await self._drop(tp)
            log.warning(
                "fenced: group %s lost %s[%d] to another member; this member's outputs were discarded",
                self.group,
                tp.topic,
                tp.partition,
            )
            raise Fenced(f"{transactional_id(self.group, tp)} was fenced by a newer owner: {exc!r}") from exc
        except BaseException:
            await self._drop(tp)  # an unknown transaction state: a fresh producer (same id) via recover()
            self._broken.add(tp)
            raise
        return [f.result() for f in futures]

    async def _drop(self, tp: AioTopicPartition) -> None:
        producer = self._owned.pop(tp, None)
        if producer is not None:
            try:
                await producer.stop()
            except Exception:  # noqa: BLE001 - a fenced producer may fail to stop cleanly; it is gone either way
                log.debug("stopping the producer of %s failed", tp, exc_info=True)

    async def close(self) -> None:
        await self.release(list(self._owned))
