"""The blob store contract, run against the local directory and the real S3 server (SeaweedFS) alike."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

from bus_schemas.blob_ref import BlobRef
from infra.blobs.errors import BlobCorrupted, BlobNotFound, InvalidBlobAddress

pytestmark = pytest.mark.contract


def _corrupt(blobs, sha: str, data: bytes) -> None:
    """Overwrite a stored blob behind the adapter's back, as disk rot or a bad copy would."""
    if blobs.url.startswith("file://"):
        (blobs.root / sha[:2] / sha[2:4] / sha).write_bytes(data)
    else:
        s3 = blobs.inner  # the S3 adapter behind the outage-retrying wrapper
        s3._client.put_object(s3.bucket, s3._key(sha), io.BytesIO(data), len(data))


def test_round_trip_by_content_address(blobs, unique):
    data = f"context for episode {unique}".encode()
    ref = blobs.put(data, "text/plain")
    assert ref == BlobRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data), media_type="text/plain")
    assert blobs.exists(ref) and blobs.exists(ref.sha256)
    assert blobs.get(ref) == data
    assert blobs.stat(ref.sha256) == ref
    assert blobs.put(data, "text/plain") == ref  # idempotent


def test_large_blobs_stream_both_ways(blobs, unique):
    payload = os.urandom(3 * 1024 * 1024) + unique.encode()
    ref = blobs.put_stream(io.BytesIO(payload), "application/octet-stream")
    assert ref.size == len(payload)
    assert ref.sha256 == hashlib.sha256(payload).hexdigest()
    chunks = list(blobs.open(ref))
    assert len(chunks) > 1
    assert b"".join(chunks) == payload


def test_missing_blob_raises_not_found(blobs):
    sha = hashlib.sha256(b"never stored " + os.urandom(8)).hexdigest()
    assert not blobs.exists(sha)
    with pytest.raises(BlobNotFound, match=sha):
        blobs.get(sha)
    with pytest.raises(BlobNotFound):
        blobs.stat(sha)


def test_corrupted_blob_is_detected_on_read(blobs, unique):
    ref = blobs.put(f"trajectory {unique}".encode(), "application/json")
    _corrupt(blobs, ref.sha256, b"tampered bytes")
    with pytest.raises(BlobCorrupted, match=ref.sha256):
        blobs.get(ref)
    with pytest.raises(BlobCorrupted):
        b"".join(blobs.open(ref))


@pytest.mark.parametrize("address", ["../../etc/passwd", "a" * 63, "A" * 64, "", "sha256/" + "a" * 64])
def test_only_content_hashes_are_accepted_as_addresses(blobs, address):
    with pytest.raises(InvalidBlobAddress):
        blobs.get(address)
    with pytest.raises(InvalidBlobAddress):
        blobs.exists(address)
