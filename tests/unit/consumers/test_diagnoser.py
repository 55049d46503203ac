"""One crafted failed episode per taxonomy label: the diagnoser must attribute exactly that label, at that step;
and the rebuilt episode holds every step event (rejected outputs, contexts without output, sub-agent episodes)."""

from __future__ import annotations

import pytest
from consumer_factory import P, episode, episode_events, ids_of, obs, task_with, verdict

from bus_schemas.actions import Finish, StateChange, SubagentSpawn, ToolCall
from consumers.common.episode import rebuild_episode
from consumers.diagnoser.handler import diagnose
from consumers.diagnoser.rules import RULES, findings

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


def test_a_task_without_a_tool_list_leaves_tool_routing_to_the_backends_answer():
    """An external task lists no tools (its backend offers its own): a call is misrouted only if the backend says so."""
    task = _state_task().model_copy(update={"tools": []})
    fine = episode(task, [(ToolCall(name="crm.lookup", args={}), obs(result={"ok": True})), (Finish(), None)])
    assert "tool_routing" not in {f.label for f in findings(task, fine, verdict(task, ids_of(task, "state")))}
    unknown = episode(task, [(ToolCall(name="crm.lookup_x", args={}), obs(error="unknown_tool")), (Finish(), None)])
    d = diagnose(verdict(task, ids_of(task, "state")), task, unknown, P)
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
    ep = episode(
        task,
        [
            (_call(task, id="n_7"), obs(result={"ok": True}, changes=(removed,))),
            (_call(task, 1, id="n_7"), obs(result={"ok": True})),
            (Finish(), None),
        ],
    )
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
    ep = episode(
        task,
        [(_call(task), obs(result={"ok": 1}, changes=(StateChange(path="/x/y", op="changed"),))), (Finish(), None)],
    )
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
    assert (
        findings(task, episode(task, [(Finish(), None)]), verdict(task, ids_of(task, "state")))[0].label
        == "premature_termination"
    )


# --- every step event: rejected outputs, contexts without output, sub-agent episodes ---------------------------


def _rebuilt(events, children=()):
    by_id = {}
    for e in [*events, *[c for child in children for c in child]]:
        by_id.setdefault(e.episode_id, []).append(e)
    return rebuild_episode(events, events[-1], lambda i: by_id.get(i, []))


def test_rejected_outputs_are_part_of_the_rebuilt_episode():
    task = _state_task()
    ep = _rebuilt(episode_events(task, [("rejected", "parse_error"), (_call(task), obs(result=[])), (Finish(), None)]))
    assert [type(t).__name__ for t in ep.turns] == ["Rejection", "Step", "Step"]
    assert ep.rejections[0].code == "parse_error" and ep.rejections[0].observation is not None
    assert [o.step for o in ep.observations] == [2]  # feedback to rejected outputs stays with the rejection


def test_running_out_of_valid_outputs_is_invalid_output_not_environment_error():
    task = _state_task()
    ep = _rebuilt(
        episode_events(
            task,
            [("rejected", "parse_error"), ("rejected", "invalid_argument"), ("rejected", "parse_error")],
            reason="error",
        )
    )
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("invalid_output", 1)
    assert "environment_error" not in d.secondary and "argument_grounding" in d.secondary
    assert "3 of 3 model outputs" in d.explanation


def test_a_failed_inference_call_is_environment_error():
    task = _state_task()
    ep = _rebuilt(episode_events(task, [(_call(task), obs(result=[]))], reason="error", context_only=2))
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("environment_error", 2) and "inference endpoint" in d.explanation


def test_a_stray_rejected_output_is_not_the_cause():
    task = _state_task()
    ep = _rebuilt(episode_events(task, [("rejected", "parse_error"), (_call(task), obs(result=[])), (Finish(), None)]))
    assert [f.label for f in findings(task, ep, verdict(task, ids_of(task, "state")))] == ["premature_termination"]


def test_an_invented_tool_name_is_tool_routing_evidence():
    task = _state_task()
    ep = _rebuilt(episode_events(task, [("rejected", "unknown_tool"), (Finish(), None)]))
    first = findings(task, ep, verdict(task, ids_of(task, "state")))[0]
    assert (first.label, first.step) == ("tool_routing", 1) and "x.1" in first.explanation


