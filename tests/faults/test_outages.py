"""Outages of the real servers mid-run: nothing is lost, nothing points at a missing blob, waits are logged."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from stack_support import ports_free

from infra.bootstrap import open_blob_store, open_bus, open_registry
from infra.bus.errors import BusError, BusUnavailable, BusWriteError, UnknownTopic
from infra.bus.records import OutgoingRecord, TopicLayout
from infra.config import Settings
from infra.outages import is_outage

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]


def _client_settings(stack) -> Settings:
    s = stack.settings
    return Settings(s3_access_key=s.s3_access_key, s3_secret_key=s.s3_secret_key, outage_retry_s=120.0)


def test_kafka_broker_restart_loses_nothing(private_stack):
    stack = private_stack(["kafka"])
    url = f"kafka://{stack.settings.host}:{stack.settings.kafka_port}?session_timeout_s=6"
    bus = open_bus(url, _client_settings(stack))  # closed by the suite's finalizer whatever happens
    bus.create_topics([TopicLayout("events", 3)])
    acknowledged: set[str] = set()
    retried = 0
    finished, give_up = threading.Event(), threading.Event()

    def produce() -> None:
        nonlocal retried
        for batch in range(60):
            ids = [f"{batch}-{i}" for i in range(50)]
            records = [OutgoingRecord("events", i.encode(), key=i.encode()) for i in ids]
            while not give_up.is_set():
                try:
                    bus.publish_many(records)
                    break
                except BusWriteError:  # the producer gave up on this batch during the outage: send it again
                    retried += 1
                    time.sleep(0.5)
            else:
                return
            acknowledged.update(ids)
            time.sleep(0.05)
        finished.set()

    producer = threading.Thread(target=produce, name="restart-test-producer", daemon=True)
    producer.start()
    try:
        time.sleep(1.0)
        stack.down(["kafka"])
        time.sleep(2.0)
        stack.up(["kafka"])
        producer.join(timeout=300)
        assert finished.is_set(), "the producer never finished after the broker came back"
    finally:
        give_up.set()  # a failed test must not leave a thread publishing for the rest of the session

    consumer = bus.consumer("after-restart", ["events"])
    seen: list[str] = []
    deadline = time.monotonic() + 120
    while len(set(seen)) < len(acknowledged) and time.monotonic() < deadline:
        batch = consumer.poll(max_records=1000, timeout_s=1.0)
        seen.extend(r.value.decode() for r in batch)
        consumer.commit(batch)
    consumer.close()
    bus.close()
    lost = acknowledged - set(seen)
    print(
        f"\nbroker restart: acknowledged={len(acknowledged)} consumed={len(seen)} "
        f"unique={len(set(seen))} lost={len(lost)} duplicates={len(seen) - len(set(seen))} batch_retries={retried}"
    )
    assert len(acknowledged) == 3000
    assert not lost


def test_a_topic_read_while_the_broker_is_down_is_an_outage_not_an_unknown_topic(private_stack):
    """A reader whose metadata lacks a topic asks the broker again; only the broker's answer makes the topic unknown.
    With the broker down the read is ``BusUnavailable`` (waited out by the consumer runtime): a broker restart
    mid-round emptied a verifier reader's metadata, and each read then failed at once as "topic does not exist", a
    handler error, so the verifier dead-lettered the episodes it was judging."""
    stack = private_stack(["kafka"])
    bus = open_bus(f"kafka://{stack.settings.host}:{stack.settings.kafka_port}", _client_settings(stack))
    bus.create_topics([TopicLayout("events", 2)])
    assert sorted(bus.end_offsets("events")) == [0, 1]
    with pytest.raises(UnknownTopic):  # the broker answered: the topic was never created
        bus.end_offsets("never-created")
    stack.down(["kafka"])
    try:
        with pytest.raises(BusUnavailable) as down:  # not in the reader's metadata, and no broker to ask
            bus.end_offsets("other-events")
        assert is_outage(down.value)
    finally:
        stack.up(["kafka"])
    assert sorted(bus.end_offsets("events")) == [0, 1]
    bus.close()


def test_a_reader_that_lost_every_broker_bootstraps_again(private_stack):
    """A broker that is restarting can leave a reader's client with no broker at all (a metadata answer without
    brokers, the bootstrap connection long closed): each refresh then asks nobody, for as long as the reader lives,
    and a curator waited out its whole outage allowance on a broker that was back (CI, 2026-12-07). Here the reader's
    client is put in that state (no broker, the topic gone from its metadata) with the broker up: the read
    bootstraps again and answers, where it was ``BusUnavailable`` after ``timeout_s``."""
    stack = private_stack(["kafka"])
    bus = open_bus(f"kafka://{stack.settings.host}:{stack.settings.kafka_port}", _client_settings(stack))
    bus.create_topics([TopicLayout("events", 2)])
    assert sorted(bus.end_offsets("events")) == [0, 1]
    reader = bus._loop.run(bus._offsets_reader())  # noqa: SLF001 - the bus's long-lived reader
    cluster = reader._client.cluster  # noqa: SLF001
    cluster._brokers.clear()  # noqa: SLF001 - what the restart left behind
    cluster._partitions.pop("events")  # noqa: SLF001
    assert not cluster.brokers() and not reader.partitions_for_topic("events")
    assert sorted(bus.end_offsets("events")) == [0, 1]
    assert cluster.brokers()
    bus.close()


class _CountingHandler(logging.Handler):
    """Counts the Kafka clients' reconnect complaints that get past their loggers' filters."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.reconnect_lines = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "Unable connect" in record.getMessage() or "Unable to update metadata" in record.getMessage():
            self.reconnect_lines += 1


