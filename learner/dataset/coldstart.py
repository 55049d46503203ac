"""Cold-start data: reference-solver episodes of the train split, run through the real harness onto the bus."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds
from harness_service.skills.library import SkillLibrary
from infra.blobs.group_commit import GroupCommit
from infra.bootstrap import Ports
from infra.events import publish_all
from learner.episodes import run_judged_episode
from producers.backends import plugins
from producers.tasks.solver import harness_reference

Progress = Callable[[int], None]


def seed_cold_start(
    ports: Ports,
    tasks: Sequence[TaskSpecified],
    config: HarnessConfig,
    skills: SkillLibrary,
    *,
    run_id: str,
    publish_tasks: bool = True,
    progress: Progress | None = None,
) -> int:
    """Run each task's reference solver through the harness; publish tasks, episodes and verdicts. Returns passes."""
    backends = plugins.Backends()  # one per backend the tasks name, made through the plugin registry
    passed = 0
    blobs = GroupCommit(ports.blobs)  # each episode's blobs: durable together, just before its events are published
    if publish_tasks:
        publish_all(ports.bus, list(tasks))
    for task in tasks:
        backend = backends[task.backend]
        policy = ScriptedPolicy(harness_reference(task), "reference")
        harness = Harness(config=config, policy=policy, blobs=blobs, events=lambda e: None, skills=skills)
        judged = run_judged_episode(harness, task, backend, RunIds(run_id=run_id, round=0, cause=task.event_id))
        blobs.sync()
        publish_all(ports.bus, judged.events)
        passed += judged.verdict.outcome == "success"
        if progress is not None:
            progress(1)
    return passed
