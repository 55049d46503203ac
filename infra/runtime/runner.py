"""The consumer loop: poll, dedupe, handle with bounded retries, dead-letter poison, publish + commit atomically."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bus_schemas.envelope import Event, Producer
from bus_schemas.errors import SchemaError
from infra.bootstrap import Ports
from infra.bus.port import GroupConsumer
from infra.bus.records import OutgoingRecord, Record
from infra.events import from_record, to_record
from infra.runtime.dead_letter import dead_letter
from infra.runtime.dedupe import ProcessedStore
from infra.runtime.spec import ConsumerSpec

log = logging.getLogger("flywheel.runtime")


@dataclass
class RunStats:
    handled: int = 0
    skipped: int = 0  # other event types, or already handled (duplicates)
    duplicates: int = 0
    dead_lettered: int = 0
    published: int = 0
    batches: int = 0


class ConsumerRunner:
    """Runs one :class:`ConsumerSpec` as a member of its consumer group on the given ports."""

    def __init__(
        self,
        spec: ConsumerSpec,
        ports: Ports,
        *,
        state_dir: Path = Path(".flywheel/state"),
        max_attempts: int = 3,
        retry_backoff_s: float = 0.05,
        batch_size: int = 200,
    ) -> None:
        self.spec = spec
        self.ports = ports
        self.max_attempts = max_attempts
        self.retry_backoff_s = retry_backoff_s
        self.batch_size = batch_size
        self.producer = Producer(service=spec.name, version=spec.version)
        self.processed = ProcessedStore(state_dir / f"{spec.group}.processed.db")
        self.stats = RunStats()
        self._consumer: GroupConsumer | None = None

    @property
    def consumer(self) -> GroupConsumer:
        if self._consumer is None:
            self._consumer = self.ports.bus.consumer(self.spec.group, list(self.spec.topics))
        return self._consumer

    def run(self, stop: threading.Event | None = None, *, idle_exit_s: float | None = None) -> RunStats:
        """Loop until ``stop`` is set (or, with ``idle_exit_s``, until nothing arrived for that long)."""
        stop = stop or threading.Event()
        idle_since = time.monotonic()
        log.info("%s: consuming %s as group %s", self.spec.name, ",".join(self.spec.topics), self.spec.group)
        while not stop.is_set():
            if self.step():
                idle_since = time.monotonic()
            elif idle_exit_s is not None and time.monotonic() - idle_since >= idle_exit_s:
                break
        return self.stats

    def step(self, timeout_s: float = 0.5) -> int:
        """Handle one polled batch; returns how many records it held."""
        records = self.consumer.poll(max_records=self.batch_size, timeout_s=timeout_s)
        if records:
            self.handle_batch(records)
        return len(records)

    def handle_batch(self, records: list[Record]) -> None:
        outputs: list[OutgoingRecord] = []
        decoded: list[tuple[Record, Event | None, BaseException | None]] = []
        for record in records:
            try:
                decoded.append((record, from_record(record), None))
            except SchemaError as exc:
                decoded.append((record, None, exc))
        already = self.processed.seen(e.event_id for _, e, _ in decoded if e is not None)
        handled_ids: list[str] = []
        for record, event, decode_error in decoded:
            if decode_error is not None:
                outputs.append(self._dead_letter(record, decode_error, attempts=1))
                continue
            assert event is not None
            if event.event_id in already or event.event_id in handled_ids:
                self.stats.duplicates += 1
                self.stats.skipped += 1
                continue
            if not self.spec.accepts(event):
                self.stats.skipped += 1
                continue
            outputs.extend(self._handle(record, event))
            handled_ids.append(event.event_id)
        self.consumer.publish_and_commit(outputs, records)
        self.processed.mark(handled_ids)
        self.stats.batches += 1
        self.stats.published += len(outputs)

    def _handle(self, record: Record, event: Event) -> list[OutgoingRecord]:
        for attempt in range(1, self.max_attempts + 1):
            try:
                produced = [to_record(e) for e in self.spec.handle(event, self.ports)]
            except Exception as exc:  # noqa: BLE001 - any handler failure is retried, then dead-lettered
                log.warning("%s: %s %s failed (attempt %d/%d): %r", self.spec.name, event.event_type,
                            event.event_id, attempt, self.max_attempts, exc)
                if attempt == self.max_attempts:
                    return [self._dead_letter(record, exc, attempts=attempt)]
                time.sleep(self.retry_backoff_s * attempt)
            else:
                self.stats.handled += 1
                return produced
        raise AssertionError("unreachable")

    def _dead_letter(self, record: Record, error: BaseException, *, attempts: int) -> OutgoingRecord:
        self.stats.dead_lettered += 1
        log.error("%s: dead-lettering %s[%d]@%d: %s", self.spec.name, record.topic, record.partition,
                  record.offset, error)
        letter = dead_letter(
            record, error=error, attempts=attempts, group=self.spec.group, producer=self.producer,
            blobs=self.ports.blobs,
        )
        return to_record(letter)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
        self.processed.close()
