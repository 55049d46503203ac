"""The optional model-assisted pass: consulted only when the rules are unsure, and only a valid label counts."""

from __future__ import annotations

import pytest
from consumer_factory import P, episode, ids_of, obs, task_with, verdict

from bus_schemas.actions import Finish, ToolCall
from consumers.diagnoser.assist import ModelAssist, load_assist, parse_label
from consumers.diagnoser.handler import diagnose
from consumers.diagnoser.rules import findings

pytestmark = pytest.mark.unit


class Recorder:
    def __init__(self, answer: str) -> None:
        self.answer, self.prompts = answer, []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answer


def _unexplained():
    """A failure no rule explains (no steps, no finish): the rules say ``other`` with low confidence."""
    task = task_with({"state"})
    ep = episode(task, [], reason="budget_exhausted")
    v = verdict(task, ids_of(task, "state"))
    assert findings(task, ep, v)[0].label == "other"
    return task, ep, v


def test_confident_rules_decide_without_the_model():
    task = task_with({"state"})
    ep = episode(task, [(ToolCall(name="weather.forecast_x", args={}), obs(error="unknown_tool")), (Finish(), None)])
    model = Recorder("recovery")
    d = diagnose(verdict(task, ids_of(task, "state")), task, ep, P, ModelAssist(model, "scripted:recovery"))
    assert d.attribution == "tool_routing" and model.prompts == []


def test_when_the_rules_are_unsure_the_models_label_is_the_attribution():
    task, ep, v = _unexplained()
    model = Recorder("I think this is state_tracking, not recovery")
    d = diagnose(v, task, ep, P, ModelAssist(model, "tiny/3"))
    assert d.attribution == "state_tracking" and "other" in d.secondary
    assert "model tiny/3" in d.explanation and d.confidence == 0.5
    assert len(model.prompts) == 1 and task.goal in model.prompts[0] and "Label:" in model.prompts[0]


def test_a_model_answer_without_a_label_leaves_the_rules_answer():
    task, ep, v = _unexplained()
    plain = diagnose(v, task, ep, P)
    assisted = diagnose(v, task, ep, P, ModelAssist(Recorder("no idea, sorry"), "tiny/3"))
    assert (assisted.attribution, assisted.explanation, assisted.confidence) == (
        plain.attribution,
        plain.explanation,
        plain.confidence,
    )


def test_configuration(monkeypatch):
    monkeypatch.delenv("FLYWHEEL_DIAGNOSER_MODEL", raising=False)
    assert load_assist() is None
    monkeypatch.setenv("FLYWHEEL_DIAGNOSER_MODEL", "scripted:recovery")
    assist = load_assist()
    assert assist is not None and assist.complete("anything") == "recovery"
    with pytest.raises(ValueError, match="expected scripted"):
        load_assist("models:/planner@production")
    assert parse_label("Label: argument_grounding.") == "argument_grounding" and parse_label("tool") is None
