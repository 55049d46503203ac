"""Model output text -> a typed Action, or a ToolError telling the model exactly what to fix. Never raises.

One entry point for every form a model writes an action in: the project's ``<action>{json}</action>``, a native
function call as Hermes ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` text (also how the OpenAI policy
records structured ``tool_calls``, see ``actions.native``), or fenced / bare JSON of either.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter, ValidationError

from bus_schemas.actions import Action, ToolCall, ToolError
from bus_schemas.codec import MAX_NESTING_DEPTH, nesting_depth
from harness_service.actions.arguments import Check, compile_check
from harness_service.actions.format import ACTION_CLOSE, ACTION_OPEN
from harness_service.actions.native import ACTION_FUNCTIONS, TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from harness_service.identity_cache import IdentityCache
from producers.backends.base import ToolSpec

MODEL_KINDS = (
    "tool_call",
    "memory_read",
    "memory_write",
    "skill_load",
    "subagent_spawn",
    "clarify",
    "refuse",
    "finish",
)
"""Kinds a policy may emit; ``subagent_result`` is written by the harness only."""

_ACTION = TypeAdapter(Action)
_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_JSON = json.JSONDecoder()
_MAX_TAG_CANDIDATES = 8
_DETAIL_CHARS = 200
_MESSAGE_CHARS = 2000


def _error(code: str, message: str) -> ToolError:
    if len(message) > _MESSAGE_CHARS:
        message = message[:_MESSAGE_CHARS] + "…"
    return ToolError(code=code, message=message, retryable=True)  # type: ignore[arg-type]


def _short(text: str) -> str:
    return text if len(text) <= _DETAIL_CHARS else text[:_DETAIL_CHARS] + "…"


def _balanced(text: str, open_tag: str, close_tag: str, first: bool) -> str | None:
    """The JSON of the first (or last) ``open_tag`` whose body is one complete JSON object followed by ``close_tag``.

    Tag-like text inside a JSON string (a note that quotes ``<action>...</action>``) must not cut the
    action short, so each opening tag is tried in turn, parsing exactly one JSON value.
    """
    start = -1 if first else len(text)
    for _ in range(_MAX_TAG_CANDIDATES):
        start = text.find(open_tag, start + 1) if first else text.rfind(open_tag, 0, start)
        if start < 0:
            return None
        body = text[start + len(open_tag) :].lstrip()
        try:
            value, end = _JSON.raw_decode(body)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and body[end:].lstrip().startswith(close_tag):
            return body[:end]
    return None


def _unclosed(text: str, open_tag: str, close_tag: str) -> tuple[str, str | None] | None:
    """The body after the last ``open_tag`` (up to ``close_tag``) and the closing tag if it is missing."""
    start = text.rfind(open_tag)
    if start < 0:
        return None
    body = text[start + len(open_tag) :]
    end = body.find(close_tag)
    return (body, close_tag) if end < 0 else (body[:end], None)


def _extract(text: str) -> tuple[str | None, str | None]:
    """The JSON payload of the action and the closing tag it lacks, if it looks truncated.

    The last complete ``<action>`` wins (the reasoning before it may quote or draft others), then the first complete
    ``<tool_call>`` (a model calling several functions at once means them in order; the rest are not run).
    """
    balanced = _balanced(text, ACTION_OPEN, ACTION_CLOSE, first=False)
    if balanced is None:
        balanced = _balanced(text, TOOL_CALL_OPEN, TOOL_CALL_CLOSE, first=True)
    if balanced is not None:
        return balanced, None
    unclosed = _unclosed(text, ACTION_OPEN, ACTION_CLOSE) or _unclosed(text, TOOL_CALL_OPEN, TOOL_CALL_CLOSE)
    if unclosed is not None:
        return unclosed
    fenced = _FENCED.findall(text)
    if fenced:
        return fenced[-1], None
    stripped = text.strip()
    return (stripped, None) if stripped.startswith("{") else (None, None)


def _load(payload: str, what: str, hint: str = "") -> Any | ToolError:
    """``payload`` decoded, or a parse error when it is not JSON or nests deeper than ActionTaken could carry."""
    data = payload.encode("utf-8", "replace")
    brackets = data.count(b"[") + data.count(b"{")  # fewer brackets than the limit cannot nest that deep
    if brackets >= MAX_NESTING_DEPTH and nesting_depth(data) >= MAX_NESTING_DEPTH:
        return _error("parse_error", f"{what} nests deeper than {MAX_NESTING_DEPTH - 1} levels. Use flat arguments.")
    try:
        return orjson.loads(payload)
    except (orjson.JSONDecodeError, RecursionError, ValueError) as exc:
        return _error("parse_error", f"{what} is not valid JSON ({_short(str(exc))}).{hint}")


def _build_validator(tool: ToolSpec) -> Draft202012Validator:
    return Draft202012Validator(tool.parameters)


def _build_check(tool: ToolSpec) -> Check:
    return compile_check(tool.parameters) or _validator(tool).is_valid


_validator = IdentityCache(_build_validator)
"""A tool's JSON Schema validator, built on its first call and kept while the tool is alive: it words the errors."""
_arguments_valid = IdentityCache(_build_check)
"""Whether arguments are valid for a tool: the fast check of its schema, or its validator when it has none."""


