"""One RL step through the bus: request G rollouts per task, let the workers run them, score, update the policy."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from bus_schemas.envelope import Producer, new_event_id
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.tasks import Budgets, TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.runner.episode import Harness
from harness_service.skills.library import SkillLibrary
from infra.bootstrap import Ports
from infra.events import publish_all
from infra.runtime.runner import ConsumerRunner
from learner.care.advantages import Scored, calibrate
from learner.care.competence import measure_competence
from learner.care.rewards import shaped_reward
from learner.care.schedules import SCHEDULE_BY_NAME, RewardSchedule
from learner.dataset.episodes import read_log
from learner.model.policy import PlannerPolicy, PromptWindow
from learner.rl.batch import judged_rollouts, token_samples
from learner.rl.config import RlSettings
from learner.rl.update import grpo_update
from learner.rl.worker import rollout_worker_spec

PRODUCER = Producer(service="learner", version="0.1.0")
ROLLOUT_TIMEOUT_S = 900.0
Executor = Callable[[Sequence[RolloutRequested]], None]
"""Makes sure the requested rollouts happen (an in-process worker, or waiting for remote workers)."""


@dataclass
class RlState:
    """The policy being trained and what RL carries between steps."""

    model: Any
    tokenizer: Any
    model_name: str = "planner"
    version: int = 0
    window: PromptWindow = field(default_factory=PromptWindow)
    schedule: RewardSchedule = field(default_factory=lambda: SCHEDULE_BY_NAME["partial_credit"])
    competence: dict[str, float] = field(default_factory=dict)
    reference: Any = None
    optimizer: Any = None
    sampled: dict[str, list[int]] = field(default_factory=dict)
    """Token ids the in-process rollouts sampled, per turn (``sample_key``); cleared after each update."""

    @property
    def policy_version(self) -> str:
        return f"{self.model_name}/{self.version}"

    def prepare(self, settings: RlSettings) -> None:
        import torch

        if self.optimizer is None:
            self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=settings.learning_rate)
        if settings.beta > 0 and self.reference is None:
            self.reference = copy.deepcopy(self.model).eval()


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


def request_rollouts(
    tasks: Sequence[TaskSpecified], state: RlState, harness_version: str, settings: RlSettings, run_id: str, round: int
) -> list[RolloutRequested]:
    """One request per task asking for a group of G episodes of the current policy."""
    return [
        RolloutRequested(
            producer=PRODUCER,
            run_id=run_id,
            round=round,
            task_id=task.task_id,
            policy_version=state.policy_version,
            harness_version=harness_version,
            backend=task.backend,
            seed=settings.seed + 1000 * state.version + i,
            budgets=task.budgets or Budgets(),
            group_id=f"grp-{new_event_id()}",
            group_size=settings.group_size,
            causation_id=task.event_id,
        )
        for i, task in enumerate(tasks)
    ]


def local_executor(
    ports: Ports, state: RlState, tasks: Sequence[TaskSpecified], config: HarnessConfig, skills: SkillLibrary,
    settings: RlSettings, state_dir: Path,
) -> Executor:
    """An in-process rollout worker on the consumer runtime, sampling from the live model."""

    def policy_for(version: str, seed: int) -> PlannerPolicy:
        return PlannerPolicy(
            state.model, state.tokenizer, name=version, window=state.window, temperature=settings.temperature, seed=seed,
            sampled=state.sampled,
        )

    spec = rollout_worker_spec({t.task_id: t for t in tasks}, policy_for, config, skills)

    def execute(requests: Sequence[RolloutRequested]) -> None:
        runner = ConsumerRunner(spec, ports, state_dir=state_dir)
        try:
            consumed, deadline = 0, perf_counter() + ROLLOUT_TIMEOUT_S
            while consumed < len(requests):  # the group's offsets start after requests it already handled
                if perf_counter() > deadline:
                    raise TimeoutError(f"rollout worker handled {consumed} of {len(requests)} requests")
                consumed += runner.step(timeout_s=0.5)
        finally:
            runner.close()

    return execute


def rl_step(
    state: RlState,
    ports: Ports,
    tasks: Sequence[TaskSpecified],
    *,
    config: HarnessConfig,
    skills: SkillLibrary,
    settings: RlSettings | None = None,
    run_id: str,
    round: int = 0,
    execute: Executor | None = None,
) -> RlStepReport:
    """Request, run (``execute`` or an in-process worker), score with CARE, and apply one GRPO update."""
    settings = settings or RlSettings()
    state.prepare(settings)
    harness_version = Harness(config=config, policy=None, blobs=None, events=None, skills=skills).version  # type: ignore[arg-type]
    started = perf_counter()
    requests = request_rollouts(tasks, state, harness_version, settings, run_id, round)
    publish_all(ports.bus, requests)
    if execute is None:
        with tempfile.TemporaryDirectory(prefix="rl-worker-") as scratch:
            local_executor(ports, state, tasks, config, skills, settings, Path(scratch))(requests)
    else:
        execute(requests)
    rollout_s = perf_counter() - started

    started = perf_counter()
    log = read_log(ports.bus)
    for task in tasks:  # the requested tasks, even if the task constructor has not published them
        log.tasks.setdefault(task.task_id, task)
    rollouts = judged_rollouts(log, [r.group_id or "" for r in requests], state.version, settings.max_staleness)
    state.competence = measure_competence(((r.capability, r.succeeded) for r in rollouts), state.competence)
    rewards = {
        r.episode_id: shaped_reward(r.succeeded, r.score, r.cost, state.competence.get(r.capability, 0.0), state.schedule)
        for r in rollouts
    }
    scored = [Scored(r.episode_id, r.group_id, r.capability, rewards[r.episode_id].total) for r in rollouts]
    advantages = calibrate(scored, state.competence, settings.advantages)
    read = ports.blobs.get
    samples = token_samples(log, advantages, config, skills, read, state.tokenizer, state.window, state.sampled)
    state.sampled.clear()
    scoring_s = perf_counter() - started

    started = perf_counter()
    stats = grpo_update(state.model, state.optimizer, samples, settings, state.tokenizer.pad_token_id, state.reference)
    state.version += 1
    update_s = perf_counter() - started
    n = max(1, len(rollouts))
    return RlStepReport(
        rollout_s=rollout_s,
        scoring_s=scoring_s,
        update_s=update_s,
        episodes=len(rollouts),
        success_rate=sum(r.succeeded for r in rollouts) / n,
        mean_reward=sum(b.total for b in rewards.values()) / n,
        groups_used=len({s.group_id for s in scored if s.episode_id in advantages}),
        samples=len(samples),
        loss=stats.loss,
        kl=stats.kl,
        policy_version=state.policy_version,
    )
