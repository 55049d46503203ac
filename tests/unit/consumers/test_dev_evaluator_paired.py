"""Every harness revision is proven: a paired A/B on dev against its parent (same model, same task instances)
decides whether it goes to ``@production``, and the decision is a HarnessRevisionDecided event."""

from __future__ import annotations

import pytest
from consumer_factory import IDS, P, suite, verdict

from bus_schemas.blob_ref import BlobRef
from bus_schemas.events import (
    DevSetEvaluated,
    EpisodeEnded,
    EpisodeVerified,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessVersionPublished,
    RolloutRequested,
)
from consumers.dev_evaluator.handler import AB_DECIDER, compare_paired
from consumers.dev_evaluator.spec import DevEvaluator
from consumers.round_controller.handler import evaluate, start_round
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, publish_all

pytestmark = pytest.mark.unit
BLOB = BlobRef(sha256="d" * 64, size=1)
CATEGORY = {f"t{i}": c for i, c in enumerate(["tool_use"] * 6 + ["memory"] * 4)}


def test_identical_outcomes_pair_to_a_zero_difference_with_a_zero_interval():
    outcomes = {t: i % 2 == 0 for i, t in enumerate(CATEGORY)}
    paired = compare_paired(outcomes, outcomes, CATEGORY, seed="s")
    assert paired is not None and (paired.delta, paired.low, paired.high, paired.wins, paired.losses) == (0, 0, 0, 0, 0)
    assert not paired.regresses and paired.tasks == 10


def test_a_revision_that_loses_tasks_regresses_and_its_interval_lies_below_zero():
    parent = dict.fromkeys(CATEGORY, True)
    revision = {t: not (CATEGORY[t] == "tool_use" and t in ("t0", "t1", "t2", "t3")) for t in CATEGORY}
    paired = compare_paired(parent, revision, CATEGORY, seed="s")
    assert paired is not None and paired.regresses and (paired.wins, paired.losses) == (0, 4)
    assert paired.parent_overall == pytest.approx(0.5 + 0.2)  # tool_use and memory all solved
    assert paired.delta == pytest.approx(-0.5 * 4 / 6)
    assert paired.low <= paired.delta <= paired.high < 0
    assert compare_paired(parent, revision, CATEGORY, seed="s") == paired  # reproducible on replay
    assert compare_paired(parent, {"other": True}, {**CATEGORY, "other": "memory"}, seed="s") is None


def test_mixed_flips_give_an_interval_around_the_difference():
    parent = {t: t in ("t0", "t1", "t6") for t in CATEGORY}
    revision = {t: t in ("t1", "t2", "t3", "t6") for t in CATEGORY}
    paired = compare_paired(parent, revision, CATEGORY, seed="s")
    assert paired is not None and (paired.wins, paired.losses) == (2, 1) and paired.delta == pytest.approx(0.5 / 6)
    assert paired.low < 0 < paired.delta < paired.high  # one task's worth either way is within the noise


@pytest.fixture
def ports(tmp_path):
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    registry = open_registry(f"sqlite:///{tmp_path}/mlflow.db")
    for _ in range(2):
        registry.register_version("tiny", registry.start_run("t"), "harness")
        registry.register_version("planner", registry.start_run("t"), "checkpoint")
    registry.set_alias("tiny", "production", "1")
    yield Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), registry)
    bus.close()


def _group(ports: Ports, harness: str, kind: str, solved: set[str]) -> tuple[list[RolloutRequested], list]:
    tasks = [t for t in suite() if t.split == "dev"]
    started = start_round("run-test", 0, "p0", "tiny/1", 4, P)
    requests = evaluate(started, started, tasks, "planner/2", harness, P, kind)  # type: ignore[arg-type]
    by_id = {t.task_id: t for t in tasks}
    events: list = []
    for r in requests:
        task = by_id[r.task_id]
        ids = {**IDS, "task_id": r.task_id, "episode_id": r.episode_id}
        events.append(
            EpisodeEnded(
                **ids, reason="finished", steps=2, input_tokens=1, output_tokens=1, tool_calls=1, wall_time_s=1.0
            )
        )
        events.append(verdict(task, None if r.task_id in solved else {task.criteria[0].id}, episode_id=r.episode_id))
    publish_all(ports.bus, requests)
    return requests, events


