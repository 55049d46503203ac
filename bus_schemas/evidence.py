"""The evidence blob (``EpisodeEnded.final_state``): what the verifier judges, in two wire versions.

v1 (no ``evidence_version`` key): ``{"backend", "initial_state", "final_state", "calls", "state_hash"}`` with
both world states in full (~121 KB per sandbox episode). v2: the initial state by reference (a
``WORLD_STATE_MEDIA_TYPE`` blob, content-addressed, so it is stored once per task instance), plus the changes
that turn it into the final state (~0.7 KB per sandbox episode). v1 blobs stay readable forever: the reader
dispatches on the version (``producers/backends/evidence.py``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from bus_schemas.blob_ref import BlobRef

EVIDENCE_MEDIA_TYPE = "application/vnd.flywheel.evidence+json"
WORLD_STATE_MEDIA_TYPE = "application/vnd.flywheel.world-state+json"
"""A whole world state as compact JSON, keys in the backend's own order."""
EVIDENCE_VERSION = 2
MAX_PATH_DEPTH = 8


class StateDelta(BaseModel):
    """One change from the initial state: set (add or replace) or remove the value at ``path`` (keys from the root)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Annotated[list[Annotated[str, Field(max_length=512)]], Field(max_length=MAX_PATH_DEPTH)]
    op: Literal["set", "remove"]
    value: JsonValue = None


class EvidenceV2(BaseModel):
    """Lean evidence: initial state by reference, the delta to the final state, every call and its outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence_version: Literal[2] = 2
    backend: Annotated[str, Field(min_length=1, max_length=128)]
    initial_state: BlobRef
    changes: list[StateDelta] = Field(default_factory=list)
    calls: list[dict[str, JsonValue]] = Field(default_factory=list)
    state_hash: str = ""  # the final state's hash, as the backend computed it


def evidence_version(raw: Any) -> int:
    """1 for full-state evidence (it predates the version key), else the blob's ``evidence_version``."""
    return raw.get("evidence_version", 1) if isinstance(raw, dict) else 0


def referenced_blobs(data: bytes) -> list[BlobRef]:
    """The blobs an evidence blob points at: its initial state for v2, none for v1 or bytes that are not JSON.

    Raises ValueError (pydantic's ValidationError) when the blob claims a version it does not hold to.
    """
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        return []
    if evidence_version(raw) in (0, 1):
        return []
    return [EvidenceV2.model_validate(raw).initial_state]
