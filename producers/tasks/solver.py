"""Reference solvers: ONLY to prove each task solvable, check its verifier, and seed cold-start data."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness_service.policy.scripted import Solver as Script

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


DELEGATED_TEMPLATES = frozenset({"sa.warmest_city", "sa.closest_place"})
"""Sub-agent templates whose harness reference delegates: answer tasks, so the parent's answer (the sub-agent's
summary) is grounded in what the parent observed."""


def harness_reference(task: TaskSpecified) -> Script:
    """The reference solver as a harness policy runs it: a task of ``DELEGATED_TEMPLATES`` hands its whole plan
    to one sub-agent (spawned with the goal and every tool) and finishes with the sub-agent's summary, so the
    demonstrations include delegation. Other tasks: ``reference_solver``."""
    from harness_service.policy.scripted import delegated

    solver = reference_solver(task)
    if task.source.template_id in DELEGATED_TEMPLATES:
        return delegated(solver, task.goal, [], max_steps=10)
    return solver
