"""The run monitor folds what a round learned from itself and the final test figure into the per-round line."""

from __future__ import annotations

import pytest

from bus_schemas.envelope import new_event_id
from bus_schemas.events import CategoryScore
from bus_schemas.examples import build_examples
from infra.bootstrap import open_bus
from infra.events import ensure_topics, publish_all
from infra.loop.final_test import best_by_dev
from infra.loop.monitor import RunMonitor, summary_line

pytestmark = pytest.mark.unit
EX = build_examples()


def _e(kind: str, **fields):
    return EX[kind].model_copy(update={"event_id": new_event_id(), "run_id": "run-1", "round": 1, **fields})


def _scores(rate: float) -> dict[str, CategoryScore]:
    return {c: CategoryScore(success_rate=rate, tasks=4) for c in ("tool_use", "memory", "skills", "sub_agent")}


def test_the_round_line_says_what_came_from_the_model_and_the_test_figure(tmp_path):
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    prov = EX["TrajectoryAdmitted"].provenance
    events = [
        _e("TrajectoryAdmitted", episode_id="e1", provenance=prov.model_copy(update={"policy_version": "planner/1"})),
        _e(
            "TrajectoryAdmitted",
            episode_id="e2",
            provenance=prov.model_copy(update={"policy_version": "scripted:reference"}),
        ),
        _e("TrainingRunCompleted", metrics={"train_examples": 120.0, "train_examples_self": 7.0}),
        _e("DevSetEvaluated", per_category=_scores(0.25), overall=0.25),
        _e("DevSetEvaluated", split="test", per_category=_scores(0.5), overall=0.5),
    ]
    publish_all(bus, events)
    monitor = RunMonitor(bus, "run-1")
    monitor.update()
    r = monitor.rounds[1]
    assert (r.admitted, r.admitted_self, r.train_examples, r.train_examples_self) == (2, 1, 120, 7)
    assert r.dev.overall == 0.25 and r.test.overall == 0.5
    line = summary_line(r)
    assert "admitted 2 (self 1)" in line and "dev Overall 0.250" in line and "test Overall 0.500" in line
    assert best_by_dev([r]) is r.dev
    bus.close()


def test_the_round_line_says_whether_the_paired_ab_promoted_the_revision(tmp_path):
    from consumers.dev_evaluator.handler import AB_DECIDER

    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    metrics = {"paired_delta": -0.25, "paired_low": -0.4, "paired_high": -0.1, "paired_tasks": 16.0}
    publish_all(
        bus,
        [
            _e("HarnessRevisionDecided", decided_by="auto:set_tool_note"),
            _e("HarnessVersionPublished"),
            _e("DevSetEvaluated", evaluates="harness", per_category=_scores(0.0), overall=0.0),
            _e("HarnessRevisionDecided", decision="rejected", decided_by=AB_DECIDER, metrics=metrics),
        ],
    )
    monitor = RunMonitor(bus, "run-1")
    monitor.update()
    line = summary_line(monitor.rounds[1])
    assert "harness not promoted (paired delta -0.250 [-0.400, -0.100] on 16 dev tasks)" in line
    bus.close()
