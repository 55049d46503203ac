"""Long work keeps its partitions on Kafka: the member's max.poll.interval is sized from the spec's max_handle_s."""

from __future__ import annotations

from pathlib import Path

import pytest

from consumers.trainer.spec import MAX_TRAINING_S
from consumers.trainer.spec import build as build_trainer
from consumers.verifier.spec import build as build_verifier
from infra.bootstrap import Ports, open_bus
from infra.runtime.kafka_app import FastStreamConsumer, KafkaTarget
from infra.runtime.runner import ConsumerRunner

pytestmark = pytest.mark.unit


def _poll_interval_ms(spec, tmp_path: Path) -> int:
    app = FastStreamConsumer(spec, object(), KafkaTarget("127.0.0.1:1"), state_dir=tmp_path)
    try:
        return app.subscriber._connection_args["max_poll_interval_ms"]  # noqa: SLF001 - what aiokafka will get
    finally:
        app.batches.close()


def test_the_trainer_may_train_for_hours_without_leaving_its_group(tmp_path: Path) -> None:
    assert MAX_TRAINING_S >= 3600
    assert _poll_interval_ms(build_trainer(), tmp_path) == int(MAX_TRAINING_S * 1000)


def test_quick_consumers_keep_kafkas_default_poll_interval(tmp_path: Path) -> None:
    assert _poll_interval_ms(build_verifier(), tmp_path) == 300_000


def test_the_port_runner_sizes_its_members_poll_interval_from_the_spec(tmp_path: Path) -> None:
    """The same rule on the port runner (``flywheel consume`` on the embedded log, and on Kafka through the port):
    an embedded member keeps heartbeating through hours of training, a quick one leaves after Kafka's default."""
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ports = Ports(bus, None, None)  # type: ignore[arg-type] - only the bus is used here
    trainer = ConsumerRunner(build_trainer(), ports, state_dir=tmp_path / "t")
    verifier = ConsumerRunner(build_verifier(), ports, state_dir=tmp_path / "v")
    try:
        assert trainer.consumer.max_poll_interval_s == MAX_TRAINING_S
        assert verifier.consumer.max_poll_interval_s == 300.0
    finally:
        trainer.close()
        verifier.close()
        bus.close()
