"""Pure construction: keep only candidates the reference solver passes, a no-op policy fails, and no held-out task
shares."""

from __future__ import annotations

import hashlib

import orjson

from bus_schemas.envelope import Producer, correlate, new_event_id, utc_now
from bus_schemas.events import TaskGenerationRequested, TaskSpecified
from consumers.task_constructor.generate import candidates
from producers.backends import plugins
from producers.backends.base import Backend
from producers.tasks.runner import noop_policy, run_episode
from producers.tasks.solver import reference_solver

VERSION = "0.1.0"
MAX_TRIES_PER_TASK = 4


def fingerprint(task: TaskSpecified) -> str:
    """Goal + starting world: two tasks with the same fingerprint are the same exercise."""
    body = orjson.dumps([task.goal, task.initial_conditions.model_dump(mode="json")], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(body).hexdigest()


def valid(task: TaskSpecified, backend: Backend) -> bool:
    """Solvable (the reference solver passes) and not trivial (doing nothing fails), by the backend's own judge."""
    judge = plugins.judge(task.backend)
    if judge is None:
        return False
    ref = run_episode(backend, task, reference_solver)
    if not judge(task, ref.evidence, ref.answer).outcome:
        return False
    noop = run_episode(backend, task, noop_policy)
    return not judge(task, noop.evidence, noop.answer).outcome


def construct(
    request: TaskGenerationRequested,
    seeds: list[TaskSpecified],
    held_out: set[str],
    producer: Producer,
    backend: Backend | None = None,
) -> list[TaskSpecified]:
    """Up to ``count`` validated tasks; ``held_out``: fingerprints of tasks in the other splits (never leaked)."""
    if request.backend != "sandbox":
        raise ValueError(f"the task constructor builds sandbox tasks only, not {request.backend!r}")
    backend = backend or plugins.make_backend(request.backend)
    made: list[TaskSpecified] = []
    seen: set[str] = set()
    for tries, task in enumerate(candidates(request, seeds)):
        if len(made) == request.count or tries >= MAX_TRIES_PER_TASK * request.count:
            break
        fp = fingerprint(task)
        if fp in held_out or fp in seen or not valid(task, backend):
            continue
        seen.add(fp)
        envelope = {k: v for k, v in correlate(request).items() if k != "task_id"}
        made.append(
            TaskSpecified.model_validate(
                {
                    **task.model_dump(),
                    **envelope,
                    "producer": producer.model_dump(),
                    "event_id": new_event_id(),
                    "occurred_at": utc_now(),
                }
            )
        )
    return made
