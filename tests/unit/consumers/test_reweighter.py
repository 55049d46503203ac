"""The sampling plan from crafted verdicts, diagnoses and dev scores: one test per weighting rule."""

from __future__ import annotations

import pytest
from consumer_factory import IDS, P, suite, verdict
from dev_scores import dev_evaluated

from bus_schemas.events import FailureDiagnosed, RoundStarted
from consumers.reweighter.handler import PlanConfig, plan, preserved, round_dev

pytestmark = pytest.mark.unit
STARTED = RoundStarted(**{**IDS, "round": 3}, policy_version="p", harness_version="h", planned_rollouts=8)


def _train():
    return [t for t in suite() if t.split == "train"]


def _history(task, outcomes):
    return [
        verdict(task, None if ok else {task.criteria[0].id}, episode_id=f"ep-{task.task_id}-{i}")
        for i, ok in enumerate(outcomes)
    ]


def _plan(verdicts=(), diagnoses=(), dev=None, cfg=PlanConfig()):
    return plan(STARTED, _train(), list(verdicts), list(diagnoses), dev, P, cfg)


def test_mastered_tasks_are_down_weighted_except_the_preservation_set():
    tasks = _train()
    kept = next(t for t in tasks if preserved(t.task_id, 5))
    dropped = next(t for t in tasks if not preserved(t.task_id, 5))
    [p] = _plan(_history(kept, [True] * 4) + _history(dropped, [True] * 4))
    assert p.task_weights[dropped.task_id] == 0.2 and kept.task_id not in p.task_weights  # sparse: absent = 1.0
    assert p.plan_id == "run-test/round-3" and p.causation_id == STARTED.event_id


def test_unstable_tasks_are_up_weighted_by_their_variance():
    task, steady = _train()[0], _train()[1]
    [p] = _plan(_history(task, [True, False, True, False]) + _history(steady, [False] * 4))
    assert p.task_weights[task.task_id] == 2.0 and steady.task_id not in p.task_weights


def test_diagnosed_failures_form_repair_sets_and_tag_weights():
    task = _train()[2]
    d = FailureDiagnosed(
        **IDS,
        task_id=task.task_id,
        episode_id="ep-x",
        attribution="recovery",
        explanation="x",
        confidence=0.9,
        diagnoser_version="v",
    )
    [p] = _plan(_history(task, [False]), [d])
    assert p.task_weights[task.task_id] == 1.5 and p.tag_weights == {"recovery": 2.0}


def test_weak_capabilities_get_more_weight():
    tool = next(t for t in _train() if t.category == "tool_use")
    mem = next(t for t in _train() if t.category == "memory")
    [p] = _plan(_history(tool, [True] * 3) + _history(mem, [False] * 3))
    assert p.category_weights["memory"] > p.category_weights["tool_use"]


def _dev(memory_rate, model_version="1", harness_version="h", evaluates="model", split="dev"):
    scores = {"tool_use": 0.9, "memory": memory_rate, "skills": 0.9, "sub_agent": 0.9}
    return dev_evaluated(
        scores,
        tasks=10,
        **IDS,
        model_name="m",
        model_version=model_version,
        harness_version=harness_version,
        evaluates=evaluates,
        split=split,
    )


def test_a_low_dev_score_with_a_small_pool_requests_new_tasks():
    out = _plan(dev=_dev(0.2), cfg=PlanConfig(min_pool=150))
    [request] = [e for e in out if e.event_type == "TaskGenerationRequested"]
    assert (request.capability, request.count, request.split) == ("memory", 150 - 126, "train")


def test_the_plan_acts_on_the_dev_score_of_what_the_round_runs_not_on_a_rejected_revisions():
    """Round 2 runs m/1 under harness h/1: its evaluation counts, not the later ones of m/2 or of a revision."""
    started = RoundStarted(**{**IDS, "round": 2}, policy_version="m/1", harness_version="h/1", planned_rollouts=8)
    own = _dev(0.6, "1", "h/1")
    newer_model = _dev(0.3, "2", "h/1")  # evaluated later, not promoted: the round does not run it
    revision = _dev(0.0, "1", "h/2", evaluates="harness")  # a candidate harness, rejected
    test_split = _dev(0.1, "1", "h/1", split="test")
    assert round_dev([own, newer_model, revision, test_split], started) == own
    # Nothing of the pair the round runs (e.g. an alias as its policy): the latest model evaluation, never a revision's
    aliased = started.model_copy(update={"policy_version": "m@production"})
    assert round_dev([own, newer_model, revision], aliased) == newer_model
    assert round_dev([revision, test_split], aliased) is None
    # A promoted revision is the round's harness: its evaluation is the one of what runs
    promoted = started.model_copy(update={"harness_version": "h/2"})
    assert round_dev([own, newer_model, revision], promoted) == revision


