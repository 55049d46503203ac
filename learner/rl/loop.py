"""GRPO steps through the bus: request G rollouts per task, let the rollout workers and the verifier do their job,
score with CARE, update the policy on the behaviour log-probs the episodes carry.

Each step's weights are saved as a checkpoint folder and requested as ``local:<folder>`` (the rollout
workers load it like any version; registering every step would trigger a dev evaluation per step). With
``max_staleness >= 1`` the next step's requests go out before this step's update, so workers sample
while the learner trains; those rollouts are one update stale and the update's clipped importance ratio
(against the recorded behaviour log-probs) corrects for it. Groups staler than ``max_staleness`` are dropped.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from bus_schemas.envelope import Producer, new_event_id
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.tasks import Budgets, TaskSpecified
from infra.bootstrap import Ports
from infra.events import publish_all
from learner.care.advantages import Scored, calibrate
from learner.care.competence import measure_competence
from learner.care.rewards import shaped_reward
from learner.care.schedules import SCHEDULE_BY_NAME, RewardSchedule
from learner.model.window import PromptWindow
from learner.rl.batch import Rollout, rollout_of, token_samples
from learner.rl.config import RlSettings
from learner.rl.rollouts import Member, Pump, RolloutReader
from learner.rl.update import grpo_update

PRODUCER = Producer(service="learner", version="0.2.0")
GROUP_PREFIX = "grpo:"
"""Group ids of GRPO's requests (the report and the monitor tell RL episodes from the round's rollouts by it)."""
_log = logging.getLogger(__name__)


class NoRollouts(ValueError):
    """No group of a step came back judged (workers down, versions unknown): the training run fails."""


@dataclass
class RlState:
    """The policy being trained and what RL carries between steps."""

    model: Any
    tokenizer: Any
    checkpoints: Path
    """Where each step's weights are saved for the rollout workers (``local:<folder>``)."""
    model_name: str = "planner"
    window: PromptWindow = field(default_factory=PromptWindow)
    schedule: RewardSchedule = field(default_factory=lambda: SCHEDULE_BY_NAME["partial_credit"])
    competence: dict[str, float] = field(default_factory=dict)
    reference: Any = None
    optimizer: Any = None
    step: int = 0
    """Updates applied so far."""
    policy_ref: str | None = None
    """The ``local:`` ref of the current weights, once saved."""

    def prepare(self, settings: RlSettings) -> None:
        import torch

        if self.optimizer is None:
            trainable = [p for p in self.model.parameters() if p.requires_grad]  # a LoRA model: its adapters only
            self.optimizer = torch.optim.AdamW(trainable, lr=settings.learning_rate)
        if settings.beta > 0 and self.reference is None:
            self.reference = copy.deepcopy(self.model).eval()

    def publish_weights(self) -> str:
        """Save the current weights (with their prompt window) for the workers; returns their policy ref."""
        from learner.model.factory import save_checkpoint

        folder = self.checkpoints / f"{self.model_name}-step{self.step}"
        save_checkpoint(self.model, self.tokenizer, folder)
        self.window.save(folder)
        self.policy_ref = f"local:{folder.resolve()}"
        return self.policy_ref


@dataclass(frozen=True)
class RlStepReport:
    """Where the step's time went and what it learned from."""

    rollout_s: float
    scoring_s: float
    update_s: float
    episodes: int
    success_rate: float
    mean_reward: float
    groups_used: int
    samples: int
    loss: float
    kl: float
    policy_version: str
    staleness: float = 0.0
    """Mean updates between sampling and training, over the step's rollouts."""
    mean_abs_log_ratio: float = 0.0
    clip_fraction: float = 0.0
    tokens: int = 0
    solved_tokens: float | None = None
    """Output tokens per solved episode (sub-agents included)."""
    solved_tool_calls: float | None = None
    reward_std: float = 0.0
    """Population standard deviation of the step's CARE rewards."""
    care_penalty: float = 0.0
    """Mean cost penalty the CARE reward charged per episode (0 for failures and while the gate is shut)."""
    care_gate: float = 0.0
    """Mean competence gate over the step's episodes: how far cost pressure is switched on."""
    care_schedule: str = ""
    """The CARE reward schedule the step was scored with."""
    care_cost_weight: float = 0.0
    care_partial_credit: float = 0.0


