"""Which reviews are pending, read from the ``curation`` topic; deciding one is publishing ReviewDecided."""

from __future__ import annotations

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Producer, correlate
from bus_schemas.events import ReviewDecided, ReviewDecision, ReviewRequested
from bus_schemas.topics import TOPIC_CURATION
from consumers.common.log_index import LogIndex
from infra.bus.port import Bus

VERSION = "0.1.0"
PRODUCER = Producer(service="review", version=VERSION)


def curation_log(bus: Bus) -> dict[str, list[Event]]:
    """Curation events by episode id, in log order."""
    index = LogIndex(bus, TOPIC_CURATION, lambda e: e.episode_id)
    index.catch_up()
    return {key: index.get(key) for key in {e.episode_id for e in index.events() if e.episode_id}}


def pending(by_episode: dict[str, list[Event]]) -> list[ReviewRequested]:
    """The latest request of each episode that no decision followed, oldest first."""
    out: list[ReviewRequested] = []
    for events in by_episode.values():
        last_request = max((i for i, e in enumerate(events) if isinstance(e, ReviewRequested)), default=None)
        if last_request is not None and not any(isinstance(e, ReviewDecided) for e in events[last_request:]):
            request = events[last_request]
            assert isinstance(request, ReviewRequested)
            out.append(request)
    return sorted(out, key=lambda e: (e.occurred_at, e.event_id))


def decide(
    request: ReviewRequested, decision: ReviewDecision, reviewer: str, note: str = "", corrected: BlobRef | None = None
) -> ReviewDecided:
    return ReviewDecided(
        producer=PRODUCER,
        **correlate(request),
        decision=decision,
        reviewer=reviewer,
        note=note,
        corrected_trajectory=corrected,
    )
