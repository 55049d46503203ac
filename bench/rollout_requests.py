"""What the rollout benches publish: one request per task for the reference solver on the sandbox."""

from __future__ import annotations

from bus_schemas.envelope import Producer
from bus_schemas.events import Budgets
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.tasks import TaskSpecified

SCHEDULER = Producer(service="bench", version="0")


def scripted_request(task: TaskSpecified, episode_id: str | None = None) -> RolloutRequested:
    """A ``scripted:reference`` episode of ``task`` on the sandbox, seed 0, within the task's budgets."""
    request = RolloutRequested(
        producer=SCHEDULER,
        run_id="bench",
        task_id=task.task_id,
        policy_version="scripted:reference",
        harness_version="default",
        backend="sandbox",
        seed=0,
        budgets=task.budgets or Budgets(),
    )
    return request if episode_id is None else request.model_copy(update={"episode_id": episode_id})


def scripted_requests(tasks: list[TaskSpecified], tag: str | None = None) -> list[RolloutRequested]:
    """One request per task; episode ids ``<tag>-<i>`` when ``tag`` is given, else fresh ones."""
    return [scripted_request(t, f"{tag}-{i}" if tag else None) for i, t in enumerate(tasks)]
