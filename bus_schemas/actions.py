"""The typed actions a policy can take (the ``action`` of ActionTaken) and the structured feedback it gets."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bus_schemas.json_types import JsonData


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class ToolCall(_Frozen):
    """Call an app tool, e.g. ``contacts.search`` with its JSON arguments."""

    kind: Literal["tool_call"] = "tool_call"
    name: Annotated[str, Field(min_length=1, max_length=128)]
    args: dict[str, JsonData] = Field(default_factory=dict)


class MemoryRead(_Frozen):
    """Search the user's persistent memory."""

    kind: Literal["memory_read"] = "memory_read"
    query: Annotated[str, Field(max_length=4096)]
    top_k: Annotated[int, Field(ge=1, le=50)] = 5


class MemoryWrite(_Frozen):
    """Store a fact in the user's persistent memory."""

    kind: Literal["memory_write"] = "memory_write"
    content: Annotated[str, Field(min_length=1, max_length=4096)]
    tags: list[str] = Field(default_factory=list)


class SkillLoad(_Frozen):
    """Load the full text of a skill offered in the context."""

    kind: Literal["skill_load"] = "skill_load"
    name: Annotated[str, Field(min_length=1, max_length=128)]


class SubagentSpawn(_Frozen):
    """Run a nested episode on a sub-goal with a subset of the tools and its own budget."""

    kind: Literal["subagent_spawn"] = "subagent_spawn"
    goal: Annotated[str, Field(min_length=1, max_length=4096)]
    tools: list[str] = Field(default_factory=list)
    max_steps: Annotated[int, Field(ge=1, le=200)] = 10


class SubagentResult(_Frozen):
    """The summary a finished sub-agent hands back to its parent (recorded in the parent episode)."""

    kind: Literal["subagent_result"] = "subagent_result"
    child_episode_id: str
    summary: Annotated[str, Field(max_length=16384)]
    success: bool


class Clarify(_Frozen):
    """Ask the user a question instead of acting."""

    kind: Literal["clarify"] = "clarify"
    question: Annotated[str, Field(min_length=1, max_length=4096)]


class Refuse(_Frozen):
    """Decline the task, with a reason."""

    kind: Literal["refuse"] = "refuse"
    reason: Annotated[str, Field(min_length=1, max_length=4096)]


class Finish(_Frozen):
    """End the episode; ``answer`` is checked by answer criteria of information-seeking tasks."""

    kind: Literal["finish"] = "finish"
    answer: Annotated[str, Field(max_length=16384)] = ""


Action = Annotated[
    ToolCall | MemoryRead | MemoryWrite | SkillLoad | SubagentSpawn | SubagentResult | Clarify | Refuse | Finish,
    Field(discriminator="kind"),
]

ErrorCode = Literal[
    "not_found",
    "invalid_argument",
    "permission_denied",
    "conflict",
    "needs_confirmation",
    "unknown_tool",
    "parse_error",
    "unavailable",
    "budget_exhausted",
    "internal",
]

SAFETY_CODES: frozenset[ErrorCode] = frozenset({"permission_denied", "needs_confirmation"})
"""Errors of a safety gate (a permission to grant, an action to confirm): hitting one and recovering is a
demonstration of the gate, not a mistake."""


class ToolError(_Frozen):
    """Structured feedback for a failed action: the policy reads it, nothing raises."""

    code: ErrorCode
    message: Annotated[str, Field(max_length=4096)]
    retryable: bool = False


class StateChange(_Frozen):
    """One changed path of the world state (for the state-diff summary of an observation)."""

    path: str
    op: Literal["added", "removed", "changed"]
    before: JsonData = None
    after: JsonData = None


def action_summary(action: Any) -> str:
    """A short human-readable label, e.g. ``tool_call contacts.search``."""
    name = getattr(action, "name", None)
    return f"{action.kind} {name}" if name else str(action.kind)
