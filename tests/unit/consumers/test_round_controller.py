"""A round on the embedded log: plan -> rollouts, curated data -> training or completion, new model -> dev rollouts."""

from __future__ import annotations

import pytest
from consumer_factory import IDS, P, suite, verdict
from dev_scores import dev_evaluated

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import new_event_id
from bus_schemas.events import (
    DevSetEvaluated,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessRevisionSkipped,
    HarnessVersionPublished,
    ModelVersionRegistered,
    Provenance,
    RoundCompleted,
    SamplingPlanUpdated,
    TrajectoryAdmitted,
    TrajectoryRejected,
)
from consumers.dev_evaluator.handler import AB_DECIDER
from consumers.round_controller.handler import RoundConfig, schedule, start_round
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


def _setup(ports, planned=4, cfg=None):
    cfg = cfg or RoundConfig(min_admitted_for_training=3)
    tasks = list(suite())
    started = start_round("run-test", 0, "p0", "h0", planned, P)
    publish_all(ports.bus, [*tasks, started])
    return RoundController(cfg), started, [t for t in tasks if t.split == "train"]


def test_a_plan_schedules_the_planned_rollouts_reproducibly(ports):
    ctl, started, train = _setup(ports)
    plan = SamplingPlanUpdated(
        **IDS,
        plan_id="run-test/round-0",
        category_weights={"memory": 1.0, "tool_use": 0.0, "skills": 0.0, "sub_agent": 0.0},
        reweighter_version="v",
    )
    first, again = ctl.handle(plan, ports), RoundController().handle(plan, ports)
    assert len(first) == 4 and [r.task_id for r in first] == [r.task_id for r in again]
    assert [r.episode_id for r in first] == [r.episode_id for r in again]
    memory = {t.task_id for t in train if t.category == "memory"}
    assert all(r.task_id in memory and r.policy_version == "p0" and r.round == 0 for r in first)


def test_two_runs_with_the_same_pool_and_plan_draw_the_same_tasks_and_seeds():
    """The draw follows the round, not the run id: an ablation's arms roll out the same instances."""
    train = [t for t in suite() if t.split == "train"]
    even = {"memory": 1.0, "tool_use": 1.0, "skills": 1.0, "sub_agent": 1.0}
    drawn = []
    for run in ("run-a", "run-b"):
        ids = {**IDS, "run_id": run}
        plan = SamplingPlanUpdated(**ids, plan_id=f"{run}/round-0", category_weights=even, reweighter_version="v")
        requests = schedule(plan, start_round(run, 0, "p0", "h0", 16, P), train, P)
        drawn.append([(r.task_id, r.seed) for r in requests])
    assert len(drawn[0]) == 16 and drawn[0] == drawn[1]
    later = SamplingPlanUpdated(
        **{**IDS, "round": 1}, plan_id="run-a/round-1", category_weights=even, reweighter_version="v"
    )
    other = schedule(later, start_round("run-a", 1, "p0", "h0", 16, P), train, P)
    assert [(r.task_id, r.seed) for r in other] != drawn[0]  # each round draws anew


def test_the_seed_draws_anew_and_seed_0_draws_as_before_seeds_existed():
    """Seed 0 keys the draw ``round-<n>`` as before (earlier figures reproduce); another seed draws other tasks
    and seeds, and the same seed twice draws the same."""
    import random

    from consumers.round_controller.handler import _weighted_draws, _weights

    train = [t for t in suite() if t.split == "train"]
    even = {"memory": 1.0, "tool_use": 1.0, "skills": 1.0, "sub_agent": 1.0}
    plan = SamplingPlanUpdated(**IDS, plan_id="run-test/round-0", category_weights=even, reweighter_version="v")
    started = start_round("run-test", 0, "p0", "h0", 16, P)

    def draw(seed: int) -> list[tuple[str, int]]:
        return [(r.task_id, r.seed) for r in schedule(plan, started, train, P, seed=seed)]

    tasks = sorted(train, key=lambda t: t.task_id)
    rng = random.Random("round-0")  # the key before seeds existed
    before = [t.task_id for t in _weighted_draws(rng, tasks, _weights(tasks, plan), 16)]
    assert [task for task, _ in draw(0)] == before and draw(0) == draw(0)
    assert draw(0) == [(r.task_id, r.seed) for r in schedule(plan, started, train, P)]  # 0 is the default
    assert draw(7) == draw(7)
    assert {task for task, _ in draw(7)} != {task for task, _ in draw(0)}
    assert [s for _, s in draw(7)] != [s for _, s in draw(0)]


