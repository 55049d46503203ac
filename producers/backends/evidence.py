"""Evidence on the wire: store a backend's evidence lean (initial state once per task instance, by content
address, plus the delta to the final state) and read either wire version back for the verifier.

Writing (rollout side): the initial state of a task instance is the same object for every episode of it (the
sandbox caches it per (task, seed)), so its canonical bytes and address are computed once per object and put
once per blob store; each episode then writes a few KB. Reading (verifier side): the initial state is fetched
and decoded only when a criterion reads it, and decoded states are cached by address (content-addressed, so a
cached state can never be stale); the final state is the initial one with the delta applied copy-on-write.
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Callable
from functools import cached_property
from typing import Any, Protocol

import orjson

from bus_schemas.blob_ref import BlobRef
from bus_schemas.evidence import EVIDENCE_MEDIA_TYPE, WORLD_STATE_MEDIA_TYPE, EvidenceV2, evidence_version
from producers.backends.base import Evidence

DIFF_DEPTH = 3
"""The delta is taken down to app -> collection -> record; a changed record is carried whole."""
_WRITE_CACHE = 256
_READ_CACHE = 64


class BlobPut(Protocol):
    def put(self, data: bytes, media_type: str) -> BlobRef: ...


class BlobGet(Protocol):
    def get(self, address: BlobRef) -> bytes: ...


def state_bytes(state: Any) -> bytes:
    """A state as compact JSON in its own key order (the order a v1 blob kept, which verdict details show).
    Backends build a task instance's state deterministically, so its bytes and address are stable across runs."""
    return orjson.dumps(state)


def state_delta(initial: Any, final: Any, depth: int = DIFF_DEPTH, path: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The changes that turn ``initial`` into ``final``; subtrees shared by identity are skipped unread."""
    if initial is final:
        return []
    if depth == 0 or not (isinstance(initial, dict) and isinstance(final, dict)):
        return [] if initial == final else [{"path": list(path), "op": "set", "value": final}]
    out: list[dict[str, Any]] = []
    for key in sorted(initial.keys() | final.keys()):
        if key not in final:
            out.append({"path": [*path, key], "op": "remove"})
        elif key not in initial:
            out.append({"path": [*path, key], "op": "set", "value": final[key]})
        else:
            out += state_delta(initial[key], final[key], depth - 1, (*path, key))
    return out


def apply_delta(initial: Any, changes: list[Any]) -> Any:
    """``initial`` with ``changes`` applied; only the dicts on a changed path are copied, ``initial`` is untouched."""
    if not changes:
        return initial
    root: dict[str, Any] = {"": initial}
    fresh = {id(root)}  # dicts made here (alive in the tree, so their ids stay unique): safe to write
    for change in changes:
        path, op = ["", *change.path], change.op
        node = root
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = {}
            if id(child) not in fresh:
                child = dict(child)
                fresh.add(id(child))
            node[key] = child
            node = child
        if op == "set":
            node[path[-1]] = change.value
        else:
            node.pop(path[-1], None)
    return root[""]


class _Written:
    """Initial states already turned into a blob (by object: the backend reuses one per task instance) and the
    blob stores that already hold each, so a task instance's state is serialised and put once per process.
    Contract: a backend never mutates an initial state it has handed out (the sandbox's is shared and frozen)."""

    def __init__(self) -> None:
        self.refs: OrderedDict[int, tuple[Any, BlobRef, bytes]] = OrderedDict()  # id -> (the state, kept alive)
        self.stored: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

    def ref(self, blobs: BlobPut, state: Any) -> BlobRef:
        hit = self.refs.get(id(state))
        if hit is None or hit[0] is not state:
            data = state_bytes(state)
            ref = _ref_of(data)
            hit = self.refs[id(state)] = (state, ref, data)
            if len(self.refs) > _WRITE_CACHE:
                self.refs.popitem(last=False)
        else:
            self.refs.move_to_end(id(state))
        _, ref, data = hit
        try:
            stored = self.stored.setdefault(blobs, set())
        except TypeError:  # a store that cannot be weakly referenced: put every time (a no-op when present)
            return blobs.put(data, WORLD_STATE_MEDIA_TYPE)
        if ref.sha256 not in stored:
            ref = blobs.put(data, WORLD_STATE_MEDIA_TYPE)
            stored.add(ref.sha256)
        return ref


def _ref_of(data: bytes) -> BlobRef:
    return BlobRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data), media_type=WORLD_STATE_MEDIA_TYPE)


