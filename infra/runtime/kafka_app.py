"""A consumer as a FastStream app on Kafka: FastStream owns the subscription, lifecycle, signals and logs.

Each polled batch goes through the same :class:`BatchHandler` as the port runner (decode, dedupe by
event id, bounded retries, dead letters), one input partition at a time. A partition's outputs and offsets
are then written in one Kafka transaction (``send_offsets_to_transaction``) of that partition's producer,
so after a crash either both are visible to ``read_committed`` readers or neither is, and a member that
lost the partition while paused is fenced (``infra.bus.kafka_fencing``). FastStream's own acking is off
(``AckPolicy.MANUAL``): the transaction is the commit; a batch that could not be made durable is rewound
(``nack``) and redelivered.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka import TopicPartition as AioTopicPartition
from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker
from faststream.kafka.annotations import KafkaMessage

from infra.bus.kafka_fencing import PartitionProducers
from infra.bus.records import OutgoingRecord, Record
from infra.runtime.batch import BatchHandler, RunStats
from infra.runtime.spec import ConsumerSpec

log = logging.getLogger("flywheel.runtime")

MARKER_CHECK_IDLE_S = 0.5
"""Idle time after which offsets are moved past trailing transaction markers, so a drained group shows no lag.
2 s held every drained group at a lag of one per written partition for 2-2.5 s after its last batch: the
pipeline bench's Kafka figure spent 2.7 s of a 7-8 s run waiting for it."""
WATCH_TICK_S = 0.25
FAILURE_BACKOFF_S = 1.0


@dataclass(frozen=True)
class KafkaTarget:
    """Where the app connects, from a ``kafka://host:port[?namespace=NS&session_timeout_s=S]`` bus URL."""

    bootstrap: str
    namespace: str | None = None
    session_timeout_s: float = 10.0

    @classmethod
    def from_url(cls, url: str) -> KafkaTarget:
        parts = urlsplit(url)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        return cls(parts.netloc, query.get("namespace") or None, float(query.get("session_timeout_s", 10.0)))

    @property
    def prefix(self) -> str:
        return f"{self.namespace}." if self.namespace else ""


