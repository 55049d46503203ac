"""Wiring: failed EpisodeVerified on ``verdicts`` -> rebuild episode (every step event, sub-agents) and task ->
FailureDiagnosed."""

from __future__ import annotations

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import EpisodeVerified
from bus_schemas.topics import TOPIC_VERDICTS
from consumers.common.sources import Sources
from consumers.diagnoser.assist import ModelAssist, assist_ref, load_assist
from consumers.diagnoser.handler import VERSION, diagnose
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "diagnoser"
PRODUCER = Producer(service=NAME, version=VERSION)


class Diagnoser:
    """``assist`` given, or ``ref`` (``assist.assist_ref``) loaded with the ports on the first failed episode."""

    def __init__(self, assist: ModelAssist | None = None, ref: str | None = None) -> None:
        self._sources: Sources | None = None
        self.assist = assist
        self.ref = ref

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, EpisodeVerified)
        if self.assist is None and self.ref is not None and event.outcome == "failure":
            self.assist = load_assist(self.ref, ports)
        sources = self._sources = self._sources or Sources(ports)
        if event.outcome != "failure":
            sources.release(event.episode_id)  # indexed by an earlier catch-up, never needed
            return []
        episode = sources.episode_by_id(event.episode_id, subagents=True)
        sources.release(event.episode_id)
        return [diagnose(event, sources.task(event.task_id), episode, PRODUCER, self.assist)]


def build() -> ConsumerSpec:
    """Rules only, unless ``FLYWHEEL_DIAGNOSER_MODEL`` configures a model-assisted pass (see ``assist``); a bad value
    fails here, at start."""
    return ConsumerSpec(
        NAME, (TOPIC_VERDICTS,), Diagnoser(ref=assist_ref()).handle, frozenset({"EpisodeVerified"}), VERSION
    )
