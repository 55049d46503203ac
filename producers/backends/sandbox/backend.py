"""The programmatic sandbox: typed tool calls over a copy-on-write world, exact and deterministic."""

from __future__ import annotations

from collections import OrderedDict
from functools import cache
from typing import Any, cast

from pydantic import JsonValue, ValidationError

from bus_schemas.actions import ToolCall, ToolError
from bus_schemas.events.tasks import TaskSpecified
from producers.backends.base import Evidence, Observation, ToolSpec, TrustLevel
from producers.backends.sandbox.catalog import TOOLS, apply_fixtures, base_world
from producers.backends.sandbox.errors import ToolFailure
from producers.backends.sandbox.grounding import Shown, tokens
from producers.backends.sandbox.world import State, World, state_hash

_CACHE_SIZE = 4096


def _error(code: Any, message: str, retryable: bool = False) -> Observation:
    return Observation.model_construct(
        result=None, error=ToolError(code=code, message=message[:4000], retryable=retryable), changes=[], flags=[]
    )


@cache
def _spec_tokens(name: str) -> frozenset[str]:
    """The tokens of one tool's spec (description, argument schema, examples): static, so read once per process."""
    return frozenset(tokens(TOOLS[name].spec.model_dump(mode="json")))


def _validation_message(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors(include_url=False))


class SandboxBackend:
    """Implements ``producers.backends.base.Backend``; one episode at a time, resets are O(1) after the first."""

    name = "sandbox"
    trust: TrustLevel = "exact"

    def __init__(self) -> None:
        self._initial: OrderedDict[tuple[str, int], State] = OrderedDict()
        self._task: TaskSpecified | None = None
        self._world = World({})
        self._calls: list[dict[str, Any]] = []
        self._specs: list[ToolSpec] = []
        self._shown = Shown()

    def initial_state(self, task: TaskSpecified, seed: int) -> State:
        """The task's starting world, built once per (task, seed) and shared by every later reset."""
        key = (task.task_id, seed)
        state = self._initial.get(key)
        if state is None:
            base = base_world(seed, task.split)
            state = self._initial[key] = apply_fixtures(base, task.initial_conditions.fixtures)
            if len(self._initial) > _CACHE_SIZE:
                self._initial.popitem(last=False)
        return state

    def reset(self, task: TaskSpecified, seed: int | None = None) -> Observation:
        self._task = task
        self._world = World(self.initial_state(task, task.initial_conditions.seed if seed is None else seed))
        self._calls = []
        self._specs = [TOOLS[name].spec for name in task.tools]
        first = Observation.model_construct(
            result={"goal": task.goal, "now": self._world.base["system"]["device"]["now"]},
            error=None,
            changes=[],
            flags=[],
        )
        self._shown = Shown(first.result, known=frozenset().union(*(_spec_tokens(name) for name in task.tools)))
        return first

    def tools(self) -> list[ToolSpec]:
        return list(self._specs)

    def step(self, call: ToolCall) -> Observation:
        unseen = self._shown.unseen(call.args)
        obs = self._execute(call)
        record: dict[str, Any] = {
            "name": call.name,
            "args": call.args,
            "ok": obs.error is None,
            "error": None if obs.error is None else obs.error.code,
        }
        if unseen:  # only then: the evidence of a grounded episode is unchanged
            record["unseen_ids"] = unseen
        self._calls.append(record)
        self._shown.add(obs.result if obs.error is None else obs.error.message)
        return obs

    def _execute(self, call: ToolCall) -> Observation:
        tool = TOOLS.get(call.name)
        if tool is None or self._task is None or call.name not in self._task.tools:
            return _error("unknown_tool", f"no tool named {call.name!r} in this task; see the tool list")
        try:
            args = tool.args_model.from_call(call.args)
        except ValidationError as exc:
            return _error("invalid_argument", _validation_message(exc))
        except ValueError as exc:
            return _error("invalid_argument", str(exc))
        log = self._world.log
        mark = len(log)
        try:
            result = tool.fn(self._world, args)
        except ToolFailure as failure:
            self._world.rollback(mark)
            return _error(failure.code, failure.message, failure.retryable)
        except Exception as exc:  # a tool bug must reach the policy as feedback, never as a crash
            self._world.rollback(mark)
            return _error("internal", f"{type(exc).__name__}: {exc}")
        return Observation.model_construct(result=result, error=None, changes=log[mark:], flags=[])

    def state(self) -> State:
        return self._world.state()

    def evidence(self) -> Evidence:
        final = self._world.state()
        # model_construct skips validation (the states are large); the world holds only JSON values.
        return Evidence.model_construct(
            backend=self.name,
            initial_state=cast(JsonValue, self._world.base),
            final_state=cast(JsonValue, final),
            calls=list(self._calls),
            state_hash=state_hash(final),
        )

    def close(self) -> None:
        self._initial.clear()
        self._task = None
