"""Wiring: EpisodeEnded on ``episodes`` -> rebuild the episode and its task from the log -> EpisodeVerified."""

from __future__ import annotations

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import EpisodeEnded
from bus_schemas.topics import TOPIC_EPISODES
from consumers.common.sources import Sources
from consumers.verifier.handler import VERSION, judge
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "verifier"
PRODUCER = Producer(service=NAME, version=VERSION)


class Verifier:
    """Holds the log indexes of one process; every decision is :func:`judge`."""

    def __init__(self) -> None:
        self._sources: Sources | None = None

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, EpisodeEnded)
        sources = self._sources = self._sources or Sources(ports)
        started = sources.started(event)  # all it needs of the episode (backend, parent): no step is decoded
        if started is not None and started.parent_episode_id is not None:
            sources.episodes.forget(event.episode_id)
            return []  # a sub-agent's episode is judged as part of its parent's: the task's evidence is the parent's
        task = sources.task(event.task_id)
        backend = started.backend if started else task.backend
        verdict = judge(event, task, backend, sources.evidence(event), PRODUCER)
        sources.episodes.forget(event.episode_id)
        return [verdict]


def build() -> ConsumerSpec:
    return ConsumerSpec(NAME, (TOPIC_EPISODES,), Verifier().handle, frozenset({"EpisodeEnded"}), VERSION)
