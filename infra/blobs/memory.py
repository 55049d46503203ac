"""Blobs kept in this process's memory, content-addressed like the stores: for work whose blobs are not kept (a
re-render's contexts, a suite check's episodes)."""

from __future__ import annotations

import hashlib

from bus_schemas.blob_ref import BlobRef


class MemoryBlobs:
    """``put`` and ``get`` over a dict by sha256; ``data`` maps each digest to its bytes."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> BlobRef:
        digest = hashlib.sha256(data).hexdigest()
        self.data[digest] = data
        return BlobRef(sha256=digest, size=len(data), media_type=media_type)

    def get(self, address: BlobRef) -> bytes:
        return self.data[address.sha256]
