"""Group commit on the local blob directory: unsynced puts are readable at once and durable after one sync."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import threading
from pathlib import Path

import pytest

from infra.blobs import filesystem
from infra.blobs.errors import BlobStoreError
from infra.blobs.filesystem import FileBlobStore
from infra.blobs.group_commit import GroupCommit
from infra.blobs.retrying import RetryingBlobStore

pytestmark = pytest.mark.unit


def _fsynced_paths(monkeypatch) -> list[str]:
    """Record the path of every fd passed to os.fsync (then fsync it for real)."""
    seen: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(filesystem.os, "fsync", fsync)
    return seen


def test_an_unsynced_put_is_readable_at_once_and_owed_until_a_sync(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    data = b"context of step 1"
    ref = store.put_unsynced(data, "text/plain")
    assert ref.sha256 == hashlib.sha256(data).hexdigest() and store.get(ref) == data
    assert store.stat(ref) == ref
    assert {p.name for p in store._unsynced} == {ref.sha256, f"{ref.sha256}.meta"}
    store.sync()
    assert store._unsynced == [] and store.get(ref) == data
    store.sync()  # nothing owed: nothing to do
    assert not [p for p in tmp_path.rglob("*.tmp")], "no temporary file is left behind"


def test_without_syncfs_each_unsynced_file_and_its_directory_is_fsynced(tmp_path: Path, monkeypatch) -> None:
    store = FileBlobStore(tmp_path)
    refs = [store.put_unsynced(f"blob {i}".encode(), "text/plain") for i in range(3)]
    monkeypatch.setattr(filesystem, "_SYNCFS", None)
    fsynced = _fsynced_paths(monkeypatch)
    store.sync()
    for ref in refs:
        leaf = tmp_path / ref.sha256[:2] / ref.sha256[2:4]
        assert {str(leaf / ref.sha256), str(leaf / f"{ref.sha256}.meta"), str(leaf)} <= set(fsynced)
    assert store._unsynced == []


def test_a_durable_put_of_bytes_another_writer_left_unsynced_syncs_them(tmp_path: Path, monkeypatch) -> None:
    store = FileBlobStore(tmp_path)
    ref = store.put_unsynced(b"shared bytes", "text/plain")
    monkeypatch.setattr(filesystem, "_SYNCFS", None)
    fsynced = _fsynced_paths(monkeypatch)
    assert store.put(b"shared bytes", "text/plain") == ref
    assert store._unsynced == [] and any(p.endswith(ref.sha256) for p in fsynced)


def test_a_failed_sync_raises_a_clear_error_and_is_owed_again(tmp_path: Path, monkeypatch) -> None:
    store = FileBlobStore(tmp_path)
    ref = store.put_unsynced(b"evidence", "application/json")

    def failing_syncfs(fd: int) -> int:
        ctypes.set_errno(errno.EIO)
        return -1

    monkeypatch.setattr(filesystem, "_SYNCFS", failing_syncfs)
    with pytest.raises(BlobStoreError, match=r"cannot make blobs durable in the blob directory .*Input/output error"):
        store.sync()
    assert {p.name for p in store._unsynced} == {ref.sha256, f"{ref.sha256}.meta"}, "still owed"
    monkeypatch.undo()
    store.sync()
    assert store._unsynced == []


def test_a_durable_put_fsyncs_its_bytes_before_returning(tmp_path: Path, monkeypatch) -> None:
    store = FileBlobStore(tmp_path)
    fsynced = _fsynced_paths(monkeypatch)
    ref = store.put(b"a checkpoint manifest", "text/plain")
    assert len(fsynced) == 1 and Path(fsynced[0]).name.startswith(f"{ref.sha256}.")  # the temporary file, renamed
    assert store._unsynced == []


def test_group_commit_defers_on_the_directory_and_passes_other_stores_through(tmp_path: Path, monkeypatch) -> None:
    store = FileBlobStore(tmp_path / "a")
    batched = GroupCommit(store)
    ref = batched.put(b"raw output", "text/plain")
    assert batched.url == store.url and batched.get(ref) == b"raw output" and batched.exists(ref)
    assert store._unsynced, "deferred to the batch's sync"
    batched.sync()
    assert store._unsynced == []

    inner = FileBlobStore(tmp_path / "b")
    fsynced = _fsynced_paths(monkeypatch)
    through = GroupCommit(RetryingBlobStore(inner))  # not a store that syncs in batches: every put is durable
    through.put(b"raw output", "text/plain")
    assert inner._unsynced == [] and len(fsynced) == 1
    through.sync()


def test_a_killed_writers_leftover_temporary_file_does_not_block_a_later_put(tmp_path: Path) -> None:
    """A writer killed mid-write leaves ``<path>.<token>...tmp``; a later process (maybe with the same pid and
    thread ident, counting from 0 again) still writes the same blob."""
    store = FileBlobStore(tmp_path)
    data = b"a context the killed worker was writing"
    sha = hashlib.sha256(data).hexdigest()
    leaf = tmp_path / sha[:2] / sha[2:4]
    leaf.mkdir(parents=True)
    for name in (sha, f"{sha}.meta"):  # what the old pid-only naming would have collided with
        (leaf / f"{name}.{os.getpid()}.{threading.get_ident()}.0.tmp").write_bytes(b"half")
    assert store.put(data, "text/plain").sha256 == sha and store.get(sha) == data
