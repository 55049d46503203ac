"""Wiring: TaskGenerationRequested on ``sampling`` -> validated TaskSpecified events on ``tasks``."""

from __future__ import annotations

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import TaskGenerationRequested, TaskSpecified
from bus_schemas.topics import TOPIC_SAMPLING
from consumers.common.sources import Sources
from consumers.task_constructor.handler import VERSION, construct, fingerprint
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec
from producers.backends import plugins

NAME = "task_constructor"
PRODUCER = Producer(service=NAME, version=VERSION)


class TaskConstructor:
    def __init__(self) -> None:
        self._sources: Sources | None = None
        self._backend = plugins.make_backend("sandbox")  # the templates it draws from are the sandbox's

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, TaskGenerationRequested)
        sources = self._sources = self._sources or Sources(ports)
        sources.tasks.catch_up()
        pool = [e for e in sources.tasks.events() if isinstance(e, TaskSpecified)]
        held_out = {fingerprint(t) for t in pool if t.split != event.split}
        seeds = [sources.task(t) for t in event.seed_task_ids]
        return list(construct(event, seeds, held_out, PRODUCER, self._backend))


def build() -> ConsumerSpec:
    return ConsumerSpec(
        NAME, (TOPIC_SAMPLING,), TaskConstructor().handle, frozenset({"TaskGenerationRequested"}), VERSION
    )