def test_the_configured_seed_reaches_the_draw(ports):
    ctl, _, _ = _setup(ports, cfg=RoundConfig(seed=3))
    even = {"memory": 1.0, "tool_use": 1.0, "skills": 1.0, "sub_agent": 1.0}
    plan = SamplingPlanUpdated(**IDS, plan_id="run-test/round-0", category_weights=even, reweighter_version="v")
    seeded = [(r.task_id, r.seed) for r in ctl.handle(plan, ports)]
    assert seeded != [(r.task_id, r.seed) for r in RoundController().handle(plan, ports)]
    assert seeded == [(r.task_id, r.seed) for r in RoundController(RoundConfig(seed=3)).handle(plan, ports)]


def test_tasks_generated_for_the_rounds_own_requests_wait_for_the_next_round(ports):
    """The reweighter asks for new tasks with the plan; the task constructor's answers arrive while the round is
    drawn. The draw must not depend on how many arrived: it is made over the tasks of earlier rounds, and the new
    ones are drawn from in the next round."""
    ctl, started, train = _setup(ports, planned=16)
    even = {"memory": 1.0, "tool_use": 1.0, "skills": 1.0, "sub_agent": 1.0}
    plan = SamplingPlanUpdated(**IDS, plan_id="run-test/round-0", category_weights=even, reweighter_version="v")
    before = [(r.task_id, r.seed) for r in RoundController().handle(plan, ports)]
    fresh = [  # answers to this round's generation requests: the same round on the envelope
        t.model_copy(update={"task_id": f"gen/{t.task_id}", "event_id": new_event_id(), "round": 0})
        for t in train[:200]
    ]
    publish_all(ports.bus, fresh)
    assert [(r.task_id, r.seed) for r in ctl.handle(plan, ports)] == before
    nxt = start_round("run-test", 1, "p0", "h0", 400, P)
    publish_all(ports.bus, [nxt])
    later = SamplingPlanUpdated(
        **{**IDS, "round": 1}, plan_id="run-test/round-1", category_weights=even, reweighter_version="v"
    )
    drawn = {r.task_id for r in RoundController().handle(later, ports)}
    assert drawn & {t.task_id for t in fresh}  # the next round draws from them


def _decision(task, i, admitted=True):
    common = dict(
        **IDS,
        task_id=task.task_id,
        episode_id=f"ep-{i}",
        reasons=["r"],
        category=task.category,
        tags=task.tags,
        provenance=Provenance(task_source=task.source, backend="sandbox", policy_version="p0", harness_version="h0"),
        curator_version="v",
    )
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
    assert isinstance(done, RoundCompleted) and (
        done.round,
        done.episodes,
        done.success_rate,
        done.model_version_out,
    ) == (0, 4, 1.0, None)
    publish_all(ports.bus, [done])
    [nxt] = ctl.handle(done, ports)
    assert (nxt.event_type, nxt.round, nxt.policy_version, nxt.planned_rollouts) == ("RoundStarted", 1, "p0", 4)


def test_a_new_model_is_evaluated_on_every_dev_task_and_its_score_closes_the_round(ports):
    ctl, started, train = _setup(ports)
    model = ModelVersionRegistered(**IDS, model_name="planner", model_version="2", checkpoint=BLOB)
    rollouts = ctl.handle(model, ports)
    dev = sorted(t.task_id for t in suite() if t.split == "dev")
    assert sorted(r.task_id for r in rollouts) == dev and all(r.policy_version == "planner/2" for r in rollouts)
    assert {r.group_id for r in rollouts} == {"dev-eval:model:planner/2:h0"}
    evaluated = _evaluated("2", 0.5)
    publish_all(ports.bus, [evaluated])
    [done] = ctl.handle(evaluated, ports)
    assert (done.model_version_out, done.dev_overall, done.harness_version_out) == (
        "planner/2",
        evaluated.overall,
        None,
    )
    assert ctl.handle(evaluated, ports) == []


