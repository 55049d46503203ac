"""What the rollout benches publish: one request per task for the reference solver on the sandbox, and the tasks
they warm up on."""

from __future__ import annotations

from collections.abc import Sequence

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


def warmup_tasks(suite: Sequence[TaskSpecified], timed: Sequence[TaskSpecified], n: int) -> list[TaskSpecified]:
    """``n`` tasks of ``suite`` outside ``timed``, one template after another, so a warm-up of at least as many
    tasks as there are templates touches every template's tools once. The first episode that calls a tool builds
    its JSON schemas (``Tool.spec``, milliseconds each, once per process): a warm-up of the first timed tasks (3
    templates of 32) left that to the timed window, and the path timed first paid for it."""
    skip = {t.task_id for t in timed}
    by_template: dict[str, list[TaskSpecified]] = {}
    for task in suite:
        if task.task_id not in skip:
            by_template.setdefault(task.source.template_id or "", []).append(task)
    queues = list(by_template.values())
    out: list[TaskSpecified] = []
    for depth in range(max((len(q) for q in queues), default=0)):
        out += [q[depth] for q in queues if depth < len(q)]
        if len(out) >= n:
            break
    return out[:n]
