"""One crafted failed episode per taxonomy label: the diagnoser must attribute exactly that label, at that step."""

from __future__ import annotations

import pytest

from bus_schemas.actions import Finish, StateChange, ToolCall
from consumers.diagnoser.handler import diagnose
from consumers.diagnoser.rules import RULES, findings
from consumer_factory import P, episode, ids_of, obs, task_with, verdict

pytestmark = pytest.mark.unit


def _state_task():
    return task_with({"state"})


def _call(task, i=0, **args):
    return ToolCall(name=task.tools[i], args=args)


def test_wrong_tool_for_the_goal_is_tool_routing():
    task = _state_task()
    ep = episode(task, [(ToolCall(name="weather.forecast_x", args={}), obs(error="unknown_tool")), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("tool_routing", 0)


def test_unsupported_argument_is_argument_grounding():
    task = _state_task()
    ep = episode(task, [(_call(task, x="bogus"), obs(error="invalid_argument")), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("argument_grounding", 0)
    assert "premature_termination" in d.secondary


def test_acting_on_a_removed_item_is_state_tracking():
    task = _state_task()
    removed = StateChange(path="/notes/items/n_7", op="removed", before={"id": "n_7"})
    ep = episode(task, [(_call(task, id="n_7"), obs(result={"ok": True}, changes=(removed,))),
                        (_call(task, 1, id="n_7"), obs(result={"ok": True})), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("state_tracking", 1)


def test_repeating_a_failing_call_unchanged_is_recovery():
    task = _state_task()
    call = _call(task, q="x")
    ep = episode(task, [(call, obs(error="not_found")), (call, obs(error="not_found")), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("recovery", 1)


def test_finishing_before_the_criteria_hold_is_premature_termination():
    task = _state_task()
    ep = episode(task, [(_call(task), obs(result=[])), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("premature_termination", 1)


def test_a_false_answer_claimed_as_done_is_hallucinated_completion():
    task = task_with({"answer"})
    ep = episode(task, [(_call(task), obs(result=[])), (Finish(answer="definitely 42 purple"), None)])
    d = diagnose(verdict(task, ids_of(task, "answer")), task, ep, P)
    assert (d.attribution, d.step) == ("hallucinated_completion", 1)


def test_a_permission_gated_action_is_policy_violation():
    task = _state_task()
    ep = episode(task, [(_call(task), obs(error="permission_denied")), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("policy_violation", 0)


def test_collateral_changes_are_policy_violation():
    task = task_with({"no_collateral", "state"})
    ep = episode(task, [(_call(task), obs(result={"ok": 1}, changes=(StateChange(path="/x/y", op="changed"),))), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "no_collateral")), task, ep, P)
    assert d.attribution == "policy_violation" and d.step is None


def test_a_backend_failure_is_environment_error():
    task = _state_task()
    ep = episode(task, [(_call(task), obs(error="unavailable")), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("environment_error", 0)


def test_nothing_explains_it_is_other():
    task = _state_task()
    ep = episode(task, [(_call(task), obs(result=[]))], reason="budget_exhausted")
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step, d.secondary) == ("other", None, [])
    assert d.causation_id is not None and d.confidence < 0.5


def test_every_label_of_the_taxonomy_has_a_rule():
    from typing import get_args

    from bus_schemas.events import FailureCategory

    assert {r.__name__ for r in RULES} | {"other"} == set(get_args(FailureCategory))
    task = _state_task()
    assert findings(task, episode(task, [(Finish(), None)]), verdict(task, ids_of(task, "state")))[0].label == "premature_termination"