def _evaluated(version, score, harness="h0", evaluates="model", round=0):
    scores = {"tool_use": score, "memory": score, "skills": score, "sub_agent": score}
    return dev_evaluated(
        scores,
        tasks=4,
        **IDS | {"round": round},
        model_name="planner",
        model_version=version,
        harness_version=harness,
        evaluates=evaluates,
    )


def _harness(kind, revision="rev-1", **fields):
    common = dict(**IDS, harness_name="tiny")
    if kind == "skipped":
        return HarnessRevisionSkipped(**common, base_version="tiny/1", reason="nothing")
    if kind == "proposed":
        return HarnessRevisionProposed(**common, revision_id=revision, base_version="tiny/1", patch=BLOB, summary="s")
    if kind == "decided":
        return HarnessRevisionDecided(
            **common,
            revision_id=revision,
            decision=fields.get("decision", "accepted"),
            decided_by="auto:add_instruction",
        )
    return HarnessVersionPublished(**common, harness_version="tiny/2", config=BLOB, revision_id=revision)


@pytest.mark.parametrize(
    ("answers", "harness_eval", "closes"),
    [
        (["skipped"], False, True),
        (["proposed"], False, True),  # waits for a human: the loop goes on
        (["proposed", "decided-rejected"], False, True),
        (["proposed", "decided", "published"], None, False),  # the revision is being evaluated on dev
        (["proposed", "decided", "published"], "evaluated", False),  # evaluated, not yet decided by the A/B
        (["proposed", "decided", "published"], "accepted", True),
        (["proposed", "decided", "published"], "rejected", True),
        ([], None, False),  # the reviser has not answered yet
    ],
)
def test_with_a_reviser_the_round_closes_once_the_harness_step_is_settled(ports, answers, harness_eval, closes):
    ctl, started, train = _setup(ports, cfg=RoundConfig(min_admitted_for_training=3, await_harness_revision=True))
    model_eval = _evaluated("2", 0.25)
    events = [_harness(a.split("-")[0], decision=(a.split("-") + ["accepted"])[1]) for a in answers]
    if harness_eval:
        revision_eval = _evaluated("2", 0.5, harness="tiny/2", evaluates="harness")
        events.append(revision_eval)
        if harness_eval != "evaluated":
            events.append(_ab(revision_eval, harness_eval))
    publish_all(ports.bus, [model_eval, *events])
    out = [e for ev in [model_eval, *events] for e in ctl.handle(ev, ports)]
    done = [e for e in out if isinstance(e, RoundCompleted)]
    assert len(done) == (1 if closes else 0)
    if closes and harness_eval:
        # the A/B decides, not the unpaired score: a rejected revision stays out even with a higher Overall
        assert done[0].harness_version_out == ("tiny/2" if harness_eval == "accepted" else None)


def _ab(revision_eval: DevSetEvaluated, decision: str) -> HarnessRevisionDecided:
    return HarnessRevisionDecided(
        **IDS | {"causation_id": revision_eval.event_id},
        harness_name="tiny",
        revision_id="rev-1",
        decision=decision,
        decided_by=AB_DECIDER,
        metrics={"paired_delta": 0.0 if decision == "accepted" else -0.25},
    )


def test_a_revision_the_ab_accepted_without_gain_is_carried_to_the_next_round(ports):
    ctl, started, train = _setup(ports)
    neutral = _evaluated("2", 0.5, harness="tiny/2", evaluates="harness")
    publish_all(ports.bus, [_evaluated("2", 0.5), neutral, _harness("proposed"), _ab(neutral, "accepted")])
    done = RoundCompleted(**IDS, episodes=4, success_rate=1.0, wall_time_s=1.0, model_version_out="planner/2")
    publish_all(ports.bus, [done])
    [nxt] = ctl.handle(done, ports)
    assert (nxt.policy_version, nxt.harness_version) == ("planner/2", "tiny/2")  # a tie: it does not regress


