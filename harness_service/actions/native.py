"""Native tool-call formats of chat models, mapped onto the harness's actions.

A model served behind an OpenAI-compatible endpoint is offered the step's tools as functions in the request's
``tools`` field, plus one function per non-tool action, named by its kind (``finish``, ``memory_read``,
``memory_write``, ``skill_load``, ``subagent_spawn``, ``clarify``, ``refuse``; the arguments are the action's own
fields). A structured reply (the message's ``tool_calls``) is recorded as the Hermes text Qwen's chat template
writes, ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, so the episode keeps the model's output as
text and the parser reads it like a model that wrote the tags itself.

Hosted APIs accept only function names matching ``^[a-zA-Z0-9_-]{1,64}$``, and our tools are named like
``notes.add``. With ``safe_names`` a step's functions are sent under :func:`safe_function_name` (``.`` becomes
``__``, any other character outside that set ``-XX`` in hex, a name over 64 characters is cut and suffixed with a
digest) and a reply's calls are mapped back through the step's own table (:func:`sent_names`) before they are
recorded, so the recorded ``<tool_call>`` text carries the real tool name and replays exactly; a name the step never
offered is recorded as the model wrote it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from pydantic import BaseModel

from bus_schemas.actions import Action, Clarify, Finish, MemoryRead, MemoryWrite, Refuse, SkillLoad, SubagentSpawn
from producers.backends.base import ToolSpec

TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"

ACTION_FUNCTIONS: dict[str, tuple[type[BaseModel], str]] = {
    "finish": (Finish, "End the task. `answer` is the final answer for the user, or empty when none is asked for."),
    "memory_read": (MemoryRead, "Search the user's persistent memory for facts stored earlier."),
    "memory_write": (MemoryWrite, "Store a fact worth remembering in the user's persistent memory."),
    "skill_load": (SkillLoad, "Load the full text of a skill offered in the context, by its name."),
    "subagent_spawn": (
        SubagentSpawn,
        "Run a sub-agent on a sub-goal with some of the tools (by name); its summary comes back as the result.",
    ),
    "clarify": (
        Clarify,
        "Ask the user a question instead of acting; their answer comes back if they can give one, else the task ends.",
    ),
    "refuse": (Refuse, "Decline the task, with the reason it cannot or must not be done; this ends the task."),
}
"""The reserved function names (the action kinds besides ``tool_call``): the action model and what a model reads.

A backend tool of the same name wins: it is offered and called as the tool, and the action function is not sent."""


SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_UNSAFE_CHAR = re.compile(r"[^a-zA-Z0-9_-]")


def safe_function_name(name: str) -> str:
    """``name`` as a hosted API accepts it: unchanged when it already matches :data:`SAFE_NAME`."""
    if SAFE_NAME.match(name):
        return name
    safe = _UNSAFE_CHAR.sub(lambda m: "__" if m[0] == "." else f"-{ord(m[0]):02X}", name)
    if 1 <= len(safe) <= 64:
        return safe
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{safe[:55]}-{digest}" if safe else f"fn-{digest}"


def sent_names(tools: Sequence[ToolSpec], *, safe_names: bool = False) -> dict[str, str]:
    """Every function name of one step (its tools, then the action functions not shadowed by a tool), mapped to the
    name it is sent under: itself, or with ``safe_names`` its :func:`safe_function_name` (made unique by a digest
    suffix when two names would collide)."""
    names = [tool.name for tool in tools]
    names += [name for name in ACTION_FUNCTIONS if name not in names]
    table: dict[str, str] = {}
    for name in names:
        sent = safe_function_name(name) if safe_names else name
        if sent in table.values():
            sent = f"{sent[:55]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
        table[name] = sent
    return table


def _function(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


@functools.cache
def _action_parameters(model: type[BaseModel]) -> dict[str, Any]:
    """The action's JSON Schema without ``kind`` (the function name carries it) and without pydantic's titles;
    built once per action type (every step of a tool-calling policy and every example of a native-tools dataset
    asks for it). Callers must not mutate the result."""
    schema = model.model_json_schema()
    properties = {
        field: {key: value for key, value in spec.items() if key != "title"}
        for field, spec in schema["properties"].items()
        if field != "kind"
    }
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if schema.get("required"):
        parameters["required"] = schema["required"]
    return parameters


def function_tools(tools: Sequence[ToolSpec], *, safe_names: bool = False) -> list[dict[str, Any]]:
    """The OpenAI ``tools`` field of one step: its tools in the order given, then the action functions, each under
    the name :func:`sent_names` gives it."""
    sent = sent_names(tools, safe_names=safe_names)
    names = {tool.name for tool in tools}
    offered = [_function(sent[tool.name], tool.description, tool.parameters) for tool in tools]
    offered += [
        _function(sent[name], description, _action_parameters(model))
        for name, (model, description) in ACTION_FUNCTIONS.items()
        if name not in names
    ]
    return offered


def _arguments_json(arguments: object) -> str:
    """The arguments as JSON: a string holding one JSON object verbatim (what the server sent); anything else
    (malformed JSON, a list, an object from a server that decodes arguments) encoded, so nothing is lost and the
    parser reports what is wrong."""
    if isinstance(arguments, str):
        try:
            if isinstance(orjson.loads(arguments), dict):
                return arguments
        except orjson.JSONDecodeError:
            pass
    return json.dumps(arguments, ensure_ascii=False)


def render_tool_calls(content: str, calls: Sequence[tuple[str, object]]) -> str:
    """The recorded text of a reply with structured ``tool_calls`` (``(name, arguments)`` each): its content, then
    every call as a Hermes ``<tool_call>`` block on its own lines, the way Qwen's chat template renders an assistant
    turn. Deterministic, so a replay of the recorded text parses to the same action."""
    blocks = []
    for name, arguments in calls:
        call = f'{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": {_arguments_json(arguments)}}}'
        blocks.append(f"{TOOL_CALL_OPEN}\n{call}\n{TOOL_CALL_CLOSE}")
    return "\n".join([content, *blocks] if content else blocks)


NATIVE_FORMAT_DOC = """\
Reply with optional reasoning followed by exactly one function call:
<tool_call>
{"name": "<function name>", "arguments": {<arguments matching its parameters>}}
</tool_call>
The functions are the tools, plus finish, memory_read, memory_write, skill_load, subagent_spawn, clarify and refuse \
(their arguments are the action's fields; finish takes the final answer, or an empty one).
Errors come back as observations with a code and a message; fix the call and try again."""
"""The action format of a ``tool_call`` harness (``HarnessConfig.action_syntax``), in place of ``ACTION_FORMAT_DOC``."""


def render_native_action(action: Action) -> str:
    """An action as the native function call a tool-calling model writes: the text :func:`render_tool_calls` records
    for a structured reply, a tool call's arguments sorted by name, another action named by its kind with its other
    fields as the arguments. The parser reads it back to the same action."""
    fields = action.model_dump(mode="json")
    kind = fields.pop("kind")
    if kind == "tool_call":
        return render_tool_calls("", [(fields["name"], dict(sorted(fields["args"].items())))])
    return render_tool_calls("", [(kind, fields)])
