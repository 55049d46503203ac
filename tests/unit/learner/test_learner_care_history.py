"""What the CARE controller reads back from the ``models`` topic: the dev scores of the model's own versions."""

from __future__ import annotations

from pathlib import Path

import pytest
from dev_scores import dev_evaluated

from bus_schemas.envelope import Producer
from infra.bootstrap import open_bus
from infra.events import ensure_topics, publish
from learner.care.history import recent_dev_overall

pytestmark = pytest.mark.unit
P = Producer(service="test", version="0")


def _dev(rate: float, version: str, *, model: str = "planner", evaluates: str = "model", split: str = "dev"):
    rates = dict.fromkeys(("tool_use", "memory", "skills", "sub_agent"), rate)
    return dev_evaluated(
        rates,
        producer=P,
        run_id="r",
        model_name=model,
        model_version=version,
        harness_version="planner-harness/1",
        evaluates=evaluates,
        split=split,
    )


def test_the_latest_and_previous_dev_scores_are_the_models_own(tmp_path: Path) -> None:
    """A harness revision's evaluation, a test split and another model's scores are not the model's dev history (a
    rejected revision's 0.000 once read as the latest score)."""
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    assert recent_dev_overall(bus, "planner") == (None, None)
    first, second = _dev(0.25, "1"), _dev(0.5, "2")
    publish(bus, first)
    assert recent_dev_overall(bus, "planner") == (first.overall, None)
    publish(
        bus,
        second,
        _dev(0.0, "2", evaluates="harness"),
        _dev(0.75, "2", split="test"),
        _dev(1.0, "7", model="other"),
    )
    assert recent_dev_overall(bus, "planner") == (second.overall, first.overall)
