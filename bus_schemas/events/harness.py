"""Harness events (topic ``harness``): proposed, reviewed and published revisions of the runtime harness."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, EventId, Name, Text
from bus_schemas.events.diagnoses import FailureCategory
from bus_schemas.upcasters import RawEvent, upcaster


class HarnessRevisionProposed(Event):
    """The reviser proposes a change (prompt, tool docs, memory or skill policy) against a base version.

    Version 2 added ``patch_kinds``: the change kinds in the patch blob (``set_tool_note``...), so a reader of the
    log (the run report, an auditor) sees what kind of change it was without fetching the blob."""

    event_type: Literal["HarnessRevisionProposed"] = "HarnessRevisionProposed"
    schema_version: Literal[2] = 2
    harness_name: Name
    revision_id: Name
    base_version: Name
    patch: BlobRef  # the config diff
    patch_kinds: list[Name] = Field(default_factory=list)
    summary: Text
    targets: list[FailureCategory] = Field(default_factory=list)
    motivated_by: list[EventId] = Field(default_factory=list)  # FailureDiagnosed event ids


@upcaster("HarnessRevisionProposed", 1)
def _harness_revision_proposed_v1_to_v2(raw: RawEvent) -> RawEvent:
    """v1 did not name its patch kinds (they are in the patch blob): an empty list, set explicitly."""
    return {**raw, "patch_kinds": []}


class HarnessRevisionDecided(Event):
    """A revision was accepted or rejected, by whom and on what evidence.

    Two deciders: the review gate (a human, or ``auto:<kind>`` for allow-listed kinds) accepts a proposal for
    publication; the dev evaluator's paired A/B (``decided_by`` ``auto:paired_ab``) accepts a published revision
    for ``@production`` or rejects it, with ``metrics`` holding the paired comparison on dev."""

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
