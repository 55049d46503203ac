"""The suite and the Kafka adapter cannot leave a client behind that floods the log or keeps the process alive."""

from __future__ import annotations

import logging
import sqlite3
import threading

import pytest

from infra.bus.aio_loop import LoopThread
from infra.bus.client_logs import RepeatedFailureFilter, throttle_client_logs
from infra.bus.embedded import EmbeddedBus
from infra.bus.errors import BusClosed

pytestmark = pytest.mark.unit


def _record(msg: str, *args: object, level: int = logging.ERROR, name: str = "aiokafka") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_a_repeated_failure_is_logged_once_per_interval_with_its_count() -> None:
    now = [0.0]
    throttle = RepeatedFailureFilter(interval_s=30.0, clock=lambda: now[0])
    passed = []
    for attempt in range(301):  # one reconnect every 100 ms for 30 s
        now[0] = attempt * 0.1
        record = _record("Unable connect to node with id %s: %s", 1, "Connect call failed")
        if throttle.filter(record):
            passed.append(record.getMessage())
    assert len(passed) == 2
    assert passed[1].endswith("(repeated 299 more times in the last 30s)")
    assert throttle.filter(_record("Unable to update metadata from %s", [1]))  # another kind passes at once
    assert throttle.filter(_record("Connected", level=logging.INFO))  # below warning: never held back


def test_the_throttle_sits_on_every_kafka_client_logger() -> None:
    import infra.bus.kafka  # noqa: F401 - importing the adapter installs it

    installed = throttle_client_logs()
    for name in ("aiokafka", "aiokafka.conn", "aiokafka.producer.sender", "aiokafka.consumer.group_coordinator"):
        assert installed in logging.getLogger(name).filters, name


def test_a_stopped_loop_refuses_calls_instead_of_waiting_forever() -> None:
    loop = LoopThread(name="test-loop")

    async def answer() -> int:
        return 42

    assert loop.run(answer()) == 42
    assert loop._thread.daemon  # noqa: SLF001 - never keeps the interpreter alive
    loop.stop()
    with pytest.raises(BusClosed):
        loop.run(answer())


def test_a_call_waiting_when_the_loop_stops_is_released() -> None:
    import asyncio

    loop = LoopThread(name="test-loop")
    released = threading.Event()
    errors: list[BaseException] = []

    def wait_forever() -> None:
        try:
            loop.run(asyncio.sleep(3600))
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            errors.append(exc)
        released.set()

    threading.Thread(target=wait_forever, daemon=True).start()
    loop.stop()
    assert released.wait(5), "a caller stayed blocked on a stopped loop"
    assert isinstance(errors[0], BusClosed)


_LEFT_OPEN: list[EmbeddedBus] = []


def test_a_test_may_leave_a_bus_open(tmp_path) -> None:
    _LEFT_OPEN.append(EmbeddedBus(tmp_path / "bus.db"))


def test_the_suite_closed_the_bus_the_previous_test_left_open() -> None:
    assert _LEFT_OPEN, "runs after test_a_test_may_leave_a_bus_open (same file, file order)"
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        _LEFT_OPEN[0]._conn.execute("select 1")  # noqa: SLF001
