"""The human gate over harness revisions: proposals without a decision, and the decision event a reviewer publishes."""

from __future__ import annotations

from bus_schemas.envelope import Producer, correlate
from bus_schemas.events import HarnessRevisionDecided, HarnessRevisionProposed
from bus_schemas.topics import TOPIC_HARNESS
from infra.bus.port import Bus
from infra.events import decodable

REVIEWER = Producer(service="review", version="0.1.0")


def pending_revisions(bus: Bus) -> list[HarnessRevisionProposed]:
    """Proposals no HarnessRevisionDecided has answered yet, oldest first."""
    proposals: dict[str, HarnessRevisionProposed] = {}
    decided: set[str] = set()
    for event in decodable(bus.replay(TOPIC_HARNESS)):
        if isinstance(event, HarnessRevisionProposed):
            proposals.setdefault(event.revision_id, event)
        elif isinstance(event, HarnessRevisionDecided):
            decided.add(event.revision_id)
    return [p for rid, p in proposals.items() if rid not in decided]


def decide_revision(
    proposal: HarnessRevisionProposed, accept: bool, reviewer: str, note: str = ""
) -> HarnessRevisionDecided:
    """The reviewer's decision; the reviser publishes an accepted revision as a new harness version."""
    return HarnessRevisionDecided(
        producer=REVIEWER,
        **correlate(proposal),
        harness_name=proposal.harness_name,
        revision_id=proposal.revision_id,
        decision="accepted" if accept else "rejected",
        decided_by=reviewer,
        reason=note,
    )
