"""Reference solvers: ONLY to prove each task solvable, check its verifier, and seed cold-start data."""

from __future__ import annotations

from bus_schemas.actions import Finish
from bus_schemas.events.tasks import TaskSpecified
from producers.tasks.suite import instantiate
from producers.tasks.template import Solver
from producers.tasks.templates import TEMPLATES


def reference_solver(task: TaskSpecified) -> Solver:
    """A generator of actions that reacts to observations (``obs = yield action``) for a template task."""
    source = task.source
    parts = (source.template_id or "").split("+")  # "A+B": a cross-app recombination, A's plan then B's
    if not all(p in TEMPLATES for p in parts) or source.instance_key is None:
        raise KeyError(f"task {task.task_id} has no sandbox template")
    seed, split, k = source.instance_key.split("-")
    solvers = [instantiate(TEMPLATES[p], int(seed[1:]), split, int(k)).solve for p in parts]  # type: ignore[arg-type]
    return solvers[0]() if len(solvers) == 1 else _chain(solvers)


def _chain(solvers: list) -> Solver:  # noqa: ANN001 - instance solve callables
    """Each solver's actions in turn; every Finish but the last one's is dropped."""
    for i, solve in enumerate(solvers):
        plan = solve()
        try:
            action = next(plan)
            while not (isinstance(action, Finish) and i < len(solvers) - 1):
                action = plan.send((yield action))
        except StopIteration:
            pass