def test_a_large_pool_or_a_good_score_requests_nothing():
    assert [e.event_type for e in _plan(dev=_dev(0.2), cfg=PlanConfig(min_pool=100))] == ["SamplingPlanUpdated"]
    assert [e.event_type for e in _plan(dev=_dev(0.8), cfg=PlanConfig(min_pool=150))] == ["SamplingPlanUpdated"]


def test_the_plan_does_not_depend_on_input_order():
    hist = _history(_train()[0], [True, False, True]) + _history(_train()[5], [False, True])
    assert _plan(hist)[0].task_weights == _plan(list(reversed(hist)))[0].task_weights


def test_the_cold_start_rounds_of_a_scripted_policy_do_not_count_as_competence(tmp_path):
    from consumers.reweighter.spec import Reweighter
    from infra.bootstrap import Ports, open_blob_store, open_bus
    from infra.events import ensure_topics, publish_all

    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    ports = Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), registry=None)  # type: ignore[arg-type]

    task = next(t for t in suite() if t.split == "train")
    cold = RoundStarted(**IDS, policy_version="scripted:reference", harness_version="h", planned_rollouts=4)
    later = RoundStarted(**IDS | {"round": 1}, policy_version="planner/1", harness_version="h", planned_rollouts=4)
    solved = [verdict(task, episode_id=f"ep-{i}") for i in range(4)]  # round 0: the reference solved it every time
    publish_all(ports.bus, [*suite(), cold, *solved, later])
    [plan, *_] = Reweighter().handle(later, ports)
    # Not "mastered" (the model never tried it) but demonstrated: its solution is in the training data already.
    assert plan.task_weights[task.task_id] == PlanConfig().demonstrated_weight
    assert "0 down-weighted as mastered, 1 as demonstrated" in plan.rationale


def test_demonstrated_tasks_are_down_weighted_so_rollouts_go_to_tasks_new_to_the_model():
    shown, fresh = _train()[0], _train()[1]
    [p] = plan(STARTED, _train(), [], [], None, P, PlanConfig(), demonstrated={shown.task_id})
    assert p.task_weights == {shown.task_id: PlanConfig().demonstrated_weight} and fresh.task_id not in p.task_weights
    tried = _history(shown, [True, False])  # once the model tried it, its own competence decides
    [p] = plan(STARTED, _train(), tried, [], None, P, PlanConfig(), demonstrated={shown.task_id})
    assert p.task_weights[shown.task_id] == 2.0


def test_new_tasks_count_only_what_is_new_to_the_model_and_every_scored_capability_is_planned():
    memory = [t for t in _train() if t.category == "memory"]
    demonstrated = {t.task_id for t in memory[:100]}
    out = plan(STARTED, _train(), [], [], _dev(0.2), P, PlanConfig(min_pool=50), demonstrated=demonstrated)
    [request] = [e for e in out if e.event_type == "TaskGenerationRequested"]
    assert (request.capability, request.count, request.seed_task_ids) == ("memory", 50 - (len(memory) - 100), [])
    no_memory = [t for t in _train() if t.category != "memory"]  # a capability outside the pool still gets tasks
    out = plan(STARTED, no_memory, [], [], _dev(0.2), P, PlanConfig(min_pool=10))
    assert [(e.capability, e.count) for e in out if e.event_type == "TaskGenerationRequested"] == [("memory", 10)]


def test_a_weak_capability_with_mastered_tasks_asks_for_harder_variants_of_them():
    memory = [t for t in _train() if t.category == "memory"]
    mastered = _history(memory[0], [True] * 3)
    out = plan(STARTED, _train(), mastered, [], _dev(0.2), P, PlanConfig(min_pool=200))
    [request] = [e for e in out if e.event_type == "TaskGenerationRequested"]
    assert request.seed_task_ids == [memory[0].task_id] and "harder variants" in request.rationale
