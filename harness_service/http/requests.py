"""Request bodies of the service and the ad-hoc task made for a free user goal."""

from __future__ import annotations

import hashlib
import math
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from bus_schemas.actions import Action
from bus_schemas.codec import MAX_NESTING_DEPTH
from bus_schemas.envelope import Producer
from bus_schemas.events.tasks import BackendKind, InitialConditions, NoCollateralCriterion, TaskSource, TaskSpecified


def check_json(value: Any) -> Any:
    """Refuse what no event can carry, before anything else looks at the body: nesting deeper than the codec
    reads, non-finite numbers (``NaN``, ``Infinity``: Python's JSON parser accepts them) and lone surrogates."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_NESTING_DEPTH:
                raise ValueError(f"the body nests arrays/objects deeper than {MAX_NESTING_DEPTH} levels")
            children = list(item.items()) if isinstance(item, dict) else [(None, v) for v in item]
            for key, child in children:
                if key is not None:
                    stack.append((key, depth))
                stack.append((child, depth + 1))
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError("JSON numbers must be finite (no NaN or Infinity)")
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("strings must be valid Unicode (no lone surrogates)") from None
    return value


def _task_from_json(value: Any) -> Any:
    """Events are strict models: validate a JSON body in JSON mode, where timestamps may be strings."""
    if not isinstance(value, dict):
        return value
    try:
        data = orjson.dumps(value)
    except orjson.JSONEncodeError as exc:  # check_json ran first; this is the last line of defence
        raise ValueError(f"the task is not encodable JSON: {exc}") from None
    return TaskSpecified.model_validate_json(data)


JsonTask = Annotated[TaskSpecified, BeforeValidator(_task_from_json)]


class PolicyChoice(BaseModel):
    """``default``: the server's configured model; ``scripted``: replay ``actions`` (bootstrapping and tests)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["default", "scripted"] = "default"
    name: Annotated[str, Field(min_length=1, max_length=128)] = "request"
    actions: Annotated[list[Action], Field(max_length=200)] = Field(default_factory=list)


class EpisodeRequest(BaseModel):
    """One episode: a full task spec, or a free user goal run with every tool of the backend."""

    model_config = ConfigDict(extra="forbid")

    task: JsonTask | None = None
    goal: Annotated[str, Field(min_length=1, max_length=16384)] | None = None
    backend: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")] = "sandbox"
    user_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")] = "default"
    run_id: Annotated[str, Field(min_length=1, max_length=256)] = "harness-service"
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] | None = None
    policy: PolicyChoice = Field(default_factory=PolicyChoice)

    @model_validator(mode="before")
    @classmethod
    def _wire_safe(cls, data: Any) -> Any:
        return check_json(data)

    @model_validator(mode="after")
    def _task_or_goal(self) -> EpisodeRequest:
        if (self.task is None) == (self.goal is None):
            raise ValueError("give exactly one of 'task' and 'goal'")
        return self


def adhoc_task(goal: str, tools: list[str], backend: BackendKind, producer: Producer, run_id: str) -> TaskSpecified:
    """A task for a user goal: every tool offered, no verifier check beyond 'anything may change'."""
    digest = hashlib.sha256(goal.encode()).hexdigest()[:16]
    return TaskSpecified(
        producer=producer,
        run_id=run_id,
        task_id=f"adhoc-{digest}",
        goal=goal,
        apps=sorted({name.split(".")[0] for name in tools}),
        tools=tools,
        initial_conditions=InitialConditions(seed=0),
        category="tool_use",
        tags=[],
        difficulty=1,
        split="test",
        backend=backend,
        criteria=[NoCollateralCriterion(id="adhoc", description="free user goal: not verified", allowed_paths=["/"])],
        source=TaskSource(kind="human"),
    )
