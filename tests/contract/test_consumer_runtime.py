"""The consumer runtime on every bus: atomic outputs + commit, dedupe by event id, dead letters."""

from __future__ import annotations

import pytest
from aiokafka.errors import KafkaConnectionError as AioKafkaConnectionError
from kafka.errors import KafkaConnectionError as KafkaPythonConnectionError

from bus_schemas.envelope import Producer, correlate, new_event_id
from bus_schemas.errors import SchemaError
from bus_schemas.events import DeadLettered, TaskRetired, TaskSpecified
from bus_schemas.examples import build_examples
from infra.blobs.errors import BlobStoreUnavailable
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports
from infra.bus.errors import BusError, BusWriteError
from infra.bus.records import OutgoingRecord
from infra.events import ensure_topics, from_record, publish_all
from infra.outages import is_outage
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


class _Outage:
    """A handler whose server (here the blob store) is unreachable for its first ``failures`` calls."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0

    def __call__(self, event, ports):  # noqa: ANN001, ANN204
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return retire(event, ports)


def test_an_outage_of_a_server_the_handler_needs_is_waited_out_not_dead_lettered(ports, tmp_path, unique):
    """More failed tries than max_attempts, all outages: the event waits for the server and is handled once."""
    (task,) = _tasks(1, unique)
    publish_all(ports.bus, [task])
    handler = _Outage(5, BlobStoreUnavailable("the S3 store at http://127.0.0.1:1 is unreachable"))
    runner = ConsumerRunner(
        ConsumerSpec("retirer", ("tasks",), handler, frozenset({"TaskSpecified"})),
        ports,
        state_dir=tmp_path / "state",
        max_attempts=3,
        outage_retry_s=60.0,
    )
    runner.run(idle_exit_s=3.0)
    runner.close()
    assert handler.calls == 6 and runner.stats.handled == 1 and runner.stats.dead_lettered == 0
    assert [e.causation_id for e in _events(ports.bus) if isinstance(e, TaskRetired)] == [task.event_id]
    assert not _events(ports.bus, "dead-letters")


def test_an_outage_longer_than_the_wait_stops_the_consumer_with_the_event_uncommitted(ports, tmp_path, unique):
    """The consumer stops with the server's error; the event is neither dead-lettered nor committed, so the next
    member of the group handles it."""
    (task,) = _tasks(1, unique)
    publish_all(ports.bus, [task])
    down = _Outage(10**6, ConnectionError("[Errno 111] Connection refused"))
    runner = ConsumerRunner(
        ConsumerSpec("retirer", ("tasks",), down, frozenset({"TaskSpecified"})),
        ports,
        state_dir=tmp_path / "state",
        outage_retry_s=1.0,
    )
    with pytest.raises(ConnectionError):
        runner.run(idle_exit_s=3.0)
    runner.close()
    assert down.calls > 1 and not _events(ports.bus, "dead-letters")
    assert sum(lag.lag for lag in ports.bus.lag(SPEC.group, ["tasks"])) == 1
    runner = _run(ports, tmp_path)  # the server is back
    assert [e.causation_id for e in _events(ports.bus) if isinstance(e, TaskRetired)] == [task.event_id]


def test_a_fenced_write_is_not_an_outage_but_a_refused_one_caused_by_one_is() -> None:
    from infra.bus.kafka_fencing import Fenced

    assert not is_outage(Fenced("group g no longer owns tasks[0]"))
    assert not is_outage(BusWriteError("disk full"))
    try:
        raise BusWriteError("publish failed") from AioKafkaConnectionError("Connection at 127.0.0.1:9092 closed")
    except BusWriteError as exc:
        assert is_outage(exc)
    assert is_outage(KafkaPythonConnectionError("Unable to bootstrap from [('127.0.0.1', 22888)]"))


def _retire_with_blob(event, ports):  # noqa: ANN001
    ref = ports.blobs.put(f"why {event.task_id} was retired".encode(), "text/plain")
    return [TaskRetired(producer=PRODUCER, reason=f"retired {event.task_id}: blob {ref.sha256}", **correlate(event))]


GROUP_COMMIT_SPEC = ConsumerSpec(
    name="blob-retirer",
    topics=("tasks",),
    handle=_retire_with_blob,
    event_types=frozenset({"TaskSpecified"}),
    group_commit_blobs=True,
)


def test_a_group_committed_batch_publishes_only_after_its_blobs_are_durable(ports, tmp_path, unique, monkeypatch):
    """A spec with ``group_commit_blobs`` writes its batch's blobs unsynced and syncs them once, before publishing."""
    store = ports.blobs
    publish_all(ports.bus, _tasks(30, unique))
    runner = ConsumerRunner(GROUP_COMMIT_SPEC, ports, state_dir=tmp_path / "state")
    consumer, syncs, published = runner.consumer, [], []
    real_sync, real_publish = store.sync, consumer.publish_and_commit

    def sync() -> None:
        syncs.append(len(store._unsynced))
        real_sync()

    def publish_and_commit(outputs, consumed):  # noqa: ANN001, ANN202
        assert not store._unsynced, "outputs published before their blobs were synced"
        published.extend(outputs)
        return real_publish(outputs, consumed)

    monkeypatch.setattr(store, "sync", sync)
    monkeypatch.setattr(consumer, "publish_and_commit", publish_and_commit)
    runner.run(idle_exit_s=3.0)
    runner.close()
    retired = [e for e in _events(ports.bus) if isinstance(e, TaskRetired) and e.run_id == unique]
    assert len(retired) == 30 and len(published) == 30
    for event in retired:
        assert store.get(event.reason.rsplit("blob ", 1)[1]) == f"why {event.task_id} was retired".encode()
    assert sum(syncs) == 2 * 30 and len([n for n in syncs if n]) < 30  # each blob and its .meta, in batches


def test_a_failed_group_commit_leaves_the_batch_unpublished_and_uncommitted(ports, tmp_path, unique, monkeypatch):
    """The disk refusing to sync is not dead-lettered: the batch is not committed, and a later run redoes it."""
    from infra.blobs import filesystem
    from infra.blobs.errors import BlobStoreError

    inputs = _tasks(5, unique)
    publish_all(ports.bus, inputs)

    def failing_syncfs(fd: int) -> int:
        import ctypes
        import errno

        ctypes.set_errno(errno.EIO)
        return -1

    runner = ConsumerRunner(GROUP_COMMIT_SPEC, ports, state_dir=tmp_path / "state")
    with monkeypatch.context() as m:
        m.setattr(filesystem, "_SYNCFS", failing_syncfs)
        with pytest.raises(BlobStoreError, match="cannot make blobs durable"):
            while True:
                runner.step(timeout_s=2.0)
    runner.close()
    assert not [e for e in _events(ports.bus) if isinstance(e, TaskRetired) and e.run_id == unique]
    assert not [e for e in _events(ports.bus, "dead-letters")]
    assert sum(lag.lag for lag in ports.bus.lag(GROUP_COMMIT_SPEC.group, ["tasks"])) > 0
    again = ConsumerRunner(GROUP_COMMIT_SPEC, ports, state_dir=tmp_path / "state")
    again.run(idle_exit_s=3.0)
    again.close()
    retired = [e for e in _events(ports.bus) if isinstance(e, TaskRetired) and e.run_id == unique]
    assert sorted(e.causation_id for e in retired) == sorted(e.event_id for e in inputs)
    assert ports.blobs._unsynced == []
