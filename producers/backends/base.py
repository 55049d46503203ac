"""The one interface every environment backend implements (sandbox, LLM-simulated, ADB device, external suites).

An episode is: ``reset(task)`` -> first observation; repeated ``step(tool_call)`` -> observation;
``evidence()`` for the verifier (never shown to the policy); ``close()``.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from bus_schemas.actions import StateChange, ToolCall, ToolError

TrustLevel = Literal["exact", "simulated", "device"]


class ToolSpec(BaseModel):
    """What the policy sees of a tool: name ``app.action``, description, JSON Schema of its arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str
    parameters: dict[str, Any]
    result_schema: dict[str, Any] | None = None
    writes: bool = False


class Observation(BaseModel):
    """Structured feedback for one step: a result or an error, plus what changed in the world."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    result: JsonValue = None
    error: ToolError | None = None
    changes: list[StateChange] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


class Evidence(BaseModel):
    """What the verifier needs: initial and final state (JSON), every call made and its outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str
    initial_state: JsonValue
    final_state: JsonValue
    calls: list[dict[str, JsonValue]] = Field(default_factory=list)
    state_hash: str = ""


@runtime_checkable
class Backend(Protocol):
    """An environment instance. One episode at a time; ``reset`` starts a new one."""

    name: str
    trust: TrustLevel

    def reset(self, task: Any, seed: int | None = None) -> Observation:
        """Start an episode of ``task``; ``seed=None`` means the task's own world seed."""
        ...

    def tools(self) -> list[ToolSpec]: ...

    def step(self, call: ToolCall) -> Observation: ...

    def evidence(self) -> Evidence: ...

    def close(self) -> None: ...
