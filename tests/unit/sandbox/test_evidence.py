"""Lean evidence (v2): the initial state once per task instance by content address plus the delta; verdicts equal
those of full-state evidence, old (v1) blobs stay verifiable, and the audit checks the blobs evidence points at."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bus_schemas.evidence import EVIDENCE_MEDIA_TYPE, WORLD_STATE_MEDIA_TYPE, EvidenceV2, referenced_blobs
from consumers.common.recording import record_episode
from consumers.verifier.spec import Verifier
from infra.audit.replay import ReplayReport, Scope, verify_blobs
from infra.bootstrap import Ports, open_blob_store, open_bus
from infra.events import ensure_topics, publish_all
from producers.backends.evidence import LeanEvidence, apply_delta, decode_evidence, state_delta
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.verify import verify
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

pytestmark = pytest.mark.unit


@pytest.fixture
def ports(tmp_path):
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    yield Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), registry=None)  # type: ignore[arg-type]
    bus.close()


def _suite():
    return build_task_suite("evidence")


def test_lean_evidence_is_small_and_the_initial_state_is_stored_once_per_task_instance(ports):
    task = next(t for t in _suite() if t.split == "train")
    backend = SandboxBackend()
    ends = [
        record_episode(task, p, ports.blobs, episode_id=f"ep-{i}", backend=backend)[-1]
        for i, p in enumerate((reference_solver, noop_policy, reference_solver))
    ]
    full = len(backend.evidence().model_dump_json())
    wires = [EvidenceV2.model_validate_json(ports.blobs.get(e.final_state)) for e in ends]
    assert all(e.final_state.media_type == EVIDENCE_MEDIA_TYPE and e.final_state.size * 20 < full for e in ends)
    assert len({w.initial_state.sha256 for w in wires}) == 1  # one task instance, one initial-state blob
    initial = wires[0].initial_state
    assert initial.media_type == WORLD_STATE_MEDIA_TYPE and ports.blobs.get(initial) == orjson.dumps(
        backend.evidence().initial_state
    )
    assert wires[1].changes == []  # doing nothing changes nothing


def test_lean_and_full_evidence_give_the_same_verdicts_over_the_suite(ports):
    """Every template's tasks (both splits), solved and not: criteria, details and outcome are identical."""
    backend = SandboxBackend()
    tasks = _suite()[::7]
    for i, task in enumerate(tasks):
        for policy in (reference_solver, noop_policy):
            ended = record_episode(task, policy, ports.blobs, episode_id=f"ep-{i}", backend=backend)[-1]
            full = backend.evidence()
            lean = decode_evidence(ports.blobs.get(ended.final_state), ports.blobs)
            assert isinstance(lean, LeanEvidence) and lean.final_state == full.final_state
            assert verify(task, lean, ended.answer or "") == verify(task, full, ended.answer or ""), task.task_id


def test_old_full_state_evidence_is_still_judged_by_the_verifier(ports):
    task = next(t for t in _suite() if t.split == "train")
    backend = SandboxBackend()
    old = record_episode(task, reference_solver, ports.blobs, episode_id="ep-old", backend=backend)
    v1 = ports.blobs.put(backend.evidence().model_dump_json().encode(), EVIDENCE_MEDIA_TYPE)  # the v1 writer's bytes
    old[-1] = old[-1].model_copy(update={"final_state": v1})
    lean = record_episode(task, reference_solver, ports.blobs, episode_id="ep-lean", backend=backend)
    publish_all(ports.bus, [task, *old, *lean])
    verifier = Verifier()
    [old_verdict], [lean_verdict] = verifier.handle(old[-1], ports), verifier.handle(lean[-1], ports)
    assert referenced_blobs(ports.blobs.get(v1)) == [] and v1.size > 50 * lean[-1].final_state.size
    assert old_verdict.outcome == lean_verdict.outcome == "success"
    assert [c.model_dump(exclude={"evidence"}) for c in old_verdict.criteria] == [
        c.model_dump(exclude={"evidence"}) for c in lean_verdict.criteria
    ]


def test_the_audit_checks_the_initial_state_that_evidence_points_at(ports):
    task = next(t for t in _suite() if t.split == "train")
    events = record_episode(task, reference_solver, ports.blobs, episode_id="ep-a")
    publish_all(ports.bus, [task, *events])
    [initial] = referenced_blobs(ports.blobs.get(events[-1].final_state))
    report = ReplayReport()
    verify_blobs(ports, Scope(), report)
    assert report.ok and report.blobs_checked >= 2
    path = ports.blobs.root / initial.sha256[:2] / initial.sha256[2:4] / initial.sha256
    path.write_bytes(b"{}")
    report = ReplayReport()
    verify_blobs(ports, Scope(), report)
    assert any(initial.sha256 in bad for bad in report.bad_blobs)


def test_malformed_lean_evidence_is_refused():
    with pytest.raises(ValueError):
        decode_evidence(b'{"evidence_version": 2, "backend": "sandbox", "initial_state": {"sha256": "x"}}', None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        decode_evidence(b'{"evidence_version": 9}', None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        referenced_blobs(b'{"evidence_version": 2, "changes": "all"}')


_json = st.recursive(
    st.none() | st.integers(-(2**53), 2**53) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=4,
)
_tree = st.dictionaries(
    st.text(max_size=3),
    st.dictionaries(st.text(max_size=3), st.dictionaries(st.text(max_size=3), _json, max_size=3), max_size=3),
    max_size=3,
)


@given(_tree, _tree)
def test_the_delta_rebuilds_the_final_state_and_leaves_the_initial_untouched(initial, final):
    before = orjson.dumps(initial)
    wire = EvidenceV2.model_validate(
        {"backend": "x", "initial_state": {"sha256": "0" * 64, "size": 0}, "changes": state_delta(initial, final)}
    )
    assert apply_delta(initial, wire.changes) == final
    assert orjson.dumps(initial) == before