class ActionParser:
    """Parses against one set of tools."""

    def __init__(self, tools: Iterable[ToolSpec], max_chars: int = 65_536, max_action_bytes: int = 32_768) -> None:
        self.max_chars = max_chars
        self.max_action_bytes = max_action_bytes  # keeps ActionTaken well under the bus's inline payload limit
        self._tools = {t.name: t for t in tools}

    def parse(self, text: str) -> Action | ToolError:
        if len(text) > self.max_chars:
            return _error(
                "parse_error",
                f"Your reply has {len(text)} characters; the limit is {self.max_chars}. "
                "Reply with one short <action>{...}</action>.",
            )
        payload, missing_close = _extract(text)
        if payload is None:
            return _error(
                "parse_error",
                "No action found. End your reply with one action, e.g. "
                '<action>{"kind": "finish", "answer": "..."}</action>.',
            )
        size = len(payload.encode("utf-8", "replace"))
        if size > self.max_action_bytes:
            return _error(
                "parse_error",
                f"The action is {size} bytes; the limit is {self.max_action_bytes}. Use shorter arguments.",
            )
        hint = f" The closing {missing_close} is missing: your output looks truncated." if missing_close else ""
        data = _load(payload, "The action", hint)
        return data if isinstance(data, ToolError) else self._validate(data)

    def _validate(self, data: Any) -> Action | ToolError:
        if not isinstance(data, dict):
            return _error("parse_error", f"The action must be a JSON object, got {type(data).__name__}.")
        if "kind" not in data and "arguments" in data:
            data = self._function_call(data)
            if isinstance(data, ToolError):
                return data
        if "kind" not in data and "name" in data:
            data = {"kind": "tool_call", **data}
        kind = data.get("kind")
        if kind not in MODEL_KINDS:
            return _error(
                "parse_error", f"Unknown action kind {_short(repr(kind))}; use one of: {', '.join(MODEL_KINDS)}."
            )
        try:
            action = _ACTION.validate_python(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'][1:]) or kind}: {e['msg']}"
                for e in exc.errors(include_input=False, include_url=False)
            )
            return _error("parse_error", f"Invalid {kind} action: {problems}.")
        return self._check_tool(action) if isinstance(action, ToolCall) else action

    def _function_call(self, call: dict[str, Any]) -> dict[str, Any] | ToolError:
        """A native function call's action fields: an action function (``finish``...) is that action with the
        arguments as its fields, any other name a tool call. Arguments arrive as a JSON string (OpenAI) or an
        object (Hermes); other keys of the call (an ``id``) are ignored."""
        name, arguments = call.get("name"), call["arguments"]
        if isinstance(arguments, str):
            arguments = _load(arguments, f"The argument string of {_short(repr(name))}")
            if isinstance(arguments, ToolError):
                return arguments
        if not isinstance(arguments, dict):
            return _error(
                "parse_error",
                f"The arguments of {_short(repr(name))} must be a JSON object, got {type(arguments).__name__}.",
            )
        if isinstance(name, str) and name in ACTION_FUNCTIONS and name not in self._tools:
            return {**arguments, "kind": name}
        return {"kind": "tool_call", "name": name, "args": arguments}

    def _check_tool(self, call: ToolCall) -> ToolCall | ToolError:
        tool = self._tools.get(call.name)
        if tool is None:
            close = difflib.get_close_matches(call.name, list(self._tools), n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            return _error(
                "unknown_tool",
                f"Unknown tool {_short(repr(call.name))}.{hint} Available tools: {', '.join(sorted(self._tools))}.",
            )
        if _arguments_valid(tool)(call.args):
            return call
        errors = sorted(_validator(tool).iter_errors(call.args), key=lambda e: [str(p) for p in e.absolute_path])
        if errors:
            problems = "; ".join(
                f"args{''.join(f'[{p!r}]' for p in e.absolute_path)}: {_short(e.message)}" for e in errors[:5]
            )
            return _error("invalid_argument", f"Invalid arguments for {call.name}: {problems}.")
        return call