class _FinishBatchOnRevoke(ConsumerRebalanceListener):
    """Hold a rebalance until the batch in flight is committed; claim (fence) newly assigned partitions."""

    def __init__(self, app: FastStreamConsumer) -> None:
        self.app = app

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.app.quiescent()
        await self.app.producers.release(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        consumer = self.app.subscriber.consumer
        if consumer is not None:
            await self.app.producers.claim(consumer, assigned)
        self.app.markers_dirty = True


class FastStreamConsumer:
    """Runs one :class:`ConsumerSpec` as a FastStream Kafka subscriber in the spec's consumer group."""

    def __init__(
        self,
        spec: ConsumerSpec,
        ports: Any,
        target: KafkaTarget,
        *,
        state_dir: Path = Path(".flywheel/state"),
        batch_size: int = 200,
        max_attempts: int = 3,
        retry_backoff_s: float = 0.05,
        outage_retry_s: float = 120.0,
        idle_exit_s: float | None = None,
    ) -> None:
        self.spec = spec
        self.ports = ports
        self.target = target
        self.idle_exit_s = idle_exit_s
        self.group = target.prefix + spec.group
        self.batches = BatchHandler(
            spec,
            ports,
            state_dir=state_dir,
            max_attempts=max_attempts,
            retry_backoff_s=retry_backoff_s,
            outage_retry_s=outage_retry_s,
        )
        self.markers_dirty = True
        self._in_flight = False
        self._unsure: set[AioTopicPartition] = set()
        """Partitions whose last transaction failed: it may have committed all the same (see _not_committed)."""
        self.producers = PartitionProducers(target.bootstrap, self.group, client_id=f"flywheel-{spec.name}")
        self._reader: AIOKafkaConsumer | None = None
        self._lock = asyncio.Lock()  # one transaction or offset move at a time
        self._last_activity = time.monotonic()
        self._watcher: asyncio.Task[None] | None = None
        session_ms = int(target.session_timeout_s * 1000)
        self.broker = KafkaBroker(
            target.bootstrap,
            client_id=f"flywheel-{spec.name}",
            logger=log,
            log_level=logging.DEBUG,
            graceful_timeout=60.0,
        )
        self.subscriber = self.broker.subscriber(
            *[target.prefix + t for t in spec.topics],
            batch=True,
            max_records=batch_size,
            batch_timeout_ms=500,
            # Each batch is a transaction (several broker round trips and a marker per partition): a fetch waits
            # up to 100 ms for 64 KB, so a trickle of records makes fewer, larger transactions (bench/pipeline.py
            # on Kafka, end to end: 29.5-30.9 -> 33.5-37.1 episodes/s).
            fetch_min_bytes=65536,
            fetch_max_wait_ms=100,
            group_id=self.group,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            session_timeout_ms=session_ms,
            heartbeat_interval_ms=max(500, session_ms // 4),
            max_poll_interval_ms=int(spec.max_handle_s * 1000),
            ack_policy=AckPolicy.MANUAL,
            listener=_FinishBatchOnRevoke(self),
        )
        self.subscriber(self._on_batch)
        self.app = FastStream(
            self.broker,
            logger=log,
            after_startup=[self._started],
            on_shutdown=[self._stop_watcher],
            after_shutdown=[self._stop_clients],
        )

    @property
    def stats(self) -> RunStats:
        return self.batches.stats

    def run(self) -> RunStats:
        """Run until SIGINT/SIGTERM (or ``idle_exit_s`` without records); returns the stats."""
        try:
            asyncio.run(self.app.run(log_level=logging.INFO))
        finally:
            self.batches.close()
        return self.stats

    # -- one batch -----------------------------------------------------------------------------

    async def _on_batch(self, message: KafkaMessage) -> None:
        raw = message.raw_message
        messages = raw if isinstance(raw, tuple) else (raw,)
        if not messages:
            return
        by_partition: dict[AioTopicPartition, list[Any]] = {}
        for m in messages:
            by_partition.setdefault(AioTopicPartition(m.topic, m.partition), []).append(m)
        self._last_activity = time.monotonic()
        self._in_flight = True
        current: AioTopicPartition | None = None
        try:
            for tp, part in by_partition.items():
                current = tp
                if tp in self._unsure:
                    part = await self._not_committed(tp, part)
                records = [self._record(m) for m in part]
                if not records:
                    continue
                result = await anyio.to_thread.run_sync(self.batches.handle, records)
                await self.publish_and_commit(tp, result.outputs, records)
                await anyio.to_thread.run_sync(self.batches.done, result)
        except Exception:
            if current is not None:
                self._unsure.add(current)
            log.exception(
                "%s: batch of %d records not committed; rewinding for redelivery", self.spec.name, len(messages)
            )
            await message.nack()
            await asyncio.sleep(FAILURE_BACKOFF_S)
            return
        finally:
            self._in_flight = False
            self._last_activity = time.monotonic()
        self.markers_dirty = True

    async def _not_committed(self, tp: AioTopicPartition, part: list[Any]) -> list[Any]:
        """The records of ``tp`` past the group's commit. After a failed transaction its outcome is unknown: the
        broker may have committed it and only the answer was lost (a broker restart, a dropped connection), and
        the rewind then hands the same records over again. Fence the failed producer first (``recover``: a
        transaction the broker had prepared is completed, any other aborted), so the committed offset read next
        is final; records below it were committed with their outputs and are not handled again."""
        consumer = self.subscriber.consumer
        if consumer is None:
            return part
        async with self._lock:
            await self.producers.recover(consumer, tp)
            committed = await consumer.committed(tp)
        self._unsure.discard(tp)
        kept = [m for m in part if committed is None or m.offset >= committed]
        if len(kept) < len(part):
            log.warning(
                "%s: %d records of %s[%d] below offset %s were committed by a transaction whose answer was lost; "
                "not handled again",
                self.spec.name,
                len(part) - len(kept),
                tp.topic,
                tp.partition,
                committed,
            )
        return kept

    def _record(self, msg: Any) -> Record:
        headers = msg.headers
        return Record(
            msg.topic.removeprefix(self.target.prefix),
            msg.partition,
            msg.offset,
            msg.key,
            msg.value,
            msg.timestamp,
            tuple(headers) if headers else (),
        )

    async def publish_and_commit(
        self, tp: AioTopicPartition, outputs: Sequence[OutgoingRecord], consumed: Sequence[Record]
    ) -> None:
        """Outputs and the offset past ``consumed`` (all of partition ``tp``) in one transaction of ``tp``'s
        producer: both become visible, or neither; a fenced member's transaction never does."""
        prefix = self.target.prefix
        async with self._lock:
            consumer = self.subscriber.consumer
            if consumer is not None:
                await self.producers.recover(consumer, tp)
            await self.producers.commit(tp, outputs, consumed[-1].offset + 1, topic_name=lambda t: prefix + t)

    async def quiescent(self) -> None:
        """Wait until no batch is being handled (the rebalance listener calls this)."""
        while self._in_flight:
            await asyncio.sleep(0.05)

    # -- lifecycle -----------------------------------------------------------------------------

    async def _stop_clients(self) -> None:
        await self.producers.close()
        reader, self._reader = self._reader, None
        if reader is not None:
            await reader.stop()

    async def _started(self) -> None:
        log.info(
            "%s: consuming %s as group %s (FastStream)", self.spec.name, ",".join(self.spec.topics), self.spec.group
        )
        self._last_activity = time.monotonic()
        self._watcher = asyncio.create_task(self._watch())

    async def _stop_watcher(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            try:
                await self._watcher
            except asyncio.CancelledError:
                pass

    async def _watch(self) -> None:
        """While idle: move offsets over trailing transaction markers; exit after ``idle_exit_s``."""
        while True:
            await asyncio.sleep(WATCH_TICK_S)
            idle = time.monotonic() - self._last_activity
            if self.markers_dirty and idle >= MARKER_CHECK_IDLE_S:
                try:
                    await self._commit_past_markers()
                except Exception:  # noqa: BLE001 - best effort; retried on the next idle tick
                    log.warning("%s: could not move offsets past transaction markers", self.spec.name, exc_info=True)
            if self.idle_exit_s is not None and idle >= self.idle_exit_s and not self._in_flight:
                self.app.exit()
                return

    async def _commit_past_markers(self) -> None:
        """Markers take offsets but are never delivered, so a group that handled everything would show a
        lag of one per transactionally written partition. A partition is moved to its end only if a
        read from the committed offset finds no record at all, so nothing unhandled is ever skipped."""
        consumer = self.subscriber.consumer
        if consumer is None:
            return
        async with self._lock:
            self.markers_dirty = False
            assigned = sorted(consumer.assignment())
            if not assigned:
                return
            reader = await self._marker_reader()
            ends = await reader.end_offsets(assigned)
            behind = {}
            for tp in assigned:
                committed = await consumer.committed(tp)
                if committed is not None and committed < ends[tp]:
                    behind[tp] = committed
            if not behind:
                return
            reader.assign(list(behind))
            for tp, offset in behind.items():
                reader.seek(tp, offset)
            deliverable: set[AioTopicPartition] = set()
            deadline = time.monotonic() + 5.0
            pending = set(behind)
            while pending and time.monotonic() < deadline:
                got = await reader.getmany(*pending, timeout_ms=200)
                deliverable |= {tp for tp, msgs in got.items() if msgs}
                pending = {tp for tp in pending - deliverable if await reader.position(tp) < ends[tp]}
            moves = {tp: ends[tp] for tp in behind if tp not in deliverable and tp not in pending}
            if moves:
                await consumer.commit(moves)

    async def _marker_reader(self) -> AIOKafkaConsumer:
        """A group-less read_committed consumer for the marker check, created once on the app's loop."""
        if self._reader is None:
            self._reader = AIOKafkaConsumer(
                bootstrap_servers=self.target.bootstrap,
                client_id=f"flywheel-{self.spec.name}-markers",
                group_id=None,
                enable_auto_commit=False,
                isolation_level="read_committed",
            )
            await self._reader.start()
        return self._reader
