"""The fixed parts of a context: the system message (instructions, action format, tools, skills) and the task."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from harness_service.actions.format import ACTION_FORMAT_DOC
from harness_service.context.feedback import render_observation
from harness_service.memory.records import MemoryRecord
from harness_service.skills.skill import Skill
from producers.backends.base import Observation, ToolSpec


def _canonical(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


_DATA_KEYWORDS = frozenset({"examples", "default", "enum", "const"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})


def compact_schema(schema: object) -> object:
    """The schema without ``title`` annotations (generated noise to a model); property names and data are kept."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        else:
            out[key] = value if key in _DATA_KEYWORDS else compact_schema(value)
    return out


def render_tool(tool: ToolSpec) -> str:
    """One tool: name, whether it writes, description and the (compacted) JSON Schema of its arguments."""
    access = "writes" if tool.writes else "read-only"
    return f"## {tool.name} ({access})\n{tool.description}\nparameters: {_canonical(compact_schema(tool.parameters))}"


def system_text(instructions: str, tools: Sequence[ToolSpec], offered: Sequence[Skill], loaded: Sequence[Skill]) -> str:
    """Instructions, action format, tools sorted by name, offered skills and the full text of loaded ones."""
    parts = [instructions.strip(), "# Action format\n" + ACTION_FORMAT_DOC]
    if tools:
        parts.append("# Tools\n" + "\n\n".join(render_tool(t) for t in sorted(tools, key=lambda t: t.name)))
    if offered:
        lines = "\n".join(f"- {s.name}: {s.when_to_use}" for s in sorted(offered, key=lambda s: s.name))
        parts.append("# Skills (load one with skill_load)\n" + lines)
    for skill in loaded:
        parts.append(f"# Loaded skill: {skill.name}\n{skill.body.strip()}")
    return "\n\n".join(parts)


def task_text(goal: str, memories: Sequence[MemoryRecord], first: Observation | None, turn_chars: int) -> str:
    """The goal, the memories retrieved for it and the first observation of the backend."""
    parts = ["# Task\n" + goal.strip()]
    if memories:
        parts.append("# Relevant memories\n" + "\n".join(f"- {m.render()}" for m in memories))
    if first is not None and (first.result is not None or first.error is not None):
        parts.append("# Initial observation\n" + render_observation(first, turn_chars))
    return "\n\n".join(parts)
