"""Machine-readable contract for non-Python tools: one JSON Schema per event type and an AsyncAPI 3 document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic.json_schema import models_json_schema

from bus_schemas.codec import CURRENT_VERSIONS, EVENT_TYPES
from bus_schemas.topics import TOPICS

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
ASYNCAPI_FILE = "asyncapi.json"
_KAFKA_BINDING_VERSION = "0.5.0"


def event_json_schema(event_type: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) a message of ``event_type`` at its current version satisfies."""
    schema = EVENT_TYPES[event_type].model_json_schema(mode="validation")
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": schema_file_name(event_type), **schema}


def schema_file_name(event_type: str) -> str:
    return f"{event_type}.v{CURRENT_VERSIONS[event_type]}.schema.json"


def asyncapi_document(version: str = "0.1.0") -> dict[str, Any]:
    """An AsyncAPI 3.0 document: one channel per topic, one message per event type, Kafka bindings."""
    _, defs = models_json_schema(
        [(cls, "validation") for cls in EVENT_TYPES.values()], ref_template="#/components/schemas/{model}"
    )
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for topic in TOPICS.values():
        channels[topic.name] = {
            "address": topic.name,
            "description": topic.description,
            "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in topic.event_types},
            "bindings": {
                "kafka": {
                    "topic": topic.name,
                    "partitions": topic.partitions,
                    "topicConfiguration": {"retention.ms": topic.retention_ms},
                    "bindingVersion": _KAFKA_BINDING_VERSION,
                }
            },
        }
        operations[f"publish_{topic.name.replace('-', '_')}"] = {
            "action": "send",
            "channel": {"$ref": f"#/channels/{topic.name}"},
            "messages": [{"$ref": f"#/channels/{topic.name}/messages/{name}"} for name in topic.event_types],
        }
        for name in topic.event_types:
            cls = EVENT_TYPES[name]
            messages[name] = {
                "name": name,
                "title": name,
                "summary": (cls.__doc__ or name).strip().splitlines()[0],
                "contentType": "application/json",
                "payload": {"$ref": f"#/components/schemas/{name}"},
                "bindings": {
                    "kafka": {
                        "key": {"type": "string", "description": f"the event's {topic.key_field}"},
                        "bindingVersion": _KAFKA_BINDING_VERSION,
                    }
                },
                "x-schema-version": CURRENT_VERSIONS[name],
            }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "planner-flywheel events",
            "version": version,
            "description": "Every event of the planner-flywheel loop, by topic. Keys and retention are the stack's.",
        },
        "defaultContentType": "application/json",
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": defs["$defs"]},
    }


def export(directory: Path | str) -> list[Path]:
    """Write every event's JSON Schema and ``asyncapi.json`` into ``directory``; returns the written paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for event_type in EVENT_TYPES:
        written.append(_write_json(out / schema_file_name(event_type), event_json_schema(event_type)))
    written.append(_write_json(out / ASYNCAPI_FILE, asyncapi_document()))
    return written


def _write_json(path: Path, document: dict[str, Any]) -> Path:
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    return path
