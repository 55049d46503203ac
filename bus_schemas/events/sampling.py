"""Sampling (topic ``sampling``): the reweighter's plan for the next batch and its requests for new tasks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from bus_schemas.envelope import Event, Name, Text
from bus_schemas.events.tasks import BackendKind, Capability, CapabilityTag, Difficulty, Split

Weight = Annotated[float, Field(ge=0.0)]


class SamplingPlanUpdated(Event):
    """New sampling weights. ``capability`` (the topic key) is ``all`` for a whole-mix plan, the usual case."""

    event_type: Literal["SamplingPlanUpdated"] = "SamplingPlanUpdated"
    schema_version: Literal[1] = 1
    plan_id: Name
    capability: Capability | Literal["all"] = "all"
    category_weights: dict[Capability, Weight]
    tag_weights: dict[CapabilityTag, Weight] = Field(default_factory=dict)
    task_weights: dict[str, Weight] = Field(default_factory=dict)  # task_id -> weight; absent = 1.0
    rationale: Text = ""
    reweighter_version: Name


class TaskGenerationRequested(Event):
    """Ask the task constructor for ``count`` new tasks where the policy is weak."""

    event_type: Literal["TaskGenerationRequested"] = "TaskGenerationRequested"
    schema_version: Literal[1] = 1
    request_id: Name
    capability: Capability
    tags: list[CapabilityTag] = Field(default_factory=list)
    count: Annotated[int, Field(ge=1, le=100_000)]
    difficulty: Difficulty | None = None
    split: Split = "train"
    backend: BackendKind = "sandbox"
    seed_task_ids: list[Name] = Field(default_factory=list)  # failed tasks to vary
    rationale: Text = ""
