"""Pending reviews are the requests no decision followed; deciding publishes a ReviewDecided the curator honours."""

from __future__ import annotations

import pytest
from consumer_factory import IDS

from bus_schemas.events import ReviewRequested
from consumers.review.queue import curation_log, decide, pending
from infra.bootstrap import open_bus
from infra.events import ensure_topics, publish_all

pytestmark = pytest.mark.unit


def _request(episode_id):
    return ReviewRequested(**IDS, task_id="t", episode_id=episode_id, reasons=["safety-sensitive"])


def test_only_undecided_requests_are_pending(tmp_path):
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    a, b, c = _request("ep-a"), _request("ep-b"), _request("ep-c")
    publish_all(bus, [a, b, c, decide(b, "approve", "ana"), decide(c, "quarantine", "ana"), _request("ep-c")])
    assert sorted(r.episode_id for r in pending(curation_log(bus))) == ["ep-a", "ep-c"]
    decision = decide(a, "reject", "bo", "wrong app")
    assert (decision.causation_id, decision.episode_id, decision.note) == (a.event_id, "ep-a", "wrong app")
    bus.close()
