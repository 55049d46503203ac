"""The narrow ports the harness writes through; ``infra`` provides the real adapters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event


class BlobSink(Protocol):
    """Stores bytes content-addressed and returns their reference (durable before it returns)."""

    def put(self, data: bytes, media_type: str) -> BlobRef: ...


EventSink = Callable[[Event], None]
"""Publishes one event; called in episode order, after the blobs it references were put."""


class BlobSource(Protocol):
    """Reads a blob back by its reference (e.g. a published harness config)."""

    def get(self, address: BlobRef) -> bytes: ...
