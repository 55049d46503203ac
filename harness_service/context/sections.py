"""The fixed parts of a context: the system message (instructions, action format, tools, skills) and the task."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from harness_service.actions.format import ACTION_FORMAT_DOC
from harness_service.actions.native import NATIVE_FORMAT_DOC
from harness_service.config import ActionSyntax, CompactContext
from harness_service.context.feedback import ObservationStyle, render_observation
from harness_service.identity_cache import IdentityCache
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


def _render_tool(tool: ToolSpec) -> str:
    """One tool: name, whether it writes, description and the (compacted) JSON Schema of its arguments."""
    access = "writes" if tool.writes else "read-only"
    return f"## {tool.name} ({access})\n{tool.description}\nparameters: {_canonical(compact_schema(tool.parameters))}"


render_tool = IdentityCache(_render_tool)
"""``_render_tool``, once per tool object: backends hand out the same (frozen) specs episode after episode."""


def format_doc(syntax: ActionSyntax) -> str:
    """The documented action format of a harness's ``action_syntax``."""
    return NATIVE_FORMAT_DOC if syntax == "tool_call" else ACTION_FORMAT_DOC


def system_text(
    instructions: str,
    tools: Sequence[ToolSpec],
    offered: Sequence[Skill],
    loaded: Sequence[Skill],
    syntax: ActionSyntax = "action",
) -> str:
    """Instructions, action format, tools sorted by name, offered skills and the full text of loaded ones."""
    parts = [instructions.strip(), "# Action format\n" + format_doc(syntax)]
    if tools:
        parts.append("# Tools\n" + "\n\n".join(render_tool(t) for t in sorted(tools, key=lambda t: t.name)))
    if offered:
        lines = "\n".join(f"- {s.name}: {s.when_to_use}" for s in sorted(offered, key=lambda s: s.name))
        parts.append("# Skills (load one with skill_load)\n" + lines)
    for skill in loaded:
        parts.append(f"# Loaded skill: {skill.name}\n{skill.body.strip()}")
    return "\n\n".join(parts)


TASK_HEADING = "# Task\n"
"""The heading of the task's section, the first of the task turn (value slots find the task's wording by it)."""


def task_text(
    goal: str,
    memories: Sequence[MemoryRecord],
    first: Observation | None,
    turn_chars: int,
    style: ObservationStyle = "full",
) -> str:
    """The goal, the memories retrieved for it and the first observation of the backend."""
    parts = [TASK_HEADING + goal.strip()]
    if memories:
        parts.append("# Relevant memories\n" + "\n".join(f"- {m.render()}" for m in memories))
    if first is not None and (first.result is not None or first.error is not None):
        parts.append("# Initial observation\n" + render_observation(first, turn_chars, style))
    return "\n\n".join(parts)


SHORT_ACTION_FORMAT = (
    "Actions: tool_call, memory_read, memory_write, skill_load, subagent_spawn, finish, clarify, refuse."
)
SHORT_NATIVE_FORMAT = (
    "Call one function: a tool, memory_read, memory_write, skill_load, subagent_spawn, finish, clarify, refuse."
)


def tool_line(tool: ToolSpec, description_chars: int, note: str | None = None) -> str:
    """One tool in one line: name, argument names (``?`` marks optional ones), the harness's note for it or the
    first ``description_chars`` characters of its description."""
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    required = set(schema.get("required", ()))
    args = ",".join(name if name in required else f"{name}?" for name in schema.get("properties", {}))
    text = note if note is not None else tool.description.strip().split("\n", 1)[0][:description_chars].rstrip()
    return f"- {tool.name}({args})" + (f": {text}" if text else "")


def compact_system_text(
    instructions: str,
    tools: Sequence[ToolSpec],
    offered: Sequence[Skill],
    loaded: Sequence[Skill],
    profile: CompactContext,
    syntax: ActionSyntax = "action",
) -> str:
    """The system turn of a compact harness profile, most important first (a window may keep only its head):
    instructions, the loaded skills (clipped), the tools selected for this step (in the order given), the
    offered skills' names, the action format."""
    parts = [instructions.strip()]
    for skill in loaded:
        parts.append(f"# Skill {skill.name}\n{skill.body.strip()[: profile.skill_chars]}")
    if tools:
        notes = profile.tool_notes
        parts.append(
            "# Tools\n" + "\n".join(tool_line(t, profile.tool_description_chars, notes.get(t.name)) for t in tools)
        )
    if offered and profile.offer_skills:
        parts.append("# Skills: " + ", ".join(s.name for s in sorted(offered, key=lambda s: s.name)))
    if profile.action_format == "short":
        parts.append(SHORT_NATIVE_FORMAT if syntax == "tool_call" else SHORT_ACTION_FORMAT)
    else:
        parts.append("# Action format\n" + format_doc(syntax))
    return "\n".join(parts)
