"""Harness events (topic ``harness``): proposed, reviewed and published revisions of the runtime harness."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, EventId, Name, Text
from bus_schemas.events.diagnoses import FailureCategory


class HarnessRevisionProposed(Event):
    """The reviser proposes a change (prompt, tool docs, memory or skill policy) against a base version."""

    event_type: Literal["HarnessRevisionProposed"] = "HarnessRevisionProposed"
    schema_version: Literal[1] = 1
    harness_name: Name
    revision_id: Name
    base_version: Name
    patch: BlobRef  # the config diff
    summary: Text
    targets: list[FailureCategory] = Field(default_factory=list)
    motivated_by: list[EventId] = Field(default_factory=list)  # FailureDiagnosed event ids


class HarnessRevisionDecided(Event):
    """A revision was accepted or rejected, by whom and on what evidence."""

    event_type: Literal["HarnessRevisionDecided"] = "HarnessRevisionDecided"
    schema_version: Literal[1] = 1
    harness_name: Name
    revision_id: Name
    decision: Literal["accepted", "rejected"]
    decided_by: Name
    reason: Text = ""
    metrics: dict[str, float] = Field(default_factory=dict)


class HarnessRevisionSkipped(Event):
    """The reviser looked at a round's dev results and diagnoses and found nothing worth proposing."""

    event_type: Literal["HarnessRevisionSkipped"] = "HarnessRevisionSkipped"
    schema_version: Literal[1] = 1
    harness_name: Name
    base_version: Name
    reason: Text


class HarnessVersionPublished(Event):
    """A new harness version is live; workers pick it up for rollouts that name it."""

    event_type: Literal["HarnessVersionPublished"] = "HarnessVersionPublished"
    schema_version: Literal[1] = 1
    harness_name: Name
    harness_version: Name
    config: BlobRef
    revision_id: Name | None = None  # None for the initial version
