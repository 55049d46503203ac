"""Tasks by id, read from the ``tasks`` topic (the only place a worker learns what a task is)."""

from __future__ import annotations

from bus_schemas.events.tasks import TaskRetired, TaskSpecified
from bus_schemas.topics import TOPIC_TASKS
from infra.bus.port import Bus
from infra.events import decodable


class UnknownTask(LookupError):
    """A request names a task never specified on the ``tasks`` topic."""


class TaskCatalog:
    """Replays ``tasks`` once, then only the records appended since, when a lookup misses."""

    def __init__(self, bus: Bus) -> None:
        self._bus = bus
        self._tasks: dict[str, TaskSpecified] = {}
        self._retired: set[str] = set()
        self._next: dict[int, int] = {}

    def get(self, task_id: str) -> TaskSpecified:
        if task_id not in self._tasks:
            self._catch_up()
        if task_id not in self._tasks:
            raise UnknownTask(f"task {task_id!r} was never specified on the tasks topic")
        return self._tasks[task_id]

    def retired(self, task_id: str) -> bool:
        return task_id in self._retired

    def _catch_up(self) -> None:
        for partition, end in self._bus.end_offsets(TOPIC_TASKS).items():
            start = self._next.get(partition, 0)
            if start >= end:
                continue
            for event in decodable(self._bus.replay(TOPIC_TASKS, from_offset=start, partition=partition)):
                if isinstance(event, TaskSpecified):
                    self._tasks[event.task_id] = event
                elif isinstance(event, TaskRetired):
                    self._retired.add(event.task_id)
            self._next[partition] = end
