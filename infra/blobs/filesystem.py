"""The embedded blob store: a local directory, ``<root>/<aa>/<bb>/<sha256>``, written atomically.

A ``put`` is durable when it returns (the bytes are fsynced). A writer that publishes the events referencing its
blobs in batches can instead put them unsynced and make a whole batch durable at once before publishing it
(``put_unsynced`` then ``sync``, as ``infra.blobs.group_commit.GroupCommit`` does): one filesystem sync per batch
costs about what a single fsync does.
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import itertools
import os
import secrets
import sys
import threading
from collections.abc import Callable, Iterator
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
        self._unsynced: list[Path] = []  # written by put_unsynced since the last sync, with their directories
        self._sync_lock = threading.Lock()
        self._tmp_names = itertools.count()

    def put_unsynced(self, data: bytes, media_type: str = "application/octet-stream") -> BlobRef:
        """``put`` without its fsync: readable at once, durable only after the next ``sync`` (of any thread)."""
        return self._store(hashlib.sha256(data).hexdigest(), len(data), io.BytesIO(data), media_type, durable=False)

    def sync(self) -> None:
        """Make every ``put_unsynced`` blob (and its directory entry) durable; returns when they are. One
        ``syncfs`` of the store's filesystem on Linux, an fsync of each file and directory elsewhere. Syncs are
        serialised: a caller whose blob is covered by another thread's sync in flight waits for it to end."""
        with self._sync_lock:
            pending, self._unsynced = self._unsynced, []
            if not pending:
                return
            try:
                _sync_paths(self.root, pending)
            except OSError as exc:
                self._unsynced = pending + self._unsynced  # still owed: the next sync tries again
                raise BlobStoreError(f"cannot make blobs durable in the blob directory {self.url}: {exc}") from exc

    def _path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha[2:4] / sha

    def _meta(self, sha: str) -> Path:
        return self.root / sha[:2] / sha[2:4] / f"{sha}.meta"

    def _store(self, sha: str, size: int, body: IO[bytes], media_type: str, durable: bool = True) -> BlobRef:
        try:
            return self._write(sha, size, body, media_type, durable)
        except OSError as exc:  # read-only or full disk, permissions: say which store and what to do
            raise BlobStoreError(
                f"cannot write blob {sha} to the blob directory {self.url}: {exc.strerror or exc}; "
                "check that the directory is writable and has space"
            ) from exc

    def _write(self, sha: str, size: int, body: IO[bytes], media_type: str, durable: bool) -> BlobRef:
        ref = BlobRef(sha256=sha, size=size, media_type=media_type)
        path, meta = self._path(sha), self._meta(sha)
        if path.exists() and path.stat().st_size == size and meta.exists() and self.intact(sha):
            if durable:  # it may be another writer's put_unsynced, still owed its sync
                self.sync()
            return self.stat(sha)
        self._atomic_write(str(meta), lambda out: out.write(orjson.dumps({"size": size, "media_type": media_type})))
        self._atomic_write(str(path), lambda out: copy_stream(body, out), fsync=durable)
        if not durable:
            with self._sync_lock:
                self._unsynced += (meta, path)
        return ref

    def _atomic_write(self, path: str, write: Callable[[IO[bytes]], object], fsync: bool = False) -> None:
        """``write`` into a temporary file beside ``path``, then rename it over ``path``: readers see all or
        nothing. The name is unique per process, thread and call, and across restarts (a random token drawn
        once per process: a killed writer's leftover never collides with a later process that got its pid); the
        fan-out directory is made only when opening the first file in it fails (no mkdir per blob)."""
        tmp = f"{path}.{_process_token()}.{threading.get_ident()}.{next(self._tmp_names)}.tmp"
        try:
            out = open(tmp, "xb")  # noqa: SIM115 (closed below, after the retry)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            out = open(tmp, "xb")  # noqa: SIM115
        with out:
            write(out)
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, path)

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


_TOKENS: dict[int, str] = {}


def _process_token() -> str:
    """``<pid>-<random>``, drawn once per process (a forked child draws its own)."""
    pid = os.getpid()
    token = _TOKENS.get(pid)
    if token is None:
        token = _TOKENS[pid] = f"{pid}-{secrets.token_hex(4)}"
    return token


def _syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs`` (Linux): flushes one filesystem, data and metadata, and reports writeback errors."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = [ctypes.c_int], ctypes.c_int
    return function


_SYNCFS = _syncfs()


def _sync_paths(root: Path, paths: list[Path]) -> None:
    """Make ``paths`` and their directory entries durable."""
    if _SYNCFS is not None:
        fd = os.open(root, os.O_RDONLY)
        try:
            if _SYNCFS(fd) != 0:
                errno = ctypes.get_errno()
                raise OSError(errno, os.strerror(errno))
        finally:
            os.close(fd)
        return
    for path in [*paths, *{p.parent for p in paths}]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
