"""The broker's JVM flags come from the stack settings (``FLYWHEEL_STACK_KAFKA_JVM_OPTS``), for the broker and for the
storage formatting it runs first; the real broker starts with the defaults in every integration test."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.config import StackSettings
from infra.stack.kafka_broker import KafkaBroker

pytestmark = pytest.mark.unit


def test_the_lean_defaults_and_an_override_reach_the_brokers_command_line(tmp_path: Path, monkeypatch) -> None:
    default = KafkaBroker(StackSettings(dir=tmp_path)).command()
    assert default.index("-XX:TieredStopAtLevel=1") < default.index("kafka.Kafka")
    assert "-XX:+UseSerialGC" in default and "-XX:+UseG1GC" not in default
    monkeypatch.setenv("FLYWHEEL_STACK_KAFKA_JVM_OPTS", "-XX:+UseG1GC -XX:MaxGCPauseMillis=20")
    tuned = KafkaBroker(StackSettings(dir=tmp_path)).command()
    assert "-XX:TieredStopAtLevel=1" not in tuned
    assert tuned[tuned.index("-XX:+UseG1GC") + 1] == "-XX:MaxGCPauseMillis=20"
    monkeypatch.setenv("FLYWHEEL_STACK_KAFKA_JVM_OPTS", "")
    assert [a for a in KafkaBroker(StackSettings(dir=tmp_path)).command() if a.startswith("-XX:")] == [
        "-XX:+ExitOnOutOfMemoryError"
    ]
