"""A rollout-worker consumer for RL: each RolloutRequested becomes G judged episodes (events only, no publishing).

It runs on the consumer runtime like every service; the learner runs it in process on CPU, and the
same spec can run as its own replicated process once a policy loader for ``@production`` is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bus_schemas.envelope import Event
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.tasks import TaskSpecified
from bus_schemas.topics import TOPIC_ROLLOUTS
from harness_service.config import HarnessConfig
from harness_service.policy.base import Policy
from harness_service.runner.episode import Harness, RunIds
from harness_service.skills.library import SkillLibrary
from infra.runtime.spec import ConsumerSpec
from learner.episodes import run_judged_episode
from producers.backends.sandbox.backend import SandboxBackend

PolicyLoader = Callable[[str, int], Policy]
"""(policy_version, sampling seed) -> the policy to roll out."""


def rollout_worker_spec(
    tasks: Mapping[str, TaskSpecified],
    policy_for: PolicyLoader,
    config: HarnessConfig,
    skills: SkillLibrary,
    name: str = "learner-rollouts",
) -> ConsumerSpec:
    backend = SandboxBackend()

    def handle(event: Event, ports: Any) -> list[Event]:
        assert isinstance(event, RolloutRequested)
        task = tasks.get(event.task_id)
        if task is None:
            raise KeyError(f"rollout {event.episode_id}: unknown task {event.task_id}")
        outputs: list[Event] = []
        for k in range(event.group_size):
            policy = policy_for(event.policy_version, event.seed + k)
            harness = Harness(config=config, policy=policy, blobs=ports.blobs, events=lambda e: None, skills=skills)
            ids = RunIds(
                run_id=event.run_id,
                round=event.round,
                attempt=k,
                cause=event.event_id,
                group_id=event.group_id,
                episode_id=f"{event.episode_id}.{k}",
            )
            outputs.extend(run_judged_episode(harness, task, backend, ids).events)
        return outputs

    return ConsumerSpec(name=name, topics=(TOPIC_ROLLOUTS,), handle=handle, event_types=frozenset({"RolloutRequested"}))
