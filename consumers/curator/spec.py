"""Wiring: EpisodeVerified, FailureDiagnosed and ReviewDecided -> curation decisions; duplicates found via admitted
bundles on the log. A failed verdict is decided when its diagnosis arrives, so the decision links the attribution."""

from __future__ import annotations

import time

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import EpisodeVerified, FailureDiagnosed, ReviewDecided, TrajectoryAdmitted
from bus_schemas.topics import TOPIC_CURATION, TOPIC_DIAGNOSES, TOPIC_VERDICTS
from consumers.common.log_index import LogIndex
from consumers.common.sources import MissingInput, Sources
from consumers.curator.bundle import MEDIA_TYPE, bundle_bytes
from consumers.curator.handler import VERSION, apply_review, curate
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "curator"
PRODUCER = Producer(service=NAME, version=VERSION)


class Curator:
    """Admissions on ``curation`` tell which bundle came first. The admissions index is re-read before the first
    admission decision of a batch (at most every ``REREAD_S``: on Kafka a re-read costs reader round trips), so
    replicas see each other's committed admissions. What remains is a pair handled by two replicas within that
    window (admissions committed in the last second, or both transactions in flight)."""

    REREAD_S = 1.0

    def __init__(self) -> None:
        self._sources: Sources | None = None
        self._admitted: LogIndex | None = None
        self._verdicts: LogIndex | None = None
        self._mine: dict[str, str] = {}
        self._stale = True
        self._read_at = float("-inf")

    def new_batch(self) -> None:
        self._stale = time.monotonic() - self._read_at >= self.REREAD_S

    def _first_with(self, sha256: str) -> str | None:
        assert self._admitted is not None
        if self._stale:  # first admission decision of this batch: read what every replica committed since
            self._stale, self._read_at = False, time.monotonic()
            self._admitted.catch_up()
        logged = self._admitted.get(sha256)
        return logged[0].episode_id if logged else self._mine.get(sha256)

    def _verdict_of(self, diagnosis: FailureDiagnosed, ports: Ports) -> EpisodeVerified:
        """The verdict a diagnosis answers (its causation), read back from ``verdicts``."""
        self._verdicts = self._verdicts or LogIndex(
            ports.bus,
            TOPIC_VERDICTS,
            lambda e: e.episode_id if isinstance(e, EpisodeVerified) else None,
            by_record_key=True,
        )
        assert diagnosis.episode_id is not None
        # Not forgotten after use: a second diagnosis of the episode would otherwise re-read the whole topic.
        found = [
            e
            for e in self._verdicts.lookup(
                diagnosis.episode_id, lambda evs: any(e.event_id == diagnosis.causation_id for e in evs)
            )
            if e.event_id == diagnosis.causation_id
        ]
        if not found or not isinstance(found[0], EpisodeVerified):
            raise MissingInput(f"no EpisodeVerified {diagnosis.causation_id} for diagnosis {diagnosis.event_id}")
        return found[0]

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        if isinstance(event, EpisodeVerified) and event.outcome == "failure":
            return []  # decided on its FailureDiagnosed, which the decision then links
        sources = self._sources = self._sources or Sources(ports)
        self._admitted = self._admitted or LogIndex(
            ports.bus, TOPIC_CURATION, lambda e: e.trajectory.sha256 if isinstance(e, TrajectoryAdmitted) else None
        )
        diagnoses: tuple[FailureDiagnosed, ...] = ()
        if isinstance(event, FailureDiagnosed):
            diagnoses, event = (event,), self._verdict_of(event, ports)
        assert isinstance(event, (EpisodeVerified, ReviewDecided)) and event.episode_id is not None
        episode = sources.episode_by_id(event.episode_id)
        task = sources.task(event.task_id)
        bundle = ports.blobs.put(bundle_bytes(task, episode), MEDIA_TYPE)  # blob first, then the event
        if isinstance(event, ReviewDecided):
            outputs = apply_review(event, task, episode, bundle, PRODUCER)
        else:
            outputs = curate(event, task, episode, bundle, self._first_with(bundle.sha256), PRODUCER, diagnoses)
        for out in outputs:
            if isinstance(out, TrajectoryAdmitted):
                self._mine.setdefault(out.trajectory.sha256, out.episode_id)
        sources.episodes.forget(event.episode_id)
        return outputs


def build() -> ConsumerSpec:
    curator = Curator()
    return ConsumerSpec(
        NAME,
        (TOPIC_VERDICTS, TOPIC_DIAGNOSES, TOPIC_CURATION),
        curator.handle,
        frozenset({"EpisodeVerified", "FailureDiagnosed", "ReviewDecided"}),
        VERSION,
        on_batch=curator.new_batch,
        group_commit_blobs=True,  # a bundle is referenced by the decision published with it, by nothing else
    )
