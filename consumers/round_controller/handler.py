"""Pure round logic. Each function takes the event in hand plus what the log holds for its round.

A round: RoundStarted -> (reweighter) SamplingPlanUpdated -> RolloutRequested x planned -> episodes are
verified and curated -> enough admitted data ? TrainingRequested : RoundCompleted -> (learner)
ModelVersionRegistered -> dev RolloutRequested -> DevSetEvaluated -> RoundCompleted -> next RoundStarted.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import (
    Budgets,
    EpisodeVerified,
    RolloutRequested,
    RoundCompleted,
    RoundStarted,
    SamplingPlanUpdated,
    TaskSpecified,
    TrainingRequested,
)

VERSION = "0.1.0"


@dataclass(frozen=True)
class RoundConfig:
    """How long the loop runs and when it trains."""

    max_rounds: int = 3
    min_admitted_for_training: int = 32
    model_name: str = "planner"
    algorithm: str = "rl"


def start_round(run_id: str, round_: int, policy_version: str, harness_version: str, planned_rollouts: int, producer: Producer) -> RoundStarted:
    """The first RoundStarted of a run (later ones follow RoundCompleted)."""
    return RoundStarted(producer=producer, run_id=run_id, round=round_, policy_version=policy_version,
                        harness_version=harness_version, planned_rollouts=planned_rollouts)


def _weight(task: TaskSpecified, plan: SamplingPlanUpdated) -> float:
    tags = [plan.tag_weights.get(t, 1.0) for t in task.tags]
    return plan.task_weights.get(task.task_id, 1.0) * plan.category_weights.get(task.category, 1.0) * (sum(tags) / len(tags) if tags else 1.0)


def schedule(plan: SamplingPlanUpdated, started: RoundStarted, train: list[TaskSpecified], producer: Producer) -> list[RolloutRequested]:
    """``planned_rollouts`` draws over train tasks by plan weight; seeded by the plan id, so replay draws alike."""
    tasks = sorted(train, key=lambda t: t.task_id)
    weights = [_weight(t, plan) for t in tasks]
    if not tasks or not any(weights):
        return []
    rng = random.Random(plan.plan_id)
    picks = rng.choices(tasks, weights=weights, k=started.planned_rollouts)
    return [
        RolloutRequested(
            producer=producer, run_id=started.run_id, round=started.round, causation_id=plan.event_id, task_id=t.task_id,
            episode_id=f"ep-{uuid.uuid5(uuid.NAMESPACE_URL, f'{plan.plan_id}/{i}')}", policy_version=started.policy_version,
            harness_version=started.harness_version, backend=t.backend, seed=rng.randrange(2**31),
            budgets=t.budgets or Budgets(), group_id=plan.plan_id,
        )
        for i, t in enumerate(picks)
    ]


def evaluate(cause: Event, started: RoundStarted, dev: list[TaskSpecified], policy_version: str, harness_version: str, producer: Producer) -> list[RolloutRequested]:
    """One rollout per dev task for a new model or harness version; ids derive from the versions."""
    group = f"dev-eval/{policy_version}/{harness_version}"
    return [
        RolloutRequested(
            producer=producer, run_id=started.run_id, round=started.round, causation_id=cause.event_id, task_id=t.task_id,
            episode_id=f"ep-{uuid.uuid5(uuid.NAMESPACE_URL, f'{group}/{t.task_id}')}", policy_version=policy_version,
            harness_version=harness_version, backend=t.backend, seed=t.initial_conditions.seed,
            budgets=t.budgets or Budgets(), group_id=group,
        )
        for t in sorted(dev, key=lambda t: t.task_id)
    ]


def after_curation(cause: Event, started: RoundStarted, admitted: int, verdicts: list[EpisodeVerified], cfg: RoundConfig, producer: Producer) -> Event:
    """The round's rollouts are all curated: train on enough admitted data, else close the round."""
    if admitted >= cfg.min_admitted_for_training:
        return TrainingRequested(producer=producer, **correlate(cause) | {"task_id": None, "episode_id": None},
                                 model_name=cfg.model_name, algorithm=cfg.algorithm,  # type: ignore[arg-type]
                                 base_model_version=started.policy_version, admitted_trajectories=admitted)
    return complete(cause, started, verdicts, producer)


def complete(cause: Event, started: RoundStarted, verdicts: list[EpisodeVerified], producer: Producer,
             model_version: str | None = None, dev_overall: float | None = None) -> RoundCompleted:
    judged = [v for v in verdicts if v.outcome != "error"]
    return RoundCompleted(
        producer=producer, run_id=started.run_id, round=started.round, causation_id=cause.event_id,
        episodes=len(verdicts), success_rate=sum(v.outcome == "success" for v in judged) / len(judged) if judged else 0.0,
        model_version_out=model_version, dev_overall=dev_overall,
        wall_time_s=max(0.0, (cause.occurred_at - started.occurred_at).total_seconds()),
    )


def next_round(done: RoundCompleted, started: RoundStarted, cfg: RoundConfig, producer: Producer) -> list[RoundStarted]:
    if done.round + 1 >= cfg.max_rounds:
        return []
    return [RoundStarted(producer=producer, run_id=done.run_id, round=done.round + 1, causation_id=done.event_id,
                         policy_version=done.model_version_out or started.policy_version,
                         harness_version=done.harness_version_out or started.harness_version,
                         planned_rollouts=started.planned_rollouts)]
