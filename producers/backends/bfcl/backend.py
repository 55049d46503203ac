"""``BfclBackend``: a BFCL multi-turn entry's API instances as an environment (trust ``exact``: BFCL's own code)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import orjson

from bus_schemas.actions import ToolCall, ToolError
from producers.backends.base import Evidence, Observation, ToolSpec, TrustLevel
from producers.backends.bfcl.tasks import INSTRUCTIONS, world_for
from producers.backends.bfcl.world import BfclWorld

_INITIAL_CACHE = 64


class BfclBackend:
    """One episode at a time: ``reset`` loads fresh instances from the task's ``backend_params``."""

    name = "bfcl"
    trust: TrustLevel = "exact"

    def __init__(self) -> None:
        self._world: BfclWorld | None = None
        self._initial: OrderedDict[str, Any] = OrderedDict()  # task id -> the same state object on every reset
        self._task_id = ""
        self._calls: list[dict[str, Any]] = []

    def reset(self, task: Any, seed: int | None = None) -> Observation:
        params = task.backend_params
        self._world = world_for(params)
        self._task_id, self._calls = task.task_id, []
        if task.task_id not in self._initial:
            self._initial[task.task_id] = self._world.state()
            if len(self._initial) > _INITIAL_CACHE:
                self._initial.popitem(last=False)
        apps = sorted({spec.name.split(".", 1)[0] for spec in self._world.specs.values()})
        return Observation(result={"instructions": INSTRUCTIONS, "apps": apps, "turns": params.get("turns", 1)})

    def tools(self) -> list[ToolSpec]:
        return list(self._world.specs.values()) if self._world is not None else []

    def step(self, call: ToolCall) -> Observation:
        if self._world is None:
            return Observation(error=ToolError(code="unavailable", message="no episode: reset first"))
        step = self._world.call(call)
        self._calls.append(
            {
                "name": call.name,
                "args": call.args,
                "ok": step.error is None,
                "error": step.error.code if step.error is not None else None,
                "result_text": step.text,
            }
        )
        return Observation(result=step.result, error=step.error)

    def evidence(self) -> Evidence:
        if self._world is None:
            return Evidence(backend=self.name, initial_state={}, final_state={})
        final = self._world.state()
        self._initial.move_to_end(self._task_id)
        # model_construct keeps the initial state's identity (lean evidence serialises it once) and skips
        # re-validating states that world.to_json made of JSON values only
        return Evidence.model_construct(
            backend=self.name,
            initial_state=self._initial[self._task_id],
            final_state=final,
            calls=list(self._calls),
            state_hash=hashlib.sha256(orjson.dumps(final)).hexdigest(),
        )

    def close(self) -> None:
        self._world = None
