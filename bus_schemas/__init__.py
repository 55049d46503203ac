"""The event contract of planner-flywheel: envelope, every event model, wire codec, versions and topics.

This package imports nothing else of the project, so every service can depend on it.
"""

from __future__ import annotations

from bus_schemas.actions import (
    Action,
    Clarify,
    ErrorCode,
    Finish,
    MemoryRead,
    MemoryWrite,
    Refuse,
    SkillLoad,
    StateChange,
    SubagentResult,
    SubagentSpawn,
    ToolCall,
    ToolError,
)
from bus_schemas.blob_ref import BlobRef
from bus_schemas.codec import (
    CURRENT_VERSIONS,
    DEFAULT_MAX_INLINE_BYTES,
    EVENT_TYPES,
    check_envelope,
    decode,
    decode_as,
    encode,
    get_max_inline_bytes,
    set_max_inline_bytes,
)
from bus_schemas.envelope import Event, Producer, correlate, new_event_id
from bus_schemas.errors import (
    EnvelopeMismatch,
    MalformedEvent,
    PayloadTooLarge,
    SchemaError,
    UnexpectedEventType,
    UnknownEventType,
    UnsupportedSchemaVersion,
)
from bus_schemas.events import *  # noqa: F403 - the event models are the package's main export
from bus_schemas.events import __all__ as _event_names
from bus_schemas.json_types import JsonData
from bus_schemas.topics import (
    TOPIC_CURATION,
    TOPIC_DEAD_LETTERS,
    TOPIC_DIAGNOSES,
    TOPIC_EPISODES,
    TOPIC_HARNESS,
    TOPIC_MODELS,
    TOPIC_ROLLOUTS,
    TOPIC_ROUNDS,
    TOPIC_SAMPLING,
    TOPIC_TASKS,
    TOPIC_VERDICTS,
    TOPICS,
    TopicSpec,
    route,
    topic_for,
)

__all__ = [
    *_event_names,
    "Action",
    "BlobRef",
    "CURRENT_VERSIONS",
    "Clarify",
    "DEFAULT_MAX_INLINE_BYTES",
    "EVENT_TYPES",
    "EnvelopeMismatch",
    "ErrorCode",
    "Event",
    "Finish",
    "JsonData",
    "MalformedEvent",
    "MemoryRead",
    "MemoryWrite",
    "PayloadTooLarge",
    "Producer",
    "Refuse",
    "SchemaError",
    "SkillLoad",
    "StateChange",
    "SubagentResult",
    "SubagentSpawn",
    "TOPICS",
    "TOPIC_CURATION",
    "TOPIC_DEAD_LETTERS",
    "TOPIC_DIAGNOSES",
    "TOPIC_EPISODES",
    "TOPIC_HARNESS",
    "TOPIC_MODELS",
    "TOPIC_ROLLOUTS",
    "TOPIC_ROUNDS",
    "TOPIC_SAMPLING",
    "TOPIC_TASKS",
    "TOPIC_VERDICTS",
    "ToolCall",
    "ToolError",
    "TopicSpec",
    "UnexpectedEventType",
    "UnknownEventType",
    "UnsupportedSchemaVersion",
    "check_envelope",
    "correlate",
    "decode",
    "decode_as",
    "encode",
    "get_max_inline_bytes",
    "new_event_id",
    "route",
    "set_max_inline_bytes",
    "topic_for",
]
