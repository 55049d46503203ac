"""The Kafka adapter of the bus port: aiokafka clients (idempotent acks=all producer, group consumers,
replay) driven from a background loop, kafka-python for admin (topics, group offsets).

The synchronous face lets the CLI, tests and plain handlers use the same port as the embedded log;
long-running services subscribe through FastStream on the same aiokafka stack.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.errors import KafkaError as AioKafkaError
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaConfigurationError, KafkaError, TopicAlreadyExistsError

from infra.bus.aio_loop import LoopThread
from infra.bus.client_logs import throttle_client_logs
from infra.bus.errors import BusUnavailable, BusWriteError, UnknownTopic
from infra.bus.kafka_fencing import TRANSACTION_TIMEOUT_MS, PartitionProducers
from infra.bus.records import (
    DEFAULT_MAX_POLL_INTERVAL_S,
    OutgoingRecord,
    PartitionLag,
    Published,
    Record,
    TopicLayout,
    TopicPartition,
    next_offsets,
)

throttle_client_logs()
log = logging.getLogger("flywheel.bus")

_PAGE = 5000
_READER_RENEWALS = 2
_POLL_MS = 200  # one replay poll; progress, not a single poll, decides when a partition has stalled
# aiokafka validates records with assertions (unknown partition, oversized value) before sending.
_SEND_ERRORS = (AioKafkaError, AssertionError, ValueError)
# What stopping a client can raise when its broker is already gone.
_CLOSE_ERRORS = (TimeoutError, concurrent.futures.CancelledError, asyncio.CancelledError, *_SEND_ERRORS)


class KafkaBus:
    """A :class:`~infra.bus.port.Bus` on an Apache Kafka cluster (``kafka://host:port[,host:port]``)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        connect_timeout_s: float = 10.0,
        session_timeout_s: float = 10.0,
        client_id: str = "flywheel",
    ) -> None:
        self.bootstrap = bootstrap
        self.url = f"kafka://{bootstrap}"
        self.session_timeout_s = session_timeout_s
        self.timeout_s = connect_timeout_s
        self.client_id = client_id
        self._loop = LoopThread()
        # One started, group-less consumer answers every end-offset query: starting one per query (a bootstrap,
        # a metadata fetch and a stop) cost ~0.3 s, and consumers ask before each event they handle.
        self._offsets: AIOKafkaConsumer | None = None
        self._offsets_lock: asyncio.Lock | None = None
        try:
            self._admin = KafkaAdminClient(
                bootstrap_servers=bootstrap.split(","),
                client_id=client_id,
                request_timeout_ms=max(int(connect_timeout_s * 1000), 30_000),
                bootstrap_timeout_ms=int(connect_timeout_s * 1000),
            )
            self._producer = self._loop.run(self._start_producer(), connect_timeout_s + 5)
        except KafkaConfigurationError:
            self._loop.stop()
            raise
        except (KafkaError, AioKafkaError, OSError, TimeoutError) as exc:
            self._loop.stop()
            raise BusUnavailable(
                f"Kafka at {self.url} is unreachable (waited {connect_timeout_s:.0f}s): {exc!r}"
            ) from exc

    async def _start_producer(self) -> AIOKafkaProducer:
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            client_id=self.client_id,
            acks="all",
            enable_idempotence=True,
            # publish_many waits for its acks, so a linger only delays the caller: 5 ms held every publish of a
            # rollout worker (two an episode); bench/rollouts.py, the worker on Kafka: 32.5 -> 58.8 episodes/s.
            linger_ms=0,
            request_timeout_ms=max(int(self.timeout_s * 1000), 30_000),
        )
        try:
            await asyncio.wait_for(producer.start(), self.timeout_s)
        except BaseException:
            await producer.stop()
            raise
        return producer

    # -- topics -------------------------------------------------------------------------------

    def create_topics(self, layouts: Sequence[TopicLayout]) -> None:
        existing = set(self._admin.list_topics())
        new = [
            NewTopic(
                name=layout.name,
                num_partitions=layout.partitions,
                replication_factor=1,
                topic_configs={"retention.ms": str(layout.retention_ms), **layout.config},
            )
            for layout in layouts
            if layout.name not in existing
        ]
        if new:
            try:
                self._admin.create_topics(new, timeout_ms=int(self.timeout_s * 1000))
            except TopicAlreadyExistsError:
                pass
        for layout in layouts:
            self.partitions(layout.name)

    def topics(self) -> dict[str, int]:
        meta = self._admin.describe_topics()
        return {t["name"]: len(t["partitions"]) for t in meta if not t["name"].startswith("__")}

    def partitions(self, topic: str) -> int:
        parts = self._loop.run(self._producer.partitions_for(topic), self.timeout_s + 5)
        if not parts:
            raise UnknownTopic(f"topic {topic!r} does not exist on {self.url}")
        return len(parts)

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, record: OutgoingRecord) -> Published:
        return self.publish_many([record])[0]

    def publish_many(self, records: Sequence[OutgoingRecord]) -> list[Published]:
        try:
            metas = self._loop.run(self._send_all(records))
        except _SEND_ERRORS as exc:
            raise BusWriteError(f"publish to {self.url} failed: {exc!r}") from exc
        return [Published(m.topic, m.partition, m.offset) for m in metas]

    async def _send_all(self, records: Sequence[OutgoingRecord]) -> list:
        futures = [
            await self._producer.send(r.topic, value=r.value, key=r.key, headers=list(r.headers), partition=r.partition)
            for r in records
        ]
        return list(await asyncio.gather(*futures))

    # -- reading ------------------------------------------------------------------------------

    async def _reader(self) -> AIOKafkaConsumer:
        """A group-less consumer for reading by position; created and started on the loop thread."""
        reader = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            client_id=self.client_id,
            group_id=None,
            enable_auto_commit=False,
            isolation_level="read_committed",
        )
        await reader.start()
        return reader

    async def _partitions_and_ends(self, reader: AIOKafkaConsumer, topic: str) -> dict[AioTopicPartition, int]:
        tps = [AioTopicPartition(topic, p) for p in sorted(await self._known_partitions(reader, topic))]
        return dict(await reader.end_offsets(tps))

    async def _known_partitions(self, reader: AIOKafkaConsumer, topic: str) -> set[int]:
        """``topic``'s partitions as ``reader`` knows them, its metadata refreshed when it lacks the topic.

        A refresh the broker did not answer is tried again for ``timeout_s``, then reported as ``BusUnavailable``
        (an outage: the consumer runtime waits it out and handles the event again). Only a broker that answered
        without the topic makes it ``UnknownTopic``. A reader's metadata loses its topics when the broker goes
        down (a broker restart mid-round, tests/faults/test_broker_restart_round.py): each read then failed at
        once with "topic does not exist", a handler error, so the verifier dead-lettered the episodes it was
        judging instead of waiting for the broker.

        A refresh can also fail because the reader knows no broker any more: a broker that is restarting answers a
        metadata request without brokers, aiokafka's client then holds an empty broker list and no bootstrap
        connection, and every later refresh asks nobody ("Unable to update metadata from []") for as long as the
        reader lives, so a curator waited out its whole outage allowance and the round stalled (a CI run of the
        broker-restart test, 2026-12-07). Such a reader bootstraps again from the bus's servers."""
        deadline = time.monotonic() + self.timeout_s
        client = reader._client  # noqa: SLF001 - aiokafka has no public metadata refresh or re-bootstrap
        while not (parts := reader.partitions_for_topic(topic)):
            if await client.force_metadata_update():
                if parts := reader.partitions_for_topic(topic):
                    break
                raise UnknownTopic(f"topic {topic!r} does not exist on {self.url}")
            if not client.cluster.brokers():
                with contextlib.suppress(AioKafkaError):  # the broker is still down: tried again next time round
                    await client.bootstrap()
            if time.monotonic() >= deadline:
                raise BusUnavailable(f"no metadata of topic {topic!r} from {self.url} in {self.timeout_s:.0f} s")
            await asyncio.sleep(0.2)
        return set(parts)

    async def _offsets_reader(self) -> AIOKafkaConsumer:
        """The bus's long-lived reader for end offsets, started on first use (on the loop thread)."""
        if self._offsets_lock is None:
            self._offsets_lock = asyncio.Lock()
        async with self._offsets_lock:
            if self._offsets is None:
                self._offsets = await self._reader()
            return self._offsets

    def end_offsets(self, topic: str) -> dict[int, int]:
        async def run() -> dict[int, int]:
            ends = await self._partitions_and_ends(await self._offsets_reader(), topic)
            return {tp.partition: off for tp, off in sorted(ends.items())}

        return self._loop.run(run())

    def replay(
        self,
        topic: str,
        *,
        from_offset: int = 0,
        since: datetime | None = None,
        partition: int | None = None,
    ) -> Iterator[Record]:
        reader = self._loop.run(self._offsets_reader())
        ends = self._loop.run(self._partitions_and_ends(reader, topic))
        tps = [tp for tp in sorted(ends) if partition is None or tp.partition == partition]
        starts = {tp: from_offset for tp in tps}
        if since is not None:
            found = self._loop.run(reader.offsets_for_times({tp: int(since.timestamp() * 1000) for tp in tps}))
            starts = {tp: (found[tp].offset if found.get(tp) else ends[tp]) for tp in tps}
        for tp in tps:
            yield from self._read_partition(tp, starts[tp], ends[tp])

    def _read_partition(self, tp: AioTopicPartition, start: int, end: int) -> Iterator[Record]:
        """Records of one partition in [start, end). Offsets may have gaps (transaction markers, aborted
        records), so progress is read from the consumer's position, not from the last record's offset.

        Polls are short: a partition whose remaining offsets are only transaction markers yields no record, and
        a long poll waited its whole timeout for each such tail (every transactional writer leaves one), which
        made a run monitor re-reading its partitions look hung. Without progress for ``timeout_s`` the reader is
        replaced by a fresh one (twice) before the replay is reported as stalled.
        """
        if start >= end:
            return
        position, renewals, last_progress = start, 0, time.monotonic()
        reader = self._loop.run(self._positioned_reader(tp, start))
        try:
            while position < end:
                batch = self._loop.run(self._bounded_getmany(reader, tp))
                records = batch.get(tp, [])
                for msg in records:
                    if msg.offset >= end:
                        return
                    yield _to_record(msg)
                moved_to = self._loop.run(reader.position(tp))
                if records or moved_to > position:
                    position, last_progress = moved_to, time.monotonic()
                    continue
                if time.monotonic() - last_progress < self.timeout_s:
                    continue
                if renewals == _READER_RENEWALS:
                    raise BusUnavailable(
                        f"replay of {tp.topic}[{tp.partition}] stalled at offset {position} on {self.url}"
                    )
                renewals, last_progress = renewals + 1, time.monotonic()
                log.warning(
                    "replay of %s[%d] made no progress at offset %d (end %d): reading on with a fresh reader",
                    tp.topic,
                    tp.partition,
                    position,
                    end,
                )
                self._loop.run(self._stop_reader(reader))
                reader = self._loop.run(self._positioned_reader(tp, position))
        finally:
            self._loop.run(self._stop_reader(reader))

    async def _positioned_reader(self, tp: AioTopicPartition, offset: int) -> AIOKafkaConsumer:
        reader = await self._reader()
        reader.assign([tp])
        reader.seek(tp, offset)
        return reader

    async def _bounded_getmany(self, reader: AIOKafkaConsumer, tp: AioTopicPartition) -> dict:
        """One short poll, at most ``timeout_s`` + 5 s; a call still running then is cancelled and left behind (not
        awaited: a getmany that ignores its timeout may ignore the cancellation too, and ``wait_for`` would wait for
        it)."""
        task = asyncio.ensure_future(reader.getmany(tp, timeout_ms=_POLL_MS, max_records=_PAGE))
        done, _ = await asyncio.wait({task}, timeout=self.timeout_s + 5)
        if task in done:
            return task.result()
        task.cancel()
        return {}

    async def _stop_reader(self, reader: AIOKafkaConsumer) -> None:
        task = asyncio.ensure_future(reader.stop())
        done, _ = await asyncio.wait({task}, timeout=self.timeout_s)
        if task not in done:
            task.cancel()

    # -- consumer groups ----------------------------------------------------------------------

    def consumer(
        self, group: str, topics: Sequence[str], *, max_poll_interval_s: float = DEFAULT_MAX_POLL_INTERVAL_S
    ) -> KafkaGroupConsumer:
        return KafkaGroupConsumer(self, group, list(topics), max_poll_interval_s)

    def lag(self, group: str, topics: Sequence[str]) -> list[PartitionLag]:
        committed = {
            (tp.topic, tp.partition): meta.offset
            for tp, meta in self._admin.list_group_offsets({group: None}).get(group, {}).items()
        }
        return [
            PartitionLag(topic, part, max(0, committed.get((topic, part), 0)), end)
            for topic in topics
            for part, end in self.end_offsets(topic).items()
        ]

    def close(self) -> None:
        """Stop the clients within bounds (a dead broker cannot make this hang); closing twice is a no-op."""
        if self._loop.stopped:
            return
        try:
            if self._offsets is not None:
                self._loop.run(self._stop_reader(self._offsets), self.timeout_s + 5)
            self._loop.run(self._producer.stop(), 10)
        except _CLOSE_ERRORS:
            pass  # the broker is gone: nothing left to flush to; the loop below is stopped regardless
        finally:
            self._admin.close()
            self._loop.stop()