def _run_group(ports: Ports, evaluator: DevEvaluator, events: list) -> list:
    publish_all(ports.bus, events)
    return [o for e in events if isinstance(e, EpisodeVerified) for o in evaluator.handle(e, ports)]


def _revision(ports: Ports) -> None:
    common = dict(**IDS, harness_name="tiny", revision_id="tiny-r0-abc")
    publish_all(
        ports.bus,
        [
            HarnessRevisionProposed(
                **common, base_version="tiny/1", patch=BLOB, patch_kinds=["set_tool_note"], summary="s"
            ),
            HarnessVersionPublished(**common, harness_version="tiny/2", config=BLOB),
        ],
    )


@pytest.mark.parametrize("harmful", [True, False])
def test_a_revision_goes_to_production_only_when_the_paired_ab_does_not_regress(ports, harmful):
    publish_all(ports.bus, [*suite(), start_round("run-test", 0, "p0", "tiny/1", 4, P)])
    dev = sorted(t.task_id for t in suite() if t.split == "dev")
    parent_solved = set(dev[::2])
    evaluator = DevEvaluator()
    _, parent_events = _group(ports, "tiny/1", "model", parent_solved)
    [parent] = _run_group(ports, evaluator, parent_events)
    _revision(ports)
    revision_solved = set(dev[::4]) if harmful else parent_solved | {dev[1]}
    _, revision_events = _group(ports, "tiny/2", "harness", revision_solved)
    evaluated, decided = _run_group(ports, evaluator, revision_events)
    assert isinstance(evaluated, DevSetEvaluated) and evaluated.evaluates == "harness"
    assert isinstance(decided, HarnessRevisionDecided) and decided.decided_by == AB_DECIDER
    assert (decided.revision_id, decided.causation_id) == ("tiny-r0-abc", evaluated.event_id)
    assert decided.metrics["parent_overall"] == pytest.approx(parent.overall)
    assert decided.metrics["revision_overall"] == pytest.approx(evaluated.overall)
    assert decided.metrics["paired_tasks"] == len(dev)
    assert decided.metrics["paired_low"] <= decided.metrics["paired_delta"] <= decided.metrics["paired_high"]
    production = ports.registry.resolve("tiny@production").version
    logged = ports.registry.get_run(ports.registry.resolve("tiny/2").run_id or "").metrics  # the A/B, for trackers
    assert logged["ab_paired_delta"] == pytest.approx(decided.metrics["paired_delta"])
    assert logged["ab_accepted"] == (0.0 if harmful else 1.0) and logged["ab_wins"] == decided.metrics["wins"]
    if harmful:
        assert decided.decision == "rejected" and decided.metrics["paired_delta"] < 0 and decided.metrics["losses"] > 0
        assert production == "1" and "regresses" in decided.reason
    else:
        assert decided.decision == "accepted" and decided.metrics["paired_delta"] >= 0
        assert decided.metrics["wins"] == 1 and decided.metrics["losses"] == 0 and production == "2"


def test_a_revision_without_a_paired_parent_evaluation_is_not_promoted(ports):
    publish_all(ports.bus, [*suite(), start_round("run-test", 0, "p0", "tiny/1", 4, P)])
    _revision(ports)
    everything = {t.task_id for t in suite() if t.split == "dev"}
    _, events = _group(ports, "tiny/2", "harness", everything)  # a perfect score, but nothing to pair it with
    _, decided = _run_group(ports, DevEvaluator(), events)
    assert decided.decision == "rejected" and "no paired dev evaluation" in decided.reason
    assert ports.registry.resolve("tiny@production").version == "1"
