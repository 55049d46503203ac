"""Executes one non-terminal action (tool call, memory, skill, sub-agent) and returns its observation. Never raises."""

from __future__ import annotations

from collections.abc import Callable

from bus_schemas.actions import (
    Action,
    MemoryRead,
    MemoryWrite,
    SkillLoad,
    SubagentSpawn,
    ToolCall,
    ToolError,
)
from harness_service.memory.store import MemoryStore
from harness_service.skills.library import SkillLibrary
from harness_service.skills.skill import Skill
from producers.backends.base import Backend, Observation


def failure(code: str, message: str, retryable: bool = False) -> Observation:
    """An observation carrying only an error."""
    return Observation(error=ToolError(code=code, message=message[:4000], retryable=retryable))  # type: ignore[arg-type]


class ActionExecutor:
    """Episode-scoped: appends loaded skills to ``loaded``; runs sub-agents through ``spawn``."""

    def __init__(
        self,
        backend: Backend,
        memory: MemoryStore | None,
        skills: SkillLibrary,
        loaded: list[Skill],
        spawn: Callable[[SubagentSpawn], Observation],
    ) -> None:
        self._backend = backend
        self._memory = memory
        self._skills = skills
        self._loaded = loaded
        self._spawn = spawn

    def execute(self, action: Action) -> Observation:
        try:
            return self._dispatch(action)
        except Exception as exc:  # a failing port or backend is feedback for the policy, not a crash
            return failure("internal", f"{type(exc).__name__}: {exc}")

    def _dispatch(self, action: Action) -> Observation:
        if isinstance(action, ToolCall):
            return self._backend.step(action)
        if isinstance(action, (MemoryRead, MemoryWrite)):
            return self._memory_action(action)
        if isinstance(action, SkillLoad):
            return self._load_skill(action.name)
        if isinstance(action, SubagentSpawn):
            return self._spawn(action)
        return failure("invalid_argument", f"{action.kind} is not executable here")

    def _memory_action(self, action: MemoryRead | MemoryWrite) -> Observation:
        if self._memory is None:
            return failure("unavailable", "memory is disabled in this harness configuration")
        if isinstance(action, MemoryWrite):
            record = self._memory.write(action.content, action.tags)
            return Observation(result={"stored": record.id})
        found = self._memory.search(action.query, action.top_k)
        return Observation(result=[{"content": r.content, "tags": list(r.tags)} for r in found])

    def _load_skill(self, name: str) -> Observation:
        skill = self._skills.get(name)
        if skill is None:
            return failure("not_found", f"no skill named {name!r}; skills: {', '.join(self._skills.names()) or 'none'}")
        if skill not in self._loaded:
            self._loaded.append(skill)
        return Observation(result={"loaded": skill.name, "note": "its full text is now in the system message"})