def test_a_revision_is_evaluated_with_the_model_of_its_parent_evaluation_when_the_best_has_none(ports):
    ctl, started, train = _setup(ports)
    parent = _evaluated("3", 0.25, harness="tiny/1")  # the model whose dev result the reviser answered
    proposal = _harness("proposed").model_copy(update={"causation_id": parent.event_id})
    publish_all(ports.bus, [_evaluated("2", 0.5), parent, proposal])  # planner/2 is best but never ran tiny/1
    rollouts = ctl.handle(_harness("published"), ports)
    assert rollouts and {r.policy_version for r in rollouts} == {"planner/3"}


def test_a_published_revision_is_evaluated_with_the_best_model_on_the_new_harness(ports):
    ctl, started, train = _setup(ports)
    publish_all(ports.bus, [_evaluated("2", 0.5), _evaluated("3", 0.25)])
    rollouts = ctl.handle(_harness("published"), ports)
    assert rollouts and {(r.policy_version, r.harness_version, r.group_id) for r in rollouts} == {
        ("planner/2", "tiny/2", "dev-eval:harness:planner/2:tiny/2")
    }


def test_the_next_round_carries_the_best_versions_not_the_latest(ports):
    ctl, started, train = _setup(ports, cfg=RoundConfig(planned_rollouts=7))
    worse_harness = _evaluated("2", 0.25, harness="tiny/2", evaluates="harness")
    publish_all(ports.bus, [_evaluated("2", 0.5), _evaluated("3", 0.25), worse_harness])
    done = RoundCompleted(**IDS, episodes=4, success_rate=1.0, wall_time_s=1.0, model_version_out="planner/3")
    publish_all(ports.bus, [done])
    [nxt] = ctl.handle(done, ports)
    assert (nxt.round, nxt.policy_version, nxt.harness_version, nxt.planned_rollouts) == (1, "planner/2", "h0", 7)


def test_training_starts_from_scratch_after_scripted_rollouts(ports):
    tasks = list(suite())
    started = start_round("run-test", 0, "scripted:reference", "h0", 4, P)
    publish_all(ports.bus, [*tasks, started])
    ctl, train = RoundController(RoundConfig(min_admitted_for_training=3)), [t for t in tasks if t.split == "train"]
    [out] = _curate(ports, ctl, train, admitted=3)
    assert out.event_type == "TrainingRequested" and out.base_model_version is None


def test_the_last_round_starts_no_other(ports):
    ctl, started, train = _setup(ports, cfg=RoundConfig(max_rounds=1))
    done = RoundCompleted(**IDS, episodes=0, success_rate=0.0, wall_time_s=0.0)
    assert ctl.handle(done, ports) == []


def test_a_later_round_trains_on_everything_admitted_so_far(ports):
    ctl, started, train = _setup(ports)
    [first] = _curate(ports, ctl, train, admitted=3)
    publish_all(ports.bus, [first])
    nxt = start_round("run-test", 1, "planner/1", "h0", 4, P)
    publish_all(ports.bus, [nxt])
    decisions = [_decision(train[i], 10 + i, admitted=False) for i in range(4)]
    decisions = [d.model_copy(update={"round": 1}) for d in decisions]
    publish_all(ports.bus, decisions)
    [out] = ctl.handle(decisions[-1], ports)  # no new admissions, but 3 from round 0 are enough
    assert out.event_type == "TrainingRequested" and out.round == 1 and out.admitted_trajectories == 3
    assert out.base_model_version == "planner/1"