def test_a_broker_comes_back_on_its_port_after_clients_reconnected_for_30s(private_stack):
    """A client that keeps reconnecting to a stopped broker must not take the broker's port (a TCP self-connect
    from an ephemeral source port), must not flood the log, and must resume once the broker is back."""
    stack = private_stack(["kafka"])
    s = stack.settings
    bus = open_bus(f"kafka://{s.host}:{s.kafka_port}?session_timeout_s=6", _client_settings(stack))
    bus.create_topics([TopicLayout("reconnect", 1)])
    bus.publish(OutgoingRecord("reconnect", b"before", key=b"k"))
    consumer = bus.consumer("reconnecting", ["reconnect"])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while not got and time.monotonic() < deadline:
        got += [r.value for r in consumer.poll(timeout_s=1.0)]
    assert got == [b"before"]

    counter = _CountingHandler()
    logging.getLogger().addHandler(counter)
    stop = threading.Event()
    attempts = 0

    def keep_publishing() -> None:
        nonlocal attempts
        while not stop.is_set():
            attempts += 1
            try:
                bus.publish(OutgoingRecord("reconnect", b"during", key=b"k"))
            except BusError:
                time.sleep(0.2)

    publisher = threading.Thread(target=keep_publishing, name="reconnecting-publisher", daemon=True)
    try:
        stack.down(["kafka"])
        publisher.start()
        reconnect_until = time.monotonic() + 30
        while time.monotonic() < reconnect_until:
            consumer.poll(timeout_s=1.0)  # the group member keeps reconnecting too
        assert ports_free([s.kafka_port, s.kafka_controller_port]), "a client took the broker's port while it was down"
        stack.up(["kafka"])  # raises if the port is held by anyone
    finally:
        stop.set()
        publisher.join(timeout=60)
        logging.getLogger().removeHandler(counter)

    bus.publish(OutgoingRecord("reconnect", b"after", key=b"k"))
    deadline = time.monotonic() + 90
    while b"after" not in got and time.monotonic() < deadline:
        got += [r.value for r in consumer.poll(timeout_s=1.0)]
    consumer.close()
    bus.close()
    print(
        f"\nreconnect: publish attempts while down={attempts}, reconnect log lines let "
        f"through={counter.reconnect_lines}"
    )
    assert b"after" in got, "the client did not resume after the broker came back"
    # Without the throttle the clients log one line per attempt (every 100 ms per connection): hundreds in 30 s.
    assert counter.reconnect_lines <= 12


