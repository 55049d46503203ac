"""Turn a record a consumer gave up on into a DeadLettered event, its bytes kept in the blob store."""

from __future__ import annotations

import orjson

from bus_schemas.envelope import Producer
from bus_schemas.events import DeadLettered
from infra.blobs.port import BlobStore
from infra.bus.records import Record

_HEAD_KEYS = ("event_type", "event_id", "run_id")


def _text(value: str) -> str:
    """``value`` with lone surrogates (which no UTF-8 writer accepts) replaced, so the dead letter encodes."""
    return value.encode("utf-8", "replace").decode("utf-8")


def dead_letter(
    record: Record,
    *,
    error: BaseException,
    attempts: int,
    group: str,
    producer: Producer,
    blobs: BlobStore,
) -> DeadLettered:
    """The payload blob is written first, so the dead letter never points at a missing blob."""
    payload = blobs.put(record.value, "application/octet-stream")
    event_type: str | None = None
    event_id: str | None = None
    run_id = "unknown"
    try:
        head = orjson.loads(record.value)
        if isinstance(head, dict):
            event_type, event_id, rid = (v if isinstance(v := head.get(k), str) else None for k in _HEAD_KEYS)
            run_id = rid or run_id
    except orjson.JSONDecodeError:  # also raised for nesting deeper than orjson reads
        pass
    return DeadLettered(
        producer=producer,
        run_id=_text(run_id)[:128],
        causation_id=None,
        original_topic=record.topic,
        original_partition=record.partition,
        original_offset=record.offset,
        original_key=(record.key or b"").decode("utf-8", "replace")[:1024],
        original_event_type=(event_type or None) and _text(event_type)[:128],
        original_event_id=(event_id or None) and _text(event_id)[:128],
        consumer_group=group,
        error_type=type(error).__name__,
        error=_text(str(error))[:4000] or type(error).__name__,
        attempts=attempts,
        payload=payload,
    )
