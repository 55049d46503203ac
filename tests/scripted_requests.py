"""The rollout requests tests publish: the reference solver on the sandbox, seed 0, within the task's budgets."""

from __future__ import annotations

from typing import Any

from bus_schemas.envelope import Producer
from bus_schemas.events import Budgets
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.tasks import TaskSpecified

TESTS = Producer(service="tests", version="0")


def scripted_request(
    task: TaskSpecified, *, run_id: str, producer: Producer = TESTS, **overrides: Any
) -> RolloutRequested:
    """A ``scripted:reference`` request of ``task`` under ``run_id``; ``overrides`` set any other field."""
    fields: dict[str, Any] = dict(
        producer=producer,
        run_id=run_id,
        task_id=task.task_id,
        policy_version="scripted:reference",
        harness_version="default",
        backend="sandbox",
        seed=0,
        budgets=task.budgets or Budgets(),
    )
    return RolloutRequested(**{**fields, **overrides})
