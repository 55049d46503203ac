"""The embedded bus: a durable single-file event log (SQLite in WAL mode) with Kafka's semantics.

Topics have partitions; a key always lands in the partition Kafka's default partitioner would pick;
order is kept per partition; consumer groups split partitions between live members (members
heartbeat into the file from a background thread, as Kafka's clients do, so several OS processes can share one
log and a member busy with a long record keeps its partitions); committed offsets live in the
file, and whatever a member polled but did not commit is delivered again after it dies. Every
record is kept (retention is recorded, never enforced), so the whole history replays.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import orjson

from infra.bus.errors import BusUnavailable, BusWriteError, UnknownTopic
from infra.bus.partitioner import partition_for_key
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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS topics(
    name TEXT PRIMARY KEY, partitions INTEGER NOT NULL, retention_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS partitions(
    topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL, last_ts INTEGER NOT NULL,
    PRIMARY KEY(topic, partition)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records(
    topic TEXT NOT NULL, partition INTEGER NOT NULL, "offset" INTEGER NOT NULL, ts INTEGER NOT NULL,
    key BLOB, value BLOB NOT NULL, headers BLOB,
    UNIQUE(topic, partition, "offset"));
CREATE TABLE IF NOT EXISTS group_offsets(
    grp TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, committed INTEGER NOT NULL,
    PRIMARY KEY(grp, topic, partition)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_members(
    grp TEXT NOT NULL, member TEXT NOT NULL, heartbeat REAL NOT NULL,
    PRIMARY KEY(grp, member)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_generations(
    grp TEXT PRIMARY KEY, generation INTEGER NOT NULL) WITHOUT ROWID;
"""

_PAGE = 5000


def _encode_headers(headers: tuple[tuple[str, bytes], ...]) -> bytes | None:
    return orjson.dumps([[k, v.hex()] for k, v in headers]) if headers else None


def _decode_headers(raw: bytes | None) -> tuple[tuple[str, bytes], ...]:
    return tuple((k, bytes.fromhex(v)) for k, v in orjson.loads(raw)) if raw else ()


