"""Wiring: failed EpisodeVerified on ``verdicts`` -> rebuild episode (every step event, sub-agents) and task ->
FailureDiagnosed."""

from __future__ import annotations

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import EpisodeVerified
from bus_schemas.topics import TOPIC_VERDICTS
from consumers.common.sources import Sources
from consumers.diagnoser.assist import ModelAssist, load_assist
from consumers.diagnoser.handler import VERSION, diagnose
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "diagnoser"
PRODUCER = Producer(service=NAME, version=VERSION)


class Diagnoser:
    def __init__(self, assist: ModelAssist | None = None) -> None:
        self._sources: Sources | None = None
        self.assist = assist

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, EpisodeVerified)
        sources = self._sources = self._sources or Sources(ports)
        if event.outcome != "failure":
            sources.release(event.episode_id)  # indexed by an earlier catch-up, never needed
            return []
        episode = sources.episode_by_id(event.episode_id, subagents=True)
        sources.release(event.episode_id)
        return [diagnose(event, sources.task(event.task_id), episode, PRODUCER, self.assist)]


def build() -> ConsumerSpec:
    """Rules only, unless ``FLYWHEEL_DIAGNOSER_MODEL`` configures a model-assisted pass (see ``assist``)."""
    return ConsumerSpec(
        NAME, (TOPIC_VERDICTS,), Diagnoser(load_assist()).handle, frozenset({"EpisodeVerified"}), VERSION
    )
