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
        self._fingerprinted: set[str] = set()  # event ids of the tasks already in _by_split
        self._by_split: dict[str, set[str]] = {}  # split -> fingerprints of the log's tasks of that split

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, TaskGenerationRequested)
        sources = self._sources = self._sources or Sources(ports)
        sources.tasks.catch_up()
        seeds = [sources.task(t) for t in event.seed_task_ids]
        return list(construct(event, seeds, self._held_out(sources, event.split), PRODUCER, self._backend))

    def _held_out(self, sources: Sources, split: str) -> set[str]:
        """Fingerprints of the log's tasks of the other splits; each task is fingerprinted once per process, not once
        per request (thousands of tasks times hundreds of requests)."""
        for task in sources.tasks.events():
            if isinstance(task, TaskSpecified) and task.event_id not in self._fingerprinted:
                self._fingerprinted.add(task.event_id)
                self._by_split.setdefault(task.split, set()).add(fingerprint(task))
        return set().union(*(fps for s, fps in self._by_split.items() if s != split))


def build() -> ConsumerSpec:
    return ConsumerSpec(
        NAME, (TOPIC_SAMPLING,), TaskConstructor().handle, frozenset({"TaskGenerationRequested"}), VERSION
    )
