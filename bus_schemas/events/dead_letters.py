"""Dead letters (topic ``dead-letters``): messages a consumer gave up on, with the bytes kept in a blob."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Count, Event, Name, Text


class DeadLettered(Event):
    """A poison message: where it was, why it failed, and its original bytes (``payload``) for ops to inspect."""

    event_type: Literal["DeadLettered"] = "DeadLettered"
    schema_version: Literal[1] = 1
    original_topic: Name
    original_partition: Annotated[int, Field(ge=0)]
    original_offset: Count
    original_key: Annotated[str, Field(max_length=1024)] = ""  # "" when the message had no key
    original_event_type: Name | None = None  # None when it could not be decoded
    original_event_id: Name | None = None
    consumer_group: Name
    error_type: Name  # e.g. "UnknownEventType"
    error: Text
    attempts: Annotated[int, Field(ge=1)]
    payload: BlobRef
