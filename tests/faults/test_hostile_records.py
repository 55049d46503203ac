"""Hostile records: no bytes, JSON or envelope can stop a consumer, and live and replay treat each record alike.

Every test runs on the embedded bus and a directory blob store (no servers), in a second or two.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bus_schemas.codec import MAX_NESTING_DEPTH, decode, encode
from bus_schemas.envelope import Event, Producer, correlate, new_event_id
from bus_schemas.errors import EnvelopeMismatch, MalformedEvent, SchemaError
from bus_schemas.events import DeadLettered, EpisodeEnded, TaskRetired
from bus_schemas.examples import build_examples
from infra.audit.replay import ReplayReport, Scope, verify_consumers
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports, open_bus
from infra.bus.records import OutgoingRecord
from infra.events import decodable, ensure_topics, from_record, to_record
from infra.runtime import ConsumerRunner, ConsumerSpec

pytestmark = [pytest.mark.unit, pytest.mark.timeout(120)]

SINK = "hostile-sink"
PRODUCER = Producer(service=SINK, version="1")
ENDED = build_examples()["EpisodeEnded"]
ACTION = build_examples()["ActionTaken"]


def _retire(event: Event, ports: Any) -> list[Event]:  # noqa: ARG001 - a handler is a function of (event, ports)
    """A deterministic handler that fails, every time, on an episode whose answer is ``boom``."""
    assert isinstance(event, EpisodeEnded)
    if event.answer == "boom":
        raise RuntimeError("the handler cannot take this episode")
    return [TaskRetired(producer=PRODUCER, reason=f"saw {event.episode_id}", **correlate(event))]


def _spec() -> ConsumerSpec:
    return ConsumerSpec(name=SINK, topics=("episodes",), handle=_retire, event_types=frozenset({"EpisodeEnded"}))


@pytest.fixture
def ports(tmp_path: Path) -> Iterator[Ports]:
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    yield Ports(bus=bus, blobs=FileBlobStore(tmp_path / "blobs"), registry=None)  # type: ignore[arg-type]
    bus.close()


def _drain(runner: ConsumerRunner) -> None:
    """Step the consumer until a poll comes back empty (no sleeping on idle timeouts)."""
    while runner.step(timeout_s=0.05):
        pass


def _ended(**update: Any) -> EpisodeEnded:
    return ENDED.model_copy(update={"event_id": new_event_id(), **update})


def _deep_v1_episode_ended(depth: int) -> bytes:
    """An EpisodeEnded of schema version 1 (so it goes through the upcaster) whose answer nests ``depth`` arrays."""
    raw = orjson.loads(encode(_ended()))
    raw.update(schema_version=1, wall_time_ms=raw.pop("wall_time_s") * 1000, answer="@@DEEP@@")
    del raw["thinking_tokens"], raw["cost_estimate_usd"]
    return orjson.dumps(raw).replace(b'"@@DEEP@@"', b"[" * depth + b"1" + b"]" * depth)


def _record(value: bytes, header: str | None = None, topic: str = "episodes") -> OutgoingRecord:
    headers = (("event_type", header.encode()),) if header is not None else ()
    return OutgoingRecord(topic, value, key=b"ep-hostile", headers=headers)


# -- the codec ------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH + 1, 254, 300, 5000])
def test_a_deeply_nested_old_version_event_is_a_malformed_event(depth: int) -> None:
    with pytest.raises(MalformedEvent, match="nests arrays/objects"):
        decode(_deep_v1_episode_ended(depth))


def test_encode_refuses_what_decode_would_refuse() -> None:
    deep: Any = "x"
    for _ in range(MAX_NESTING_DEPTH + 1):
        deep = [deep]
    task = build_examples()["TaskSpecified"]
    event = task.model_copy(
        update={
            "initial_conditions": task.initial_conditions.model_copy(
                update={"fixtures": {"/notes/notes/n1": {"deep": deep}}}
            )
        }
    )
    with pytest.raises(MalformedEvent, match="nests arrays/objects"):
        encode(event)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    event = _ended(answer="[" * 5000 + '"\\' + "{" * 100)
    assert decode(encode(event)) == event


# -- a running consumer ---------------------------------------------------------------------------

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
_VALID = orjson.loads(encode(ENDED))


@st.composite
def _hostile_records(draw: st.DrawFn) -> OutgoingRecord:
    """Arbitrary bytes, arbitrary JSON, a real event with one field replaced, a deep old-version event, a
    failing handler's input, or a valid event under a lying header; with or without an event_type header."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        value = draw(st.binary(max_size=300))
    elif kind == 1:
        value = orjson.dumps(draw(_JSON))
    elif kind == 2:
        raw = {**_VALID, "event_id": new_event_id(), draw(st.sampled_from(sorted(_VALID))): draw(_JSON)}
        value = orjson.dumps(raw)
    elif kind == 3:
        value = _deep_v1_episode_ended(draw(st.integers(MAX_NESTING_DEPTH - 2, 1200)))
    elif kind == 4:
        value = encode(_ended(answer="boom"))
    else:
        value = encode(ACTION.model_copy(update={"event_id": new_event_id()}))
    header = draw(st.sampled_from([None, "EpisodeEnded", "ActionTaken", "EpisodeExploded", "\udcff"]))
    return _record(value, header.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if header else None)


