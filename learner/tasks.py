"""Task pools for training and evaluation: template instances over several suite seeds, built per template."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from bus_schemas.events.tasks import Split, TaskSpecified
from producers.tasks.suite import PER_SPLIT, make_task
from producers.tasks.template import Template
from producers.tasks.templates import TEMPLATES

_log = logging.getLogger(__name__)


def template_tasks(
    run_id: str, seeds: Iterable[int], split: Split, keep: Callable[[Template], bool]
) -> list[TaskSpecified]:
    """Instances of the templates ``keep`` accepts, seed by seed; an instance that cannot be built is skipped."""
    tasks = []
    templates = [t for t in TEMPLATES.values() if keep(t)]
    for seed in seeds:
        for template in templates:
            for k in range(PER_SPLIT[split]):
                try:
                    tasks.append(make_task(template, run_id, seed, split, k))
                except ValueError as exc:  # a seeded world that cannot host the template
                    _log.warning("skipping %s seed %d %s/%d: %s", template.id, seed, split, k, exc)
    return tasks
