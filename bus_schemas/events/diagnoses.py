"""Diagnoses (topic ``diagnoses``): why an episode failed, from a fixed taxonomy so failures can be counted."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Name, Probability, Text

FailureCategory = Literal[
    "tool_routing",
    "argument_grounding",
    "state_tracking",
    "recovery",
    "premature_termination",
    "hallucinated_completion",
    "policy_violation",
    "environment_error",
    "other",
]


class FailureDiagnosed(Event):
    """The attributed root cause of a failed episode, the step where it happened and how sure the diagnoser is."""

    event_type: Literal["FailureDiagnosed"] = "FailureDiagnosed"
    schema_version: Literal[1] = 1
    task_id: Name
    episode_id: Name
    attribution: FailureCategory
    secondary: list[FailureCategory] = Field(default_factory=list)
    step: Annotated[int, Field(ge=0)] | None = None  # None when no single step is to blame
    explanation: Text
    evidence: list[BlobRef] = Field(default_factory=list)
    confidence: Probability
    diagnoser_version: Name