_written = _Written()


def encode_evidence(blobs: BlobPut, evidence: Evidence) -> bytes:
    """The v2 blob of ``evidence``; its initial state is put in ``blobs`` first (once per task instance)."""
    lean = {
        "evidence_version": 2,
        "backend": evidence.backend,
        "initial_state": _written.ref(blobs, evidence.initial_state).model_dump(),
        "changes": state_delta(evidence.initial_state, evidence.final_state),
        "calls": evidence.calls,
        "state_hash": evidence.state_hash,
    }
    return orjson.dumps(lean)


def store_evidence(blobs: BlobPut, evidence: Evidence) -> BlobRef:
    """Write ``evidence`` lean; the returned reference goes into ``EpisodeEnded.final_state``."""
    return blobs.put(encode_evidence(blobs, evidence), EVIDENCE_MEDIA_TYPE)


class _Decoded:
    """Decoded initial states by content address (a few per round's task instances are live at once)."""

    def __init__(self) -> None:
        self.states: OrderedDict[str, Any] = OrderedDict()

    def get(self, blobs: BlobGet, ref: BlobRef) -> Any:
        state = self.states.get(ref.sha256)
        if state is None:
            state = self.states[ref.sha256] = orjson.loads(blobs.get(ref))  # get() checks the bytes' hash
            if len(self.states) > _READ_CACHE:
                self.states.popitem(last=False)
        else:
            self.states.move_to_end(ref.sha256)
        return state


_decoded = _Decoded()


class LeanEvidence:
    """v2 evidence as the verifier reads it: the same attributes as :class:`Evidence`, the states built lazily.

    Criteria that need no state (the no-collateral check reads :attr:`changed_paths`) never fetch the initial
    state; the final state is the initial one with the delta applied, sharing every untouched table.
    """

    def __init__(self, wire: EvidenceV2, load: Callable[[BlobRef], Any]) -> None:
        self.wire = wire
        self.backend = wire.backend
        self.calls = wire.calls
        self.state_hash = wire.state_hash
        self._load = load

    @cached_property
    def initial_state(self) -> Any:
        return self._load(self.wire.initial_state)

    @cached_property
    def final_state(self) -> Any:
        return apply_delta(self.initial_state, self.wire.changes)

    @cached_property
    def changed_paths(self) -> list[str]:
        """``/app/collection/key`` of every changed record (the paths ``world.diff`` names)."""
        return ["/" + "/".join(c.path) for c in self.wire.changes]

    def full(self) -> Evidence:
        """The v1 (full-state) form, e.g. to hand to code that wants an :class:`Evidence`."""
        return Evidence.model_construct(
            backend=self.backend,
            initial_state=self.initial_state,
            final_state=self.final_state,
            calls=self.calls,
            state_hash=self.state_hash,
        )


def decode_evidence(data: bytes, blobs: BlobGet) -> Evidence | LeanEvidence:
    """Either wire version; ValueError when the bytes are not backend evidence."""
    raw = orjson.loads(data)
    version = evidence_version(raw)
    if version == 1:
        if not {"backend", "initial_state", "final_state"} <= raw.keys() or raw.keys() - Evidence.model_fields.keys():
            raise ValueError("not backend evidence")
        return Evidence.model_construct(**raw)  # plain JSON already: skip re-validating every state value
    if version == 2:
        return LeanEvidence(EvidenceV2.model_validate(raw), lambda ref: _decoded.get(blobs, ref))
    raise ValueError(f"evidence version {version!r} is not one this reader knows")
