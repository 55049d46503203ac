"""The wire format: canonical JSON bytes (orjson, sorted keys), with upcasting, an inline size limit and a
nesting-depth limit. ``decode`` is the one door hostile bytes come through: it raises only ``SchemaError``.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Annotated, TypeVar, Union

import orjson
from pydantic import Field, TypeAdapter, ValidationError

from bus_schemas.envelope import Event
from bus_schemas.errors import (
    EnvelopeMismatch,
    MalformedEvent,
    PayloadTooLarge,
    SchemaError,
    UnexpectedEventType,
    UnknownEventType,
    UnsupportedSchemaVersion,
)
from bus_schemas.events import ALL_EVENTS
from bus_schemas.topics import TOPICS
from bus_schemas.upcasters import upcast

DEFAULT_MAX_INLINE_BYTES = 64 * 1024
MAX_NESTING_DEPTH = 64
"""Arrays and objects nested deeper than this are refused before parsing, on the way in and out: every JSON
library on the path has its own recursion limit (pydantic ~200, orjson 254 when writing), and a record one
of them cannot handle must be rejected as malformed, never crash the reader."""

EVENT_TYPES: dict[str, type[Event]] = {cls.__name__: cls for cls in ALL_EVENTS}
TOPIC_OF_TYPE: dict[str, str] = {name: spec.name for spec in TOPICS.values() for name in spec.event_types}
CURRENT_VERSIONS: dict[str, int] = {
    name: cls.model_fields["schema_version"].default for name, cls in EVENT_TYPES.items()
}

_ANY_CURRENT_EVENT: TypeAdapter[Event] = TypeAdapter(
    # A union over a runtime tuple: neither the | operator nor a type checker has a spelling for it.
    Annotated[Union[tuple(ALL_EVENTS)], Field(discriminator="event_type")]  # type: ignore[arg-type]  # noqa: UP007
)
_ENCODE_OPTIONS = orjson.OPT_SORT_KEYS
_max_inline_bytes = DEFAULT_MAX_INLINE_BYTES

E = TypeVar("E", bound=Event)


def set_max_inline_bytes(limit: int) -> None:
    """Change the process-wide inline limit used when ``max_inline_bytes`` is not passed."""
    global _max_inline_bytes
    if limit <= 0:
        raise ValueError(f"max_inline_bytes must be positive, got {limit}")
    _max_inline_bytes = limit


def get_max_inline_bytes() -> int:
    """The process-wide inline limit in bytes."""
    return _max_inline_bytes


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_depth(data: bytes) -> int:
    """How deeply arrays and objects nest in JSON ``data`` (brackets inside strings do not count); no parse."""
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(1 if b in b"[{" else -1 for b in brackets), default=0)


def _check_depth(data: bytes, what: str) -> None:
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING_DEPTH:  # the common case, counted at C speed
        return
    depth = nesting_depth(data)
    if depth > MAX_NESTING_DEPTH:
        raise MalformedEvent(f"{what} nests arrays/objects {depth} deep; the limit is {MAX_NESTING_DEPTH}")


def encode(event: Event, *, max_inline_bytes: int | None = None) -> bytes:
    """Canonical bytes of ``event``: equal events give equal bytes, and decode(encode(e)) == e."""
    try:
        data = orjson.dumps(event.model_dump(mode="json"), option=_ENCODE_OPTIONS)
    except orjson.JSONEncodeError as exc:  # e.g. an integer beyond 64 bits
        raise MalformedEvent(f"{event.event_type} cannot be encoded: {exc}") from None
    limit = _max_inline_bytes if max_inline_bytes is None else max_inline_bytes
    if len(data) > limit:
        raise PayloadTooLarge(event.event_type, len(data), limit)
    _check_depth(data, event.event_type)  # what decode would refuse is never written
    return data


def decode(data: bytes | str, *, max_inline_bytes: int | None = None) -> Event:
    """Read any event, upcasting old versions to the current model. Raises only ``SchemaError`` subclasses,
    whatever the bytes: every parser, upcaster and validator runs inside this guard."""
    try:
        return _decode(data, max_inline_bytes)
    except SchemaError:
        raise
    except Exception as exc:  # noqa: BLE001 - the contract: one bad record is a MalformedEvent, never a crash
        raise MalformedEvent(f"unreadable event ({type(exc).__name__}: {str(exc)[:500]})") from None


def _decode(data: bytes | str, max_inline_bytes: int | None) -> Event:
    try:
        raw_bytes = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    except UnicodeEncodeError as exc:
        raise MalformedEvent(f"not valid UTF-8 text: {exc}") from None
    limit = _max_inline_bytes if max_inline_bytes is None else max_inline_bytes
    if len(raw_bytes) > limit:  # checked before parsing, so an oversized message costs no parse
        raise PayloadTooLarge(None, len(raw_bytes), limit)
    _check_depth(raw_bytes, "the message")  # before parsing: no parser on the path meets deeper input
    try:
        return _ANY_CURRENT_EVENT.validate_json(raw_bytes)  # fast path: a current-version event
    except ValidationError as current_error:
        return _decode_slow(raw_bytes, current_error)


def decode_as(data: bytes | str, cls: type[E], *, max_inline_bytes: int | None = None) -> E:
    """Decode and check the type, for consumers that subscribe to one event type."""
    event = decode(data, max_inline_bytes=max_inline_bytes)
    if not isinstance(event, cls):
        raise UnexpectedEventType(cls.__name__, event.event_type)
    return event


def check_envelope(event: Event, *, declared_type: str | None, topic: str | None) -> None:
    """The record around an event must agree with it: the ``event_type`` header (when present) names the body's
    type, and a registry topic carries only its own event types. Raises ``EnvelopeMismatch`` otherwise, so live
    consumers (which filter by header) and replay (which reads bodies) can never see the record differently."""
    if declared_type is not None and declared_type != event.event_type:
        raise EnvelopeMismatch(
            f"the record's event_type header says {declared_type[:128]!r}, its body is a {event.event_type}"
        )
    if topic is not None and topic in TOPICS:
        home = TOPIC_OF_TYPE.get(event.event_type)
        if home != topic:
            raise EnvelopeMismatch(f"a {event.event_type} on topic {topic!r}; it belongs on {home!r}")


def _decode_slow(raw_bytes: bytes, current_error: ValidationError) -> Event:
    """Explain why the fast path failed, or upcast an old version and validate the result."""
    try:
        raw = orjson.loads(raw_bytes)
    except orjson.JSONDecodeError as exc:
        raise MalformedEvent(f"not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise MalformedEvent(f"an event is a JSON object, got {type(raw).__name__}")
    event_type, version = raw.get("event_type"), raw.get("schema_version")
    if not isinstance(event_type, str):
        raise MalformedEvent("missing or non-string 'event_type'", ("event_type",))
    cls = EVENT_TYPES.get(event_type)
    if cls is None:
        raise UnknownEventType(event_type)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise MalformedEvent(f"{event_type}: missing or invalid 'schema_version' {version!r}", ("schema_version",))
    current = CURRENT_VERSIONS[event_type]
    if version == current:
        raise _malformed(event_type, current_error, strip_tag=True) from None
    if version > current:
        raise UnsupportedSchemaVersion(event_type, version, current)
    what = f"{event_type} (upcast from v{version})"
    try:
        upcasted = upcast(raw, event_type, version, current)
    except (KeyError, TypeError, ValueError) as exc:  # an upcaster choking on a malformed old event
        raise MalformedEvent(f"{what}: {exc!r}") from None
    if upcasted is None:
        raise UnsupportedSchemaVersion(event_type, version, current)
    try:
        return cls.model_validate_json(orjson.dumps(upcasted))
    except ValidationError as exc:
        raise _malformed(what, exc, strip_tag=False) from None


def _malformed(what: str, error: ValidationError, *, strip_tag: bool) -> MalformedEvent:
    """A MalformedEvent whose message lists each bad field and why, e.g. ``steps: Input should be ...``."""
    fields: list[str] = []
    lines: list[str] = []
    for detail in error.errors(include_url=False, include_input=False):
        loc = detail["loc"][1:] if strip_tag else detail["loc"]
        field = ".".join(str(part) for part in loc) or "<event>"
        fields.append(field)
        lines.append(f"{field}: {detail['msg']}")
    return MalformedEvent(f"{what}: invalid event: " + "; ".join(lines), tuple(fields))
