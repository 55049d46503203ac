"""The curator's decisions on crafted episodes: one test per admission, rejection and review rule."""

from __future__ import annotations

import pytest
from consumer_factory import IDS, P, episode, obs, task_with, verdict

from bus_schemas.actions import Finish, StateChange, ToolCall
from bus_schemas.blob_ref import BlobRef
from bus_schemas.events import ReviewDecided
from consumers.curator.handler import apply_review, curate

pytestmark = pytest.mark.unit
BUNDLE = BlobRef(sha256="a" * 64, size=10)
CHANGE = StateChange(path="/notes/items/n_1", op="added", after={"id": "n_1"})


def _good(task, **kw):
    return episode(
        task,
        [
            (ToolCall(name=task.tools[0], args={}), obs(result={"ok": True}, changes=(CHANGE,), **kw)),
            (Finish(answer=""), None),
        ],
    )


def _decide(task, ep, v=None, first=None):
    return curate(v or verdict(task), task, ep, BUNDLE, first, P)


def test_a_clean_verified_success_is_admitted_with_full_provenance():
    task = task_with({"state"})
    [out] = _decide(task, _good(task))
    assert out.event_type == "TrajectoryAdmitted" and out.weight == 1.0 and out.trajectory == BUNDLE
    assert (out.category, out.tags, out.provenance.policy_version, out.provenance.task_source) == (
        task.category,
        task.tags,
        "p0",
        task.source,
    )


def test_a_failed_verdict_is_rejected_but_kept_for_diagnosis():
    task = task_with({"state"})
    [out] = _decide(task, _good(task), verdict(task, {task.criteria[0].id}))
    assert out.event_type == "TrajectoryRejected" and "diagnosis" in out.reasons[0]


def test_dev_tasks_are_never_admitted():
    task = task_with({"state"}, split="dev")
    [out] = _decide(task, _good(task))
    assert out.event_type == "TrajectoryRejected" and "dev" in out.reasons[0]


def test_a_truncated_episode_is_rejected():
    task = task_with({"state"})
    ep = episode(
        task,
        [(ToolCall(name=task.tools[0], args={}), obs(result=1, changes=(CHANGE,))), (Finish(), None)],
        started=False,
    )
    [out] = _decide(task, ep)
    assert out.event_type == "TrajectoryRejected" and any("truncated" in r for r in out.reasons)


def test_an_unobserved_tool_call_is_rejected_as_truncated():
    task = task_with({"state"})
    ep = episode(task, [(ToolCall(name=task.tools[0], args={}), None), (Finish(), None)])
    [out] = _decide(task, ep)
    assert any("has no observation" in r for r in out.reasons)


def test_a_finish_claim_without_any_observed_change_is_rejected():
    task = task_with({"state"})
    ep = episode(task, [(ToolCall(name=task.tools[0], args={}), obs(result=[])), (Finish(), None)])
    [out] = _decide(task, ep)
    assert out.event_type == "TrajectoryRejected" and out.reasons == ["finish claim not supported by the observations"]


def test_an_answer_never_seen_in_observations_is_rejected():
    task = task_with({"answer"})
    ep = episode(
        task, [(ToolCall(name=task.tools[0], args={}), obs(result=["alpha"])), (Finish(answer="zebra quantum"), None)]
    )
    [out] = _decide(task, ep)
    assert out.reasons == ["finish claim not supported by the observations"]


def test_the_same_actions_on_the_same_task_are_a_duplicate():
    task = task_with({"state"})
    [out] = _decide(task, _good(task), first="ep-0")
    assert out.event_type == "TrajectoryRejected" and out.reasons == ["duplicate of ep-0 (same task and actions)"]
    assert _decide(task, _good(task), first="ep-1")[0].event_type == "TrajectoryAdmitted"  # itself, admitted before


@pytest.mark.parametrize(
    ("why", "kwargs", "obs_kwargs"),
    [
        ("safety-sensitive", {}, {"flags": ("destructive",)}),
        ("simulated backend with flagged", {"trust": "simulated"}, {"flags": ("uncertain",)}),
        ("low confidence", {"trust": "device"}, {}),
    ],
)
def test_doubtful_cases_are_quarantined_for_review(why, kwargs, obs_kwargs):
    task = task_with({"state"})
    ep = episode(
        task,
        [
            (ToolCall(name=task.tools[0], args={}), obs(result={"ok": 1}, changes=(CHANGE,), **obs_kwargs)),
            (Finish(), None),
        ],
        **kwargs,
    )
    held, request = _decide(task, ep)
    assert (held.event_type, request.event_type) == ("TrajectoryQuarantined", "ReviewRequested")
    assert any(why in r for r in request.reasons) and BUNDLE in request.evidence


def test_a_success_that_did_not_finish_is_conflicting():
    task = task_with({"state"})
    ep = episode(
        task, [(ToolCall(name=task.tools[0], args={}), obs(result=1, changes=(CHANGE,)))], reason="budget_exhausted"
    )
    held, request = _decide(task, ep)
    assert any("conflicting" in r for r in request.reasons)


def test_a_simulated_unflagged_success_is_admitted_at_lower_weight():
    task = task_with({"state"})
    ep = episode(
        task,
        [(ToolCall(name=task.tools[0], args={}), obs(result=1, changes=(CHANGE,))), (Finish(), None)],
        trust="simulated",
    )
    [out] = _decide(task, ep)
    assert out.event_type == "TrajectoryAdmitted" and out.weight == 0.5


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        ("approve", "TrajectoryAdmitted"),
        ("correct", "TrajectoryAdmitted"),
        ("reject", "TrajectoryRejected"),
        ("quarantine", "TrajectoryQuarantined"),
    ],
)
def test_review_decisions_are_honoured(decision, expected):
    task = task_with({"state"})
    fixed = BlobRef(sha256="b" * 64, size=3) if decision == "correct" else None
    review = ReviewDecided(
        **IDS, task_id=task.task_id, episode_id="ep-1", decision=decision, reviewer="ana", corrected_trajectory=fixed
    )
    [out] = apply_review(review, task, _good(task), BUNDLE, P)
    assert out.event_type == expected and out.causation_id == review.event_id and "ana" in out.reasons[0]
    if decision == "correct":
        assert out.trajectory == fixed


def test_a_failed_verdict_decided_on_its_diagnosis_links_the_attribution():
    from bus_schemas.envelope import correlate
    from bus_schemas.events import FailureDiagnosed

    task = task_with({"state"})
    failed = verdict(task, {task.criteria[0].id})
    diagnosis = FailureDiagnosed(
        producer=P,
        **correlate(failed),
        attribution="tool_routing",
        step=0,
        explanation="wrong tool",
        confidence=0.8,
        diagnoser_version="d",
    )
    [out] = curate(failed, task, _good(task), BUNDLE, None, P, (diagnosis,))
    assert out.event_type == "TrajectoryRejected"
    assert out.failure_diagnoses == [diagnosis.event_id] and out.causation_id == diagnosis.event_id
    assert any("diagnosed tool_routing at step 0" in r for r in out.reasons)
    [plain] = _decide(task, _good(task))
    assert plain.failure_diagnoses == []
