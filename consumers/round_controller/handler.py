"""Pure round logic. Each function takes the event in hand plus what the log holds for its round.

A round: RoundStarted -> (reweighter) SamplingPlanUpdated -> RolloutRequested x planned -> episodes are
verified and curated [-> a model's failed rollouts: one sampled RolloutRequested each (``failure_retries``), verified
and curated too] -> enough admitted data ? TrainingRequested : RoundCompleted -> (trainer)
ModelVersionRegistered -> dev RolloutRequested -> (dev evaluator) DevSetEvaluated -> [with a harness
reviser: HarnessRevisionSkipped, or Proposed (waiting for a human), or Proposed+Decided+Published ->
dev RolloutRequested of the revision -> DevSetEvaluated + the A/B HarnessRevisionDecided] -> RoundCompleted ->
next RoundStarted, which carries the best model (by dev Overall) and the last harness revision the paired A/B
accepted.
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import (
    Budgets,
    DevSetEvaluated,
    EpisodeVerified,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessRevisionSkipped,
    HarnessVersionPublished,
    RolloutRequested,
    RoundCompleted,
    RoundStarted,
    SamplingPlanUpdated,
    TaskSpecified,
    TrainingRequested,
    is_scripted,
    retried_episode,
    retry_episode_id,
)
from consumers.dev_evaluator.handler import AB_DECIDER, Kind, group_id, is_better

VERSION = "0.1.0"


class RoundConfig(BaseSettings):
    """How long the loop runs and when it trains; ``FLYWHEEL_ROUND_<FIELD>`` env vars override the defaults."""

    model_config = SettingsConfigDict(env_prefix="FLYWHEEL_ROUND_", frozen=True, extra="forbid")

    max_rounds: int = 3
    min_admitted_for_training: int = 32
    """Train in a round once the run has admitted this many train trajectories (all rounds so far)."""
    model_name: str = "planner"
    algorithm: Literal["sft", "rl"] = "rl"
    planned_rollouts: int | None = None
    """Rollouts of the rounds after the first (None: as many as the first)."""
    dev_per_category: int | None = None
    """Dev tasks per category in each dev evaluation (None: the whole dev split)."""
    await_harness_revision: bool = False
    """Close a round only after the harness reviser has answered its dev evaluation (set when one runs)."""
    rollout_temperature: Annotated[float, Field(gt=0)] | None = None
    """Sampling temperature of a model's train rollouts (None: the policy's own, greedy, decoding); sampled attempts
    can succeed where greedy decoding fails, which is what the loop has not learned yet. Scripted policies ignore it."""
    seed: int = 0
    """Seed of the train rollout draw (which tasks each round rolls out, and their seeds; round 0's cold-start draw
    among them). The same seed draws the same; 0 draws as before the seed existed, so earlier figures reproduce."""
    failure_retries: Annotated[int, Field(ge=0, le=16)] = 0
    """Sampled retries of each train rollout a model failed (one request, ``group_size`` this many, at
    ``retry_temperature``): a retry that succeeds is a task the model's own decoding does not solve yet, the
    evidence the loop can learn from; the round waits for them before it trains. 0: none. Scripted policies and
    retries are never retried."""
    retry_temperature: Annotated[float, Field(gt=0)] = 0.8


def start_round(
    run_id: str, round_: int, policy_version: str, harness_version: str, planned_rollouts: int, producer: Producer
) -> RoundStarted:
    """The first RoundStarted of a run (later ones follow RoundCompleted)."""
    return RoundStarted(
        producer=producer,
        run_id=run_id,
        round=round_,
        policy_version=policy_version,
        harness_version=harness_version,
        planned_rollouts=planned_rollouts,
    )


def _weights(tasks: Sequence[TaskSpecified], plan: SamplingPlanUpdated) -> list[float]:
    """Each task's weight times its category's times the mean of its tags' (1.0 for what the plan does not name).
    A plan without tag weights skips the tags: their mean would be exactly 1.0."""
    by_task, by_category, by_tag = plan.task_weights, plan.category_weights, plan.tag_weights
    weights = [by_task.get(t.task_id, 1.0) * by_category.get(t.category, 1.0) for t in tasks]
    if by_tag:
        for i, task in enumerate(tasks):
            if task.tags:
                weights[i] *= sum([by_tag.get(tag, 1.0) for tag in task.tags]) / len(task.tags)
    return weights


def _weighted_draws(
    rng: random.Random, tasks: list[TaskSpecified], weights: list[float], k: int
) -> list[TaskSpecified]:
    """``k`` draws by weight, without replacement until every task with weight > 0 was drawn, then again.

    Weighted sampling without replacement by exponential keys (Efraimidis-Spirakis): each pass takes the tasks
    with the largest ``u ** (1 / w)``; a task is repeated only when a round asks for more rollouts than there are
    tasks. ``heapq.nlargest`` is ``sorted(..., reverse=True)[:n]`` (same keys drawn in the same order, same ties)
    without sorting the whole pool for a round of a few rollouts.
    """
    pool = [(t, w) for t, w in zip(tasks, weights, strict=True) if w > 0]
    picks: list[TaskSpecified] = []
    while len(picks) < k:
        ordered = heapq.nlargest(k - len(picks), pool, key=lambda tw: rng.random() ** (1.0 / tw[1]))
        picks.extend(t for t, _ in ordered)
    return picks


def draw_key(seed: int, round_: int) -> str:
    """What seeds a round's rollout draw: ``round-<n>`` for seed 0 (the key before seeds existed), else
    ``<seed>/round-<n>``."""
    return f"round-{round_}" if seed == 0 else f"{seed}/round-{round_}"


def _rollout(
    cause: Event,
    started: RoundStarted,
    task: TaskSpecified,
    episode_id: str,
    seed: int,
    producer: Producer,
    *,
    versions: tuple[str, str] | None = None,
    group_id: str | None = None,
    group_size: int = 1,
    temperature: float | None = None,
) -> RolloutRequested:
    """A request of the round for one episode of ``task`` with the round's (policy, harness) ``versions`` unless
    others are given (a dev evaluation's)."""
    policy_version, harness_version = versions or (started.policy_version, started.harness_version)
    return RolloutRequested(
        producer=producer,
        run_id=started.run_id,
        round=started.round,
        causation_id=cause.event_id,
        task_id=task.task_id,
        episode_id=episode_id,
        policy_version=policy_version,
        harness_version=harness_version,
        backend=task.backend,
        seed=seed,
        budgets=task.budgets or Budgets(),
        group_id=group_id,
        group_size=group_size,
        temperature=temperature,
    )


def schedule(
    plan: SamplingPlanUpdated,
    started: RoundStarted,
    train: list[TaskSpecified],
    producer: Producer,
    temperature: float | None = None,
    seed: int = 0,
) -> list[RolloutRequested]:
    """``planned_rollouts`` draws over train tasks by plan weight (each task once before any twice); seeded by
    ``seed`` and the round number, not the run id, so a replay draws alike and two runs with the same pool, plan
    and seed draw the same tasks and seeds (an A/B run differs only in what it changes); another ``seed`` draws
    anew, to average a loop's figures over draws. Seed 0 keys the draw as before the seed existed
    (``round-<n>``), so earlier runs' figures reproduce. A model's rollouts sample at ``temperature`` (each with
    its own seed)."""
    if is_scripted(started.policy_version):
        temperature = None
    tasks = sorted(train, key=lambda t: t.task_id)
    weights = _weights(tasks, plan)
    if not tasks or not any(weights):
        return []
    rng = random.Random(draw_key(seed, started.round))
    picks = _weighted_draws(rng, tasks, weights, started.planned_rollouts)
    return [
        _rollout(
            plan,
            started,
            t,
            f"ep-{uuid.uuid5(uuid.NAMESPACE_URL, f'{plan.plan_id}/{i}')}",
            rng.randrange(2**31),
            producer,
            group_id=plan.plan_id,
            temperature=temperature,
        )
        for i, t in enumerate(picks)
    ]


def retries(
    failed: EpisodeVerified, task: TaskSpecified, started: RoundStarted, cfg: RoundConfig, producer: Producer
) -> list[RolloutRequested]:
    """The sampled retries of a model's failed train rollout ``failed``: one request for ``failure_retries``
    episodes of the same task at ``retry_temperature`` (none for a scripted policy, a retry, or another outcome
    than a failure). Its ids derive from the failed episode, so a redelivered decision asks again for the same
    episodes, as a redelivered plan does. Its seed derives from the draw's seed, the round and the task, not from the
    episode id (which holds the run id): two runs with the same seed sample the same retries, as they draw the same
    rollouts. Two draws of one task in a round (only when a round plans more rollouts than its pool has tasks) share
    their retries' seed."""
    if (
        not cfg.failure_retries
        or is_scripted(started.policy_version)
        or failed.outcome != "failure"
        or retried_episode(failed.episode_id) is not None
    ):
        return []
    episode_id = retry_episode_id(failed.episode_id)
    seed = uuid.uuid5(uuid.NAMESPACE_URL, f"{draw_key(cfg.seed, started.round)}/{task.task_id}/retry").int % 2**31
    return [
        _rollout(
            failed,
            started,
            task,
            episode_id,
            seed,
            producer,
            group_size=cfg.failure_retries,
            temperature=cfg.retry_temperature,
        )
    ]


def awaited_retries(verdicts: Sequence[EpisodeVerified], started: RoundStarted, cfg: RoundConfig) -> int:
    """How many retry episodes the round's ``verdicts`` (of its train rollouts) ask for."""
    if not cfg.failure_retries or is_scripted(started.policy_version):
        return 0
    failed = {
        retry_episode_id(v.episode_id)
        for v in verdicts
        if v.outcome == "failure" and retried_episode(v.episode_id) is None
    }
    return cfg.failure_retries * len(failed)


def dev_slice(dev: list[TaskSpecified], per_category: int | None) -> list[TaskSpecified]:
    """The first ``per_category`` dev tasks of each category in task-id order (all with None); an external suite's
    tasks (``source.kind == "external"``) are sliced as one more category, by backend."""
    chosen: list[TaskSpecified] = []
    for group in sorted({_dev_group(t) for t in dev}):
        pool = sorted((t for t in dev if _dev_group(t) == group), key=lambda t: t.task_id)
        chosen += pool if per_category is None else pool[:per_category]
    return chosen


def _dev_group(task: TaskSpecified) -> str:
    return f"external:{task.backend}" if task.source.kind == "external" else task.category


def evaluate(
    cause: Event,
    started: RoundStarted,
    dev: list[TaskSpecified],
    policy_version: str,
    harness_version: str,
    producer: Producer,
    kind: Kind = "model",
) -> list[RolloutRequested]:
    """One rollout per dev task for a new model or harness version; ids derive from the versions."""
    group = group_id(kind, policy_version, harness_version)
    return [
        _rollout(
            cause,
            started,
            t,
            f"ep-{uuid.uuid5(uuid.NAMESPACE_URL, f'{group}/{t.task_id}')}",
            t.initial_conditions.seed,
            producer,
            versions=(policy_version, harness_version),
            group_id=group,
        )
        for t in sorted(dev, key=lambda t: t.task_id)
    ]


def after_curation(
    cause: Event,
    started: RoundStarted,
    admitted: int,
    verdicts: list[EpisodeVerified],
    cfg: RoundConfig,
    producer: Producer,
) -> Event:
    """The round's rollouts are all curated: train on enough admitted data, else close the round."""
    if admitted >= cfg.min_admitted_for_training:
        return TrainingRequested(
            producer=producer,
            **correlate(cause) | {"task_id": None, "episode_id": None},
            model_name=cfg.model_name,
            algorithm=cfg.algorithm,
            base_model_version=None if is_scripted(started.policy_version) else started.policy_version,
            admitted_trajectories=admitted,
        )
    return complete(cause, started, verdicts, producer)


def is_ab_decision(event: Event) -> bool:
    """The dev evaluator's paired A/B decision on a published revision (not the review gate's)."""
    return isinstance(event, HarnessRevisionDecided) and event.decided_by == AB_DECIDER


def harness_settled(round_: int, harness: list[Event], evaluations: list[DevSetEvaluated]) -> bool:
    """Has the reviser answered round ``round_``: skipped, rejected, left a proposal to a human, or had its
    published revision evaluated on dev and decided by the paired A/B?"""
    mine = [e for e in harness if e.round == round_]
    if any(isinstance(e, HarnessRevisionSkipped) for e in mine):
        return True
    proposed = {e.revision_id for e in mine if isinstance(e, HarnessRevisionProposed)}
    gate = {e.revision_id: e for e in mine if isinstance(e, HarnessRevisionDecided) and not is_ab_decision(e)}
    published = {e.revision_id for e in mine if isinstance(e, HarnessVersionPublished) and e.revision_id in proposed}
    ab_decided = {e.revision_id for e in mine if isinstance(e, HarnessRevisionDecided) and is_ab_decision(e)}
    if not proposed:
        return False
    waiting_for_a_human = proposed - gate.keys()
    rejected = {r for r, d in gate.items() if d.decision == "rejected"}
    return bool(waiting_for_a_human or rejected) or (bool(published) and published <= ab_decided)


def best_versions(
    started: RoundStarted, evaluations: Sequence[DevSetEvaluated], decisions: Sequence[Event] = ()
) -> tuple[str, str]:
    """(policy, harness) refs for the next round, as the dev evaluator promotes: the model versions that beat their
    baselines; the harness revisions the paired A/B accepted (``decisions``: the A/B HarnessRevisionDecided
    events, each caused by its revision's DevSetEvaluated; a harness evaluation without one, as in logs from
    before the A/B, must beat its baseline)."""
    ab = {e.causation_id: e for e in decisions if is_ab_decision(e)}
    policy, harness = started.policy_version, started.harness_version
    earlier: list[DevSetEvaluated] = []
    for e in evaluations:
        decided = ab.get(e.event_id) if e.evaluates == "harness" else None
        better = decided.decision == "accepted" if isinstance(decided, HarnessRevisionDecided) else None
        if better if better is not None else is_better(e, earlier):
            if e.evaluates == "model":
                policy = f"{e.model_name}/{e.model_version}"
            else:
                harness = e.harness_version
        earlier.append(e)
    return policy, harness


def complete(
    cause: Event,
    started: RoundStarted,
    verdicts: list[EpisodeVerified],
    producer: Producer,
    model_version: str | None = None,
    dev_overall: float | None = None,
    harness_version: str | None = None,
) -> RoundCompleted:
    judged = [v for v in verdicts if v.outcome != "error"]
    return RoundCompleted(
        producer=producer,
        run_id=started.run_id,
        round=started.round,
        causation_id=cause.event_id,
        episodes=len(verdicts),
        success_rate=sum(v.outcome == "success" for v in judged) / len(judged) if judged else 0.0,
        model_version_out=model_version,
        harness_version_out=harness_version,
        dev_overall=dev_overall,
        wall_time_s=max(0.0, (cause.occurred_at - started.occurred_at).total_seconds()),
    )


def next_round(
    done: RoundCompleted,
    started: RoundStarted,
    cfg: RoundConfig,
    producer: Producer,
    evaluations: Sequence[DevSetEvaluated] = (),
    decisions: Sequence[Event] = (),
) -> list[RoundStarted]:
    """The next RoundStarted with the run's best model and harness so far; none after ``max_rounds``."""
    if done.round + 1 >= cfg.max_rounds:
        return []
    so_far = [e for e in evaluations if e.round is not None and e.round <= done.round]
    policy, harness = best_versions(started, so_far, decisions)
    return [
        RoundStarted(
            producer=producer,
            run_id=done.run_id,
            round=done.round + 1,
            causation_id=done.event_id,
            policy_version=policy,
            harness_version=harness,
            planned_rollouts=cfg.planned_rollouts or started.planned_rollouts,
        )
    ]
