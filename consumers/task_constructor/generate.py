"""Candidate tasks for a request: new seeded worlds of matching templates, harder variants of failed tasks,
and cross-app recombinations (every other candidate: the instance followed by a partner template's, same world).

Candidates are a pure function of the request (its id, less the run id it starts with, seeds the worlds), so a
replay builds the same tasks, and so does a rerun of the loop (the reweighter names its requests
``<run_id>/round-<n>/<category>``): a run is reproducible past the round that first generates tasks.
Worlds come from the requested split's own pools, so a train task never shares a world with dev/test, and they
draw new entities as well (people, places and venues no built-in suite's world holds, ``sandbox.pools``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator

from bus_schemas.events import TaskGenerationRequested, TaskSource, TaskSpecified
from consumers.task_constructor.recombine import combine, partners
from producers.tasks.suite import FIRST_GENERATED_SUITE, make_task
from producers.tasks.template import NoInstance, Template
from producers.tasks.templates import TEMPLATES

_log = logging.getLogger(__name__)

GENERATOR = "task-constructor/0.1.0"


def request_seed(request: TaskGenerationRequested) -> int:
    """A suite seed far from the built-in suites' (which start at 0), from the request id without its run id."""
    key = request.request_id.removeprefix(f"{request.run_id}/")
    return FIRST_GENERATED_SUITE + int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 1_000_000


def templates_for(request: TaskGenerationRequested, seeds: list[TaskSpecified]) -> list[Template]:
    """With seed tasks: harder templates of the capability, or new worlds of the seeds' own when none is harder."""
    pool = [t for t in TEMPLATES.values() if t.category == request.capability]
    if request.tags:
        pool = [t for t in pool if set(t.tags) & set(request.tags)] or pool
    if request.difficulty is not None:
        pool = [t for t in pool if t.difficulty == request.difficulty] or pool
    if seeds:
        floor = min(s.difficulty for s in seeds)
        harder = [t for t in pool if t.difficulty > floor]
        same = {s.source.template_id for s in seeds}
        pool = harder or [t for t in pool if t.id in same] or pool
    return sorted(pool, key=lambda t: (t.difficulty, t.id))


def candidates(request: TaskGenerationRequested, seeds: list[TaskSpecified]) -> Iterator[TaskSpecified]:
    """Endless candidates (the caller stops after ``count`` valid ones or a bound on attempts)."""
    templates = templates_for(request, seeds)
    if not templates:
        return
    seed = request_seed(request)
    parent = seeds[0].task_id if seeds else None
    for k in range(10**6):
        template = templates[k % len(templates)]
        try:
            task = make_task(template, request.run_id, seed, request.split, k)
        except NoInstance as exc:  # this world cannot hold that instance: the next k can
            _log.info("task constructor: %s instance %d skipped: %s", template.id, k, exc)
            continue
        source = TaskSource(
            kind="generated",
            template_id=template.id,
            instance_key=task.source.instance_key,
            generator=GENERATOR,
            parent_task_id=parent,
        )
        yield task.model_copy(update={"source": source, "task_id": f"gen/{task.task_id}"})
        others = partners(template)
        if k % 2 and others:
            try:
                other = make_task(others[(k // 2) % len(others)], request.run_id, seed, request.split, k)
            except NoInstance:
                continue
            mixed = combine(task, other)
            if mixed is not None:
                yield mixed.model_copy(
                    update={
                        "source": mixed.source.model_copy(
                            update={"kind": "generated", "generator": GENERATOR, "parent_task_id": parent}
                        ),
                        "task_id": f"gen/{mixed.task_id}",
                    }
                )
