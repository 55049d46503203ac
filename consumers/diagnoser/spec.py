"""Wiring: failed EpisodeVerified on ``verdicts`` -> rebuild episode and task from the log -> FailureDiagnosed."""

from __future__ import annotations

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import EpisodeVerified
from bus_schemas.topics import TOPIC_VERDICTS
from consumers.common.sources import Sources
from consumers.diagnoser.handler import VERSION, diagnose
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "diagnoser"
PRODUCER = Producer(service=NAME, version=VERSION)


class Diagnoser:
    def __init__(self) -> None:
        self._sources: Sources | None = None

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, EpisodeVerified)
        sources = self._sources = self._sources or Sources(ports)
        if event.outcome != "failure":
            sources.episodes.forget(event.episode_id)  # indexed by an earlier catch-up, never needed
            return []
        episode = sources.episode_by_id(event.episode_id)
        sources.episodes.forget(event.episode_id)
        return [diagnose(event, sources.task(event.task_id), episode, PRODUCER)]


def build() -> ConsumerSpec:
    return ConsumerSpec(NAME, (TOPIC_VERDICTS,), Diagnoser().handle, frozenset({"EpisodeVerified"}), VERSION)