class EmbeddedBus:
    """A :class:`~infra.bus.port.Bus` over one SQLite file, shareable by threads and processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        default_partitions: int = 3,
        session_timeout_s: float = 10.0,
        busy_timeout_s: float = 30.0,
        max_bytes: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self.default_partitions = default_partitions
        self.session_timeout_s = session_timeout_s
        self._lock = threading.RLock()
        self._partition_counts: dict[str, int] = {}
        self._round_robin = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            # Checkpoint the WAL every ~40 MB instead of 4 MB: appends are small and frequent, and
            # each checkpoint copies pages back into the main file (twice the append rate measured).
            self._conn.execute("PRAGMA wal_autocheckpoint=10000")
            self._conn.execute("PRAGMA journal_size_limit=67108864")
            self._conn.execute("PRAGMA mmap_size=268435456")
            self._conn.executescript(_SCHEMA)
            if max_bytes is not None:  # a quota: past it, writes fail like a full disk, atomically
                page = self._conn.execute("PRAGMA page_size").fetchone()[0]
                self._conn.execute(f"PRAGMA max_page_count = {max(1, int(max_bytes) // page)}")
        except (sqlite3.Error, OSError) as exc:
            raise BusUnavailable(f"cannot open the embedded bus at {self.url}: {exc}") from exc

    # -- transactions -------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: rolled back whole on any error, so the log never half-applies.

        An exception a signal handler raises (SIGTERM's ``SystemExit`` in ``flywheel run``) lands between any two
        statements, also right after ``BEGIN`` returned: that is rolled back like any other error, and a transaction
        an interrupted write still left open (the handler raising inside this rollback) is rolled back before the
        next write begins. Writes never nest (the lock serialises them), so an open transaction here is such a
        leftover: before, the run's cleanup then failed with "cannot start a transaction within a transaction"."""
        with self._lock:
            began = False
            try:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                self._conn.execute("BEGIN IMMEDIATE")
                began = True
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:  # SQLite may already have rolled back (e.g. disk full)
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    done = "failed" if began else "could not begin"
                    raise BusWriteError(f"write to the embedded bus at {self.url} {done}: {exc}") from exc
                raise

    def _read(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # -- topics -------------------------------------------------------------------------------

    def create_topics(self, layouts: Sequence[TopicLayout]) -> None:
        with self._write() as conn:
            for layout in layouts:
                self._create_topic(conn, layout)

    def _create_topic(self, conn: sqlite3.Connection, layout: TopicLayout) -> int:
        row = conn.execute("SELECT partitions FROM topics WHERE name=?", (layout.name,)).fetchone()
        if row:
            return int(row[0])
        conn.execute(
            "INSERT INTO topics(name, partitions, retention_ms) VALUES(?,?,?)",
            (layout.name, layout.partitions, layout.retention_ms),
        )
        conn.executemany(
            "INSERT INTO partitions(topic, partition, next_offset, last_ts) VALUES(?,?,0,0)",
            [(layout.name, p) for p in range(layout.partitions)],
        )
        return layout.partitions

    def topics(self) -> dict[str, int]:
        return {name: int(n) for name, n in self._read("SELECT name, partitions FROM topics ORDER BY name")}

    def partitions(self, topic: str) -> int:
        count = self._partition_counts.get(topic)
        if count is None:
            row = self._read("SELECT partitions FROM topics WHERE name=?", (topic,))
            if not row:
                raise UnknownTopic(f"topic {topic!r} does not exist on {self.url}")
            count = self._partition_counts[topic] = int(row[0][0])
        return count

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, record: OutgoingRecord) -> Published:
        return self.publish_many([record])[0]

    def publish_many(self, records: Sequence[OutgoingRecord]) -> list[Published]:
        with self._write() as conn:
            return self._append(conn, records)

    def publish_and_commit(
        self, records: Sequence[OutgoingRecord], group: str, offsets: dict[TopicPartition, int]
    ) -> list[Published]:
        """Append ``records`` and commit ``group``'s offsets in one transaction: both happen or neither."""
        with self._write() as conn:
            published = self._append(conn, records)
            self._commit(conn, group, offsets)
            return published

    def _append(self, conn: sqlite3.Connection, records: Sequence[OutgoingRecord]) -> list[Published]:
        out: list[Published] = []
        now = int(time.time() * 1000)
        for rec in records:
            count = self._partition_counts.get(rec.topic) or self._auto_create(conn, rec.topic)
            part = rec.partition if rec.partition is not None else self._choose(rec.key, count)
            if not 0 <= part < count:
                raise UnknownTopic(f"partition {part} of {rec.topic!r} does not exist on {self.url}")
            offset, ts = conn.execute(
                "UPDATE partitions SET next_offset = next_offset + 1, last_ts = max(last_ts, ?) "
                "WHERE topic=? AND partition=? RETURNING next_offset - 1, last_ts",
                (now, rec.topic, part),
            ).fetchone()
            conn.execute(
                'INSERT INTO records(topic, partition, "offset", ts, key, value, headers) VALUES(?,?,?,?,?,?,?)',
                (rec.topic, part, offset, ts, rec.key, rec.value, _encode_headers(rec.headers)),
            )
            out.append(Published(rec.topic, part, offset))
        return out

    def _auto_create(self, conn: sqlite3.Connection, topic: str) -> int:
        count = self._create_topic(conn, TopicLayout(topic, self.default_partitions))
        self._partition_counts[topic] = count
        return count

    def _choose(self, key: bytes | None, count: int) -> int:
        if key is not None:
            return partition_for_key(key, count)
        self._round_robin += 1
        return self._round_robin % count

    # -- reading ------------------------------------------------------------------------------

    def fetch(self, topic: str, partition: int, offset: int, limit: int, end: int | None = None) -> list[Record]:
        """Records of one partition from ``offset`` on (below ``end`` if given), at most ``limit``."""
        upper = end if end is not None else 2**62
        rows = self._read(
            'SELECT "offset", ts, key, value, headers FROM records '
            'WHERE topic=? AND partition=? AND "offset">=? AND "offset"<? ORDER BY "offset" LIMIT ?',
            (topic, partition, offset, upper, limit),
        )
        return [Record(topic, partition, o, k, v, ts, _decode_headers(h)) for o, ts, k, v, h in rows]

    def end_offsets(self, topic: str) -> dict[int, int]:
        rows = self._read("SELECT partition, next_offset FROM partitions WHERE topic=? ORDER BY partition", (topic,))
        if not rows:
            raise UnknownTopic(f"topic {topic!r} does not exist on {self.url}")
        return {int(p): int(n) for p, n in rows}

    def offset_for_time(self, topic: str, partition: int, since: datetime) -> int:
        """First offset whose timestamp is >= ``since`` (timestamps never decrease within a partition)."""
        target = int(since.timestamp() * 1000)
        lo, hi = 0, self.end_offsets(topic)[partition]
        while lo < hi:
            mid = (lo + hi) // 2
            ts = self._read(
                'SELECT ts FROM records WHERE topic=? AND partition=? AND "offset"=?', (topic, partition, mid)
            )
            if ts[0][0] < target:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def replay(
        self,
        topic: str,
        *,
        from_offset: int = 0,
        since: datetime | None = None,
        partition: int | None = None,
    ) -> Iterator[Record]:
        ends = self.end_offsets(topic)
        for part in sorted(ends) if partition is None else [partition]:
            offset = self.offset_for_time(topic, part, since) if since is not None else from_offset
            while offset < ends[part]:
                page = self.fetch(topic, part, offset, _PAGE, ends[part])
                if not page:
                    break
                yield from page
                offset = page[-1].offset + 1

    # -- consumer groups ----------------------------------------------------------------------

    def consumer(
        self, group: str, topics: Sequence[str], *, max_poll_interval_s: float = DEFAULT_MAX_POLL_INTERVAL_S
    ) -> EmbeddedConsumer:
        return EmbeddedConsumer(self, group, list(topics), max_poll_interval_s)

    def committed(self, group: str, topic: str) -> dict[int, int]:
        rows = self._read("SELECT partition, committed FROM group_offsets WHERE grp=? AND topic=?", (group, topic))
        return {int(p): int(c) for p, c in rows}

    def commit_offsets(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        with self._write() as conn:
            self._commit(conn, group, offsets)

    @staticmethod
    def _commit(conn: sqlite3.Connection, group: str, offsets: dict[TopicPartition, int]) -> None:
        conn.executemany(
            "INSERT INTO group_offsets(grp, topic, partition, committed) VALUES(?,?,?,?) "
            "ON CONFLICT(grp, topic, partition) DO UPDATE SET committed = max(committed, excluded.committed)",
            [(group, tp.topic, tp.partition, off) for tp, off in offsets.items()],
        )

    def heartbeat(self, group: str, member: str) -> tuple[list[str], int]:
        """Record that ``member`` is alive, expire silent members; return the live members in order and the
        group's generation, which moves on every join and every departure."""
        now = time.time()
        with self._write() as conn:
            joined = conn.execute("SELECT 1 FROM group_members WHERE grp=? AND member=?", (group, member)).fetchone()
            conn.execute(
                "INSERT INTO group_members(grp, member, heartbeat) VALUES(?,?,?) "
                "ON CONFLICT(grp, member) DO UPDATE SET heartbeat=excluded.heartbeat",
                (group, member, now),
            )
            expired = conn.execute(
                "DELETE FROM group_members WHERE grp=? AND heartbeat < ?", (group, now - self.session_timeout_s)
            ).rowcount
            if joined is None or expired:
                _next_generation(conn, group)
            rows = conn.execute("SELECT member FROM group_members WHERE grp=? ORDER BY member", (group,)).fetchall()
            generation = conn.execute("SELECT generation FROM group_generations WHERE grp=?", (group,)).fetchone()
        return [r[0] for r in rows], generation[0] if generation else 0

    def leave(self, group: str, member: str) -> None:
        with self._write() as conn:
            if conn.execute("DELETE FROM group_members WHERE grp=? AND member=?", (group, member)).rowcount:
                _next_generation(conn, group)

    def lag(self, group: str, topics: Sequence[str]) -> list[PartitionLag]:
        out = []
        for topic in topics:
            committed = self.committed(group, topic)
            for part, end in self.end_offsets(topic).items():
                out.append(PartitionLag(topic, part, committed.get(part, 0), end))
        return out

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _next_generation(conn: sqlite3.Connection, group: str) -> None:
    conn.execute(
        "INSERT INTO group_generations(grp, generation) VALUES(?, 1) "
        "ON CONFLICT(grp) DO UPDATE SET generation = generation + 1",
        (group,),
    )


class EmbeddedConsumer:
    """A consumer-group member on the embedded log: heartbeats, takes its share of partitions, commits."""

    def __init__(
        self, bus: EmbeddedBus, group: str, topics: list[str], max_poll_interval_s: float = DEFAULT_MAX_POLL_INTERVAL_S
    ) -> None:
        self.bus = bus
        self.max_poll_interval_s = max_poll_interval_s
        """A member that has not polled for this long stops heartbeating and loses its partitions, as on Kafka:
        busy is fine, stuck is not."""
        self.group = group
        self.topics = topics
        self.member = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._positions: dict[TopicPartition, int] = {}
        self._generation = 0
        self._next_heartbeat = 0.0
        self._cursor = 0
        self._closed = False
        self._last_poll = time.monotonic()
        self._rebalance()
        self._stop = threading.Event()
        self._heartbeats = threading.Thread(
            target=_heartbeat_loop,
            args=(weakref.ref(self), self._stop, bus.session_timeout_s / 4),
            name=f"heartbeat-{group}",
            daemon=True,
        )
        self._heartbeats.start()

    def heartbeat_if_polling(self) -> bool:
        """Heartbeat unless stuck past ``max_poll_interval_s`` or the bus is gone; False once it should stop. A
        member whose poll heartbeated within the interval (``_rebalance``) is left alone: one write, not two."""
        now = time.monotonic()
        if now - self._last_poll > self.max_poll_interval_s:
            return False
        if now < self._next_heartbeat:
            return True
        try:
            self.bus.heartbeat(self.group, self.member)
        except (sqlite3.Error, BusWriteError):
            return False
        return True

    def _rebalance(self) -> None:
        """Take this member's share of the partitions. When the group's generation or the share moved, every
        partition of the share restarts at the group's commit, as after a Kafka rebalance: what was polled and not
        committed comes again, in order, and a member can drop what it held from before (a kill -9 chaos run found
        a rollout worker that ran a held request ahead of an earlier one it got again, committed past the earlier
        one and was killed: that request was never run)."""
        members, generation = self.bus.heartbeat(self.group, self.member)
        self._next_heartbeat = time.monotonic() + self.bus.session_timeout_s / 4
        every = sorted(TopicPartition(t, p) for t in self.topics for p in range(self._partitions_or_zero(t)))
        index = members.index(self.member)
        mine = {tp for i, tp in enumerate(every) if i % len(members) == index}
        if generation != self._generation or mine != set(self._positions):
            committed = {t: self.bus.committed(self.group, t) for t in {tp.topic for tp in mine}}
            self._positions = {tp: committed[tp.topic].get(tp.partition, 0) for tp in mine}
        self._generation = generation

    def _partitions_or_zero(self, topic: str) -> int:
        try:
            return self.bus.partitions(topic)
        except UnknownTopic:
            return 0

    def assignment(self) -> set[TopicPartition]:
        return set(self._positions)

    def generation(self) -> int:
        return self._generation

    def poll(self, max_records: int = 500, timeout_s: float = 1.0) -> list[Record]:
        now = time.monotonic()
        self._last_poll, deadline = now, now + timeout_s
        delay = 0.005
        while True:
            if time.monotonic() >= self._next_heartbeat:
                self._rebalance()
            batch = self._fetch(max_records)
            if batch or time.monotonic() >= deadline:
                return batch
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.1)

    def _fetch(self, max_records: int) -> list[Record]:
        owned = sorted(self._positions)
        out: list[Record] = []
        for i in range(len(owned)):
            tp = owned[(self._cursor + i) % len(owned)]
            page = self.bus.fetch(tp.topic, tp.partition, self._positions[tp], max_records - len(out))
            if page:
                self._positions[tp] = page[-1].offset + 1
                out.extend(page)
            if len(out) >= max_records:
                break
        self._cursor += 1
        return out

    def commit(self, records: Iterable[Record]) -> None:
        offsets = next_offsets(records)
        if offsets:
            self.bus.commit_offsets(self.group, offsets)

    def publish_and_commit(self, outputs: Sequence[OutgoingRecord], consumed: Iterable[Record]) -> list[Published]:
        return self.bus.publish_and_commit(outputs, self.group, next_offsets(consumed))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._stop.set()
            self._heartbeats.join()
            self.bus.leave(self.group, self.member)


def _heartbeat_loop(member: weakref.ref[EmbeddedConsumer], stop: threading.Event, interval_s: float) -> None:
    """Keep a member alive between its polls, as Kafka clients heartbeat from a background thread: a record that
    takes longer than the session timeout to handle must not hand its partition to a peer while it runs (the
    assignment itself changes only in ``poll``). Ends when the member closes, is garbage-collected (a dropped
    member expires as before), is stuck past its ``max_poll_interval_s``, or its bus is closed."""
    while not stop.wait(interval_s):
        consumer = member()
        if consumer is None or not consumer.heartbeat_if_polling():
            return
        del consumer  # hold no reference while waiting, so a dropped member can be collected
