"""Diagnoses (topic ``diagnoses``): why an episode failed, from a fixed taxonomy so failures can be counted."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Name, Probability, Text
from bus_schemas.upcasters import RawEvent, upcaster

FailureCategory = Literal[
    "tool_routing",
    "argument_grounding",
    "state_tracking",
    "recovery",
    "premature_termination",
    "hallucinated_completion",
    "policy_violation",
    "environment_error",
    "invalid_output",
    "other",
]
"""v2 added ``invalid_output``: the model's output was no usable action (unparsable, unknown tool, arguments
outside the tool's schema). ``environment_error`` is only a failure of the backend or the endpoint; diagnoser
0.1.0 (v1 events) also put episodes that ran out of valid outputs there."""


class FailureDiagnosed(Event):
    """The attributed root cause of a failed episode, the step where it happened and how sure the diagnoser is.

    Version 2 widened the taxonomy with ``invalid_output`` (a v1 reader could not read such a label)."""

    event_type: Literal["FailureDiagnosed"] = "FailureDiagnosed"
    schema_version: Literal[2] = 2
    task_id: Name
    episode_id: Name
    attribution: FailureCategory
    secondary: list[FailureCategory] = Field(default_factory=list)
    step: Annotated[int, Field(ge=0)] | None = None  # None when no single step is to blame
    explanation: Text
    evidence: list[BlobRef] = Field(default_factory=list)
    confidence: Probability
    diagnoser_version: Name


@upcaster("FailureDiagnosed", 1)
def _failure_diagnosed_v1_to_v2(raw: RawEvent) -> RawEvent:
    """Every v1 label is a v2 label: the wire form is unchanged (registered beside the model it lifts)."""
    return dict(raw)
