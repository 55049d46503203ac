"""Record a scripted episode as the events a rollout worker publishes (for tests, benches and demos)."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from bus_schemas.actions import Action, Finish, MemoryRead, SkillLoad, ToolCall
from bus_schemas.envelope import Event, Producer
from bus_schemas.events import ActionTaken, Budgets, EpisodeEnded, EpisodeStarted, ObservationReturned, TaskSpecified
from bus_schemas.events.episodes import TrustLevel
from infra.blobs.port import BlobStore
from producers.backends import plugins
from producers.backends.base import Backend, Observation
from producers.backends.evidence import store_evidence
from producers.tasks.runner import load_skill, recall

EVIDENCE_MEDIA_TYPE = "application/vnd.flywheel.evidence+json"
PRODUCER = Producer(service="recorder", version="0.1.0")
Script = Callable[[TaskSpecified], Generator[Action, Observation | None, None]]


def _observe(backend: Backend, task: TaskSpecified, action: Action) -> Observation | None:
    if isinstance(action, ToolCall):
        return backend.step(action)
    if isinstance(action, MemoryRead):
        return recall(task, action)
    if isinstance(action, SkillLoad):
        return load_skill(action)
    return None


def record_episode(
    task: TaskSpecified,
    script: Script,
    blobs: BlobStore,
    *,
    episode_id: str,
    run_id: str = "run-test",
    round_: int = 0,
    backend: Backend | None = None,
    trust: TrustLevel = "exact",
    max_steps: int = 40,
) -> list[Event]:
    """Drive ``script`` (``obs = yield action``) against ``backend``, by default a new one of the task's kind
    (through the plugin registry); the evidence blob is written before EpisodeEnded."""
    backend = backend or plugins.make_backend(task.backend)
    backend.reset(task)
    ids: dict[str, Any] = dict(
        producer=PRODUCER, run_id=run_id, round=round_, task_id=task.task_id, episode_id=episode_id
    )
    events: list[Event] = [
        EpisodeStarted(
            **ids,
            backend=backend.name,
            trust_level=trust,
            policy_version="scripted",
            harness_version="h0",
            seed=task.initial_conditions.seed,
            budgets=task.budgets or Budgets(),
        )
    ]
    gen = script(task)
    obs: Observation | None = None
    answer = None
    for step in range(max_steps):
        try:
            action = next(gen) if step == 0 else gen.send(obs)
        except StopIteration:
            break
        events.append(ActionTaken(**ids, step=step, action=action, input_tokens=10, output_tokens=5))
        if isinstance(action, Finish):
            answer = action.answer
            break
        obs = _observe(backend, task, action)
        if obs is not None:
            events.append(
                ObservationReturned(
                    **ids,
                    step=step,
                    result=None if obs.error else obs.result,
                    error=obs.error,
                    changes=list(obs.changes),
                    flags=list(obs.flags),
                )
            )
    evidence = store_evidence(blobs, backend.evidence())
    steps = sum(isinstance(e, ActionTaken) for e in events)
    events.append(
        EpisodeEnded(
            **ids,
            reason="finished" if answer is not None else "budget_exhausted",
            steps=steps,
            input_tokens=10 * steps,
            output_tokens=5 * steps,
            tool_calls=steps,
            wall_time_s=0.1,
            answer=answer,
            final_state=evidence,
        )
    )
    return events
