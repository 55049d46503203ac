"""The typed tools a policy sees on a device, each mapped to one operation builder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from producers.backends.base import ToolSpec
from producers.backends.device import operations as ops


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_INT = {"type": "integer", "minimum": 0, "maximum": ops.MAX_COORD}
_STR = {"type": "string", "maxLength": 512}


@dataclass(frozen=True)
class DeviceTool:
    """A tool, the operation kind it runs, and the builder that turns its arguments into that operation."""

    spec: ToolSpec
    build: Callable[..., ops.AdbOperation]
    kind: ops.OperationKind


_TABLE: tuple[tuple[ToolSpec, Callable[..., ops.AdbOperation], ops.OperationKind], ...] = (
    (
        ToolSpec(
            name="device.start_activity",
            description="Start an app activity with an intent (package, optional activity, action, data URI, "
            "string extras).",
            parameters=_obj(
                {
                    "package": _STR,
                    "activity": _STR,
                    "action": _STR,
                    "data": _STR,
                    "extras": {"type": "object", "additionalProperties": _STR},
                },
                ["package"],
            ),
            writes=True,
        ),
        ops.am_start,
        "am_start",
    ),
    (
        ToolSpec(
            name="device.query_content",
            description="Query a content provider (content:// URI), optionally with columns and a where clause.",
            parameters=_obj({"uri": _STR, "projection": {"type": "array", "items": _STR}, "where": _STR}, ["uri"]),
        ),
        ops.content_query,
        "content_query",
    ),
    (
        ToolSpec(
            name="device.tap",
            description="Tap the screen at (x, y) pixels.",
            parameters=_obj({"x": _INT, "y": _INT}, ["x", "y"]),
            writes=True,
        ),
        ops.input_tap,
        "input_tap",
    ),
    (
        ToolSpec(
            name="device.swipe",
            description="Swipe from (x1, y1) to (x2, y2) over duration_ms.",
            parameters=_obj(
                {"x1": _INT, "y1": _INT, "x2": _INT, "y2": _INT, "duration_ms": _INT}, ["x1", "y1", "x2", "y2"]
            ),
            writes=True,
        ),
        ops.input_swipe,
        "input_swipe",
    ),
    (
        ToolSpec(
            name="device.type_text",
            description="Type text into the focused field.",
            parameters=_obj({"text": _STR}, ["text"]),
            writes=True,
        ),
        ops.input_text,
        "input_text",
    ),
    (
        ToolSpec(
            name="device.press_key",
            description=f"Press a key: {', '.join(ops.KEYCODES)}.",
            parameters=_obj({"key": {"enum": list(ops.KEYCODES)}}, ["key"]),
            writes=True,
        ),
        ops.input_keyevent,
        "input_keyevent",
    ),
    (
        ToolSpec(
            name="device.screenshot",
            description="Take a screenshot (stored as a PNG blob).",
            parameters=_obj({}, []),
        ),
        ops.screencap,
        "screencap",
    ),
)
DEVICE_TOOLS: dict[str, DeviceTool] = {spec.name: DeviceTool(spec, builder, kind) for spec, builder, kind in _TABLE}
