"""The embedded blob store: a local directory, ``<root>/<aa>/<bb>/<sha256>``, written atomically."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import orjson

from bus_schemas.blob_ref import BlobRef
from infra.blobs.errors import BlobNotFound, BlobStoreError, BlobStoreUnavailable
from infra.blobs.port import CHUNK, ContentAddressedStore, address_of, check_bytes, copy_stream, verified_chunks


class FileBlobStore(ContentAddressedStore):
    """A :class:`~infra.blobs.port.BlobStore` in a directory (``file:///path``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.url = f"file://{self.root}" if self.root.is_absolute() else f"file:{self.root}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BlobStoreUnavailable(f"cannot use the blob directory {self.url}: {exc}") from exc

    def _path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha[2:4] / sha

    def _meta(self, sha: str) -> Path:
        return self.root / sha[:2] / sha[2:4] / f"{sha}.meta"

    def _store(self, sha: str, size: int, body: IO[bytes], media_type: str) -> BlobRef:
        try:
            return self._write(sha, size, body, media_type)
        except OSError as exc:  # read-only or full disk, permissions: say which store and what to do
            raise BlobStoreError(
                f"cannot write blob {sha} to the blob directory {self.url}: {exc.strerror or exc}; "
                "check that the directory is writable and has space"
            ) from exc

    def _write(self, sha: str, size: int, body: IO[bytes], media_type: str) -> BlobRef:
        ref = BlobRef(sha256=sha, size=size, media_type=media_type)
        path = self._path(sha)
        if path.exists() and path.stat().st_size == size and self._meta(sha).exists() and self.intact(sha):
            return self.stat(sha)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._atomic_write(self._meta(sha), orjson.dumps({"size": size, "media_type": media_type}))
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
            copy_stream(body, tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp.name, path)
        return ref

    @staticmethod
    def _atomic_write(path: Path, data: bytes) -> None:
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, path)

    def get(self, address: str | BlobRef) -> bytes:
        sha = address_of(address)
        try:
            data = self._path(sha).read_bytes()
        except FileNotFoundError:
            raise BlobNotFound(f"blob {sha} not found in {self.url}") from None
        return check_bytes(sha, data, self.url)

    def open(self, address: str | BlobRef) -> Iterator[bytes]:
        sha = address_of(address)
        try:
            handle = self._path(sha).open("rb")
        except FileNotFoundError:
            raise BlobNotFound(f"blob {sha} not found in {self.url}") from None

        def chunks() -> Iterator[bytes]:
            with handle:
                while chunk := handle.read(CHUNK):
                    yield chunk

        return verified_chunks(sha, chunks(), self.url)

    def stat(self, address: str | BlobRef) -> BlobRef:
        sha = address_of(address)
        try:
            meta = orjson.loads(self._meta(sha).read_bytes())
            size = self._path(sha).stat().st_size
        except FileNotFoundError:
            raise BlobNotFound(f"blob {sha} not found in {self.url}") from None
        return BlobRef(sha256=sha, size=size, media_type=meta["media_type"])

    def exists(self, address: str | BlobRef) -> bool:
        return self._path(address_of(address)).exists()
