"""The per-batch work every consumer loop shares: decode, dedupe, handle with bounded retries, dead-letter; wait
out an outage of a server the handler needs (the event is not at fault) instead of dead-lettering.

The loop around it (ConsumerRunner on the port, the FastStream app on Kafka) only fetches records and
makes the returned outputs durable together with the offset commit, then calls :meth:`done`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, is_dataclass, replace
from pathlib import Path

from bus_schemas.envelope import Event, Producer
from infra.blobs.group_commit import GroupCommit
from infra.bus.records import OutgoingRecord, Record
from infra.events import from_record, header, to_record
from infra.outages import OutageWait, is_outage
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


@dataclass
class BatchResult:
    """What one batch produced: the records to publish and the input event ids they answer."""

    outputs: list[OutgoingRecord] = field(default_factory=list)
    handled_ids: list[str] = field(default_factory=list)


class BatchHandler:
    """Runs a :class:`ConsumerSpec` over batches of records; durable dedupe by input event id."""

    def __init__(
        self,
        spec: ConsumerSpec,
        ports: object,
        *,
        state_dir: Path,
        max_attempts: int = 3,
        retry_backoff_s: float = 0.05,
        outage_retry_s: float = 120.0,
    ) -> None:
        self.spec = spec
        self.ports, self._blobs = _group_committed(ports) if spec.group_commit_blobs else (ports, None)
        self.max_attempts = max_attempts
        self.retry_backoff_s = retry_backoff_s
        self.outage_retry_s = outage_retry_s
        self.producer = Producer(service=spec.name, version=spec.version)
        self.processed = ProcessedStore(state_dir / f"{spec.group}.processed.db")
        self.stats = RunStats()

    def handle(self, records: list[Record]) -> BatchResult:
        """The outputs of ``records``; nothing is published or marked yet."""
        result = BatchResult()
        if self.spec.on_batch is not None:
            self.spec.on_batch()
        decoded: list[tuple[Record, Event | None, BaseException | None]] = []
        for record in records:
            if not self._wanted(record):
                decoded.append((record, None, None))
                continue
            try:
                decoded.append((record, from_record(record), None))
            except Exception as exc:  # noqa: BLE001 - SchemaError by contract; anything else is dead-lettered too
                decoded.append((record, None, exc))
        already = self.processed.seen(e.event_id for _, e, _ in decoded if e is not None)
        seen_now: set[str] = set()
        for record, event, decode_error in decoded:
            if decode_error is not None:
                result.outputs.append(self._dead_letter(record, decode_error, attempts=1))
                continue
            if event is None or not self.spec.accepts(event):
                self.stats.skipped += 1
                continue
            if event.event_id in already or event.event_id in seen_now:
                self.stats.duplicates += 1
                self.stats.skipped += 1
                continue
            result.outputs.extend(self._handle(record, event))
            result.handled_ids.append(event.event_id)
            seen_now.add(event.event_id)
        if self._blobs is not None:  # the outputs' blobs (dead letters' payloads too), before the outputs
            self._blobs.sync()  # a failure propagates: the batch stays uncommitted and is redelivered
        return result

    def done(self, result: BatchResult) -> None:
        """Call once the batch's outputs and offsets are durable."""
        self.processed.mark(result.handled_ids)
        self.stats.batches += 1
        self.stats.published += len(result.outputs)

    def _wanted(self, record: Record) -> bool:
        """Skip records of other event types by their header, without decoding them."""
        return self.spec.wants(header(record, "event_type"))

    def _handle(self, record: Record, event: Event) -> list[OutgoingRecord]:
        """Handle ``event``; retry a failure ``max_attempts`` times, then dead-letter it. A server the handler needs
        being unreachable is not the event's fault: it is waited out (``outage_retry_s``), not dead-lettered, and
        past that the error propagates: the consumer stops with the batch uncommitted, and the next member to run
        it gets the event again."""
        attempt = 0
        outage = OutageWait(self.outage_retry_s)
        while True:
            try:
                produced = [to_record(e) for e in self.spec.handle(event, self.ports)]
            except Exception as exc:  # noqa: BLE001 - any handler failure is retried, then dead-lettered
                if is_outage(exc):
                    outage.pause(exc, f"{self.spec.name}: {event.event_type} {event.event_id}")
                    continue
                attempt += 1
                log.warning(
                    "%s: %s %s failed (attempt %d/%d): %r",
                    self.spec.name,
                    event.event_type,
                    event.event_id,
                    attempt,
                    self.max_attempts,
                    exc,
                )
                if attempt >= self.max_attempts:
                    return [self._dead_letter(record, exc, attempts=attempt)]
                time.sleep(self.retry_backoff_s * attempt)
            else:
                self.stats.handled += 1
                return produced

    def _dead_letter(self, record: Record, error: BaseException, *, attempts: int) -> OutgoingRecord:
        self.stats.dead_lettered += 1
        log.error(
            "%s: dead-lettering %s[%d]@%d: %s", self.spec.name, record.topic, record.partition, record.offset, error
        )
        letter = dead_letter(
            record,
            error=error,
            attempts=attempts,
            group=self.spec.group,
            producer=self.producer,
            blobs=self.ports.blobs,  # type: ignore[attr-defined]
        )
        return to_record(letter)

    def close(self) -> None:
        self.processed.close()


def _group_committed(ports: object) -> tuple[object, GroupCommit | None]:
    """``ports`` with its blob store behind a group commit (and the group commit); as they are without one."""
    blobs = getattr(ports, "blobs", None)
    if blobs is None or not is_dataclass(ports) or isinstance(ports, type):
        return ports, None
    group = GroupCommit(blobs)
    return replace(ports, blobs=group), group
