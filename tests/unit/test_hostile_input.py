"""Hostile input at the stores and the sandbox: corrupt blobs heal on the next put, unusable blob directories
are named errors, and sandbox tools called directly take only strictly typed, bounded arguments."""

from __future__ import annotations

import hashlib
import io
import sys
from pathlib import Path

import pytest

from bus_schemas.actions import ToolCall, ToolError
from infra.blobs.errors import BlobStoreError
from infra.blobs.filesystem import FileBlobStore
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.registry import MAX_ITEMS, MAX_TEXT_CHARS

sys.path.insert(0, str(Path(__file__).parent / "sandbox"))
from sandbox_support import GRANTED  # noqa: E402 - the sandbox tests' all-tools task

pytestmark = pytest.mark.unit

DATA = b"the bytes an event points at"
SHA = hashlib.sha256(DATA).hexdigest()


# -- blob stores: self-healing put -----------------------------------------------------------------


def test_a_put_overwrites_a_stored_blob_whose_bytes_no_longer_match_its_hash(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "blobs")
    store.put(DATA)
    stored = tmp_path / "blobs" / SHA[:2] / SHA[2:4] / SHA
    stored.write_bytes(b"X" * len(DATA))  # disk rot of the same size: the old put skipped the write
    store.put(DATA)
    assert store.get(SHA) == DATA


def test_a_put_restores_a_blob_whose_metadata_is_gone(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "blobs")
    store.put(DATA, "text/plain")
    (tmp_path / "blobs" / SHA[:2] / SHA[2:4] / f"{SHA}.meta").unlink()
    assert store.put(DATA, "text/plain").media_type == "text/plain" and store.get(SHA) == DATA


@pytest.mark.integration
def test_the_s3_store_heals_a_corrupted_object_too(real_stack, unique: str) -> None:
    from infra.blobs.s3 import S3BlobStore

    store = S3BlobStore(
        f"{real_stack.host}:{real_stack.s3_port}",
        "flywheel-blobs",
        access_key=real_stack.s3_access_key,
        secret_key=real_stack.s3_secret_key.get_secret_value(),
    )
    data = f"s3 bytes {unique}".encode()
    ref = store.put(data)
    store._client.put_object(store.bucket, store._key(ref.sha256), io.BytesIO(b"Y" * len(data)), len(data))
    store.put(data)
    assert store.get(ref) == data


def test_an_unwritable_blob_directory_is_a_blob_store_error_naming_it(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "blobs")
    (tmp_path / "blobs" / SHA[:2]).write_bytes(b"a file where a shard directory belongs")
    with pytest.raises(BlobStoreError, match=f"cannot write blob {SHA} to the blob directory file://"):
        store.put(DATA)


# -- sandbox tools: strict, bounded arguments ------------------------------------------------------


@pytest.fixture
def sandbox() -> SandboxBackend:
    backend = SandboxBackend()
    backend.reset(GRANTED)
    return backend


@pytest.mark.parametrize("limit", [True, "5", 5.5, None])
def test_an_integer_argument_takes_only_a_json_integer(sandbox: SandboxBackend, limit: object) -> None:
    observation = sandbox.step(ToolCall(name="notes.list_notes", args={"limit": limit}))
    assert observation.error is not None and observation.error.code == "invalid_argument"
    assert "limit" in observation.error.message


def test_well_typed_arguments_still_work(sandbox: SandboxBackend) -> None:
    assert sandbox.step(ToolCall(name="notes.list_notes", args={"limit": 5})).error is None
    slot = {"title": "Standup", "start": "2026-03-03T14:00", "end": "2026-03-03T14:30"}
    assert sandbox.step(ToolCall(name="calendar.create_event", args=slot)).error is None
    assert sandbox.step(ToolCall(name="calendar.list_day", args={"day": "2026-03-03"})).error is None


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"title": "x", "folder": "f" * 1_000_000}, f"folder: at most {MAX_TEXT_CHARS} characters"),
        ({"title": "x", "tags": ["t"] * (MAX_ITEMS + 1)}, f"tags: at most {MAX_ITEMS} items"),
        ({"title": "x", "tags": ["t" * (MAX_TEXT_CHARS + 1)]}, f"tags: at most {MAX_TEXT_CHARS} characters"),
    ],
)
def test_oversized_arguments_are_refused_and_nothing_is_stored(
    sandbox: SandboxBackend, args: dict, problem: str
) -> None:
    before = sandbox.state()
    observation = sandbox.step(ToolCall(name="notes.create_note", args=args))
    assert observation.error is not None and observation.error.code == "invalid_argument"
    assert problem in observation.error.message
    assert sandbox.state() == before


# -- model output the bus could not carry ------------------------------------------------------------------


def _nested_action(depth: int) -> str:
    """A tool call whose JSON nests ``depth`` levels (the action object is level 1)."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return f'<action>{{"kind": "tool_call", "name": "notes.add", "args": {{"text": {inner}}}}}</action>'


def test_an_action_nested_deeper_than_an_event_can_carry_is_a_parse_error() -> None:
    from bus_schemas.codec import MAX_NESTING_DEPTH, encode
    from bus_schemas.examples import build_examples
    from harness_service.actions.parser import ActionParser
    from producers.backends.base import ToolSpec

    tool = ToolSpec(name="notes.add", description="add", parameters={"type": "object"}, result_schema={}, writes=True)
    parser = ActionParser([tool])
    refused = parser.parse(_nested_action(MAX_NESTING_DEPTH))
    assert isinstance(refused, ToolError) and refused.code == "parse_error" and "nests deeper" in refused.message
    deepest = parser.parse(_nested_action(MAX_NESTING_DEPTH - 1))
    assert isinstance(deepest, ToolCall)
    encode(build_examples()["ActionTaken"].model_copy(update={"action": deepest}))  # the event still encodes