class _ClaimOnAssign(ConsumerRebalanceListener):
    """Fence the previous owners of newly assigned partitions before reading them (``infra.bus.kafka_fencing``);
    count the rebalances this member took part in (its ``generation``)."""

    def __init__(self, consumer: AIOKafkaConsumer, producers: PartitionProducers) -> None:
        self.consumer = consumer
        self.producers = producers
        self.rebalances = 0

    async def on_partitions_revoked(self, revoked) -> None:  # noqa: ANN001 - aiokafka's set of partitions
        await self.producers.release(revoked)

    async def on_partitions_assigned(self, assigned) -> None:  # noqa: ANN001
        self.rebalances += 1  # first: the positions were reset to the commits even if the claim below fails
        await self.producers.claim(self.consumer, assigned)


class KafkaGroupConsumer:
    """A consumer-group member on Kafka: no auto-commit; commit only what was handled.

    ``publish_and_commit`` of records from one partition (what the consumer runtime does) runs in the fenced
    transaction of that partition's producer; a commit spanning several partitions uses the member's own
    transactional producer, atomic but not fenced against a zombie member.
    """

    def __init__(
        self, bus: KafkaBus, group: str, topics: list[str], max_poll_interval_s: float = DEFAULT_MAX_POLL_INTERVAL_S
    ) -> None:
        self.group = group
        self._bus = bus
        self._loop = bus._loop
        self._tx_producer: AIOKafkaProducer | None = None
        self._producers = PartitionProducers(bus.bootstrap, group, client_id=bus.client_id)
        self._polled: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self._closed = False
        self._consumer = self._loop.run(self._start(bus, topics, max_poll_interval_s))

    async def _start(self, bus: KafkaBus, topics: list[str], max_poll_interval_s: float) -> AIOKafkaConsumer:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bus.bootstrap,
            client_id=bus.client_id,
            group_id=self.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=int(bus.session_timeout_s * 1000),
            heartbeat_interval_ms=max(500, int(bus.session_timeout_s * 1000) // 4),
            max_poll_interval_ms=int(max_poll_interval_s * 1000),
            isolation_level="read_committed",
        )
        self._listener = _ClaimOnAssign(consumer, self._producers)
        consumer.subscribe(topics, listener=self._listener)
        await consumer.start()
        return consumer

    async def _start_transactional(self) -> AIOKafkaProducer:
        producer = AIOKafkaProducer(
            bootstrap_servers=self._bus.bootstrap,
            client_id=self._bus.client_id,
            transactional_id=f"{self.group}-{uuid.uuid4().hex[:12]}",
            enable_idempotence=True,
            acks="all",
            linger_ms=5,
            # A member killed mid-transaction blocks read_committed readers of its partitions until the
            # coordinator aborts the transaction; keep that window short.
            transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
        )
        await producer.start()
        return producer

    async def _transact(self, outputs: Sequence[OutgoingRecord], offsets: dict[AioTopicPartition, int]) -> list:
        if self._tx_producer is None:
            self._tx_producer = await self._start_transactional()
        producer = self._tx_producer
        async with producer.transaction():
            futures = [
                await producer.send(r.topic, value=r.value, key=r.key, headers=list(r.headers), partition=r.partition)
                for r in outputs
            ]
            if offsets:
                await producer.send_offsets_to_transaction(offsets, self.group)
        return [f.result() for f in futures]

    async def _fenced_transact(self, outputs: Sequence[OutgoingRecord], tp: AioTopicPartition, offset: int) -> list:
        await self._producers.recover(self._consumer, tp)
        return await self._producers.commit(tp, outputs, offset)

    def publish_and_commit(self, outputs: Sequence[OutgoingRecord], consumed: Iterable[Record]) -> list[Published]:
        done = next_offsets(consumed)
        offsets = {AioTopicPartition(tp.topic, tp.partition): off for tp, off in done.items()}
        try:
            if len(offsets) == 1:
                ((tp, offset),) = offsets.items()
                metas = self._loop.run(self._fenced_transact(outputs, tp, offset))
            else:
                metas = self._loop.run(self._transact(outputs, offsets))
        except _SEND_ERRORS as exc:
            raise BusWriteError(f"transaction of group {self.group!r} on {self._bus.url} failed: {exc!r}") from exc
        self._mark_committed(done)
        return [Published(m.topic, m.partition, m.offset) for m in metas]

    def poll(self, max_records: int = 500, timeout_s: float = 1.0) -> list[Record]:
        batches = self._loop.run(self._consumer.getmany(timeout_ms=int(timeout_s * 1000), max_records=max_records))
        records: list[Record] = []
        for atp in sorted(batches, key=lambda t: (t.topic, t.partition)):
            messages = batches[atp]
            records.extend(map(_to_record, messages))
            tp = TopicPartition(atp.topic, atp.partition)
            self._polled[tp] = max(self._polled.get(tp, 0), messages[-1].offset + 1)
        if not records:
            self._loop.run(self._commit_past_markers())
        return records

    async def _commit_past_markers(self) -> None:
        """When idle, move the committed offset over transaction markers that follow handled records.

        Markers take offsets but are never delivered, so without this a group that handled everything
        would show a lag of one per transactionally written partition. Only partitions whose every
        polled record is committed are moved, so nothing unhandled is ever skipped.
        """
        moves: dict[AioTopicPartition, int] = {}
        for atp in self._consumer.assignment():
            tp = TopicPartition(atp.topic, atp.partition)
            committed = self._committed.get(tp)
            if committed is None or committed != self._polled.get(tp):
                continue
            position = await self._consumer.position(atp)
            if position > committed:
                moves[atp] = position
        if moves:
            await self._consumer.commit(moves)
            for atp, off in moves.items():
                tp = TopicPartition(atp.topic, atp.partition)
                self._committed[tp] = self._polled[tp] = off

    def _mark_committed(self, offsets: dict[TopicPartition, int]) -> None:
        for tp, off in offsets.items():
            self._committed[tp] = max(self._committed.get(tp, 0), off)

    def commit(self, records: Iterable[Record]) -> None:
        done = next_offsets(records)
        offsets = {AioTopicPartition(tp.topic, tp.partition): off for tp, off in done.items()}
        if offsets:
            try:
                self._loop.run(self._consumer.commit(offsets))
            except AioKafkaError as exc:
                raise BusWriteError(f"commit of group {self.group!r} failed: {exc!r}") from exc
            self._mark_committed(done)

    def assignment(self) -> set[TopicPartition]:
        async def current() -> set[TopicPartition]:
            return {TopicPartition(tp.topic, tp.partition) for tp in self._consumer.assignment()}

        return self._loop.run(current())

    def generation(self) -> int:
        return self._listener.rebalances

    def close(self) -> None:
        """Leave the group and stop the transactional producer; a no-op when closed already (or the bus is)."""
        if self._closed or self._loop.stopped:
            return
        self._closed = True
        try:
            if self._tx_producer is not None:
                self._loop.run(self._tx_producer.stop(), 30)
            self._loop.run(self._producers.close(), 30)
            self._loop.run(self._consumer.stop(), 30)
        except _CLOSE_ERRORS:
            pass  # the broker is gone: there is no group left to leave


def _to_record(msg) -> Record:  # noqa: ANN001 - aiokafka's ConsumerRecord
    headers = msg.headers
    return Record(
        msg.topic, msg.partition, msg.offset, msg.key, msg.value, msg.timestamp, tuple(headers) if headers else ()
    )
