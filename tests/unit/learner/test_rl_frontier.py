"""The RL step's frontier: templates the model solves sometimes, from its own verdicts only."""

from __future__ import annotations

from bus_schemas.envelope import Producer
from bus_schemas.events import CriterionResult, EpisodeVerified, RoundStarted, TaskSpecified
from infra.bootstrap import Ports
from infra.events import publish_all
from learner.jobs import own_verdicts
from learner.rl.frontier import frontier, template_of
from producers.tasks import build_task_suite

P = Producer(service="test", version="0")


def _train() -> list[TaskSpecified]:
    return [t for t in build_task_suite("run-a") if t.split == "train"]


def _verdict(task: TaskSpecified, outcome: str, n: int, *, run_id: str = "run-a", round: int = 1) -> EpisodeVerified:
    passed = outcome == "success"
    return EpisodeVerified(
        producer=P,
        run_id=run_id,
        round=round,
        task_id=task.task_id,
        episode_id=f"ep-{task.task_id}-{outcome}-{n}-{run_id}-{round}",
        outcome=outcome,
        score=1.0 if passed else 0.0,
        criteria=[CriterionResult(criterion_id=c.id, passed=passed) for c in task.criteria],
        verifier_version="v",
    )


def _by_template(pool: list[TaskSpecified]) -> dict[str, list[TaskSpecified]]:
    out: dict[str, list[TaskSpecified]] = {}
    for t in pool:
        out.setdefault(template_of(t), []).append(t)
    return out


def test_the_frontier_is_every_task_of_the_templates_solved_sometimes() -> None:
    pool = _train()
    groups = _by_template(pool)
    sometimes, never, always, errored = (groups[k] for k in sorted(groups)[:4])
    verdicts = [
        _verdict(sometimes[0], "success", 0),
        _verdict(sometimes[0], "failure", 1),
        _verdict(sometimes[0], "failure", 2),
        _verdict(never[0], "failure", 0),
        *(_verdict(always[0], "success", i) for i in range(3)),
        _verdict(errored[0], "error", 0),  # says nothing of the policy
    ]
    focus = frontier(pool, verdicts)
    assert not focus.fallback
    assert focus.templates == {template_of(sometimes[0]): 1 / 3}
    # every instance of the template, the ones never rolled out included
    assert focus.tasks == sometimes


def test_without_a_template_in_reach_the_whole_pool_is_sampled() -> None:
    pool = _train()
    focus = frontier(pool, [_verdict(pool[0], "failure", 0)])
    assert focus.fallback and focus.tasks == pool and focus.templates == {}


def test_only_the_runs_own_model_episodes_count(embedded_ports: Ports) -> None:
    pool = _train()
    task = pool[0]
    rounds = [
        RoundStarted(
            producer=P,
            run_id="run-a",
            round=0,
            policy_version="scripted:reference",
            harness_version="h",
            planned_rollouts=4,
        ),
        RoundStarted(
            producer=P, run_id="run-a", round=1, policy_version="planner/1", harness_version="h", planned_rollouts=4
        ),
    ]
    mine = _verdict(task, "failure", 0, round=1)
    publish_all(
        embedded_ports.bus,
        [
            *rounds,
            _verdict(task, "success", 1, round=0),  # the reference solver's cold start
            mine,
            _verdict(task, "success", 2, run_id="run-b"),  # another run
        ],
    )
    assert [v.episode_id for v in own_verdicts(embedded_ports, "run-a")] == [mine.episode_id]
