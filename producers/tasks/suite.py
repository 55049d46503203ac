"""Build the task suite: every template x seeded instances, split train/dev/test without leakage.

Splits never share a world: each split seeds its worlds from its own disjoint pool of people, places
and venues (``sandbox.pools``), and instance keys carry the split, so no dev/test instance exists in train.
"""

from __future__ import annotations

import random

from bus_schemas.envelope import Producer
from bus_schemas.events.tasks import Budgets, InitialConditions, TaskSource, TaskSpecified
from producers.backends.sandbox.catalog import TOOLS, base_world
from producers.backends.sandbox.pools import NEW_ENTITY_WORLDS, SPLITS, Split
from producers.tasks.template import Ctx, Instance, Template
from producers.tasks.templates import TEMPLATES

VERSION = "1"
PRODUCER = Producer(service="sandbox-tasks", version=VERSION)
PER_SPLIT: dict[Split, int] = {"train": 18, "dev": 4, "test": 4}
WORLDS_PER_SPLIT = 6
WORLD_STRIDE = 1000
FIRST_GENERATED_SUITE = NEW_ENTITY_WORLDS // WORLD_STRIDE
"""Suite seeds from here on are the task constructor's (``request_seed``): their worlds name new entities too."""


def instance_key(seed: int, split: Split, k: int) -> str:
    return f"s{seed}-{split}-{k}"


def world_seed(seed: int, k: int) -> int:
    return seed * WORLD_STRIDE + k % WORLDS_PER_SPLIT


def instantiate(template: Template, seed: int, split: Split, k: int) -> Instance:
    """Rebuild one instance exactly: its random stream is keyed by template, split, index and suite seed."""
    rng = random.Random(f"{template.id}|{instance_key(seed, split, k)}")
    return template.build(Ctx(rng=rng, world=base_world(world_seed(seed, k), split), split=split))


def tools_of(apps: tuple[str, ...]) -> list[str]:
    return [name for name in TOOLS if name.split(".", 1)[0] in apps]


def make_task(template: Template, run_id: str, seed: int, split: Split, k: int) -> TaskSpecified:
    inst = instantiate(template, seed, split, k)
    key = instance_key(seed, split, k)
    return TaskSpecified(
        producer=PRODUCER,
        run_id=run_id,
        task_id=f"{template.id}/{key}",
        goal=inst.goal,
        apps=list(template.apps),
        tools=tools_of(template.apps),
        initial_conditions=InitialConditions(seed=world_seed(seed, k), fixtures=inst.fixtures, memories=inst.memories),
        category=template.category,
        tags=list(template.tags),
        difficulty=template.difficulty,
        split=split,
        backend="sandbox",
        criteria=inst.criteria,
        source=TaskSource(
            kind="template", template_id=template.id, instance_key=key, generator=f"sandbox-tasks/{VERSION}"
        ),
        skills=list(template.skills),
        budgets=Budgets(max_steps=10 + 10 * template.difficulty),
    )


def build_task_suite(run_id: str, seed: int = 0) -> list[TaskSpecified]:
    """All template instances for all splits, in a stable order."""
    return [
        make_task(t, run_id, seed, split, k)
        for t in TEMPLATES.values()
        for split in SPLITS
        for k in range(PER_SPLIT[split])
    ]
