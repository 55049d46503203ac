"""Model events (topic ``models``): training runs, registered model versions, their dev-set scores, what is served."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal

from pydantic import Field, model_validator

from bus_schemas.blob_ref import BlobRef, Sha256Hex
from bus_schemas.envelope import Count, Event, Name, Probability, Record, Text
from bus_schemas.events.tasks import Capability, Split
from bus_schemas.json_types import JsonData

OVERALL_WEIGHTS: dict[Capability, float] = {"tool_use": 0.5, "memory": 0.2, "skills": 0.2, "sub_agent": 0.1}
"""The report's headline metric: Overall = 0.5*tool_use + 0.2*memory + 0.2*skills + 0.1*sub_agent."""

Algorithm = Literal["sft", "rl"]


def overall_score(success_rates: Mapping[str, float]) -> float:
    """The weighted Overall score from per-capability success rates (every capability must be present)."""
    return sum(weight * success_rates[capability] for capability, weight in OVERALL_WEIGHTS.items())


class TrainingRequested(Event):
    """The round controller asks the learner to train ``model_name`` on admitted trajectories up to these offsets."""

    event_type: Literal["TrainingRequested"] = "TrainingRequested"
    schema_version: Literal[1] = 1
    model_name: Name
    algorithm: Algorithm
    base_model_version: Name | None = None
    admitted_trajectories: Count
    source_offsets: dict[str, int] = Field(default_factory=dict)  # "topic/partition" -> end offset to read up to


class TrainingRunStarted(Event):
    """The learner started training ``model_name`` on a dataset pinned by digest and event offsets."""

    event_type: Literal["TrainingRunStarted"] = "TrainingRunStarted"
    schema_version: Literal[1] = 1
    model_name: Name
    training_run_id: Name
    algorithm: Algorithm
    base_model_version: Name | None = None  # None for a model built from a config
    dataset: BlobRef  # the dataset manifest; its sha256 is the dataset digest
    source_offsets: dict[str, int] = Field(default_factory=dict)  # "topic/partition" -> last offset read
    config: dict[str, JsonData] = Field(default_factory=dict)


class TrainingRunCompleted(Event):
    """A training run ended; a successful one carries its checkpoint."""

    event_type: Literal["TrainingRunCompleted"] = "TrainingRunCompleted"
    schema_version: Literal[1] = 1
    model_name: Name
    training_run_id: Name
    status: Literal["succeeded", "failed"]
    checkpoint: BlobRef | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    steps: Count
    wall_time_s: Annotated[float, Field(ge=0.0)]
    error: Text | None = None

    @model_validator(mode="after")
    def _checkpoint_iff_succeeded(self) -> TrainingRunCompleted:
        if (self.status == "succeeded") != (self.checkpoint is not None):
            raise ValueError("a checkpoint is required when status is 'succeeded' and only then")
        return self


class ModelVersionRegistered(Event):
    """A checkpoint became a numbered version in the model registry; rollout workers may now serve it."""

    event_type: Literal["ModelVersionRegistered"] = "ModelVersionRegistered"
    schema_version: Literal[1] = 1
    model_name: Name
    model_version: Name
    checkpoint: BlobRef
    training_run_id: Name | None = None
    parent_version: Name | None = None
    registry_uri: Annotated[str, Field(max_length=2048)] = ""


ServingEngine = Literal["transformers", "vllm"]


class ModelServed(Event):
    """An OpenAI-compatible server now answers requests for ``model_version`` under ``served_model_name``, with the
    files of that registry version (its checkpoint tar's digest); followed after every move of ``alias``. Episodes
    run through that endpoint record ``served_model_name`` as their policy version, so each names its weights."""

    event_type: Literal["ModelServed"] = "ModelServed"
    schema_version: Literal[1] = 1
    model_name: Name
    model_version: Name
    alias: Name | None = None  # the alias followed (``production``); None when a fixed version is served
    engine: ServingEngine
    endpoint: Annotated[str, Field(max_length=2048)]  # the OpenAI base URL, e.g. http://127.0.0.1:8000/v1
    served_model_name: Name  # the ``model`` a request names: ``planner/4``
    checkpoint_sha256: Sha256Hex  # the registered checkpoint (ModelVersionRegistered.checkpoint) the server loaded
    registry_uri: Annotated[str, Field(max_length=2048)] = ""
    previous_version: Name | None = None  # the version served before on this endpoint


class CategoryScore(Record):
    """Success on one capability category of the evaluation split."""

    success_rate: Probability
    tasks: Count


def category_scores(wins: Mapping[str, Sequence[bool]]) -> dict[Capability, CategoryScore]:
    """Success rate and task count per capability of ``wins`` (outcome per task); a capability without tasks is 0/0."""
    return {
        category: CategoryScore(success_rate=sum(w) / len(w) if w else 0.0, tasks=len(w))
        for category in OVERALL_WEIGHTS
        for w in [wins.get(category, [])]
    }


class DevSetEvaluated(Event):
    """Scores of a model+harness pair on a held-out split; ``overall`` must equal the weighted formula."""

    event_type: Literal["DevSetEvaluated"] = "DevSetEvaluated"
    schema_version: Literal[2] = 2
    model_name: Name
    model_version: Name
    harness_version: Name
    split: Split = "dev"
    evaluates: Literal["model", "harness"] = "model"  # what changed: a new model version or a harness revision
    per_category: dict[Capability, CategoryScore]
    overall: Probability
    tokens_per_task: Annotated[float, Field(ge=0.0)]
    tool_calls_per_task: Annotated[float, Field(ge=0.0)]
    cost_per_1k_tasks_usd: Annotated[float, Field(ge=0.0)] | None = None
    external: dict[Name, CategoryScore] = Field(default_factory=dict)
    """v2: success on the dev tasks of external suites (``TaskSource.kind == "external"``, e.g. ``bfcl``) by
    backend; reported beside the sandbox categories, never part of ``per_category`` or ``overall``."""

    @property
    def model_dev_score(self) -> bool:
        """A model version's own dev score: not the test split, not a harness revision's candidate evaluation."""
        return self.evaluates == "model" and self.split == "dev"

    @model_validator(mode="after")
    def _overall_matches_formula(self) -> DevSetEvaluated:
        missing = set(OVERALL_WEIGHTS) - set(self.per_category)
        if missing:
            raise ValueError(f"per_category lacks {sorted(missing)}")
        expected = overall_score({name: score.success_rate for name, score in self.per_category.items()})
        if not math.isclose(self.overall, expected, abs_tol=1e-9):
            raise ValueError(f"overall {self.overall} != 0.5*tool_use+0.2*memory+0.2*skills+0.1*sub_agent = {expected}")
        return self


class RewardScheduleSelected(Event):
    """The learner's CARE controller picked a reward schedule for the next RL updates, from these inputs."""

    event_type: Literal["RewardScheduleSelected"] = "RewardScheduleSelected"
    schema_version: Literal[1] = 1
    model_name: Name
    schedule: Name
    previous: Name | None = None
    chooser: Name  # "rules" or the configured model's name
    inputs: dict[str, float] = Field(default_factory=dict)  # e.g. train_success, dev_overall, competence/<capability>
    reason: Text = ""