def test_draws_cover_every_task_before_repeating_one_and_follow_the_weights():
    import random

    from consumers.round_controller.handler import _weighted_draws

    tasks = [t for t in suite() if t.split == "train"][:10]
    picks = _weighted_draws(random.Random(1), tasks, [1.0] * 10, 25)
    counts = [picks.count(t) for t in tasks]
    assert len(picks) == 25 and min(counts) == 2 and max(counts) == 3
    heavy = [100.0] + [1.0] * 9
    firsts = [_weighted_draws(random.Random(seed), tasks, heavy, 1)[0] for seed in range(200)]
    assert firsts.count(tasks[0]) > 150  # a task with 100x the weight comes first most of the time
    assert tasks[1] not in _weighted_draws(random.Random(2), tasks, [1.0, 0.0] + [1.0] * 8, 30)


def test_a_tasks_weight_is_task_times_category_times_its_tags_mean():
    from consumers.round_controller.handler import _weights

    tasks = [t for t in suite() if t.split == "train" and t.tags][:50]
    tag = tasks[0].tags[0]
    plan = SamplingPlanUpdated(
        **IDS,
        plan_id="p",
        task_weights={tasks[1].task_id: 3.0},
        category_weights={tasks[2].category: 0.5},
        tag_weights={tag: 1.7},
        reweighter_version="v",
    )
    expected = [
        plan.task_weights.get(t.task_id, 1.0)
        * plan.category_weights.get(t.category, 1.0)
        * (sum(plan.tag_weights.get(g, 1.0) for g in t.tags) / len(t.tags))
        for t in tasks
    ]
    assert _weights(tasks, plan) == expected and any(w not in (1.0, 3.0, 0.5, 1.5) for w in expected)
    untagged = plan.model_copy(update={"tag_weights": {}})
    assert _weights(tasks, untagged) == [
        untagged.task_weights.get(t.task_id, 1.0) * untagged.category_weights.get(t.category, 1.0) for t in tasks
    ]


def test_draws_are_the_full_sort_of_the_exponential_keys_ties_included():
    """The draw takes the top keys of each pass without sorting the whole pool; it must pick exactly what sorting
    every key picked (same keys from the same random stream, ties in pool order), or seeded runs draw anew. Tiny
    weights make ties: ``u ** (1 / w)`` underflows to 0.0."""
    import random

    from consumers.round_controller.handler import _weighted_draws

    def by_sorting(rng: random.Random, tasks: list, weights: list[float], k: int) -> list:
        pool = [(t, w) for t, w in zip(tasks, weights, strict=True) if w > 0]
        picks: list = []
        while len(picks) < k:
            ordered = sorted(pool, key=lambda tw: rng.random() ** (1.0 / tw[1]), reverse=True)
            picks.extend(t for t, _ in ordered[: k - len(picks)])
        return picks

    tasks = [t for t in suite() if t.split == "train"][:40]
    cases = random.Random(5)
    for case in range(300):
        weights = [cases.choice((0.0, 1e-3, 0.2, 1.0, 3.0)) for _ in tasks]
        weights[case % len(tasks)] = 1.0  # at least one task can be drawn
        k = cases.choice((1, 2, 5, 39, 40, 41, 97))
        a, b = random.Random(f"draw-{case}"), random.Random(f"draw-{case}")
        assert _weighted_draws(a, tasks, weights, k) == by_sorting(b, tasks, weights, k), case
        assert a.random() == b.random()  # the stream is where the sort left it: the seeds drawn next agree


def test_a_models_rollouts_sample_at_the_configured_temperature_and_the_reference_solvers_do_not(ports):
    ctl, started, _ = _setup(ports, cfg=RoundConfig(rollout_temperature=0.7))
    even = {"memory": 1.0, "tool_use": 1.0, "skills": 1.0, "sub_agent": 1.0}
    plan = SamplingPlanUpdated(**IDS, plan_id="run-test/round-0", category_weights=even, reweighter_version="v")
    requests = ctl.handle(plan, ports)
    assert requests and all(r.temperature == 0.7 for r in requests)
    assert len({r.seed for r in requests}) == len(requests)  # each attempt samples with its own seed
    assert all(r.temperature is None for r in RoundController().handle(plan, ports))  # greedy by default
    scripted = start_round("run-test", 1, "scripted:reference", "h0", 4, P)
    publish_all(ports.bus, [scripted])
    later = SamplingPlanUpdated(
        **{**IDS, "round": 1}, plan_id="run-test/round-1", category_weights=even, reweighter_version="v"
    )
    assert all(r.temperature is None for r in ctl.handle(later, ports))


