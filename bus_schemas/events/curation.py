"""Curation (topic ``curation``): which trajectories may train the next model, and human review of doubtful ones."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Name, Record, Text
from bus_schemas.events.tasks import BackendKind, Capability, CapabilityTag, TaskSource

Reasons = Annotated[list[Annotated[str, Field(min_length=1, max_length=1024)]], Field(min_length=1)]


ReviewDecision = Literal["approve", "correct", "reject", "quarantine"]


class Provenance(Record):
    """Where a trajectory came from, so a trained model can be traced back to tasks, backends and versions."""

    task_source: TaskSource
    backend: BackendKind
    policy_version: Name
    harness_version: Name


class _CurationDecision(Event):
    """Fields shared by the three curation outcomes."""

    task_id: Name
    episode_id: Name
    reasons: Reasons
    category: Capability
    tags: list[CapabilityTag]
    provenance: Provenance
    curator_version: Name
    # The FailureDiagnosed events (ids) of the episode this decision rests on; empty for successes.
    failure_diagnoses: list[Name] = Field(default_factory=list)


class TrajectoryAdmitted(_CurationDecision):
    """The trajectory may be used for training, with a sampling weight."""

    event_type: Literal["TrajectoryAdmitted"] = "TrajectoryAdmitted"
    schema_version: Literal[1] = 1
    trajectory: BlobRef  # the training-ready bundle
    weight: Annotated[float, Field(gt=0.0, le=100.0)] = 1.0


class TrajectoryRejected(_CurationDecision):
    """The trajectory must not be trained on (wrong, unsafe, degenerate)."""

    event_type: Literal["TrajectoryRejected"] = "TrajectoryRejected"
    schema_version: Literal[1] = 1


class TrajectoryQuarantined(_CurationDecision):
    """The curator is unsure (e.g. simulated backend, verifier disagreement); held until a review decides."""

    event_type: Literal["TrajectoryQuarantined"] = "TrajectoryQuarantined"
    schema_version: Literal[1] = 1


class ReviewRequested(Event):
    """A human should look at this episode before it is used."""

    event_type: Literal["ReviewRequested"] = "ReviewRequested"
    schema_version: Literal[1] = 1
    task_id: Name
    episode_id: Name
    reasons: Reasons
    evidence: list[BlobRef] = Field(default_factory=list)


class ReviewDecided(Event):
    """A reviewer's decision; ``correct`` comes with a corrected trajectory that replaces the original."""

    event_type: Literal["ReviewDecided"] = "ReviewDecided"
    schema_version: Literal[1] = 1
    task_id: Name
    episode_id: Name
    decision: ReviewDecision
    reviewer: Name
    note: Text = ""
    corrected_trajectory: BlobRef | None = None

    @model_validator(mode="after")
    def _correction_has_trajectory(self) -> ReviewDecided:
        if (self.decision == "correct") != (self.corrected_trajectory is not None):
            raise ValueError("corrected_trajectory is required for decision 'correct' and only then")
        return self