def test_a_fault_inside_a_sub_agent_is_blamed_on_the_spawning_step():
    task = _state_task()
    child = episode_events(
        task,
        [(_call(task), obs(error="internal")), (Finish(answer="no"), None)],
        episode_id="child-0001",
        parent="ep-1",
    )
    result = {"kind": "subagent_result", "child_episode_id": "child-0001", "summary": "no", "success": True}
    parent = episode_events(task, [(SubagentSpawn(goal="look it up"), obs(result=result)), (Finish(), None)])
    ep = _rebuilt(parent, [child])
    assert [s.episode_id for s in ep.subagents] == ["child-0001"] and ep.subagents[0].record is not None
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P)
    assert (d.attribution, d.step) == ("environment_error", 1) and "sub-agent" in d.explanation


def test_a_sub_agent_missing_from_the_log_leaves_the_parent_judgeable():
    task = _state_task()
    result = {"kind": "subagent_result", "child_episode_id": "gone", "summary": "", "success": False}
    ep = _rebuilt(episode_events(task, [(SubagentSpawn(goal="x"), obs(result=result)), (Finish(), None)]))
    assert ep.subagents[0].record is None
    assert diagnose(verdict(task, ids_of(task, "state")), task, ep, P).attribution == "premature_termination"


def test_more_evidence_means_more_confidence():
    task = _state_task()
    call = _call(task, q="x")
    once = episode(task, [(call, obs(error="not_found")), (call, obs(error="not_found")), (Finish(), None)])
    twice = episode(
        task,
        [
            (call, obs(error="not_found")),
            (call, obs(error="not_found")),
            (call, obs(error="not_found")),
            (Finish(), None),
        ],
    )
    v = verdict(task, ids_of(task, "state"))
    assert findings(task, once, v)[0].label == findings(task, twice, v)[0].label == "recovery"
    assert findings(task, twice, v)[0].confidence > findings(task, once, v)[0].confidence


def _with_call_criteria(task, *criteria):
    return task.model_copy(update={"criteria": [*task.criteria, *criteria]})


def test_a_forbidden_call_is_policy_violation_at_the_step_that_made_it():
    from bus_schemas.events import CallForbiddenCriterion

    task = _state_task()
    task = _with_call_criteria(task, CallForbiddenCriterion(id="no_x", description="d", tool=task.tools[1]))
    ep = episode(task, [(_call(task), obs(result=[])), (_call(task, 1), obs(result={"ok": True})), (Finish(), None)])
    d = diagnose(verdict(task, {"no_x"}), task, ep, P)
    assert (d.attribution, d.step) == ("policy_violation", 1) and "no_x" in d.explanation


def test_finishing_without_a_required_call_is_premature_termination():
    from bus_schemas.events import CallRequiredCriterion

    task = _state_task()
    task = _with_call_criteria(task, CallRequiredCriterion(id="must", description="d", tool=task.tools[1]))
    ep = episode(task, [(_call(task), obs(result=[])), (Finish(), None)])
    d = diagnose(verdict(task, {"must"}), task, ep, P)
    assert (d.attribution, d.step) == ("premature_termination", 1) and "must" in d.explanation


def test_a_right_answer_without_the_look_up_behind_it_is_premature_termination():
    """Only the call_any criterion failed: the answer was right, but a guess."""
    from bus_schemas.events import CallAnyCriterion, CallStep

    task = _state_task()
    looked = CallAnyCriterion(
        id="looked_up", description="d", options=[CallStep(tool=task.tools[1]), CallStep(tool=task.tools[2])]
    )
    task = _with_call_criteria(task, looked)
    ep = episode(task, [(Finish(answer="Oslo"), None)])
    d = diagnose(verdict(task, {"looked_up"}), task, ep, P)
    assert (d.attribution, d.step) == ("premature_termination", 0) and "looked_up" in d.explanation


def test_a_success_on_a_guessed_id_is_argument_grounding_at_the_call_that_used_it():
    """Every task criterion held, but the verifier's grounded_ids failed: the id was never shown."""
    from bus_schemas.events import CriterionResult

    task = _state_task()
    ep = episode(
        task,
        [
            (_call(task, q="Fig Gym"), obs(result=[])),
            (_call(task, 1, id="pl_30"), obs(result={"ok": True})),
            (Finish(), None),
        ],
    )
    v = verdict(task)
    guessed = CriterionResult(
        criterion_id="grounded_ids",
        passed=False,
        detail=f"used ids it was never shown: pl_30 in {task.tools[1]} at call 1",
    )
    v = v.model_copy(update={"outcome": "failure", "criteria": [*v.criteria, guessed]})
    d = diagnose(v, task, ep, P)
    assert (d.attribution, d.step) == ("argument_grounding", 1) and "pl_30" in d.explanation  # steps count from 0
