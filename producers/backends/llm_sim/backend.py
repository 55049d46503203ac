"""``LlmSimBackend``: the configured model plays the tools of a declared tool set, one call at a time.

Arguments are validated against the declared schema before the model is asked; the model's answer is
parsed as JSON and checked against the result schema and against earlier observations. Failures are
flags on the observation (``schema_invalid``, ``contradiction``), never silent; trust is ``simulated``.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from jsonschema import Draft202012Validator

from bus_schemas.actions import ToolCall, ToolError
from harness_service.context.messages import ChatMessage
from harness_service.policy.base import Policy
from producers.backends.base import Evidence, Observation, ToolSpec, TrustLevel
from producers.backends.llm_sim.consistency import ConsistencyTracker
from producers.backends.llm_sim.toolset import Toolset

FLAG_SIMULATED = "simulated"
FLAG_SCHEMA_INVALID = "schema_invalid"
FLAG_CONTRADICTION = "contradiction"
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
INSTRUCTIONS = (
    "You simulate the tool {name} of a phone app: {description}\n"
    "Answer the call with one JSON value that matches this result schema, and nothing else:\n{schema}\n"
    "Stay consistent with the earlier results of this session."
)


def _error(code: str, message: str, *flags: str) -> Observation:
    return Observation(error=ToolError(code=code, message=message[:4000]), flags=[FLAG_SIMULATED, *flags])  # type: ignore[arg-type]


def _json(text: str) -> Any:
    fenced = _FENCE.match(text)
    return orjson.loads(fenced.group(1) if fenced else text)


class LlmSimBackend:
    """One episode at a time over the tool set the task names (``fixtures.toolset``) or the default one."""

    name = "llm_sim"
    trust: TrustLevel = "simulated"

    def __init__(self, toolsets: dict[str, Toolset], simulator: Policy, default_toolset: str | None = None) -> None:
        if not toolsets:
            raise ValueError("the LLM-sim backend needs at least one declared tool set")
        self._toolsets = toolsets
        self._simulator = simulator
        self._default = default_toolset or sorted(toolsets)[0]
        self._toolset = toolsets[self._default]
        self._history: list[ChatMessage] = []
        self._calls: list[dict[str, Any]] = []
        self._tracker = ConsistencyTracker()

    def reset(self, task: Any, seed: int | None = None) -> Observation:
        fixtures = getattr(getattr(task, "initial_conditions", None), "fixtures", {}) or {}
        name = str(fixtures.get("toolset", self._default))
        if name not in self._toolsets:
            raise KeyError(f"no declared tool set {name!r}; available: {', '.join(sorted(self._toolsets))}")
        self._toolset = self._toolsets[name]
        self._history, self._calls, self._tracker = [], [], ConsistencyTracker()
        return Observation(result={"toolset": name, "simulated": True}, flags=[FLAG_SIMULATED])

    def tools(self) -> list[ToolSpec]:
        return [tool.spec() for tool in self._toolset.tools]

    def step(self, call: ToolCall) -> Observation:
        observation = self._step(call)
        self._calls.append({"tool": call.name, "args": call.args, "observation": observation.model_dump(mode="json")})
        return observation

    def _step(self, call: ToolCall) -> Observation:
        tool = self._toolset.tool(call.name)
        if tool is None:
            return _error("unknown_tool", f"{call.name} is not declared in tool set {self._toolset.name}")
        bad = next(iter(Draft202012Validator(tool.parameters).iter_errors(call.args)), None)
        if bad is not None:
            return _error("invalid_argument", f"args{''.join(f'[{p!r}]' for p in bad.path)}: {bad.message}")
        system = INSTRUCTIONS.format(
            name=tool.name, description=tool.description, schema=orjson.dumps(tool.result_schema).decode()
        )
        asked = ChatMessage(role="user", content=orjson.dumps({"tool": call.name, "args": call.args}).decode())
        try:
            text = self._simulator.generate([ChatMessage(role="system", content=system), *self._history, asked]).text
        except Exception as exc:  # noqa: BLE001 - the simulator being down is feedback, not a crash
            return _error("unavailable", f"the simulator failed: {exc}")
        self._history += [asked, ChatMessage(role="assistant", content=text)]
        try:
            result = _json(text)
        except orjson.JSONDecodeError:
            return _error("internal", "the simulated tool returned no JSON", FLAG_SCHEMA_INVALID)
        flags = [FLAG_SIMULATED]
        if next(iter(Draft202012Validator(tool.result_schema).iter_errors(result)), None) is not None:
            flags.append(FLAG_SCHEMA_INVALID)
        if self._tracker.check(call.name, call.args, result, tool.writes):
            flags.append(FLAG_CONTRADICTION)
        return Observation(result=result, flags=flags)

    def evidence(self) -> Evidence:
        return Evidence(
            backend=self.name,
            initial_state={"toolset": self._toolset.name},
            final_state={"calls": self._calls},
            calls=self._calls,
        )

    def close(self) -> None:
        self._history.clear()