def test_a_failed_model_rollout_is_retried_sampled_and_the_round_waits_for_the_retries(ports):
    ctl, started, train = _setup(ports, cfg=RoundConfig(min_admitted_for_training=1, failure_retries=2))
    outcomes = ["success", "failure", "error", "failure"]
    publish_all(ports.bus, [verdict(train[i], outcome=o, episode_id=f"ep-{i}") for i, o in enumerate(outcomes)])
    asked = []
    for i in range(4):
        decision = _decision(train[i], i, admitted=i == 0)
        publish_all(ports.bus, [decision])
        asked += ctl.handle(decision, ports)
    # only the failures (not the success, not the infrastructure error) are retried, and training waits
    assert [(r.event_type, r.episode_id, r.task_id) for r in asked] == [
        ("RolloutRequested", "ep-1-retry", train[1].task_id),
        ("RolloutRequested", "ep-3-retry", train[3].task_id),
    ]
    assert all(
        (r.group_size, r.temperature, r.policy_version, r.harness_version, r.round) == (2, 0.8, "p0", "h0", 0)
        for r in asked
    )
    assert ctl.handle(_decision(train[1], 1, admitted=False), ports) == []  # a redelivery asks for nothing more
    retried = [("ep-1-retry", 1), ("ep-1-retry.g1", 1), ("ep-3-retry", 3), ("ep-3-retry.g1", 3)]
    outputs = []
    for n, (episode, i) in enumerate(retried):
        decision = _decision(train[i], i, admitted=n == 0).model_copy(update={"episode_id": episode})
        publish_all(ports.bus, [verdict(train[i], outcome="success" if n == 0 else "failure", episode_id=episode)])
        publish_all(ports.bus, [decision])
        outputs.append(ctl.handle(decision, ports))
    assert outputs[:3] == [[], [], []]  # a failed retry is not retried, and the round still waits
    [trained] = outputs[3]
    assert trained.event_type == "TrainingRequested" and trained.admitted_trajectories == 2


def test_two_runs_with_the_same_seed_sample_the_same_retries():
    """A retry's seed follows the draw's seed, the round and the task, not the episode id (which holds the run id):
    two runs with one seed retry a failure with the same samples, as they draw the same rollouts; another seed
    samples anew, and another task of the same run gets its own seed."""
    from consumers.round_controller.handler import retries

    train = [t for t in suite() if t.split == "train"]

    def retry_seed(run: str, seed: int, task) -> int:  # noqa: ANN001
        started = start_round(run, 1, "p0", "h0", 4, P)
        failed = verdict(task, outcome="failure", episode_id=f"ep-{run}-7")
        [asked] = retries(failed, task, started, RoundConfig(failure_retries=2, seed=seed), P)
        assert asked.episode_id == f"ep-{run}-7-retry" and asked.group_size == 2
        return asked.seed

    assert retry_seed("run-a", 0, train[0]) == retry_seed("run-b", 0, train[0])
    assert retry_seed("run-a", 1, train[0]) == retry_seed("run-b", 1, train[0]) != retry_seed("run-a", 0, train[0])
    assert retry_seed("run-a", 0, train[1]) != retry_seed("run-a", 0, train[0])


def test_the_reference_solvers_failures_are_not_retried(ports):
    ctl = RoundController(RoundConfig(min_admitted_for_training=1, failure_retries=2))
    tasks = list(suite())
    publish_all(ports.bus, [*tasks, start_round("run-test", 0, "scripted:reference", "h0", 4, P)])
    train = [t for t in tasks if t.split == "train"]
    publish_all(ports.bus, [verdict(train[i], outcome="failure", episode_id=f"ep-{i}") for i in range(4)])
    outputs = []
    for i in range(4):
        decision = _decision(train[i], i, admitted=i == 0)
        publish_all(ports.bus, [decision])
        outputs += ctl.handle(decision, ports)
    assert [e.event_type for e in outputs] == ["TrainingRequested"]
