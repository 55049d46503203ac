"""The blob store port: put/get/stat/exists by sha256 content address, streaming for large blobs."""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
from collections.abc import Iterator
from typing import IO, Protocol, runtime_checkable

from bus_schemas.blob_ref import SHA256_HEX, BlobRef
from infra.blobs.errors import BlobCorrupted, BlobNotFound, InvalidBlobAddress

CHUNK = 1024 * 1024
# Bodies up to this size are hashed in memory; larger streams are spooled to a temporary file first.
SPOOL_IN_MEMORY = 8 * 1024 * 1024


@runtime_checkable
class BlobStore(Protocol):
    url: str

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> BlobRef:
        """Store bytes under their sha256; storing the same bytes twice is a no-op."""
        ...

    def put_stream(self, stream: IO[bytes], media_type: str = "application/octet-stream") -> BlobRef:
        """Store a stream of any size without holding it in memory."""
        ...

    def get(self, address: str | BlobRef) -> bytes:
        """The blob's bytes, checked against their hash (BlobNotFound / BlobCorrupted otherwise)."""
        ...

    def open(self, address: str | BlobRef) -> Iterator[bytes]:
        """The blob in chunks; raises BlobCorrupted after the last chunk if the hash does not match."""
        ...

    def stat(self, address: str | BlobRef) -> BlobRef: ...

    def exists(self, address: str | BlobRef) -> bool: ...


class ContentAddressedStore:
    """Hashing shared by the adapters: they implement ``_store(sha, size, body, media_type)``."""

    def put(self, data: bytes, media_type: str = "application/octet-stream") -> BlobRef:
        return self._store(hashlib.sha256(data).hexdigest(), len(data), io.BytesIO(data), media_type)

    def put_stream(self, stream: IO[bytes], media_type: str = "application/octet-stream") -> BlobRef:
        sha, size, spooled = spool(stream)
        with spooled:
            return self._store(sha, size, spooled, media_type)

    def _store(self, sha: str, size: int, body: IO[bytes], media_type: str) -> BlobRef:
        raise NotImplementedError

    def open(self, address: str | BlobRef) -> Iterator[bytes]:
        raise NotImplementedError

    def intact(self, sha: str) -> bool:
        """Whether a blob is stored with bytes that still hash to ``sha``. A put of the same bytes skips the
        write only then: a corrupted object is overwritten (self-healing put), never reported as stored."""
        try:
            for _ in self.open(sha):
                pass
        except (BlobCorrupted, BlobNotFound):
            return False
        return True


def address_of(address: str | BlobRef) -> str:
    """The validated sha256 of an address; anything else is refused before it can reach a path or key."""
    sha = address.sha256 if isinstance(address, BlobRef) else address
    if not isinstance(sha, str) or not SHA256_HEX.match(sha):
        raise InvalidBlobAddress(f"not a sha256 content address: {sha!r}")
    return sha


def spool(stream: IO[bytes]) -> tuple[str, int, IO[bytes]]:
    """Hash a stream while copying it to a rewindable spooled temporary file: (sha256, size, file)."""
    digest = hashlib.sha256()
    size = 0
    spooled = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
    while chunk := stream.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
        spooled.write(chunk)
    spooled.seek(0)
    return digest.hexdigest(), size, spooled


def verified_chunks(sha: str, chunks: Iterator[bytes], where: str) -> Iterator[bytes]:
    """Pass chunks through, hashing them; raise BlobCorrupted at the end if they do not match ``sha``."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
        yield chunk
    if digest.hexdigest() != sha:
        raise BlobCorrupted(f"blob {sha} in {where} is corrupted: its bytes hash to {digest.hexdigest()}")


def check_bytes(sha: str, data: bytes, where: str) -> bytes:
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha:
        raise BlobCorrupted(f"blob {sha} in {where} is corrupted: its bytes hash to {actual}")
    return data


def copy_stream(src: IO[bytes], dst: IO[bytes]) -> None:
    shutil.copyfileobj(src, dst, CHUNK)
