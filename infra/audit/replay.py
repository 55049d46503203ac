"""``flywheel replay --verify``: re-run deterministic consumers over the recorded log into fresh state and
report every difference from what they recorded, plus every BlobRef that no longer resolves to its bytes.

Outputs are compared as multisets of events per input event, ignoring only what is fresh by design
(``event_id``, ``occurred_at``). Inputs are replayed per topic in partition/offset order, and admitted
exactly as the live runner admits them (``ConsumerSpec.wants`` on the header, then ``from_record``): a
record the live consumer skipped or dead-lettered is never an input here either.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

import orjson

from bus_schemas.envelope import Event
from bus_schemas.errors import SchemaError
from bus_schemas.events import DeadLettered
from bus_schemas.topics import TOPIC_DEAD_LETTERS
from infra.audit.blobs import blob_refs, check_blob
from infra.bootstrap import Ports
from infra.bus.records import Record
from infra.events import decodable, from_record, header
from infra.runtime import ConsumerSpec

log = logging.getLogger("flywheel.audit")
FRESH = {"event_id", "occurred_at"}


@dataclass(frozen=True)
class Scope:
    """Which part of the log to replay: a start (offset or time) and an optional task or episode."""

    from_offset: int = 0
    since: datetime | None = None
    task_id: str | None = None
    episode_id: str | None = None

    def admits(self, event: Event) -> bool:
        return (self.task_id is None or event.task_id == self.task_id) and (
            self.episode_id is None or event.episode_id == self.episode_id
        )


@dataclass(frozen=True)
class Difference:
    consumer: str
    input_event_id: str
    kind: str  # "missing" (recorded, not reproduced), "extra" (reproduced, not recorded), "error"
    detail: str


@dataclass
class ReplayReport:
    inputs: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)  # records the codec refuses: dead letters live too
    dead_lettered: dict[str, int] = field(default_factory=dict)  # handler failures that were dead-lettered live
    outputs_compared: dict[str, int] = field(default_factory=dict)
    differences: list[Difference] = field(default_factory=list)
    events_scanned: int = 0
    blobs_checked: int = 0
    bad_blobs: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences and not self.bad_blobs


def _records(ports: Ports, topic: str, scope: Scope) -> Iterator[Record]:
    if topic not in ports.bus.topics():  # an empty log has no topics yet: nothing to replay
        return iter(())
    return ports.bus.replay(topic, from_offset=scope.from_offset, since=scope.since)


def _events(ports: Ports, topic: str, scope: Scope) -> Iterator[Event]:
    return decodable(_records(ports, topic, scope))


def _recorded_dead_letters(ports: Ports) -> set[tuple[str, str, int, int]]:
    """(consumer group, topic, partition, offset) of every record a consumer dead-lettered live."""
    return {
        (e.consumer_group, e.original_topic, e.original_partition, e.original_offset)
        for e in _events(ports, TOPIC_DEAD_LETTERS, Scope())
        if isinstance(e, DeadLettered)
    }


def _fingerprint(event: Event) -> bytes:
    data = event.model_dump(mode="json", exclude=FRESH)
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def _recorded_outputs(ports: Ports, topics: Iterable[str]) -> dict[tuple[str, str], list[Event]]:
    """(producing service, causation id) -> events, over the whole log (outputs may follow any input)."""
    found: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for topic in topics:
        for event in _events(ports, topic, Scope()):
            if event.causation_id is not None:
                found[(event.producer.service, event.causation_id)].append(event)
    return found


def verify_consumers(
    ports: Ports, builders: dict[str, Callable[[], ConsumerSpec]], scope: Scope, report: ReplayReport
) -> None:
    topics = list(ports.bus.topics())
    recorded = _recorded_outputs(ports, topics)
    dead = _recorded_dead_letters(ports)
    for name, build in builders.items():
        spec = build()
        seen: set[str] = set()
        inputs = compared = rejected = lettered = 0
        for topic in spec.topics:
            for record in _records(ports, topic, scope):
                if not spec.wants(header(record, "event_type")):
                    continue  # skipped unread live, by its header
                try:
                    event = from_record(record)
                except SchemaError:
                    rejected += 1  # dead-lettered live by the codec, whatever its body claims
                    continue
                if event.event_id in seen or not spec.accepts(event) or not scope.admits(event):
                    continue
                seen.add(event.event_id)
                inputs += 1
                expected = recorded.get((spec.name, event.event_id), [])
                try:
                    produced = list(spec.handle(event, ports))
                except Exception as exc:  # noqa: BLE001 - compared with what happened live below
                    if (spec.group, record.topic, record.partition, record.offset) in dead:
                        lettered += 1  # failed live too (and was dead-lettered): reproduced
                    else:
                        report.differences.append(Difference(name, event.event_id, "error", repr(exc)))
                    continue
                compared += len(expected)
                _compare(name, event.event_id, expected, produced, report)
        report.inputs[name] = inputs
        report.rejected[name] = rejected
        report.dead_lettered[name] = lettered
        report.outputs_compared[name] = compared
        log.info(
            "replayed %s: %d inputs, %d recorded outputs compared, %d rejected, %d dead-lettered",
            name,
            inputs,
            compared,
            rejected,
            lettered,
        )


def _compare(name: str, input_id: str, expected: list[Event], produced: list[Event], report: ReplayReport) -> None:
    want = sorted(_fingerprint(e) for e in expected)
    got = sorted(_fingerprint(e) for e in produced)
    if want == got:
        return
    for fp in want:
        if fp not in got:
            report.differences.append(Difference(name, input_id, "missing", fp.decode()[:2000]))
    for fp in got:
        if fp not in want:
            report.differences.append(Difference(name, input_id, "extra", fp.decode()[:2000]))


def verify_blobs(ports: Ports, scope: Scope, report: ReplayReport) -> None:
    checked: dict[str, str | None] = {}
    for topic in ports.bus.topics():
        for event in _events(ports, topic, scope):
            if not scope.admits(event):
                continue
            report.events_scanned += 1
            refs = list(blob_refs(event))
            for ref in refs:  # grows while it runs: evidence appends the initial state it points at
                if ref.sha256 not in checked:
                    checked[ref.sha256] = check_blob(ports.blobs, ref, refs)
                    if checked[ref.sha256]:
                        report.bad_blobs.append(f"{event.event_type} {event.event_id}: {checked[ref.sha256]}")
    report.blobs_checked = len(checked)


def replay_verify(ports: Ports, builders: dict[str, Callable[[], ConsumerSpec]], scope: Scope) -> ReplayReport:
    report = ReplayReport()
    verify_consumers(ports, builders, scope, report)
    verify_blobs(ports, scope, report)
    return report
