"""Group commit for blob writers that publish in batches: one durability point per batch, not one per blob.

A blob must be durable before any event that references it is published. A writer that buffers its events and
publishes them in batches (a rollout worker's episode sink) only needs its blobs durable at each publish, so it
writes them through a :class:`GroupCommit` and calls ``sync`` just before publishing. On the local directory
store that turns an fsync per blob into one filesystem sync per batch; on a store whose puts are durable when
they return (S3) the view adds nothing and ``sync`` is free.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Protocol, runtime_checkable

from bus_schemas.blob_ref import BlobRef
from infra.blobs.port import BlobStore


@runtime_checkable
class BatchSyncedStore(Protocol):
    """A store that can write a blob now and make it durable later (``FileBlobStore``)."""

    def put_unsynced(self, data: bytes, media_type: str = "application/octet-stream") -> BlobRef: ...

    def sync(self) -> None: ...


class GroupCommit:
    """A :class:`~infra.blobs.port.BlobStore` whose ``put`` is durable only once ``sync`` returns."""

    def __init__(self, store: BlobStore) -> None:
        self.store = store
        self.url = store.url
        self._batched = store if isinstance(store, BatchSyncedStore) else None

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> BlobRef:
        if self._batched is not None:
            return self._batched.put_unsynced(data, media_type)
        return self.store.put(data, media_type)

    def sync(self) -> None:
        """Return once every blob put through this view (and any other not yet synced) is durable."""
        if self._batched is not None:
            self._batched.sync()

    def put_stream(self, stream: IO[bytes], media_type: str = "application/octet-stream") -> BlobRef:
        return self.store.put_stream(stream, media_type)  # large and rare (checkpoints): durable at once

    def get(self, address: str | BlobRef) -> bytes:
        return self.store.get(address)

    def open(self, address: str | BlobRef) -> Iterator[bytes]:
        return self.store.open(address)

    def stat(self, address: str | BlobRef) -> BlobRef:
        return self.store.stat(address)

    def exists(self, address: str | BlobRef) -> bool:
        return self.store.exists(address)
