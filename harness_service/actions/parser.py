"""Model output text -> a typed Action, or a ToolError telling the model exactly what to fix. Never raises."""

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
from harness_service.actions.format import ACTION_CLOSE, ACTION_OPEN
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


def _balanced(text: str) -> str | None:
    """The last ``<action>`` whose body is one complete JSON object followed by ``</action>``.

    Tag-like text inside a JSON string (a note that quotes ``<action>...</action>``) must not cut the
    action short, so each opening tag is tried from the last, parsing exactly one JSON value.
    """
    start = len(text)
    for _ in range(_MAX_TAG_CANDIDATES):
        start = text.rfind(ACTION_OPEN, 0, start)
        if start < 0:
            return None
        body = text[start + len(ACTION_OPEN) :].lstrip()
        try:
            value, end = _JSON.raw_decode(body)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and body[end:].lstrip().startswith(ACTION_CLOSE):
            return body[:end]
    return None


def _extract(text: str) -> tuple[str | None, bool]:
    """The JSON payload of the action and whether it looks truncated (an unclosed ``<action>``)."""
    balanced = _balanced(text)
    if balanced is not None:
        return balanced, False
    start = text.rfind(ACTION_OPEN)
    if start >= 0:
        body = text[start + len(ACTION_OPEN) :]
        end = body.find(ACTION_CLOSE)
        return (body, True) if end < 0 else (body[:end], False)
    fenced = _FENCED.findall(text)
    if fenced:
        return fenced[-1], False
    stripped = text.strip()
    return (stripped, False) if stripped.startswith("{") else (None, False)


class ActionParser:
    """Parses against one set of tools; a tool's JSON Schema validator is built on its first call."""

    def __init__(self, tools: Iterable[ToolSpec], max_chars: int = 65_536, max_action_bytes: int = 32_768) -> None:
        self.max_chars = max_chars
        self.max_action_bytes = max_action_bytes  # keeps ActionTaken well under the bus's inline payload limit
        self._tools = {t.name: t for t in tools}
        self._validators: dict[str, Draft202012Validator] = {}

    def parse(self, text: str) -> Action | ToolError:
        if len(text) > self.max_chars:
            return _error(
                "parse_error",
                f"Your reply has {len(text)} characters; the limit is {self.max_chars}. "
                "Reply with one short <action>{...}</action>.",
            )
        payload, truncated = _extract(text)
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
        if nesting_depth(payload.encode("utf-8", "replace")) >= MAX_NESTING_DEPTH:  # ActionTaken could not carry it
            return _error(
                "parse_error", f"The action nests deeper than {MAX_NESTING_DEPTH - 1} levels. Use flat arguments."
            )
        try:
            data = orjson.loads(payload)
        except (orjson.JSONDecodeError, RecursionError, ValueError) as exc:
            hint = " The closing </action> is missing: your output looks truncated." if truncated else ""
            return _error("parse_error", f"The action is not valid JSON ({_short(str(exc))}).{hint}")
        return self._validate(data)

    def _validate(self, data: Any) -> Action | ToolError:
        if not isinstance(data, dict):
            return _error("parse_error", f"The action must be a JSON object, got {type(data).__name__}.")
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

    def _check_tool(self, call: ToolCall) -> ToolCall | ToolError:
        tool = self._tools.get(call.name)
        if tool is None:
            close = difflib.get_close_matches(call.name, list(self._tools), n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            return _error(
                "unknown_tool",
                f"Unknown tool {_short(repr(call.name))}.{hint} Available tools: {', '.join(sorted(self._tools))}.",
            )
        validator = self._validators.get(call.name)
        if validator is None:
            validator = self._validators[call.name] = Draft202012Validator(tool.parameters)
        errors = sorted(validator.iter_errors(call.args), key=lambda e: [str(p) for p in e.absolute_path])
        if errors:
            problems = "; ".join(
                f"args{''.join(f'[{p!r}]' for p in e.absolute_path)}: {_short(e.message)}" for e in errors[:5]
            )
            return _error("invalid_argument", f"Invalid arguments for {call.name}: {problems}.")
        return call