def test_s3_outage_blocks_writers_until_the_store_is_back(private_stack, tmp_path, caplog):
    stack = private_stack(["s3"])
    settings = _client_settings(stack)
    blobs = open_blob_store(f"s3://flywheel-blobs?endpoint={stack.settings.host}:{stack.settings.s3_port}", settings)
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    published: list[tuple[str, float]] = []

    def write_episode_steps() -> None:
        for step in range(40):
            ref = blobs.put(f"context of step {step}".encode(), "text/plain")  # blob first ...
            bus.publish(OutgoingRecord("episodes", ref.sha256.encode(), key=b"episode-1"))  # ... then the event
            published.append((ref.sha256, time.monotonic()))
            time.sleep(0.25)

    caplog.set_level(logging.WARNING, logger="flywheel.blobs")
    writer = threading.Thread(target=write_episode_steps)
    writer.start()
    time.sleep(2.0)
    stack.down(["s3"])
    down_at = time.monotonic()
    time.sleep(30.0)
    stack.up(["s3"])
    up_at = time.monotonic()
    writer.join(timeout=180)

    assert len(published) == 40, "every step landed after the store came back"
    during = [sha for sha, t in published if down_at + 2.0 < t < up_at - 1.0]
    assert not during, f"events were published while their blobs could not be stored: {during}"
    events = [r.value.decode() for r in bus.replay("episodes")]
    assert events == [sha for sha, _ in published]
    missing = [sha for sha in events if not blobs.exists(sha)]
    assert not missing
    assert any("unavailable" in rec.getMessage() and "retrying" in rec.getMessage() for rec in caplog.records)


def test_mlflow_outage_waits_for_registration_and_reports_it(private_stack, caplog):
    stack = private_stack(["mlflow"])
    registry = open_registry(stack.settings.mlflow_url, _client_settings(stack))
    run_id = registry.start_run("training", params={"lr": 0.001})
    registry.log_dict(run_id, {"weights": "tiny"}, "model/config.json")
    registry.end_run(run_id)  # the training run finished before the outage

    caplog.set_level(logging.WARNING, logger="flywheel.registry")
    stack.down(["mlflow"])
    result: dict = {}
    registration = threading.Thread(
        target=lambda: result.setdefault("version", registry.register_version("planner", run_id, "model"))
    )
    registration.start()
    time.sleep(8.0)
    assert registration.is_alive(), "registration must wait for the server, not fail"
    stack.up(["mlflow"])
    registration.join(timeout=180)

    assert result["version"].version == "1"
    assert registry.resolve("planner/1").run_id == run_id
    waits = [
        rec.getMessage()
        for rec in caplog.records
        if "unavailable; waiting to retry register_version" in rec.getMessage()
    ]
    assert waits and stack.settings.mlflow_url in waits[0]


def test_training_finishes_while_mlflow_is_down_and_registers_once_it_is_back(private_stack, tmp_path, caplog):
    from bus_schemas.events import ModelVersionRegistered
    from infra.bootstrap import Ports
    from infra.events import ensure_topics, from_record
    from learner.config import LearnerConfig
    from learner.jobs import run_sft, seed_reference_episodes
    from learner.sft import SftSettings

    stack = private_stack(["mlflow"])
    settings = _client_settings(stack)
    ports = Ports(
        bus=open_bus(f"sqlite:///{tmp_path}/bus.db"),
        blobs=open_blob_store(f"file://{tmp_path}/blobs"),
        registry=open_registry(stack.settings.mlflow_url, settings),
    )
    ensure_topics(ports.bus)
    config = LearnerConfig(cold_start_seeds=1, sft=SftSettings(max_steps=3, batch_size=4), work_dir=tmp_path / "work")
    seed_reference_episodes(ports, config, run_id="outage")

    caplog.set_level(logging.WARNING, logger="flywheel.registry")
    stack.down(["mlflow"])
    outcome: dict = {}
    training = threading.Thread(target=lambda: outcome.setdefault("trained", run_sft(ports, config, run_id="outage")))
    training.start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not any(
        "unavailable; waiting to retry" in r.getMessage() for r in caplog.records
    ):
        time.sleep(0.5)
    assert training.is_alive(), "training must finish and then wait for the registry, not fail"
    assert (config.work_dir / "sft-outage-r0").is_dir(), "the checkpoint was written before registration"
    stack.up(["mlflow"])
    training.join(timeout=300)

    version = outcome["trained"].model_version
    registered = [from_record(r) for r in ports.bus.replay("models")]
    assert any(isinstance(e, ModelVersionRegistered) and e.model_version == version for e in registered)
    assert ports.registry.resolve("planner@candidate").version == version
    waits = [r.getMessage() for r in caplog.records if "unavailable; waiting to retry" in r.getMessage()]
    assert stack.settings.mlflow_url in waits[0]
    ports.bus.close()
