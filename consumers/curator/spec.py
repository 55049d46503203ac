"""Wiring: EpisodeVerified and ReviewDecided -> curation decisions; duplicates found via admitted bundles on the log."""

from __future__ import annotations

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import EpisodeVerified, ReviewDecided, TrajectoryAdmitted
from bus_schemas.topics import TOPIC_CURATION, TOPIC_VERDICTS
from consumers.common.log_index import LogIndex
from consumers.common.sources import Sources
from consumers.curator.bundle import MEDIA_TYPE, bundle_bytes
from consumers.curator.handler import VERSION, apply_review, curate
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "curator"
PRODUCER = Producer(service=NAME, version=VERSION)


class Curator:
    """Admissions on ``curation`` when the process started, plus its own since, tell which bundle came first.

    The log is read once (reading it per event costs a Kafka round trip); admissions other replicas make
    meanwhile are seen after a restart, so two replicas can each admit one copy of a pair in flight."""

    def __init__(self) -> None:
        self._sources: Sources | None = None
        self._admitted: LogIndex | None = None
        self._mine: dict[str, str] = {}
        self._loaded = False

    def _first_with(self, sha256: str) -> str | None:
        assert self._admitted is not None
        if not self._loaded:  # first decision of this process: learn what was admitted before it started
            self._loaded = True
            self._admitted.catch_up()
            for event in self._admitted.events():
                assert isinstance(event, TrajectoryAdmitted)
                self._mine.setdefault(event.trajectory.sha256, event.episode_id)
        return self._mine.get(sha256)

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        sources = self._sources = self._sources or Sources(ports)
        self._admitted = self._admitted or LogIndex(
            ports.bus, TOPIC_CURATION, lambda e: e.trajectory.sha256 if isinstance(e, TrajectoryAdmitted) else None
        )
        assert isinstance(event, (EpisodeVerified, ReviewDecided)) and event.episode_id is not None
        episode = sources.episode_by_id(event.episode_id)
        task = sources.task(event.task_id)
        bundle = ports.blobs.put(bundle_bytes(task, episode), MEDIA_TYPE)  # blob first, then the event
        if isinstance(event, ReviewDecided):
            outputs = apply_review(event, task, episode, bundle, PRODUCER)
        else:
            outputs = curate(event, task, episode, bundle, self._first_with(bundle.sha256), PRODUCER)
        for out in outputs:
            if isinstance(out, TrajectoryAdmitted):
                self._mine.setdefault(out.trajectory.sha256, out.episode_id)
        sources.episodes.forget(event.episode_id)
        return outputs


def build() -> ConsumerSpec:
    return ConsumerSpec(
        NAME, (TOPIC_VERDICTS, TOPIC_CURATION), Curator().handle, frozenset({"EpisodeVerified", "ReviewDecided"}), VERSION
    )
