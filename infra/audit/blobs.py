"""Find every BlobRef an event carries and check that the blob exists and still matches its hash."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from bus_schemas.blob_ref import BlobRef
from bus_schemas.evidence import EVIDENCE_MEDIA_TYPE, referenced_blobs
from infra.blobs.errors import BlobStoreError
from infra.blobs.port import BlobStore


def blob_refs(value: Any) -> Iterator[BlobRef]:
    """Every BlobRef reachable from a model, list or dict, depth first."""
    if isinstance(value, BlobRef):
        yield value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from blob_refs(getattr(value, name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from blob_refs(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from blob_refs(item)


def check_blob(blobs: BlobStore, ref: BlobRef, nested: list[BlobRef] | None = None) -> str | None:
    """None when the blob is there with the right bytes and size; otherwise what is wrong.

    With ``nested``, the blobs this one points at are appended to it: lean evidence names its initial state,
    which must resolve to its bytes like any blob an event names.
    """
    try:
        data = blobs.get(ref)
    except BlobStoreError as exc:
        return f"{type(exc).__name__}: {exc}"
    if len(data) != ref.size:
        return f"blob {ref.sha256} has {len(data)} bytes, the event says {ref.size}"
    if nested is not None and ref.media_type == EVIDENCE_MEDIA_TYPE:
        try:
            nested += referenced_blobs(data)
        except ValueError as exc:
            return f"evidence blob {ref.sha256} is malformed: {str(exc)[:300]}"
    return None
