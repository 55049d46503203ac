"""Reference solvers: ONLY to prove each task solvable, check its verifier, and seed cold-start data."""

from __future__ import annotations

from bus_schemas.events.tasks import TaskSpecified
from producers.tasks.suite import instantiate
from producers.tasks.template import Solver
from producers.tasks.templates import TEMPLATES


def reference_solver(task: TaskSpecified) -> Solver:
    """A generator of actions that reacts to observations (``obs = yield action``) for a template task."""
    source = task.source
    if source.template_id not in TEMPLATES or source.instance_key is None:
        raise KeyError(f"task {task.task_id} has no sandbox template")
    seed, split, k = source.instance_key.split("-")
    return instantiate(TEMPLATES[source.template_id], int(seed[1:]), split, int(k)).solve()  # type: ignore[arg-type]
