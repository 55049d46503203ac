"""The consumer runtime on every bus: atomic outputs + commit, dedupe by event id, dead letters."""

from __future__ import annotations

import pytest

from bus_schemas.envelope import Producer, correlate, new_event_id
from bus_schemas.errors import SchemaError
from bus_schemas.events import DeadLettered, TaskRetired, TaskSpecified
from bus_schemas.examples import build_examples
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports
from infra.bus.errors import BusError
from infra.bus.records import OutgoingRecord
from infra.events import ensure_topics, from_record, publish_all
from infra.runtime import ConsumerRunner, ConsumerSpec

pytestmark = pytest.mark.contract

PRODUCER = Producer(service="retirer", version="1")


def retire(event, ports):  # noqa: ANN001 - a handler is a plain function of (event, ports)
    if event.goal.startswith("poison"):
        raise ValueError(f"cannot retire {event.task_id}")
    return [TaskRetired(producer=PRODUCER, reason=f"retired {event.task_id}", **correlate(event))]


SPEC = ConsumerSpec(name="retirer", topics=("tasks",), handle=retire, event_types=frozenset({"TaskSpecified"}))


def _tasks(n: int, run_id: str, goal: str = "Do the thing") -> list[TaskSpecified]:
    template = build_examples()["TaskSpecified"]
    return [
        template.model_copy(update={"event_id": new_event_id(), "task_id": f"task-{i}", "run_id": run_id, "goal": goal})
        for i in range(n)
    ]


@pytest.fixture
def ports(bus, tmp_path):
    ensure_topics(bus)
    return Ports(bus=bus, blobs=FileBlobStore(tmp_path / "blobs"), registry=None)


def _run(ports, tmp_path, **kwargs) -> ConsumerRunner:
    runner = ConsumerRunner(SPEC, ports, state_dir=tmp_path / "state", retry_backoff_s=0.0, **kwargs)
    runner.run(idle_exit_s=3.0)
    runner.close()
    return runner


def _events(bus, topic: str = "tasks"):
    """Every decodable event of a topic (the poison test puts undecodable bytes there on purpose)."""
    out = []
    for record in bus.replay(topic):
        try:
            out.append(from_record(record))
        except SchemaError:
            pass
    return out


def test_each_event_yields_its_outputs_and_the_group_has_no_lag(ports, tmp_path, unique):
    inputs = _tasks(25, unique)
    publish_all(ports.bus, inputs)
    runner = _run(ports, tmp_path)
    retired = [e for e in _events(ports.bus) if isinstance(e, TaskRetired)]
    assert sorted(e.causation_id for e in retired) == sorted(e.event_id for e in inputs)
    assert {e.reason for e in retired} == {f"retired task-{i}" for i in range(25)}
    assert runner.stats.handled == 25
    assert sum(lag.lag for lag in ports.bus.lag(SPEC.group, ["tasks"])) == 0


def test_a_redelivered_event_produces_no_second_output(ports, tmp_path, unique):
    (task,) = _tasks(1, unique)
    publish_all(ports.bus, [task])
    _run(ports, tmp_path)
    publish_all(ports.bus, [task, task])  # the same event id arrives twice more
    runner = _run(ports, tmp_path)
    retired = [e for e in _events(ports.bus) if isinstance(e, TaskRetired)]
    assert [e.causation_id for e in retired] == [task.event_id]
    assert runner.stats.duplicates == 2


def test_poison_records_are_dead_lettered_and_the_consumer_goes_on(ports, tmp_path, unique):
    good = _tasks(3, unique)
    (poison,) = _tasks(1, unique, goal="poison pill")
    garbage = b'{"event_type": "TaskSpecified", "schema_version": 99}'
    publish_all(ports.bus, good[:2])
    ports.bus.publish(OutgoingRecord("tasks", garbage, key=b"garbage"))
    publish_all(ports.bus, [poison, good[2]])

    runner = _run(ports, tmp_path, max_attempts=3)

    retired = [e for e in _events(ports.bus) if isinstance(e, TaskRetired)]
    assert sorted(e.causation_id for e in retired) == sorted(e.event_id for e in good)
    letters = {e.error_type: e for e in _events(ports.bus, "dead-letters") if isinstance(e, DeadLettered)}
    assert set(letters) == {"UnsupportedSchemaVersion", "ValueError"}
    assert letters["ValueError"].attempts == 3
    assert letters["ValueError"].original_event_id == poison.event_id
    assert "cannot retire task-0" in letters["ValueError"].error
    assert ports.blobs.get(letters["UnsupportedSchemaVersion"].payload) == garbage
    assert letters["UnsupportedSchemaVersion"].consumer_group == SPEC.group
    assert runner.stats.dead_lettered == 2
    assert sum(lag.lag for lag in ports.bus.lag(SPEC.group, ["tasks"])) == 0


def test_a_failed_step_publishes_nothing_and_commits_nothing(ports, unique):
    publish_all(ports.bus, _tasks(2, unique))
    consumer = ports.bus.consumer(f"atomic-{unique}", ["tasks"])
    try:
        polled = []
        while len(polled) < 2:
            polled.extend(consumer.poll(timeout_s=1.0))
        good = OutgoingRecord("verdicts", b"{}", key=b"k")
        bad = OutgoingRecord("verdicts", b"{}", key=b"k", partition=999)
        with pytest.raises(BusError):
            consumer.publish_and_commit([good, bad], polled)
    finally:
        consumer.close()
    assert list(ports.bus.replay("verdicts")) == []
    assert sum(lag.lag for lag in ports.bus.lag(f"atomic-{unique}", ["tasks"])) == 2
