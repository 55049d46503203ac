"""``flywheel status``: what ops look at first: topics, consumer groups and their lag, dead letters, pending reviews."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from infra.cli.run import BusOpt

console = Console()


def status(
    bus: BusOpt = None,
    state_dir: Annotated[Path, typer.Option(help="Where rollout workers write their pool snapshots.")] = Path(
        ".flywheel/state"
    ),
) -> None:
    """Records per topic, lag of every flywheel consumer group, dead letters by group and error, pending reviews."""
    from bus_schemas.events import DeadLettered
    from bus_schemas.topics import TOPIC_DEAD_LETTERS, TOPICS
    from consumers.registry import CONSUMERS
    from consumers.review.queue import curation_log, pending
    from infra.bootstrap import open_bus
    from infra.cli.status_pool import pool_table
    from infra.config import load_settings, mask_credentials
    from infra.events import decodable

    settings = load_settings(bus=bus)
    port = open_bus(settings.bus, settings)
    existing = port.topics()
    topics = Table("topic", "partitions", "records (end offsets)", title=f"bus {mask_credentials(settings.bus)}")
    for name in TOPICS:
        if name in existing:
            topics.add_row(name, str(existing[name]), str(sum(port.end_offsets(name).values())))
    groups = Table("consumer", "group", "topics", "lag")
    for name, build in CONSUMERS.items():
        spec = build()
        lag = port.lag(spec.group, [t for t in spec.topics if t in existing])
        groups.add_row(name, spec.group, ", ".join(spec.topics), str(sum(p.lag for p in lag)))
    if "rollouts" in existing:
        lag = port.lag("flywheel.rollout-worker", ["rollouts"])
        groups.add_row("rollout-worker", "flywheel.rollout-worker", "rollouts", str(sum(p.lag for p in lag)))
    letters: Counter[tuple[str, str]] = Counter()
    if TOPIC_DEAD_LETTERS in existing:
        for event in decodable(port.replay(TOPIC_DEAD_LETTERS)):  # a garbage record there must not stop ops
            if isinstance(event, DeadLettered):
                letters[(event.consumer_group, event.error_type)] += 1
    dead = Table("group", "error", "dead letters")
    for (group, error), n in sorted(letters.items()):
        dead.add_row(group, error, str(n))
    reviews = pending(curation_log(port)) if "curation" in existing else []
    console.print(
        topics,
        groups,
        dead if letters else "no dead letters",
        f"pending reviews: {len(reviews)}",
        pool_table(state_dir),
    )
    port.close()