def test_no_record_stops_a_running_consumer_and_lag_drains(ports: Ports, tmp_path: Path) -> None:
    """The property: whatever arrives, decode raises only SchemaError, the consumer keeps going, every good
    record behind the hostile ones is handled, and the group's lag reaches zero."""
    runner = ConsumerRunner(_spec(), ports, state_dir=tmp_path / "state", retry_backoff_s=0.0)
    handled_before = 0

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(_hostile_records(), min_size=1, max_size=6))
    def feed(records: list[OutgoingRecord]) -> None:
        nonlocal handled_before
        for record in records:
            try:
                decode(record.value)
            except SchemaError:
                pass
        good = _ended()
        ports.bus.publish_many([*records, to_record(good)])
        _drain(runner)
        assert sum(lag.lag for lag in ports.bus.lag(runner.spec.group, ["episodes"])) == 0
        assert runner.stats.handled > handled_before  # the good record behind them was handled
        handled_before = runner.stats.handled

    try:
        feed()
    finally:
        runner.close()
    letters = [e for e in decodable(ports.bus.replay("dead-letters")) if isinstance(e, DeadLettered)]
    assert letters and all(d.consumer_group == runner.spec.group for d in letters)


def test_a_failing_handler_is_retried_a_bounded_number_of_times_then_dead_lettered(
    ports: Ports, tmp_path: Path
) -> None:
    poison, good = _ended(answer="boom"), _ended()
    ports.bus.publish_many([to_record(poison), to_record(good)])
    runner = ConsumerRunner(_spec(), ports, state_dir=tmp_path / "state", retry_backoff_s=0.0, max_attempts=3)
    _drain(runner)
    runner.close()
    (letter,) = [e for e in decodable(ports.bus.replay("dead-letters")) if isinstance(e, DeadLettered)]
    assert letter.original_event_id == poison.event_id and letter.attempts == 3 and letter.error_type == "RuntimeError"
    assert runner.stats.handled == 1 and sum(lag.lag for lag in ports.bus.lag(runner.spec.group, ["episodes"])) == 0


# -- envelope consistency, live and in replay ----------------------------------------------------


def test_a_header_that_disagrees_with_the_body_is_an_envelope_mismatch() -> None:
    record = _record(encode(_ended()), "ActionTaken")
    with pytest.raises(EnvelopeMismatch, match="header says 'ActionTaken'"):
        from_record(record)  # type: ignore[arg-type]
    with pytest.raises(EnvelopeMismatch, match="belongs on 'episodes'"):
        from_record(_record(encode(_ended()), "EpisodeEnded", topic="tasks"))  # type: ignore[arg-type]
    assert from_record(_record(encode(ENDED), "EpisodeEnded")) == ENDED  # type: ignore[arg-type]


def test_live_and_replay_treat_every_hostile_record_the_same(ports: Ports, tmp_path: Path) -> None:
    """A deep old event, a lying header either way, a failing handler's input and one good event: the live
    consumer handles only the good one; replay admits exactly the same input, reproduces its output and the
    handler failure, and reports no difference."""
    good = _ended()
    hidden = _ended()  # an EpisodeEnded under an ActionTaken header: live skips it unread
    ports.bus.publish_many(
        [
            _record(_deep_v1_episode_ended(300), "EpisodeEnded"),
            _record(encode(hidden), "ActionTaken"),
            _record(encode(ACTION), "EpisodeEnded"),  # an ActionTaken under an EpisodeEnded header
            to_record(_ended(answer="boom")),
            to_record(good),
        ]
    )
    runner = ConsumerRunner(_spec(), ports, state_dir=tmp_path / "state", retry_backoff_s=0.0)
    _drain(runner)
    runner.close()
    letters = [e for e in decodable(ports.bus.replay("dead-letters")) if isinstance(e, DeadLettered)]
    assert sorted(d.error_type for d in letters) == ["EnvelopeMismatch", "MalformedEvent", "RuntimeError"]
    outputs = [e for e in decodable(ports.bus.replay("tasks")) if isinstance(e, TaskRetired)]
    assert [e.causation_id for e in outputs] == [good.event_id]

    report = ReplayReport()
    verify_consumers(ports, {SINK: _spec}, Scope(), report)
    assert report.differences == []
    assert (report.inputs[SINK], report.rejected[SINK], report.dead_lettered[SINK]) == (2, 2, 1)
    assert report.outputs_compared[SINK] == 1