@dataclass(frozen=True)
class _Rewards:
    """What the CARE reward made of a step's rollouts."""

    mean: float
    std: float
    penalty: float
    gate: float
    groups_used: int


@dataclass(frozen=True)
class _Batch:
    step: int
    """The update count of the weights that sample it."""
    policy_ref: str
    requests: list[RolloutRequested]


def request_rollouts(
    tasks: Sequence[TaskSpecified],
    policy_ref: str,
    harness_version: str,
    settings: RlSettings,
    run_id: str,
    round: int,
    step: int,
) -> list[RolloutRequested]:
    """One request per task asking for a group of G sampled episodes of ``policy_ref``."""
    return [
        RolloutRequested(
            producer=PRODUCER,
            run_id=run_id,
            round=round,
            task_id=task.task_id,
            policy_version=policy_ref,
            harness_version=harness_version,
            backend=task.backend,
            seed=settings.seed + 1000 * step + 10 * i,
            budgets=task.budgets or Budgets(),
            group_id=f"{GROUP_PREFIX}{new_event_id()}",
            group_size=settings.group_size,
            temperature=settings.temperature,
        )
        for i, task in enumerate(tasks)
    ]


class TaskCycle:
    """``tasks_per_step`` tasks per step from a seeded shuffle of the pool, each once before any twice."""

    def __init__(self, pool: Sequence[TaskSpecified], seed: int) -> None:
        if not pool:
            raise NoRollouts("no train tasks to roll out")
        self.pool, self.rng = list(pool), random.Random(seed)
        self.order: list[TaskSpecified] = []

    def take(self, n: int) -> list[TaskSpecified]:
        out: list[TaskSpecified] = []
        while len(out) < n:
            if not self.order:
                self.order = self.rng.sample(self.pool, len(self.pool))
            out.append(self.order.pop())
        return out


