"""Recovery demonstrations: a verified success that met a permission or confirmation gate is admitted without a
human when nothing outside the task's scope changed; otherwise (or when the task cannot show that) a human decides."""

from __future__ import annotations

import pytest
from consumer_factory import P, episode, obs, task_with, verdict

from bus_schemas.actions import Finish, StateChange, ToolCall
from bus_schemas.blob_ref import BlobRef
from bus_schemas.events import NoCollateralCriterion
from consumers.curator.handler import curate

pytestmark = pytest.mark.unit
BUNDLE = BlobRef(sha256="a" * 64, size=10)
CHANGE = StateChange(path="/notes/items/n_1", op="added", after={"id": "n_1"})


def _recovered(task, gate: str, trust: str = "exact", flags: tuple[str, ...] = ()):
    call = ToolCall(name=task.tools[0], args={})
    steps = [
        (call, obs(error=gate)),
        (
            ToolCall(name=task.tools[0], args={"confirm": True}),
            obs(result={"ok": True}, changes=(CHANGE,), flags=flags),
        ),
        (Finish(answer=""), None),
    ]
    return episode(task, steps, trust=trust)


def _bounded():
    return task_with({"state", "no_collateral"})


@pytest.mark.parametrize("gate", ["needs_confirmation", "permission_denied"])
def test_a_verified_recovery_without_collateral_change_is_admitted_without_a_human(gate):
    task = _bounded()
    [out] = curate(verdict(task), task, _recovered(task, gate), BUNDLE, None, P)
    assert out.event_type == "TrajectoryAdmitted" and out.weight == 1.0
    assert any(r.startswith(f"recovery demonstration: passed through {gate}") for r in out.reasons)


def test_a_task_that_cannot_show_no_collateral_change_sends_the_recovery_to_a_human():
    bounded = _bounded()
    task = bounded.model_copy(
        update={"criteria": [c for c in bounded.criteria if not isinstance(c, NoCollateralCriterion)]}
    )
    held, request = curate(verdict(task), task, _recovered(task, "needs_confirmation"), BUNDLE, None, P)
    assert (held.event_type, request.event_type) == ("TrajectoryQuarantined", "ReviewRequested")
    assert any("cannot show it caused no collateral change" in r for r in request.reasons)


@pytest.mark.parametrize(
    ("trust", "flags", "why"),
    [
        ("simulated", (), "permission-gated"),  # a simulator's collateral check is not evidence enough
        ("exact", ("destructive",), "destructive"),
    ],
)
def test_recoveries_that_are_not_provably_harmless_stay_in_review(trust, flags, why):
    task = _bounded()
    held, request = curate(verdict(task), task, _recovered(task, "permission_denied", trust, flags), BUNDLE, None, P)
    assert held.event_type == "TrajectoryQuarantined" and any(why in r for r in request.reasons)


def test_a_failed_recovery_is_rejected_as_before():
    task = _bounded()
    failed = verdict(task, {next(c.id for c in task.criteria if isinstance(c, NoCollateralCriterion))})
    [out] = curate(failed, task, _recovered(task, "needs_confirmation"), BUNDLE, None, P)
    assert out.event_type == "TrajectoryRejected"
