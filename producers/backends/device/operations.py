"""The only adb operations that exist: typed builders of a fixed argv, each argument checked by pattern.

There is no builder that takes a command line; the argv's first words are fixed per kind, so a model
can pick values (a package, a URI, a point) but never which program runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

OperationKind = Literal[
    "am_start", "content_query", "input_tap", "input_swipe", "input_text", "input_keyevent", "screencap"
]
PROGRAMS: dict[str, tuple[str, ...]] = {
    "am_start": ("am", "start"),
    "content_query": ("content", "query"),
    "input_tap": ("input", "tap"),
    "input_swipe": ("input", "swipe"),
    "input_text": ("input", "text"),
    "input_keyevent": ("input", "keyevent"),
    "screencap": ("screencap", "-p"),
}
PACKAGE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")
ACTIVITY = re.compile(r"^\.?[A-Za-z][A-Za-z0-9_$]*(\.[A-Za-z][A-Za-z0-9_$]*)*$")
INTENT_ACTION = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+$")
URI = re.compile(r"^(content|https?|tel|mailto|geo):[A-Za-z0-9._~:/?#@+,=%-]+$")
CONTENT_URI = re.compile(r"^content://[A-Za-z0-9._-]+(/[A-Za-z0-9._%-]+)*$")
COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
WHERE = re.compile(r"^[A-Za-z0-9_ =<>'.%-]+$")
EXTRA_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")
KEYCODES = {"HOME": 3, "BACK": 4, "ENTER": 66, "DEL": 67, "APP_SWITCH": 187, "TAB": 61, "SEARCH": 84}
MAX_COORD = 10_000
MAX_TEXT = 500


class InvalidOperation(ValueError):
    """An argument outside what the operation accepts; nothing is sent to adb."""


@dataclass(frozen=True)
class AdbOperation:
    """A fully built operation; ``argv`` is passed to adb as a list (adbutils quotes each word)."""

    kind: OperationKind
    argv: tuple[str, ...]


def _check(pattern: re.Pattern[str], value: str, what: str) -> str:
    if not isinstance(value, str) or len(value) > 512 or not pattern.match(value):
        raise InvalidOperation(f"{what} {value!r} is not allowed (must match {pattern.pattern})")
    return value


def _coord(value: int, what: str) -> str:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COORD:
        raise InvalidOperation(f"{what} must be an integer in 0..{MAX_COORD}, got {value!r}")
    return str(value)


def am_start(
    package: str,
    activity: str | None = None,
    action: str | None = None,
    data: str | None = None,
    extras: dict[str, str] | None = None,
) -> AdbOperation:
    argv = [*PROGRAMS["am_start"], "-W"]
    if action:
        argv += ["-a", _check(INTENT_ACTION, action, "intent action")]
    if data:
        argv += ["-d", _check(URI, data, "intent data")]
    for key, value in sorted((extras or {}).items()):
        argv += ["--es", _check(EXTRA_KEY, key, "extra key"), _check(WHERE, value, "extra value")]
    _check(PACKAGE, package, "package")
    argv += ["-n", f"{package}/{_check(ACTIVITY, activity, 'activity')}"] if activity else ["-p", package]
    return AdbOperation("am_start", tuple(argv))


def content_query(uri: str, projection: list[str] | None = None, where: str | None = None) -> AdbOperation:
    argv = [*PROGRAMS["content_query"], "--uri", _check(CONTENT_URI, uri, "content URI")]
    if projection:
        argv += ["--projection", ":".join(_check(COLUMN, c, "column") for c in projection)]
    if where:
        argv += ["--where", _check(WHERE, where, "where clause")]
    return AdbOperation("content_query", tuple(argv))


def input_tap(x: int, y: int) -> AdbOperation:
    return AdbOperation("input_tap", (*PROGRAMS["input_tap"], _coord(x, "x"), _coord(y, "y")))


def input_swipe(x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> AdbOperation:
    coords = [_coord(v, n) for v, n in ((x1, "x1"), (y1, "y1"), (x2, "x2"), (y2, "y2"), (duration_ms, "duration_ms"))]
    return AdbOperation("input_swipe", (*PROGRAMS["input_swipe"], *coords))


def input_text(text: str) -> AdbOperation:
    """``input text`` treats ``%s`` as a space; other characters are limited to printable non-shell ones."""
    if not isinstance(text, str) or not 0 < len(text) <= MAX_TEXT or not re.match(r"^[A-Za-z0-9 .,@_+:/?!-]+$", text):
        raise InvalidOperation(f"text must be 1..{MAX_TEXT} letters, digits, spaces or .,@_+:/?!- characters")
    return AdbOperation("input_text", (*PROGRAMS["input_text"], text.replace(" ", "%s")))


def input_keyevent(key: str) -> AdbOperation:
    if key not in KEYCODES:
        raise InvalidOperation(f"key {key!r} is not allowed; keys: {', '.join(KEYCODES)}")
    return AdbOperation("input_keyevent", (*PROGRAMS["input_keyevent"], str(KEYCODES[key])))


def screencap() -> AdbOperation:
    return AdbOperation("screencap", PROGRAMS["screencap"])
