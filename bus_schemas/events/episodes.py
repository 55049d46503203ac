"""Episode events (topic ``episodes``): the action-feedback loop of one rollout, step by step."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from bus_schemas.actions import Action, StateChange, ToolError
from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Count, Event, Name
from bus_schemas.events.tasks import BackendKind, Budgets
from bus_schemas.json_types import JsonData

TrustLevel = Literal["exact", "simulated", "device"]
"""How far the backend's feedback can be trusted: a programmatic sandbox is exact, an LLM simulator is not."""

EndReason = Literal["finished", "clarify", "refuse", "budget_exhausted", "error", "abandoned"]
Step = Annotated[int, Field(ge=0, le=100_000)]
SAMPLED_MEDIA_TYPE = "application/vnd.flywheel.sampled-tokens+json"
"""``{"prompt_ids": [...], "completion_ids": [...], "logprobs": [...], "temperature": t}``"""


class EpisodeStarted(Event):
    """A worker began an episode; pins every version the episode depends on, for replay."""

    event_type: Literal["EpisodeStarted"] = "EpisodeStarted"
    schema_version: Literal[1] = 1
    task_id: Name
    episode_id: Name
    backend: BackendKind
    trust_level: TrustLevel
    policy_version: Name
    harness_version: Name
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)]
    budgets: Budgets
    group_id: Name | None = None
    parent_episode_id: Name | None = None  # set for sub-agent episodes


class ContextBuilt(Event):
    """The harness assembled the context for a step; the full text lives in a blob."""

    event_type: Literal["ContextBuilt"] = "ContextBuilt"
    schema_version: Literal[1] = 1
    episode_id: Name
    step: Step
    context: BlobRef
    token_count: Count
    skills_offered: list[Name] = Field(default_factory=list)
    memories_recalled: Count = 0


class ActionTaken(Event):
    """The policy chose a typed action at ``step``; token counts are those of the model call that chose it."""

    event_type: Literal["ActionTaken"] = "ActionTaken"
    schema_version: Literal[2] = 2
    episode_id: Name
    step: Step
    action: Action
    raw_output: BlobRef | None = None  # the model's raw completion, when kept
    input_tokens: Count
    output_tokens: Count
    thinking_tokens: Count = 0
    sampled: BlobRef | None = None
    """v2: the prompt and sampled token ids with their behaviour log-probs (``SAMPLED_MEDIA_TYPE`` JSON), from
    policies that expose them; RL's importance ratio divides by these."""


class ActionRejected(Event):
    """The policy's output at ``step`` was not a valid action; kept with its tokens so nothing the model did is lost."""

    event_type: Literal["ActionRejected"] = "ActionRejected"
    schema_version: Literal[2] = 2
    episode_id: Name
    step: Step
    raw_output: BlobRef
    error: ToolError
    input_tokens: Count
    output_tokens: Count
    thinking_tokens: Count = 0
    sampled: BlobRef | None = None
    """v2: as ActionTaken.sampled (an invalid output is a sampled action too: RL trains on it)."""


class ObservationReturned(Event):
    """The backend's structured feedback to the action of ``step``: a result or an error, never both."""

    event_type: Literal["ObservationReturned"] = "ObservationReturned"
    schema_version: Literal[1] = 1
    episode_id: Name
    step: Step
    result: JsonData = None
    error: ToolError | None = None
    changes: list[StateChange] = Field(default_factory=list)  # state-diff summary
    flags: list[Name] = Field(default_factory=list)  # e.g. "truncated", "destructive"
    blob: BlobRef | None = None  # e.g. a screenshot

    @model_validator(mode="after")
    def _result_or_error(self) -> ObservationReturned:
        if self.error is not None and self.result is not None:
            raise ValueError("an observation carries a result or an error, not both")
        return self


class EpisodeEnded(Event):
    """The episode is over. Version 2 split tokens into input/output/thinking, moved wall
    time to seconds, added cost."""

    event_type: Literal["EpisodeEnded"] = "EpisodeEnded"
    schema_version: Literal[2] = 2
    task_id: Name
    episode_id: Name
    reason: EndReason
    steps: Count
    input_tokens: Count
    output_tokens: Count
    thinking_tokens: Count = 0
    tool_calls: Count
    wall_time_s: Annotated[float, Field(ge=0.0)]
    cost_estimate_usd: Annotated[float, Field(ge=0.0)] | None = None  # None when the endpoint has no price
    answer: Annotated[str, Field(max_length=16384)] | None = None  # the Finish answer, if any
    final_state: BlobRef | None = None  # world-state snapshot for the verifier; the policy never saw it
