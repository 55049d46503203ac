"""The optional model-assisted pass: consulted only when the rules are unsure, and only a valid label counts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from canned_chat import CannedChat
from consumer_factory import P, episode, ids_of, obs, task_with, verdict

from bus_schemas.actions import Finish, ToolCall
from consumers.diagnoser import spec as diagnoser_spec
from consumers.diagnoser.assist import ModelAssist, load_assist, parse_label
from consumers.diagnoser.handler import diagnose
from consumers.diagnoser.rules import findings
from consumers.harness_reviser.rules import Cluster
from consumers.harness_reviser.writer import load_writer
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry

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
    with pytest.raises(ValueError, match="needs the registry and bus"):
        load_assist("models:/planner@production")
    monkeypatch.setenv("FLYWHEEL_DIAGNOSER_MODEL", "gpt 4")
    with pytest.raises(ValueError, match="expected scripted"):
        diagnoser_spec.build()  # a bad value fails at start, not on the first failed episode
    assert parse_label("Label: argument_grounding.") == "argument_grounding" and parse_label("tool") is None


@pytest.fixture
def judge() -> Iterator[CannedChat]:
    with CannedChat(["state_tracking: the note was lost"]) as chat:
        yield chat


def test_a_model_ref_is_served_through_the_inference_port(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, judge: CannedChat
) -> None:
    """``FLYWHEEL_INFERENCE=openai+http://...``: the diagnoser's and the reviser's models are any OpenAI-compatible
    server, as the rollout workers' are."""
    monkeypatch.setenv("FLYWHEEL_INFERENCE", f"openai+{judge.url}?model=judge")
    ports = Ports(
        bus=open_bus(f"sqlite:///{tmp_path}/bus.db"),
        blobs=open_blob_store(f"file:///{tmp_path}/blobs"),
        registry=open_registry(f"sqlite:///{tmp_path}/mlflow.db"),
    )
    try:
        assist = load_assist(f"local:{tmp_path / 'judge-model'}", ports, tmp_path / "cache")
        assert assist is not None
        task, ep, v = _unexplained()
        d = diagnose(v, task, ep, P, assist)
        assert d.attribution == "state_tracking" and "other" in d.secondary
        (asked,) = judge.requests
        assert asked["model"] == "judge" and task.goal in asked["messages"][-1]["content"]

        writer = load_writer(f"local:{tmp_path / 'judge-model'}", ports.registry, ports.bus, tmp_path / "cache")
        writer.write(Cluster(category="state_tracking", diagnoses=(), tasks={}), "Keep track of what you saved.")
        assert len(judge.requests) == 2 and judge.requests[1]["model"] == "judge"
    finally:
        ports.close()
