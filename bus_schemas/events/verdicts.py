"""Verdicts (topic ``verdicts``): a task-specific verifier's judgement of an episode, with its evidence."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Name, Probability, Record, Text

Outcome = Literal["success", "failure", "error"]
"""``error`` means the episode could not be judged (e.g. the backend crashed), not that the policy failed."""


class CriterionResult(Record):
    """The result of one completion criterion of the task."""

    criterion_id: Name
    passed: bool
    detail: Text = ""
    evidence: list[BlobRef] = Field(default_factory=list)


class EpisodeVerified(Event):
    """Whether the episode completed its task, judged from evidence the policy never saw."""

    event_type: Literal["EpisodeVerified"] = "EpisodeVerified"
    schema_version: Literal[1] = 1
    task_id: Name
    episode_id: Name
    outcome: Outcome
    score: Probability  # fraction of criteria passed; the reward signal for RL
    criteria: list[CriterionResult]
    evidence: list[BlobRef] = Field(default_factory=list)
    verifier_version: Name

    @model_validator(mode="after")
    def _success_means_all_passed(self) -> EpisodeVerified:
        if self.outcome == "success" and not all(result.passed for result in self.criteria):
            raise ValueError("outcome 'success' requires every criterion to pass")
        return self
