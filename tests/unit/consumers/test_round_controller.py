"""A round on the embedded log: plan -> rollouts, curated data -> training or completion, new model -> dev rollouts."""

from __future__ import annotations

import pytest

from bus_schemas.blob_ref import BlobRef
from bus_schemas.events import (
    CategoryScore,
    DevSetEvaluated,
    ModelVersionRegistered,
    Provenance,
    RoundCompleted,
    SamplingPlanUpdated,
    TrajectoryAdmitted,
    TrajectoryRejected,
    overall_score,
)
from consumer_factory import IDS, P, suite, verdict
from consumers.round_controller.handler import RoundConfig, start_round
from consumers.round_controller.spec import RoundController
from infra.bootstrap import Ports, open_blob_store, open_bus
from infra.events import ensure_topics, publish_all

pytestmark = pytest.mark.unit
BLOB = BlobRef(sha256="c" * 64, size=1)


@pytest.fixture
def ports(tmp_path):
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    yield Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), registry=None)  # type: ignore[arg-type]
    bus.close()


def _setup(ports, planned=4, cfg=RoundConfig(min_admitted_for_training=3)):
    tasks = list(suite())
    started = start_round("run-test", 0, "p0", "h0", planned, P)
    publish_all(ports.bus, [*tasks, started])
    return RoundController(cfg), started, [t for t in tasks if t.split == "train"]



def test_a_plan_schedules_the_planned_rollouts_reproducibly(ports):
    ctl, started, train = _setup(ports)
    plan = SamplingPlanUpdated(**IDS, plan_id="run-test/round-0", category_weights={"memory": 1.0, "tool_use": 0.0, "skills": 0.0, "sub_agent": 0.0},
                               reweighter_version="v")
    first, again = ctl.handle(plan, ports), RoundController().handle(plan, ports)
    assert len(first) == 4 and [r.task_id for r in first] == [r.task_id for r in again]
    assert [r.episode_id for r in first] == [r.episode_id for r in again]
    memory = {t.task_id for t in train if t.category == "memory"}
    assert all(r.task_id in memory and r.policy_version == "p0" and r.round == 0 for r in first)


def _decision(task, i, admitted=True):
    common = dict(**IDS, task_id=task.task_id, episode_id=f"ep-{i}", reasons=["r"], category=task.category, tags=task.tags,
                  provenance=Provenance(task_source=task.source, backend="sandbox", policy_version="p0", harness_version="h0"),
                  curator_version="v")
    return TrajectoryAdmitted(**common, trajectory=BLOB) if admitted else TrajectoryRejected(**common)


def _curate(ports, ctl, train, admitted):
    decisions = [_decision(train[i], i, i < admitted) for i in range(4)]
    publish_all(ports.bus, [verdict(train[i], episode_id=f"ep-{i}") for i in range(4)])
    outputs = []
    for d in decisions:
        publish_all(ports.bus, [d])
        outputs += ctl.handle(d, ports)
    return outputs


def test_enough_admitted_data_triggers_training_once(ports):
    ctl, started, train = _setup(ports)
    [out] = _curate(ports, ctl, train, admitted=3)
    assert out.event_type == "TrainingRequested" and out.admitted_trajectories == 3 and out.base_model_version == "p0"
    assert ctl.handle(_decision(train[0], 0), ports) == []  # a late review decision does not trigger twice


def test_too_little_admitted_data_completes_the_round(ports):
    ctl, started, train = _setup(ports)
    [done] = _curate(ports, ctl, train, admitted=1)
    assert isinstance(done, RoundCompleted) and (done.round, done.episodes, done.success_rate, done.model_version_out) == (0, 4, 1.0, None)
    publish_all(ports.bus, [done])
    [nxt] = ctl.handle(done, ports)
    assert (nxt.event_type, nxt.round, nxt.policy_version, nxt.planned_rollouts) == ("RoundStarted", 1, "p0", 4)


def test_a_new_model_is_evaluated_on_every_dev_task_and_its_score_closes_the_round(ports):
    ctl, started, train = _setup(ports)
    model = ModelVersionRegistered(**IDS, model_name="planner", model_version="2", checkpoint=BLOB)
    rollouts = ctl.handle(model, ports)
    dev = sorted(t.task_id for t in suite() if t.split == "dev")
    assert sorted(r.task_id for r in rollouts) == dev and all(r.policy_version == "2" for r in rollouts)
    scores = {"tool_use": 0.5, "memory": 0.5, "skills": 0.5, "sub_agent": 0.5}
    evaluated = DevSetEvaluated(**IDS, model_name="planner", model_version="2", harness_version="h0",
                                per_category={k: CategoryScore(success_rate=v, tasks=4) for k, v in scores.items()},
                                overall=overall_score(scores), tokens_per_task=1.0, tool_calls_per_task=1.0)
    [done] = ctl.handle(evaluated, ports)
    assert (done.model_version_out, done.dev_overall) == ("2", evaluated.overall)
    assert ctl.handle(evaluated, ports) == []


def test_the_last_round_starts_no_other(ports):
    ctl, started, train = _setup(ports, cfg=RoundConfig(max_rounds=1))
    done = RoundCompleted(**IDS, episodes=0, success_rate=0.0, wall_time_s=0.0)
    assert ctl.handle(done, ports) == []
