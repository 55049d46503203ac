"""The diagnoser on recorded episodes of a real trained model (tests/fixtures/trained_planner_dev.jsonl: the tiny
planner after 552 SFT steps, greedy on dev; see tests/fixtures/export_episodes.py for how it was made).

The sandbox never failed in that run, yet diagnoser 0.1.0 blamed 10 of its 38 failures on ``environment_error``:
every episode the model ended by running out of valid outputs. Each label it gives now is checked against
what the recorded events show.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest
from consumer_factory import P

from bus_schemas import decode, encode
from bus_schemas.events import (
    AnswerCriterion,
    EpisodeEnded,
    EpisodeVerified,
    FailureDiagnosed,
    StateCriterion,
    TaskSpecified,
)
from consumers.common.episode import EpisodeRecord, Rejection, rebuild_episode
from consumers.diagnoser.assist import ModelAssist
from consumers.diagnoser.handler import diagnose
from consumers.diagnoser.rules import ENVIRONMENT_CODES, MAX_CONFIDENCE, findings

pytestmark = pytest.mark.unit

FIXTURE = Path(__file__).parents[2] / "fixtures" / "trained_planner_dev.jsonl"
Case = tuple[TaskSpecified, EpisodeRecord, EpisodeVerified]


@lru_cache(maxsize=1)
def recorded() -> tuple[Case, ...]:
    events = [decode(line) for line in FIXTURE.read_bytes().splitlines()]
    tasks = {e.task_id: e for e in events if isinstance(e, TaskSpecified)}
    by_episode: dict[str, list] = {}
    for e in events:
        if not isinstance(e, (TaskSpecified, EpisodeVerified)):
            by_episode.setdefault(e.episode_id, []).append(e)
    cases = []
    for v in (e for e in events if isinstance(e, EpisodeVerified)):
        steps = by_episode[v.episode_id]
        ended = next(e for e in steps if isinstance(e, EpisodeEnded))
        cases.append((tasks[v.task_id], rebuild_episode(steps, ended, lambda i: by_episode.get(i, [])), v))
    return tuple(cases)


def _label(case: Case) -> str:
    return findings(*case)[0].label


def test_the_fixture_is_small_and_holds_failed_episodes_of_a_trained_model() -> None:
    assert FIXTURE.stat().st_size < 500_000
    cases = recorded()
    assert len(cases) == 38 and all(v.outcome == "failure" for _, _, v in cases)
    assert {ep.started.policy_version for _, ep, _ in cases if ep.started} == {"planner/1"}


def test_the_label_mix_on_the_fixture() -> None:
    """Diagnoser 0.1.0 said: premature_termination 21, environment_error 10, hallucinated_completion 4,
    argument_grounding 3."""
    assert Counter(_label(c) for c in recorded()) == {
        "premature_termination": 17,
        "invalid_output": 10,
        "tool_routing": 7,
        "argument_grounding": 3,
        "hallucinated_completion": 1,
    }


def test_no_failure_is_blamed_on_the_environment_when_the_backend_never_failed() -> None:
    backend_errors = [
        o for _, ep, _ in recorded() for o in ep.observations if o.error and o.error.code in ENVIRONMENT_CODES
    ]
    assert backend_errors == []
    assert not any("environment_error" in {f.label for f in findings(*c)} for c in recorded())


def test_invalid_output_is_an_episode_that_ran_out_of_valid_outputs() -> None:
    for task, ep, v in (c for c in recorded() if _label(c) == "invalid_output"):
        first = findings(task, ep, v)[0]
        assert ep.ended.reason == "error" and isinstance(ep.turns[-1], Rejection)
        assert first.step == ep.rejections[0].number and first.confidence > 0.6
        assert f"{len(ep.rejections)} of {len(ep.turns)} model outputs" in first.explanation


def test_tool_routing_rests_on_an_invented_or_foreign_tool() -> None:
    for task, ep, v in (c for c in recorded() if _label(c) == "tool_routing"):
        invented = [r for r in ep.rejections if r.code == "unknown_tool"]
        foreign = [s for s in ep.steps if s.call and s.call.name not in task.tools]
        assert invented or foreign
        assert findings(task, ep, v)[0].step in {r.number for r in invented} | {s.number for s in foreign}


def test_argument_grounding_rests_on_an_argument_the_backend_refused() -> None:
    for task, ep, v in (c for c in recorded() if _label(c) == "argument_grounding"):
        step = findings(task, ep, v)[0].step
        refused = [s for s in ep.steps if s.number == step]
        assert refused and refused[0].observation and refused[0].observation.error
        assert refused[0].observation.error.code in {"invalid_argument", "not_found"}


def test_finishing_labels_rest_on_the_failed_criteria() -> None:
    for task, ep, v in recorded():
        label = _label((task, ep, v))
        failed = {r.criterion_id for r in v.criteria if not r.passed}
        if label == "premature_termination":
            assert ep.finish is not None and failed & {c.id for c in task.criteria if isinstance(c, StateCriterion)}
        if label == "hallucinated_completion":
            assert (
                ep.finish
                and ep.finish.answer
                and failed & {c.id for c in task.criteria if isinstance(c, AnswerCriterion)}
            )


def test_confidence_follows_the_evidence() -> None:
    conf = [findings(*c)[0].confidence for c in recorded()]
    assert all(0 < x <= MAX_CONFIDENCE for x in conf)
    assert len(set(conf)) >= 4  # not one constant per label
    by_rejections = sorted(
        (len(ep.rejections), findings(t, ep, v)[0].confidence)
        for t, ep, v in recorded()
        if _label((t, ep, v)) == "invalid_output"
    )
    assert by_rejections == sorted(by_rejections, key=lambda p: p[1])  # more unusable outputs, more certain


def test_the_model_assist_sees_the_rejected_outputs_too() -> None:
    prompts: list[str] = []
    task, ep, v = next(c for c in recorded() if _label(c) == "tool_routing")  # weak evidence: the rules ask
    diagnose(v, task, ep, P, ModelAssist(lambda text: prompts.append(text) or "tool_routing", "scripted"))
    assert len(prompts) == 1 and "unusable output -> error unknown_tool" in prompts[0]


def test_diagnoses_of_the_fixture_are_valid_v2_events() -> None:
    for task, ep, v in recorded():
        d = diagnose(v, task, ep, P)
        assert decode(encode(d)) == d and d.schema_version == 2 and isinstance(d, FailureDiagnosed)