def run_steps(
    state: RlState,
    ports: Ports,
    pool: Sequence[TaskSpecified],
    *,
    steps: int,
    harness_version: str,
    settings: RlSettings | None = None,
    run_id: str,
    round: int = 0,
    pump: Pump | None = None,
    on_step: Callable[[RlStepReport], None] | None = None,
) -> tuple[list[RlStepReport], list[str]]:
    """``steps`` GRPO updates on bus rollouts; returns the reports and the episode ids trained on."""
    settings = settings or RlSettings()
    state.prepare(settings)
    cycle = TaskCycle(pool, settings.seed + 7919 * round)
    reader = RolloutReader(ports.bus)  # before any request: it reads what appears from now on
    capability = {t.task_id: t.category for t in pool}

    def send(step: int) -> _Batch:
        ref = state.policy_ref or state.publish_weights()
        requests = request_rollouts(
            cycle.take(settings.tasks_per_step), ref, harness_version, settings, run_id, round, step
        )
        publish_all(ports.bus, requests)
        return _Batch(step, ref, requests)

    reports: list[RlStepReport] = []
    used: list[str] = []
    queued = [send(0)]
    for i in range(steps):
        started = perf_counter()
        batch = queued.pop(0)
        if settings.max_staleness >= 1 and i + 1 < steps:
            queued.append(send(state.step))  # sampled from the pre-update weights while this step trains
        groups = reader.wait(batch.requests, timeout_s=settings.rollout_timeout_s, pump=pump)
        rollout_s = perf_counter() - started

        started = perf_counter()
        staleness = state.step - batch.step
        members = [m for g in groups for m in g] if staleness <= settings.max_staleness else []
        if not members and i == 0:
            raise NoRollouts(f"no judged rollouts came back for {len(batch.requests)} requests of {batch.policy_ref}")
        rollouts = [rollout_of(m, capability.get(m.request.task_id, "tool_use"), staleness) for m in members]
        report, samples = _score(state, members, rollouts, settings, ports, reader)
        scoring_s = perf_counter() - started

        started = perf_counter()
        stats = grpo_update(
            state.model, state.optimizer, samples, settings, state.tokenizer.pad_token_id, state.reference
        )
        state.step += 1
        state.policy_ref = None  # new weights: saved when the next batch is requested
        update_s = perf_counter() - started
        if settings.max_staleness < 1 and i + 1 < steps:
            queued.append(send(state.step))  # synchronous: sampled from the weights this update produced
        reader.forget(members)
        used += [m.episode_id for m in members]
        solved = [r for r in rollouts if r.succeeded]
        step_report = RlStepReport(
            rollout_s=rollout_s,
            scoring_s=scoring_s,
            update_s=update_s,
            episodes=len(rollouts),
            success_rate=len(solved) / max(1, len(rollouts)),
            mean_reward=report.mean,
            groups_used=report.groups_used,
            samples=len(samples),
            loss=stats.loss,
            kl=stats.kl,
            policy_version=batch.policy_ref,
            staleness=float(staleness) if rollouts else 0.0,
            mean_abs_log_ratio=stats.mean_abs_log_ratio,
            clip_fraction=stats.clip_fraction,
            tokens=stats.tokens,
            solved_tokens=sum(r.cost.output_tokens + r.cost.thinking_tokens for r in solved) / len(solved)
            if solved
            else None,
            solved_tool_calls=sum(r.cost.tool_calls for r in solved) / len(solved) if solved else None,
            reward_std=report.std,
            care_penalty=report.penalty,
            care_gate=report.gate,
            care_schedule=state.schedule.name,
            care_cost_weight=state.schedule.cost_weight,
            care_partial_credit=state.schedule.partial_credit,
        )
        _log.info(
            "rl step %d: %d episodes, success %.2f, %d samples, staleness %d, |log ratio| %.4f, clip %.3f",
            i,
            len(rollouts),
            step_report.success_rate,
            len(samples),
            staleness,
            stats.mean_abs_log_ratio,
            stats.clip_fraction,
        )
        reports.append(step_report)
        if on_step is not None:
            on_step(step_report)
    return reports, used


def _score(
    state: RlState,
    members: list[Member],
    rollouts: list[Rollout],
    settings: RlSettings,
    ports: Ports,
    reader: RolloutReader,
) -> tuple[_Rewards, list]:
    """CARE rewards -> calibrated group advantages -> token samples; (reward figures, samples)."""
    state.competence = measure_competence(((r.capability, r.succeeded) for r in rollouts), state.competence)
    rewards = {
        r.episode_id: shaped_reward(
            r.succeeded, r.score, r.cost, state.competence.get(r.capability, 0.0), state.schedule
        )
        for r in rollouts
    }
    scored = [Scored(r.episode_id, r.group_id, r.capability, rewards[r.episode_id].total) for r in rollouts]
    advantages = calibrate(scored, state.competence, settings.advantages)
    staleness = {r.episode_id: r.staleness for r in rollouts}
    samples = token_samples(members, advantages, staleness, reader, ports.blobs.get)
    n = max(1, len(rewards))
    mean = sum(b.total for b in rewards.values()) / n
    figures = _Rewards(
        mean=mean,
        std=math.sqrt(sum((b.total - mean) ** 2 for b in rewards.values()) / n),
        penalty=sum(b.cost for b in rewards.values()) / n,
        gate=sum(b.gate for b in rewards.values()) / n,
        groups_used=len({s.group_id for s in scored if s.episode_id in advantages}),
    )
    return figures, samples


def rollouts_digest(episode_ids: Sequence[str], extra: str = "") -> tuple[str, bytes]:
    """(``sha256:...``, manifest bytes) naming the rollouts a run trained on (and, mixed, its SFT dataset)."""
    manifest = "\n".join([*([extra] if extra else []), *sorted(episode_ids)]).encode()
    return "sha256:" + hashlib.sha256(manifest).hexdigest(), manifest
